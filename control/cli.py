"""The ``specialists`` command line: the Typer app assembled from the command groups in
:mod:`control.commands`, :func:`main` and the console script :func:`entry`. JSON shapes and exit
codes follow docs/architecture.md "Operator contract".

Start-up is kept short, because ``specialists route`` is a preview people run often:

* each group imports what its commands need inside them, so a command that talks to no Temporal
  server loads neither Temporal nor the provider SDKs (nor the store, when it reads none);
* an invocation imports and assembles only the group that adds its command (:func:`build_app`):
  Typer turns every command it is given into a click command, reading its signature, on each
  invocation;
* a command that is not a long-running process (``worker``, ``dev``) runs with pydantic's plugin
  discovery off (``PYDANTIC_DISABLE_PLUGINS``, unless the environment sets it): the deployment
  installs no pydantic plugin, and looking for one reads every installed distribution's entry
  points the first time a model class is built;
* and with the cyclic garbage collector paused until it talks to Temporal
  (:func:`control.commands.common.run_async` resumes it, as a command may then wait for long):
  otherwise it would run some eighty times while the command's modules load, each time walking the
  objects pydantic has just built for its models, which all live as long as the process does.
"""

import contextlib
import gc
import importlib
import os
import sys
from collections.abc import Iterator
from typing import Final

import typer

from contracts.errors import InvalidInput, OperatorError

HELP = "Specialist Orchestrator: route work items to reviewed specialists and run them durably."
GROUPS: Final = (
    # (module of control.commands, its Typer, the group's name, the top-level commands it adds):
    # a group without a name adds its commands as the app's own. In the order the help lists them.
    ("catalog", "app", None, ("catalog", "route")),
    ("configuration", "app", None, ("policy", "status")),
    ("runs", "app", None, ("create", "enqueue", "decide", "cancel", "approve", "execute")),
    ("inspect", "app", None, ("show", "list")),
    ("probes", "app", None, ("probes", "approve-probe")),
    ("dev", "app", None, ("worker", "dev", "setup")),
    ("models", "app", "models", ("models",)),
    ("repositories", "app", "repos", ("repos",)),
    ("configuration", "actors_app", "actors", ("actors",)),
    ("configuration", "configuration_app", "configuration", ("configuration",)),
    ("research", "app", "research", ("research",)),
    ("worktrees", "app", "worktrees", ("worktrees",)),
    ("queue", "app", "queue", ("queue",)),
    ("schedules", "app", "schedules", ("schedules",)),
    ("web", "app", "web", ("web",)),
    ("versions", "app", "versions", ("versions",)),
    ("codec", "app", None, ("codec-server",)),
    ("codec", "key_app", "codec-key", ("codec-key",)),
)
LONG_RUNNING: Final = frozenset({"worker", "dev", "web", "codec-server"})
"""Commands that keep running (a worker): they load pydantic plugins as configured."""
OUTPUT_CLOSED: Final = 141
"""The exit code when stdout's reader went away before the output was written (``... | head -1``):
128 + SIGPIPE, what a shell reports for a tool that signal ended (docs/architecture.md "Exit codes")."""


def build_app(command: str | None = None) -> typer.Typer:
    """The ``specialists`` app. With ``command`` (an invocation's first argument), only the group
    that adds that command is imported and assembled, when one does; otherwise every group is (the
    help, an unknown command and its suggestions)."""
    holding = [group for group in GROUPS if command in group[3]]
    app = typer.Typer(
        name="specialists",
        help=HELP,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    for module, attribute, name, _ in holding or GROUPS:
        group = getattr(importlib.import_module(f"control.commands.{module}"), attribute)
        app.add_typer(group, name=name)
    return app


@contextlib.contextmanager
def _short_command(command: str | None) -> Iterator[None]:
    """Within, pydantic looks for no plugins and the cyclic garbage collector is paused (see the
    module docstring), unless ``command`` is long-running; the environment's choice about plugins
    is kept. Both are as they were afterwards."""
    if command in LONG_RUNNING:
        yield
        return
    plugins_chosen = "PYDANTIC_DISABLE_PLUGINS" in os.environ
    collecting = gc.isenabled()
    if not plugins_chosen:
        os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
        if not plugins_chosen:
            os.environ.pop("PYDANTIC_DISABLE_PLUGINS", None)


# ------------------------------------------------------------------------------------------------- main


def _output_closed() -> bool:
    """Whether stdout is a pipe whose reading end is closed (Linux reports an error on its write end)."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # not a file descriptor (captured output)
        return False


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the process exit code (docs/architecture.md "Exit codes").

    A closed stdout ends the command quietly with ``OUTPUT_CLOSED``, however the write that found it
    was reported (``BrokenPipeError``, or click's own ``exit(1)`` for it); stdout then points at
    ``/dev/null`` so that the interpreter's last flush has nowhere to fail.
    """
    try:
        return _main(argv)
    except (BrokenPipeError, SystemExit):
        if not _output_closed():
            raise
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return OUTPUT_CLOSED


def _main(argv: list[str] | None) -> int:
    from typer._click.exceptions import ClickException, NoArgsIsHelpError

    args = sys.argv[1:] if argv is None else argv
    as_json = "--json" in args
    command = args[0] if args else None
    try:
        with _short_command(command):
            result = build_app(command)(args=args, prog_name="specialists", standalone_mode=False)
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
