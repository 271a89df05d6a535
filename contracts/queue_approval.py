"""The goal queue's approval contract (docs/architecture.md "Goal queue").

``proposal → approved`` needs every field of the item's contract: a repository, all six scope sections
non-empty (whitespace is empty), at least one evidence ref, and a value, an urgency and a risk from
their closed sets. :func:`spec_completeness` names every gap at once, in a fixed order; approving an
item with gaps is refused with ``item_contract_incomplete`` (exit 4) carrying them. At approval a
provisional key (``Q-<n>``), or a key of a series that is not the repository's, is renamed into the
repository's series, and the rename is an event. Pure: no I/O.
"""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, ConfigDict

from contracts.queue_items import (
    SCOPE_SECTIONS,
    ItemContent,
    QueueEventKind,
    QueueItem,
    QueueRefusalCode,
    QueueRefused,
    key_series,
)
from contracts.queue_keys import KeyAllocator
from contracts.queue_transitions import Mover, QueueMove, apply_move, check_move

GAP_ORDER = (
    "repo_alias",
    *(f"scope.{name}" for name in SCOPE_SECTIONS),
    "evidence",
    "value",
    "urgency",
    "risk",
)
"""Every gap there can be, in the order they are named."""


class SpecCompleteness(BaseModel):
    """``{"complete": bool, "gaps": [...]}``: whether the item's contract is complete, and each field
    it lacks (from :data:`GAP_ORDER`, in that order)."""

    model_config = ConfigDict(frozen=True)

    complete: bool
    gaps: list[str]


def spec_completeness(item: ItemContent) -> SpecCompleteness:
    """The gaps of ``item`` (a proposal or an item) against the approval contract. Pure; raises nothing."""
    gaps: list[str] = []
    if item.repo_alias is None:
        gaps.append("repo_alias")
    gaps += [f"scope.{name}" for name in item.scope.empty_sections()]
    if not item.evidence:
        gaps.append("evidence")
    for name in ("value", "urgency", "risk"):
        if getattr(item, name) is None:
            gaps.append(name)
    return SpecCompleteness(complete=not gaps, gaps=gaps)


def check_approvable(item: QueueItem) -> None:
    """Raise :class:`QueueRefused` ``item_contract_incomplete`` naming every gap of ``item`` (also as
    ``gaps`` and ``spec`` data) unless its contract is complete."""
    spec = spec_completeness(item)
    if not spec.complete:
        raise QueueRefused(
            QueueRefusalCode.ITEM_CONTRACT_INCOMPLETE,
            f"{item.key} cannot be approved: its contract lacks {', '.join(spec.gaps)}",
            key=item.key,
            gaps=spec.gaps,
            spec=spec.model_dump(),
        )


def approve(
    item: QueueItem,
    allocator: KeyAllocator,
    *,
    actor: str,
    at: dt.datetime,
    registered_series: str | None = None,
) -> tuple[QueueItem, KeyAllocator]:
    """``item`` approved by ``actor``, and the allocator after any rename.

    In order: the move must be allowed (an operator's ``approve`` from ``proposal``), then the contract
    complete; then, when the key is provisional or of another series than the repository's
    (``registered_series``, else the one the allocator derives), the item gets the next key of that
    series with a ``renamed`` event ``{"from", "to"}``; last the ``moved`` event. Raises
    :class:`QueueRefused` ``transition_refused`` or ``item_contract_incomplete`` (nothing changes), or as
    :meth:`KeyAllocator.series_for`.
    """
    check_move(item.status, QueueMove.APPROVE, Mover.OPERATOR, key=item.key)
    check_approvable(item)
    assert item.repo_alias is not None  # a complete contract names its repository
    allocator, series = allocator.series_for(item.repo_alias, registered_series)
    if key_series(item.key) != series:
        old_key = item.key
        allocator, new_key = allocator.allocate(item.repo_alias, registered_series)
        item = item.with_event(
            QueueEventKind.RENAMED, at, actor, {"from": old_key, "to": new_key}, key=new_key
        )
    return apply_move(item, QueueMove.APPROVE, Mover.OPERATOR, at=at, actor=actor), allocator
