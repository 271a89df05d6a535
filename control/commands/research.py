"""The ``specialists research`` group: the case commands (:mod:`control.commands.research_cases`)
followed by the team commands (:mod:`control.commands.research_teams`)."""

import typer

from control.commands import research_cases, research_teams

app = typer.Typer(
    help=(
        "Research cases and their evidence (create, show, add, deactivate, list), and research teams "
        "over them (start, list, show, results, adjudicate, cancel, coordinator)."
    ),
    no_args_is_help=True,
)
app.add_typer(research_cases.app)  # no name: the commands are the group's own
app.add_typer(research_teams.app)
