"""``--wait`` for run commands: the ``--timeout`` option, what is said when answers stop, and how
the wait ends (docs/architecture.md "Workers and waiting", "Exit codes")."""

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from contracts.errors import InvalidInput

if TYPE_CHECKING:
    from collections.abc import Callable

    from contracts.errors import ServiceUnavailable
    from contracts.runs import RunView

MAX_WAIT_SECONDS = 366 * 24 * 3600

TimeoutOption = Annotated[
    int | None,
    typer.Option(
        "--timeout",
        min=1,
        max=MAX_WAIT_SECONDS,
        metavar="SECONDS",
        help="With --wait: give up after SECONDS (exit 8); the run is left as it is.",
    ),
]


def check_timeout(wait: bool, timeout: int | None) -> None:
    if timeout is not None and not wait:
        raise InvalidInput("timeout_needs_wait", "--timeout SECONDS bounds --wait: give --wait too")


def unanswered(waited_on: str) -> "Callable[[ServiceUnavailable | None], None]":
    """What ``--wait`` says on stderr when answers stop (and when they come back) about
    ``waited_on`` (a run's or a team's id)."""

    def say(error: "ServiceUnavailable | None") -> None:
        if error is None:
            sys.stderr.write(f"{waited_on}: answering again\n")
        else:
            sys.stderr.write(f"{waited_on}: still waiting, nobody answers ({error.message})\n")
        sys.stderr.flush()

    return say


def waited(view: "RunView", timeout: int | None) -> "RunView":
    """The view ``--wait`` ended with: :class:`WaitTimedOut` (exit 8) when it is still neither
    waiting for a person nor finished."""
    from contracts.errors import WaitTimedOut
    from control.runs import settled

    if not settled(view):
        raise WaitTimedOut(
            "wait_timeout",
            f"run {view.run_id} is still {view.status.value} after --timeout {timeout} s; it is left "
            f"as it is (`specialists show {view.run_id}` follows it)",
        )
    return view


def exit_unless_successful(view: "RunView") -> None:
    """After ``--wait`` printed the final view: exit 7 when the run ended ``failed``, ``expired``
    or ``cancelled``, with its error on stderr."""
    from contracts.errors import RUN_ENDED_WITHOUT_SUCCESS_EXIT_CODE
    from control.runs import ENDED_WITHOUT_SUCCESS

    if view.status not in ENDED_WITHOUT_SUCCESS:
        return
    from control.output import visible_controls

    # The message may hold what a model or provider wrote: its control characters are shown, not sent.
    detail = f": {view.error.type}: {view.error.message}" if view.error is not None else ""
    sys.stderr.write(f"run {view.run_id} ended {view.status.value}{visible_controls(detail)}\n")
    raise typer.Exit(RUN_ENDED_WITHOUT_SUCCESS_EXIT_CODE)
