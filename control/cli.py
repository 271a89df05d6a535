"""The ``specialists`` command line: the Typer app assembled from the command groups in
:mod:`control.commands`, :func:`main` and the console script :func:`entry`. JSON shapes and exit
codes follow docs/architecture.md "Operator contract".

Each group imports what its commands need inside them, so a preview such as ``specialists route
--json`` loads neither Temporal, nor the store, nor the provider SDKs, and touches nothing on disk.
"""

import os
import sys

import typer

from contracts.errors import InvalidInput, OperatorError

HELP = "Specialist Orchestrator: route work items to reviewed specialists and run them durably."


def build_app() -> typer.Typer:
    """The ``specialists`` app: top-level commands in the order the help lists them, then the
    groups."""
    from control.commands import (
        catalog,
        configuration,
        dev,
        inspect,
        models,
        repositories,
        research_cases,
        research_teams,
        runs,
        worktrees,
    )

    app = typer.Typer(
        name="specialists",
        help=HELP,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    for commands in (catalog.app, configuration.app, runs.app, inspect.app, dev.app):
        app.add_typer(commands)  # no name: its commands are the app's own
    app.add_typer(models.app, name="models")
    app.add_typer(repositories.app, name="repos")
    app.add_typer(configuration.actors_app, name="actors")
    research = typer.Typer(help=research_cases.RESEARCH_HELP, no_args_is_help=True)
    research.add_typer(research_cases.app)
    research.add_typer(research_teams.app)
    app.add_typer(research, name="research")
    app.add_typer(worktrees.app, name="worktrees")
    return app


app = build_app()


# ------------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the process exit code (docs/architecture.md "Exit codes")."""
    from typer._click.exceptions import ClickException, NoArgsIsHelpError

    args = sys.argv[1:] if argv is None else argv
    as_json = "--json" in args
    try:
        result = app(args=args, prog_name="specialists", standalone_mode=False)
    except OperatorError as error:
        from control.output import report_error

        return report_error(error, as_json)
    except typer.Exit as done:
        return int(done.exit_code)
    except typer.Abort:
        sys.stderr.write("aborted\n")
        return 130
    except NoArgsIsHelpError as error:
        error.show()
        return 0 if not args else 2
    except ClickException as error:
        from control.output import report_error

        return report_error(InvalidInput("invalid_usage", error.format_message()), as_json)
    return int(result) if isinstance(result, int) else 0


def entry() -> None:
    """The ``specialists`` console script: :func:`main`, then exit with its code.

    After talking to Temporal the process ends with ``os._exit`` once its output is flushed: the
    Temporal client's native runtime threads can still call into Python while the interpreter
    finalises, which now and then aborts the process (SIGABRT/SIGSEGV) after its work is done. There
    is nothing left to clean up at that point (the store's connections close with the process).
    """
    code = main()
    # Asked of runtime.temporal, not a flag here: run as ``python -m control.cli`` this module is
    # ``__main__``, and anything importing ``control.cli`` would see a second copy of it. A process
    # that never imported the connection never started Temporal's runtime (and a command that talks
    # to no Temporal server need not pay for importing it here).
    temporal = sys.modules.get("runtime.temporal")
    if temporal is not None and temporal.connected():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
