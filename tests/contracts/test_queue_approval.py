"""The goal queue's approval contract: every gap named at once, approval refused with the gaps, and a
provisional key renamed into the repository's series at approval (recorded as an event)."""

from __future__ import annotations

import datetime as dt

import pytest

from contracts.queue_approval import GAP_ORDER, approve, check_approvable, spec_completeness
from contracts.queue_items import (
    SCOPE_SECTIONS,
    ItemProposal,
    QueueEventKind,
    QueueItem,
    QueueRefused,
    QueueStatus,
    new_item,
)
from contracts.queue_keys import KeyAllocator

AT = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)
LATER = AT + dt.timedelta(hours=1)
FULL_SCOPE = {name: f"the {name}" for name in SCOPE_SECTIONS}
COMPLETE = {
    "title": "Orders API times out",
    "repo_alias": "orders",
    "scope": FULL_SCOPE,
    "evidence": ["issue:123"],
    "value": "H",
    "urgency": "M",
    "risk": "low",
}


def added(allocator: KeyAllocator | None = None, **fields: object) -> tuple[QueueItem, KeyAllocator]:
    proposal = ItemProposal.model_validate({**COMPLETE, **fields})
    allocator, key = (allocator or KeyAllocator()).allocate(proposal.repo_alias)
    return new_item(proposal, key=key, at=AT, actor="alice"), allocator


def test_a_complete_item_has_no_gaps() -> None:
    item, _ = added()
    assert spec_completeness(item).model_dump() == {"complete": True, "gaps": []}


def test_a_title_only_proposal_names_every_gap_at_once_in_order() -> None:
    spec = spec_completeness(ItemProposal(title="Just an idea"))
    assert spec.complete is False
    assert (
        spec.gaps
        == list(GAP_ORDER)
        == [
            "repo_alias",
            "scope.problem",
            "scope.evidence",
            "scope.change",
            "scope.judgment_calls",
            "scope.tests",
            "scope.constraints",
            "evidence",
            "value",
            "urgency",
            "risk",
        ]
    )


@pytest.mark.parametrize("gap", GAP_ORDER)
def test_each_missing_field_is_exactly_one_gap(gap: str) -> None:
    fields: dict[str, object] = dict(COMPLETE)
    if gap.startswith("scope."):
        fields["scope"] = {**FULL_SCOPE, gap.removeprefix("scope."): "  \n"}
    elif gap == "evidence":
        fields["evidence"] = []
    else:
        fields[gap] = None
    assert spec_completeness(ItemProposal.model_validate(fields)).gaps == [gap]


def test_approval_with_gaps_is_refused_naming_them_and_changes_nothing() -> None:
    item, allocator = added(KeyAllocator(), repo_alias=None, evidence=[], risk=None)
    with pytest.raises(QueueRefused) as refused:
        approve(item, allocator, actor="alice", at=LATER)
    error = refused.value
    assert (error.code, error.exit_code) == ("item_contract_incomplete", 4)
    assert error.message == "Q-1 cannot be approved: its contract lacks repo_alias, evidence, risk"
    assert error.to_json()["error"]["gaps"] == ["repo_alias", "evidence", "risk"]
    assert error.extra["spec"] == {"complete": False, "gaps": ["repo_alias", "evidence", "risk"]}
    with pytest.raises(QueueRefused):
        check_approvable(item)
    assert item.status is QueueStatus.PROPOSAL


def test_approving_a_complete_item_moves_it_and_keeps_its_series_key() -> None:
    item, allocator = added()
    approved, after = approve(item, allocator, actor="alice", at=LATER)
    assert (approved.key, approved.status, approved.updated_at) == ("ORD-1", QueueStatus.APPROVED, LATER)
    assert after == allocator
    assert [event.kind for event in approved.events] == [QueueEventKind.ADDED, QueueEventKind.MOVED]
    assert approved.events[-1].actor == "alice"


def test_a_provisional_key_is_renamed_into_the_repositorys_series_at_approval() -> None:
    allocator, _ = KeyAllocator().allocate("orders")  # ORD-1 is taken
    proposal = ItemProposal.model_validate({**COMPLETE, "repo_alias": None})
    allocator, key = allocator.allocate(None)
    item = new_item(proposal, key=key, at=AT, actor="alice")
    item = item.model_copy(update={"repo_alias": "orders"})  # as an update would set it
    approved, after = approve(item, allocator, actor="bob", at=LATER)
    assert (key, approved.key) == ("Q-1", "ORD-2")
    renamed = [event for event in approved.events if event.kind is QueueEventKind.RENAMED]
    assert [(event.data, event.actor) for event in renamed] == [({"from": "Q-1", "to": "ORD-2"}, "bob")]
    assert [event.kind for event in approved.events][-2:] == [QueueEventKind.RENAMED, QueueEventKind.MOVED]
    assert after.allocate("orders")[1] == "ORD-3"
    assert after.allocate(None)[1] == "Q-2"


def test_a_key_of_another_series_is_renamed_when_the_repository_changed() -> None:
    item, allocator = added()
    item = item.model_copy(update={"repo_alias": "billing"})
    approved, _ = approve(item, allocator, actor="alice", at=LATER)
    assert approved.key == "BIL-1"


def test_the_registered_series_is_used_for_the_rename() -> None:
    item, allocator = added(repo_alias=None)
    item = item.model_copy(update={"repo_alias": "orders"})
    approved, _ = approve(item, allocator, actor="alice", at=LATER, registered_series="OPS")
    assert approved.key == "OPS-1"


@pytest.mark.parametrize("status", [s for s in QueueStatus if s is not QueueStatus.PROPOSAL])
def test_only_a_proposal_is_approved_and_the_refusal_is_the_transition_tables(status: QueueStatus) -> None:
    item, allocator = added()
    moved = item.model_copy(update={"status": status})
    with pytest.raises(QueueRefused) as refused:
        approve(moved, allocator, actor="alice", at=LATER)
    assert refused.value.code == "transition_refused"


def test_the_transition_is_checked_before_the_contract() -> None:
    item, allocator = added(risk=None)
    with pytest.raises(QueueRefused) as refused:
        approve(item.model_copy(update={"status": QueueStatus.REJECTED}), allocator, actor="a", at=LATER)
    assert refused.value.code == "transition_refused"
