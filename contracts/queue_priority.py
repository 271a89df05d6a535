"""Dispatch priority, autopilot eligibility and capacity of the goal queue (docs/architecture.md
"Goal queue").

* **Priority** is value weight × urgency weight (H=3, M=2, L=1: 1..9). Approved items are dispatched
  highest priority first, then oldest first (``created_at``), then by key (series, then number), so
  the order is total and deterministic.
* **Capacity.** The queue has ``slots`` (default 3); an ``active`` item occupies one (its run is
  dispatched and not yet judged). A manual dispatch at capacity is refused with ``capacity_full``
  naming the occupancy unless the operator overrides it (``--override-capacity``).
* **Risk.** The queue never dispatches a high-risk item by itself — not to fill a slot, not to
  re-dispatch after a FAIL, not to recover a failed run; an operator dispatches it with
  ``--confirm-high-risk`` (else ``high_risk_unconfirmed``).
* **Autopilot off** stops everything the queue would start by itself: :func:`system_dispatch_block`
  names why the queue may not dispatch an item now, :func:`autopilot_picks` which approved items it
  dispatches into the free slots.

Pure: no I/O.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Final

from pydantic import BaseModel, ConfigDict

from contracts.enums import RiskLevel
from contracts.queue_items import (
    DispatchedRun,
    DispatchKind,
    QueueEventKind,
    QueueItem,
    QueueRefusalCode,
    QueueRefused,
    QueueSettings,
    QueueStatus,
    key_number,
    key_series,
)
from contracts.queue_review import escalated_dispatch
from contracts.queue_transitions import Mover, QueueMove, apply_move

OCCUPYING_STATUSES = frozenset({QueueStatus.ACTIVE})
"""The statuses that hold a slot."""


def priority(item: QueueItem) -> int | None:
    """Value weight × urgency weight (1..9), or ``None`` while either is unset (a thin proposal)."""
    if item.value is None or item.urgency is None:
        return None
    return item.value.weight * item.urgency.weight


def dispatch_sort_key(item: QueueItem) -> tuple[int, dt.datetime, str, int]:
    """The sort key of the dispatch order: priority descending (unset last), age, key."""
    return (-(priority(item) or 0), item.created_at, key_series(item.key), key_number(item.key))


def dispatch_order(items: Iterable[QueueItem]) -> list[QueueItem]:
    """The ``approved`` items in dispatch order (the keys ``queue list`` shows as ready to dispatch)."""
    return sorted((item for item in items if item.status is QueueStatus.APPROVED), key=dispatch_sort_key)


def needs_confirmation(item: QueueItem) -> bool:
    """True for a high-risk item: only an operator's ``--confirm-high-risk`` dispatches it."""
    return item.risk is RiskLevel.HIGH


class Occupancy(BaseModel):
    """The queue's fleet line: which items occupy slots (in dispatch order of their keys) and how many
    slots there are."""

    model_config = ConfigDict(frozen=True)

    occupied: list[str]
    slots: int

    @property
    def free(self) -> int:
        """Free slots (never below 0: an override may put more items in than there are slots)."""
        return max(0, self.slots - len(self.occupied))

    @property
    def full(self) -> bool:
        """True when no slot is free."""
        return self.free == 0

    def text(self) -> str:
        """``occupied/slots``, e.g. ``2/3``."""
        return f"{len(self.occupied)}/{self.slots}"

    def to_json(self) -> dict[str, object]:
        """``{"occupied": [keys], "count", "slots", "free"}``."""
        return {
            "occupied": self.occupied,
            "count": len(self.occupied),
            "slots": self.slots,
            "free": self.free,
        }


def occupancy(items: Iterable[QueueItem], slots: int) -> Occupancy:
    """Which of ``items`` occupy a slot, out of ``slots``."""
    held = sorted(
        (item for item in items if item.status in OCCUPYING_STATUSES),
        key=lambda item: (key_series(item.key), key_number(item.key)),
    )
    return Occupancy(occupied=[item.key for item in held], slots=slots)


def check_manual_dispatch(
    item: QueueItem, fleet: Occupancy, *, confirm_high_risk: bool, override_capacity: bool
) -> None:
    """Whether an operator may dispatch ``item`` now, beyond the transition table (checked first by
    the caller): a high-risk item needs ``confirm_high_risk``; a full queue needs
    ``override_capacity``.

    Raises :class:`QueueRefused` ``high_risk_unconfirmed`` or ``capacity_full`` (with the occupancy as
    data); the risk is checked first.
    """
    if needs_confirmation(item) and not confirm_high_risk:
        raise QueueRefused(
            QueueRefusalCode.HIGH_RISK_UNCONFIRMED,
            f"{item.key} is high risk: dispatch it with --confirm-high-risk",
            key=item.key,
            risk=RiskLevel.HIGH.value,
        )
    if fleet.full and not override_capacity:
        raise QueueRefused(
            QueueRefusalCode.CAPACITY_FULL,
            f"the queue is at capacity, {fleet.text()} slots occupied ({', '.join(fleet.occupied)}): "
            f"dispatch {item.key} with --override-capacity to exceed it",
            key=item.key,
            occupancy=fleet.to_json(),
        )


def system_dispatch_block(item: QueueItem, settings: QueueSettings, fleet: Occupancy) -> str | None:
    """Why the queue may not dispatch ``item`` by itself now (fill a slot, re-dispatch after a FAIL,
    recover a failed run), or ``None`` when it may. In order: autopilot off, high risk, no free slot."""
    if not settings.autopilot:
        return "autopilot is off: the queue starts nothing by itself"
    if needs_confirmation(item):
        return f"{item.key} is high risk: it waits for an operator's dispatch with --confirm-high-risk"
    if fleet.full:
        return f"no free slot ({fleet.text()} occupied)"
    return None


def autopilot_picks(items: Iterable[QueueItem], settings: QueueSettings) -> list[str]:
    """The keys of the approved items the queue dispatches now, in order: with autopilot on, the
    highest-priority approved items that are not high risk, as many as there are free slots; none with
    autopilot off."""
    pool = list(items)
    if not settings.autopilot:
        return []
    free = occupancy(pool, settings.slots).free
    eligible = [item.key for item in dispatch_order(pool) if not needs_confirmation(item)]
    return eligible[:free]


_KIND_BY_SOURCE: Final = {
    QueueStatus.APPROVED: DispatchKind.DISPATCH,
    QueueStatus.HUMAN_REVIEW: DispatchKind.DISPATCH,
    QueueStatus.AI_REVIEW: DispatchKind.REDISPATCH,
    QueueStatus.FAILED: DispatchKind.RECOVERY,
}


def record_dispatch(
    item: QueueItem,
    *,
    run_id: str,
    mover: Mover,
    actor: str | None,
    at: dt.datetime,
    autopilot: bool = False,
) -> QueueItem:
    """``item`` after the ``dispatch`` move that started run ``run_id``: ``active``, the run appended to
    its runs (``dispatch`` from approved or a send-back, ``redispatch`` after a FAIL, ``recovery`` after a
    failed run; escalated, with the model the escalation recorded, while its cycle's escalation is
    pending), the ``moved`` event and a ``dispatched`` event ``{"run_id", "kind", "cycle", "escalated",
    "model"}`` (and ``"autopilot": true`` for a run the queue's autopilot started, ``autopilot``).

    The caller checks the slot and risk rules first (:func:`check_manual_dispatch` for an operator,
    :func:`system_dispatch_block` for the queue). Raises :class:`QueueRefused` ``transition_refused`` as
    :func:`contracts.queue_transitions.check_move`, ``pydantic.ValidationError`` for a malformed run id.
    """
    kind = _KIND_BY_SOURCE.get(item.status, DispatchKind.DISPATCH)
    moved = apply_move(item, QueueMove.DISPATCH, mover, at=at, actor=actor)
    escalated = escalated_dispatch(moved)
    escalation = moved.cycle_escalation()
    run = DispatchedRun(
        run_id=run_id,
        cycle=moved.cycle,
        kind=kind,
        escalated=escalated,
        model=escalation.model if escalated and escalation is not None else None,
        at=at,
        autopilot=autopilot,
    )
    data = {
        "run_id": run_id,
        "kind": kind.value,
        "cycle": moved.cycle,
        "escalated": escalated,
        "model": run.model,
        **({"autopilot": True} if autopilot else {}),
    }
    return moved.with_event(QueueEventKind.DISPATCHED, at, actor, data, runs=[*moved.runs, run])
