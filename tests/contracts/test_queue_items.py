"""Goal-queue items: what a proposal, an item and an update accept, and what each refuses (never cut)."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from pydantic import ValidationError

from contracts.constants import MAX_DESCRIPTION_CHARS
from contracts.enums import RiskLevel, Tier
from contracts.queue_items import (
    MAX_SCOPE_CHARS,
    MAX_SCOPE_SECTION_CHARS,
    SCOPE_SECTIONS,
    DispatchedRun,
    DispatchKind,
    Grade,
    ItemProposal,
    ItemScope,
    ItemUpdate,
    QueueBlocker,
    QueueEventKind,
    QueueItem,
    QueueRefused,
    QueueSettings,
    QueueStatus,
    RunOutcome,
    apply_update,
    new_item,
    scope_description,
)
from contracts.work_item import WorkItem

AT = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)
LATER = AT + dt.timedelta(minutes=5)
RUN = "SOR-0123456789ABCDEF"


def proposal(**fields: object) -> ItemProposal:
    return ItemProposal.model_validate({"title": "Orders API times out", **fields})


def test_a_proposal_needs_only_a_title_and_defaults_to_a_read_only_proposal() -> None:
    item = new_item(proposal(), key="Q-1", at=AT, actor="alice")
    assert item.status is QueueStatus.PROPOSAL
    assert item.tier is Tier.READ_ONLY
    assert item.scope == ItemScope()
    assert (item.value, item.urgency, item.risk, item.repo_alias) == (None, None, None, None)
    assert item.created_at == item.updated_at == AT
    [event] = item.events
    assert (event.seq, event.kind, event.actor, event.data) == (
        1,
        QueueEventKind.ADDED,
        "alice",
        {"key": "Q-1"},
    )


@pytest.mark.parametrize("field", ["nonsense", "status", "key", "runs"])
def test_a_proposal_refuses_unknown_keys_and_fields_the_queue_owns(field: str) -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        proposal(**{field: "x"})


@pytest.mark.parametrize("title", ["", "   ", "line\nbreak", "bidi\u202e", "x" * 201])
def test_a_title_is_one_non_blank_line_of_at_most_200_characters(title: str) -> None:
    with pytest.raises(ValidationError, match="title"):
        proposal(title=title)


def test_recommend_is_not_a_queue_tier() -> None:
    with pytest.raises(ValidationError, match="not a queue tier"):
        proposal(tier="recommend")


def test_critical_is_not_an_item_risk_and_unknown_grades_are_refused() -> None:
    with pytest.raises(ValidationError, match="use low, medium or high"):
        proposal(risk="critical")
    with pytest.raises(ValidationError, match="value"):
        proposal(value="X")
    assert proposal(value="H", urgency="L", risk="high").risk is RiskLevel.HIGH


def test_grade_weights_are_three_two_one() -> None:
    assert [grade.weight for grade in Grade] == [3, 2, 1]


@pytest.mark.parametrize("ref", ["issue", "Issue:1", "issue: 1", "issue:a b", ":1"])
def test_evidence_refs_are_kind_colon_id_like_a_work_items(ref: str) -> None:
    with pytest.raises(ValidationError):
        proposal(evidence=[ref])
    with pytest.raises(ValidationError):
        WorkItem(title="t", evidence_refs=[ref])


def test_an_evidence_ref_listed_twice_is_refused_not_dropped() -> None:
    with pytest.raises(ValidationError, match=r"evidence\[2\] 'issue:1' is listed twice"):
        proposal(evidence=["issue:1", "file:a.py:3", "issue:1"])


def test_at_most_fifty_evidence_refs() -> None:
    assert len(proposal(evidence=[f"issue:{n}" for n in range(50)]).evidence) == 50
    with pytest.raises(ValidationError, match="at most 50"):
        proposal(evidence=[f"issue:{n}" for n in range(51)])


@pytest.mark.parametrize("section", SCOPE_SECTIONS)
def test_each_scope_section_keeps_line_feeds_and_tabs_and_refuses_other_controls(section: str) -> None:
    assert ItemScope.model_validate({section: "a\n\tb"}).section(section) == "a\n\tb"
    with pytest.raises(ValidationError, match=f"scope.{section} may contain line feeds and tabs"):
        ItemScope.model_validate({section: "a\r\nb"})
    with pytest.raises(ValidationError, match="U\\+001B"):
        ItemScope.model_validate({section: "\x1b[31m"})


def test_a_scope_section_over_its_bound_is_refused_not_cut() -> None:
    with pytest.raises(ValidationError, match=f"at most {MAX_SCOPE_SECTION_CHARS} characters"):
        ItemScope(problem="p" * (MAX_SCOPE_SECTION_CHARS + 1))


def test_all_six_sections_together_are_bounded() -> None:
    fits = ItemScope(problem="p" * 3_000, change="c" * 3_000)
    assert len(fits.problem) + len(fits.change) == MAX_SCOPE_CHARS
    with pytest.raises(ValidationError, match=f"6001 characters together; at most {MAX_SCOPE_CHARS}"):
        ItemScope(problem="p" * 3_000, change="c" * 3_000, tests="t")


def test_a_full_scope_fits_the_description_of_the_work_item_a_dispatch_builds() -> None:
    share = MAX_SCOPE_CHARS // len(SCOPE_SECTIONS)
    scope = ItemScope.model_validate({name: "x" * share for name in SCOPE_SECTIONS})
    description = scope_description(scope)
    WorkItem(title="t", description=description)
    assert len(description) < MAX_DESCRIPTION_CHARS - 1_500


def test_the_scope_description_shows_non_empty_sections_under_headings_in_order() -> None:
    scope = ItemScope(tests="pytest -k orders", problem="times out")
    assert scope_description(scope) == "Problem:\ntimes out\n\nTests:\npytest -k orders"


def test_whitespace_only_sections_count_as_empty() -> None:
    scope = ItemScope(problem=" \n\t", evidence="trace:1")
    assert scope.empty_sections() == ["problem", "change", "judgment_calls", "tests", "constraints"]


@pytest.mark.parametrize("key", ["ORD-0", "ORD-01", "O-1", "ORDERS-1", "ord-1", "Q-", "Q1", "QQ-1x"])
def test_a_malformed_key_is_refused(key: str) -> None:
    with pytest.raises(ValidationError, match="item key"):
        new_item(proposal(), key=key, at=AT, actor=None)


def test_an_item_has_a_blocker_exactly_when_blocked_and_a_failure_exactly_when_failed() -> None:
    base = new_item(proposal(repo_alias="orders"), key="ORD-1", at=AT, actor=None)
    with pytest.raises(ValidationError, match="blocker exactly when it is blocked"):
        base.with_event(QueueEventKind.MOVED, LATER, None, {}, status=QueueStatus.BLOCKED)
    with pytest.raises(ValidationError, match="blocker exactly when it is blocked"):
        base.with_event(QueueEventKind.MOVED, LATER, None, {}, blocker=QueueBlocker.PARKED)
    with pytest.raises(ValidationError, match="failure exactly when it is failed"):
        base.with_event(QueueEventKind.MOVED, LATER, None, {}, status=QueueStatus.FAILED)


def test_only_a_proposal_or_a_rejected_proposal_may_keep_a_provisional_key_or_lack_a_repository() -> None:
    thin = new_item(proposal(), key="Q-1", at=AT, actor=None)
    assert thin.with_event(QueueEventKind.MOVED, LATER, None, {}, status=QueueStatus.REJECTED).provisional
    with pytest.raises(ValidationError, match="needs a key of its repository's series, not Q-1"):
        thin.with_event(
            QueueEventKind.MOVED, LATER, None, {}, status=QueueStatus.APPROVED, repo_alias="orders"
        )
    keyed = new_item(proposal(), key="ORD-1", at=AT, actor=None)
    with pytest.raises(ValidationError, match="approved item needs a repository"):
        keyed.with_event(QueueEventKind.MOVED, LATER, None, {}, status=QueueStatus.APPROVED)


def test_with_event_numbers_events_and_sets_updated_at() -> None:
    item = new_item(proposal(), key="Q-1", at=AT, actor=None)
    moved = item.with_event(QueueEventKind.UPDATED, LATER, "bob", {"fields": ["title"]}, title="New title")
    assert [event.seq for event in moved.events] == [1, 2]
    assert (moved.title, moved.updated_at, moved.created_at) == ("New title", LATER, AT)
    assert item.title == "Orders API times out"


def test_an_item_round_trips_through_json_unchanged() -> None:
    item = new_item(
        proposal(repo_alias="orders", value="H", evidence=["issue:9"]), key="ORD-1", at=AT, actor=None
    )
    run = DispatchedRun(run_id=RUN, cycle=1, kind=DispatchKind.DISPATCH, at=AT)
    item = item.model_copy(update={"runs": [run]})
    assert QueueItem.model_validate(json.loads(item.model_dump_json())) == item


def test_a_dispatched_run_has_an_end_exactly_when_it_is_not_pending() -> None:
    with pytest.raises(ValidationError, match="ended_at exactly when"):
        DispatchedRun(run_id=RUN, cycle=1, kind=DispatchKind.DISPATCH, at=AT, outcome=RunOutcome.FAILED)
    with pytest.raises(ValidationError, match="ended_at exactly when"):
        DispatchedRun(run_id=RUN, cycle=1, kind=DispatchKind.DISPATCH, at=AT, ended_at=AT)
    with pytest.raises(ValidationError, match="run id"):
        DispatchedRun(run_id="SOR-short", cycle=1, kind=DispatchKind.DISPATCH, at=AT)


def test_an_update_sets_named_fields_and_sections_and_keeps_the_rest() -> None:
    item = new_item(
        proposal(scope={"problem": "slow", "tests": "t"}, value="L"), key="Q-1", at=AT, actor=None
    )
    update = ItemUpdate.model_validate(
        {"scope": {"problem": "times out", "change": "add an index"}, "value": "H", "risk": "low"}
    )
    updated = apply_update(item, update, at=LATER, actor="alice")
    assert updated.scope == ItemScope(problem="times out", change="add an index", tests="t")
    assert (updated.value, updated.risk, updated.title) == (Grade.H, RiskLevel.LOW, item.title)
    event = updated.events[-1]
    assert (event.kind, event.actor) == (QueueEventKind.UPDATED, "alice")
    assert event.data == {"fields": ["risk", "scope.problem", "scope.change", "value"]}


def test_an_update_clears_a_nullable_field_named_as_null() -> None:
    item = new_item(proposal(repo_alias="orders", urgency="M"), key="ORD-1", at=AT, actor=None)
    updated = apply_update(item, ItemUpdate.model_validate({"urgency": None}), at=LATER, actor=None)
    assert (updated.urgency, updated.repo_alias) == (None, "orders")


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({}, "names at least one field"),
        ({"title": None}, "title cannot be cleared"),
        ({"scope": {"tests": None}}, "scope.tests cannot be null"),
        ({"title": "a\nb"}, "title must be one line"),
        ({"tier": "recommend"}, "not a queue tier"),
        ({"risk": "critical"}, "use low, medium or high"),
        ({"evidence": ["issue:1", "issue:1"]}, "listed twice"),
        ({"scope": {"problem": "\x07"}}, "scope.problem may contain"),
        ({"status": "approved"}, "Extra inputs"),
    ],
)
def test_an_update_refuses_what_a_proposal_refuses(payload: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ItemUpdate.model_validate(payload)


def test_an_update_whose_result_breaks_the_scope_bound_is_refused() -> None:
    item = new_item(proposal(scope={"problem": "p" * 4_000}), key="Q-1", at=AT, actor=None)
    with pytest.raises(ValidationError, match="together; at most 6000"):
        apply_update(
            item, ItemUpdate.model_validate({"scope": {"change": "c" * 2_001}}), at=LATER, actor=None
        )


def test_only_a_proposal_can_be_updated() -> None:
    item = new_item(proposal(repo_alias="orders"), key="ORD-1", at=AT, actor=None)
    approved = item.model_copy(update={"status": QueueStatus.APPROVED})
    with pytest.raises(QueueRefused) as refused:
        apply_update(approved, ItemUpdate(title="x"), at=LATER, actor=None)
    assert refused.value.code == "not_a_proposal"
    assert refused.value.exit_code == 4
    assert refused.value.to_json() == {
        "error": {
            "code": "not_a_proposal",
            "message": "ORD-1 is approved: only a proposal can be updated",
            "key": "ORD-1",
            "status": "approved",
        }
    }


def test_queue_settings_default_to_three_slots_autopilot_off_and_ten_minutes_recovery() -> None:
    settings = QueueSettings()
    assert (settings.slots, settings.autopilot, settings.recovery_delay_seconds) == (3, False, 600)
    assert settings.escalation_model is None
    with pytest.raises(ValidationError):
        QueueSettings(slots=0)
    with pytest.raises(ValidationError, match="provider:name"):
        QueueSettings(escalation_model="bigmodel")
