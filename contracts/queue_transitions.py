"""The goal queue's one transition table (docs/architecture.md "Goal queue").

Every move of an item is a row of :data:`TRANSITIONS`: from a status, by a named move, to a status,
made by an operator, by the queue itself (``system``) or by either; a move into ``blocked`` names the
blockers it may set, a move into ``failed`` the failure it records. The table is also the source of the
help text (:func:`transition_help`, :func:`move_help`) and of every refusal: a move that is not a row
for the item's status and the mover is refused with ``transition_refused`` (exit 4), naming the current
status and the allowed moves, which the refusal also carries as data (``allowed``).

Only an operator moves an item to ``done``. Pure: no I/O.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from contracts.queue_items import (
    ItemFailure,
    QueueBlocker,
    QueueEventKind,
    QueueItem,
    QueueRefusalCode,
    QueueRefused,
    QueueStatus,
)


class Mover(StrEnum):
    """Who makes a move: a registered human through a protected command, or the queue itself."""

    OPERATOR = "operator"
    SYSTEM = "system"


class QueueMove(StrEnum):
    """The named moves. ``approve``, ``reject``, ``dispatch``, ``block``, ``done``, ``park``,
    ``release`` and ``reopen`` are operator commands (``dispatch`` and ``block`` are also the queue's);
    ``review``, ``pass`` and ``fail`` are the queue's, from what a run did."""

    APPROVE = "approve"
    REJECT = "reject"
    DISPATCH = "dispatch"
    BLOCK = "block"
    REVIEW = "review"
    PASS = "pass"
    FAIL = "fail"
    DONE = "done"
    PARK = "park"
    RELEASE = "release"
    REOPEN = "reopen"


@dataclass(frozen=True)
class Transition:
    """One row of the table: ``source`` --``move``--> ``target``, by ``movers``; a sentence for help
    text; the blockers a move into ``blocked`` may set, the failure a move into ``failed`` records, and
    whether it starts a new review cycle."""

    source: QueueStatus
    move: QueueMove
    target: QueueStatus
    movers: frozenset[Mover]
    meaning: str
    blockers: frozenset[QueueBlocker] = frozenset()
    failure: ItemFailure | None = None
    new_cycle: bool = False
    """The move starts a new review cycle (an operator's release, re-open or send-back): the round
    cap, the escalation and the recoveries count afresh."""

    def by_text(self) -> str:
        """``operator``, ``system`` or ``operator or system``."""
        return " or ".join(mover.value for mover in Mover if mover in self.movers)

    def to_json(self) -> dict[str, Any]:
        """The row as JSON data: ``{"move", "to", "by", "blockers"}`` (blockers in table order)."""
        return {
            "move": self.move.value,
            "to": self.target.value,
            "by": [mover.value for mover in Mover if mover in self.movers],
            "blockers": [blocker.value for blocker in QueueBlocker if blocker in self.blockers],
        }

    def short_text(self) -> str:
        """``dispatch → active (operator or system)``, with the blockers of a move into blocked."""
        blockers = [blocker.value for blocker in QueueBlocker if blocker in self.blockers]
        detail = f"; {' | '.join(blockers)}" if blockers else ""
        return f"{self.move.value} → {self.target.value} ({self.by_text()}{detail})"


_OPERATOR: Final = frozenset({Mover.OPERATOR})
_SYSTEM: Final = frozenset({Mover.SYSTEM})
_EITHER: Final = frozenset({Mover.OPERATOR, Mover.SYSTEM})
_S = QueueStatus
_M = QueueMove

TRANSITIONS: Final[tuple[Transition, ...]] = (
    Transition(
        _S.PROPOSAL, _M.APPROVE, _S.APPROVED, _OPERATOR, "approve a proposal whose contract is complete"
    ),
    Transition(_S.PROPOSAL, _M.REJECT, _S.REJECTED, _OPERATOR, "reject a proposal"),
    Transition(_S.APPROVED, _M.DISPATCH, _S.ACTIVE, _EITHER, "start a run for the item in a free slot"),
    Transition(
        _S.APPROVED,
        _M.BLOCK,
        _S.BLOCKED,
        _EITHER,
        "hold the item: it waits behind other work or for a person's decision",
        blockers=frozenset({QueueBlocker.SERIALIZED, QueueBlocker.DECISION}),
    ),
    Transition(
        _S.ACTIVE, _M.REVIEW, _S.AI_REVIEW, _SYSTEM, "the run reached awaiting_decision: judge its review"
    ),
    Transition(
        _S.ACTIVE,
        _M.FAIL,
        _S.FAILED,
        _SYSTEM,
        "the run failed, expired or was cancelled",
        failure=ItemFailure.RUN_FAILED,
    ),
    Transition(_S.AI_REVIEW, _M.PASS, _S.HUMAN_REVIEW, _SYSTEM, "the review found nothing material: PASS"),
    Transition(
        _S.AI_REVIEW,
        _M.DISPATCH,
        _S.ACTIVE,
        _EITHER,
        "FAIL: reject the run and dispatch a new one carrying the findings",
    ),
    Transition(
        _S.AI_REVIEW,
        _M.FAIL,
        _S.FAILED,
        _SYSTEM,
        "FAIL at the review round cap",
        failure=ItemFailure.REVIEW_CAP_REACHED,
    ),
    Transition(
        _S.AI_REVIEW,
        _M.BLOCK,
        _S.BLOCKED,
        _SYSTEM,
        "the escalated round made no progress: hand the item to a person with the ledger",
        blockers=frozenset({QueueBlocker.DECISION}),
    ),
    Transition(_S.HUMAN_REVIEW, _M.DONE, _S.DONE, _OPERATOR, "accept the reviewed result: the item is done"),
    Transition(_S.HUMAN_REVIEW, _M.REJECT, _S.REJECTED, _OPERATOR, "reject the reviewed result and the item"),
    Transition(
        _S.HUMAN_REVIEW,
        _M.DISPATCH,
        _S.ACTIVE,
        _OPERATOR,
        "send the item back for another run",
        new_cycle=True,
    ),
    Transition(
        _S.FAILED, _M.DISPATCH, _S.ACTIVE, _EITHER, "recover: dispatch a new run after the failed one"
    ),
    Transition(
        _S.FAILED,
        _M.PARK,
        _S.BLOCKED,
        _OPERATOR,
        "park the item: nothing retries it",
        blockers=frozenset({QueueBlocker.PARKED}),
    ),
    Transition(
        _S.BLOCKED, _M.RELEASE, _S.APPROVED, _OPERATOR, "release the item back to approved", new_cycle=True
    ),
    Transition(_S.DONE, _M.REOPEN, _S.APPROVED, _OPERATOR, "re-open a done item", new_cycle=True),
)
"""The table (docs/architecture.md "Goal queue"); ``rejected`` is final."""

_BY_SOURCE_AND_MOVE: Final = {(row.source, row.move): row for row in TRANSITIONS}


def allowed_moves(status: QueueStatus, mover: Mover | None = None) -> list[Transition]:
    """The rows leaving ``status`` (made by ``mover``, when given), in table order."""
    return [row for row in TRANSITIONS if row.source is status and (mover is None or mover in row.movers)]


def _refuse(status: QueueStatus, attempted: str, mover: Mover, why: str, key: str | None) -> QueueRefused:
    rows = allowed_moves(status)
    who = f"{key} is {status.value}" if key else f"the item is {status.value}"
    listed = "; ".join(row.short_text() for row in rows)
    allowed = (
        f"allowed from {status.value}: {listed}" if rows else f"{status.value} is final: no move leaves it"
    )
    extra: dict[str, Any] = {
        "status": status.value,
        "attempted": attempted,
        "by": mover.value,
        "allowed": [row.to_json() for row in rows],
    }
    if key:
        extra["key"] = key
    return QueueRefused(QueueRefusalCode.TRANSITION_REFUSED, f"{who}: {why} ({allowed})", **extra)


def check_move(
    status: QueueStatus,
    move: QueueMove,
    mover: Mover,
    *,
    blocker: QueueBlocker | None = None,
    key: str | None = None,
) -> Transition:
    """The row for ``move`` from ``status`` by ``mover`` (``blocker``: the one a move into ``blocked``
    sets; it must be one the row allows, and no other move takes one).

    Raises :class:`QueueRefused` ``transition_refused`` naming the current status and the allowed
    moves (``key``, when given, is named too) when there is no such row, the mover may not make it, or
    the blocker does not fit.
    """
    row = _BY_SOURCE_AND_MOVE.get((status, move))
    if row is None:
        raise _refuse(status, move.value, mover, f"{move.value!r} is not a move from {status.value}", key)
    if mover not in row.movers:
        why = f"{move.value} from {status.value} is the {row.by_text()}'s move only"
        raise _refuse(status, move.value, mover, why, key)
    _check_blocker(row, blocker, status, mover, key)
    return row


def check_transition(
    status: QueueStatus,
    target: QueueStatus,
    mover: Mover,
    *,
    blocker: QueueBlocker | None = None,
    key: str | None = None,
) -> Transition:
    """The row from ``status`` to ``target`` by ``mover``; refused as :func:`check_move` refuses."""
    rows = [row for row in allowed_moves(status) if row.target is target]
    if not rows:
        why = f"it cannot move to {target.value}"
        raise _refuse(status, target.value, mover, why, key)
    row = rows[0]
    if mover not in row.movers:
        why = f"{status.value} → {target.value} is the {row.by_text()}'s move only"
        raise _refuse(status, target.value, mover, why, key)
    _check_blocker(row, blocker, status, mover, key)
    return row


def _check_blocker(
    row: Transition, blocker: QueueBlocker | None, status: QueueStatus, mover: Mover, key: str | None
) -> None:
    if row.blockers and blocker not in row.blockers:
        choices = " | ".join(b.value for b in QueueBlocker if b in row.blockers)
        given = blocker.value if blocker is not None else "none"
        why = f"{row.move.value} to blocked needs the blocker {choices}, not {given}"
        raise _refuse(status, row.move.value, mover, why, key)
    if not row.blockers and blocker is not None:
        why = f"{row.move.value} → {row.target.value} sets no blocker (given {blocker.value})"
        raise _refuse(status, row.move.value, mover, why, key)


def apply_move(
    item: QueueItem,
    move: QueueMove,
    mover: Mover,
    *,
    at: dt.datetime,
    actor: str | None,
    blocker: QueueBlocker | None = None,
    reason: str = "",
    data: dict[str, Any] | None = None,
) -> QueueItem:
    """``item`` after ``move``: the new status, the blocker (``blocked`` only) and the failure
    (``failed`` only) set or cleared, the next review cycle when the move starts one, and a ``moved``
    event ``{"from", "to", "move", "by", ...}`` with the blocker, failure, new ``cycle`` and ``reason``
    when there are any and ``data`` merged in.

    Raises :class:`QueueRefused` as :func:`check_move`; ``pydantic.ValidationError`` when the moved item
    breaks a rule of :class:`QueueItem` (e.g. a provisional key outside ``proposal``).
    """
    row = check_move(item.status, move, mover, blocker=blocker, key=item.key)
    event: dict[str, Any] = {
        "from": item.status.value,
        "to": row.target.value,
        "move": move.value,
        "by": mover.value,
    }
    if blocker is not None:
        event["blocker"] = blocker.value
    if row.failure is not None:
        event["failure"] = row.failure.value
    cycle = item.cycle + 1 if row.new_cycle else item.cycle
    if row.new_cycle:
        event["cycle"] = cycle
    if reason:
        event["reason"] = reason
    event.update(data or {})
    return item.with_event(
        QueueEventKind.MOVED,
        at,
        actor,
        event,
        status=row.target,
        blocker=blocker,
        failure=row.failure,
        cycle=cycle,
    )


def move_help(move: QueueMove) -> str:
    """Help text for ``move``: one line per row, ``from → to (by …): meaning``."""
    lines = []
    for row in TRANSITIONS:
        if row.move is move:
            blockers = " | ".join(b.value for b in QueueBlocker if b in row.blockers)
            sets = f", sets {blockers}" if blockers else ""
            lines.append(f"{row.source.value} → {row.target.value} (by {row.by_text()}{sets}): {row.meaning}")
    return "\n".join(lines)


def transition_help() -> str:
    """The whole table as help text: one line per row, grouped by status, then the final statuses."""
    lines = [
        f"{row.source.value:<13} {row.move.value:<9} → {row.target.value:<13} {row.by_text():<19} "
        + row.meaning
        for row in TRANSITIONS
    ]
    final = [status.value for status in QueueStatus if not allowed_moves(status)]
    lines.append(f"final: {', '.join(final)}")
    return "\n".join(lines)
