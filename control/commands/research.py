"""The ``specialists research`` group: the case commands (:mod:`control.commands.research_cases`)
followed by the team commands (:mod:`control.commands.research_teams`)."""

import typer

from control.commands import research_cases, research_teams

app = typer.Typer(
    help=(
        "Research cases and their evidence (case-create, case-show, case-status, cases, evidence-add, "
        "evidence-deactivate), and research teams over them (team-start, teams, team-show, "
        "team-results, adjudicate, team-cancel, coordinator)."
    ),
    no_args_is_help=True,
)
app.add_typer(research_cases.app)  # no name: the commands are the group's own
app.add_typer(research_teams.app)
