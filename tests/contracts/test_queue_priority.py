"""Goal-queue dispatch: priority order (value × urgency, then age, then key), autopilot eligibility,
capacity occupancy with its refusal and override, the high-risk checkpoint, and the dispatch record."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from contracts.enums import RiskLevel
from contracts.output import ClosureStatus, ConfidenceBand, Finding, ReviewVerdict, SpecialistOutput
from contracts.queue_items import (
    DispatchKind,
    Grade,
    ItemFailure,
    QueueEventKind,
    QueueItem,
    QueueRefused,
    QueueSettings,
    QueueStatus,
    RunOutcome,
)
from contracts.queue_priority import (
    autopilot_picks,
    check_manual_dispatch,
    dispatch_order,
    occupancy,
    priority,
    record_dispatch,
    system_dispatch_block,
)
from contracts.queue_review import apply_review_decision, assess_review, decide_after_review, record_round
from contracts.queue_transitions import Mover, QueueMove, apply_move

AT = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)
ON = QueueSettings(autopilot=True)
RUN = "SOR-0000000000000001"


def failing_review() -> SpecialistOutput:
    return SpecialistOutput(
        role="code-reviewer",
        axis="correctness",
        inspected_evidence=[],
        findings=[Finding(severity=RiskLevel.HIGH, title="still broken")],
        confidence=0.8,
        confidence_band=ConfidenceBand.HIGH,
        closure=ClosureStatus.CLOSED,
        recommended_next_action="fix it",
        verdict=ReviewVerdict.AGREE,
    )


def item(
    key: str,
    value: str = "M",
    urgency: str = "M",
    *,
    age: int = 0,
    risk: str = "low",
    status: QueueStatus = QueueStatus.APPROVED,
    blocker: str | None = None,
    failure: str | None = None,
) -> QueueItem:
    return QueueItem.model_validate(
        {
            "key": key,
            "status": status,
            "title": f"item {key}",
            "repo_alias": "orders",
            "value": value,
            "urgency": urgency,
            "risk": risk,
            "created_at": AT - dt.timedelta(hours=age),
            "updated_at": AT,
            "blocker": blocker,
            "failure": failure,
        }
    )


@pytest.mark.parametrize(("value", "urgency"), list(itertools.product(Grade, Grade)))
def test_priority_is_value_weight_times_urgency_weight(value: Grade, urgency: Grade) -> None:
    assert priority(item("ORD-1", value.value, urgency.value)) == value.weight * urgency.weight


def test_a_thin_item_has_no_priority() -> None:
    assert priority(item("ORD-1").model_copy(update={"urgency": None})) is None


def test_approved_items_go_highest_priority_first_then_oldest_then_by_key() -> None:
    items = [
        item("ORD-10", "M", "M", age=5),
        item("ORD-2", "M", "M", age=5),
        item("ORD-3", "H", "L", age=1),  # 3
        item("ORD-4", "H", "H", age=0),  # 9
        item("ORD-5", "M", "M", age=9),  # 4, oldest of the fours
        item("BIL-7", "M", "M", age=5),
        item("ORD-6", "H", "H", status=QueueStatus.PROPOSAL),
        item("ORD-7", "H", "H", status=QueueStatus.ACTIVE),
    ]
    assert [i.key for i in dispatch_order(items)] == ["ORD-4", "ORD-5", "BIL-7", "ORD-2", "ORD-10", "ORD-3"]


def test_the_order_does_not_depend_on_the_order_items_are_listed_in() -> None:
    items = [item(f"ORD-{n}", "HML"[n % 3], "LMH"[n % 3], age=n % 2) for n in range(1, 9)]
    expected = [i.key for i in dispatch_order(items)]
    assert [i.key for i in dispatch_order(reversed(items))] == expected


def test_only_active_items_occupy_slots() -> None:
    items = [
        item(
            f"ORD-{n}",
            status=status,
            blocker="parked" if status is QueueStatus.BLOCKED else None,
            failure="run_failed" if status is QueueStatus.FAILED else None,
        )
        for n, status in enumerate(QueueStatus, start=1)
    ]
    fleet = occupancy(items, 3)
    assert fleet.occupied == [i.key for i in items if i.status is QueueStatus.ACTIVE]
    assert (fleet.text(), fleet.free, fleet.full) == ("1/3", 2, False)


def test_occupancy_beyond_the_slots_after_an_override_has_no_free_slot() -> None:
    fleet = occupancy([item(f"ORD-{n}", status=QueueStatus.ACTIVE) for n in range(1, 5)], 3)
    assert (fleet.text(), fleet.free, fleet.full) == ("4/3", 0, True)
    assert fleet.to_json() == {
        "occupied": ["ORD-1", "ORD-2", "ORD-3", "ORD-4"],
        "count": 4,
        "slots": 3,
        "free": 0,
    }


def test_a_manual_dispatch_at_capacity_is_refused_naming_the_occupancy() -> None:
    fleet = occupancy([item(f"ORD-{n}", status=QueueStatus.ACTIVE) for n in range(1, 4)], 3)
    with pytest.raises(QueueRefused) as refused:
        check_manual_dispatch(item("ORD-9"), fleet, confirm_high_risk=False, override_capacity=False)
    error = refused.value
    assert (error.code, error.exit_code) == ("capacity_full", 4)
    assert error.message == (
        "the queue is at capacity, 3/3 slots occupied (ORD-1, ORD-2, ORD-3): dispatch ORD-9 with "
        "--override-capacity to exceed it"
    )
    assert error.extra["occupancy"]["occupied"] == ["ORD-1", "ORD-2", "ORD-3"]


def test_an_override_dispatches_at_capacity() -> None:
    fleet = occupancy([item(f"ORD-{n}", status=QueueStatus.ACTIVE) for n in range(1, 4)], 3)
    check_manual_dispatch(item("ORD-9"), fleet, confirm_high_risk=False, override_capacity=True)


def test_a_high_risk_item_needs_the_operators_confirmation_even_with_free_slots() -> None:
    fleet = occupancy([], 3)
    with pytest.raises(QueueRefused) as refused:
        check_manual_dispatch(
            item("ORD-9", risk="high"), fleet, confirm_high_risk=False, override_capacity=False
        )
    assert refused.value.code == "high_risk_unconfirmed"
    assert refused.value.message == "ORD-9 is high risk: dispatch it with --confirm-high-risk"
    check_manual_dispatch(item("ORD-9", risk="high"), fleet, confirm_high_risk=True, override_capacity=False)


def test_a_confirmed_high_risk_dispatch_at_capacity_still_needs_the_override() -> None:
    fleet = occupancy([item(f"ORD-{n}", status=QueueStatus.ACTIVE) for n in range(1, 4)], 3)
    with pytest.raises(QueueRefused, match="capacity"):
        check_manual_dispatch(
            item("ORD-9", risk="high"), fleet, confirm_high_risk=True, override_capacity=False
        )


def test_autopilot_fills_the_free_slots_by_priority_skipping_high_risk_items() -> None:
    items = [
        item("ORD-1", status=QueueStatus.ACTIVE),
        item("ORD-2", "H", "H", risk="high"),
        item("ORD-3", "H", "M", risk="medium"),
        item("ORD-4", "L", "L"),
        item("ORD-5", "M", "M"),
    ]
    assert autopilot_picks(items, ON) == ["ORD-3", "ORD-5"]
    assert autopilot_picks(items, QueueSettings(autopilot=True, slots=1)) == []
    assert autopilot_picks(items, QueueSettings(autopilot=True, slots=10)) == ["ORD-3", "ORD-5", "ORD-4"]


def test_autopilot_off_starts_nothing() -> None:
    assert autopilot_picks([item("ORD-1")], QueueSettings()) == []


@pytest.mark.parametrize(
    ("settings", "risk", "active", "reason"),
    [
        (QueueSettings(), "low", 0, "autopilot is off: the queue starts nothing by itself"),
        (ON, "high", 0, "ORD-9 is high risk: it waits for an operator's dispatch with --confirm-high-risk"),
        (ON, "medium", 3, "no free slot (3/3 occupied)"),
        (ON, "medium", 2, None),
    ],
)
def test_the_queue_dispatches_by_itself_only_with_autopilot_on_below_high_risk_into_a_free_slot(
    settings: QueueSettings, risk: str, active: int, reason: str | None
) -> None:
    fleet = occupancy([item(f"ORD-{n}", status=QueueStatus.ACTIVE) for n in range(1, active + 1)], 3)
    assert system_dispatch_block(item("ORD-9", risk=risk), settings, fleet) == reason


def test_a_dispatch_records_the_run_the_move_and_a_dispatched_event() -> None:
    dispatched = record_dispatch(item("ORD-1"), run_id=RUN, mover=Mover.OPERATOR, actor="alice", at=AT)
    assert dispatched.status is QueueStatus.ACTIVE
    [run] = dispatched.runs
    assert (run.run_id, run.kind, run.cycle, run.escalated, run.outcome) == (
        RUN,
        DispatchKind.DISPATCH,
        1,
        False,
        RunOutcome.PENDING,
    )
    kinds = [event.kind for event in dispatched.events]
    assert kinds == [QueueEventKind.MOVED, QueueEventKind.DISPATCHED]
    assert dispatched.events[-1].data == {
        "run_id": RUN,
        "kind": "dispatch",
        "cycle": 1,
        "escalated": False,
        "model": None,
    }


def test_a_dispatch_of_an_item_that_may_not_move_is_the_tables_refusal() -> None:
    with pytest.raises(QueueRefused) as refused:
        record_dispatch(
            item("ORD-1", status=QueueStatus.PROPOSAL), run_id=RUN, mover=Mover.OPERATOR, actor="a", at=AT
        )
    assert refused.value.code == "transition_refused"


def test_a_recovery_and_a_redispatch_are_recorded_as_such() -> None:
    failed = item("ORD-1", status=QueueStatus.FAILED, failure=ItemFailure.RUN_FAILED.value)
    recovered = record_dispatch(failed, run_id=RUN, mover=Mover.SYSTEM, actor=None, at=AT)
    assert recovered.runs[-1].kind is DispatchKind.RECOVERY
    in_review = item("ORD-2", status=QueueStatus.AI_REVIEW)
    assert record_dispatch(in_review, run_id=RUN, mover=Mover.SYSTEM, actor=None, at=AT).runs[-1].kind is (
        DispatchKind.REDISPATCH
    )


def test_the_dispatch_after_an_escalation_uses_the_model_it_recorded() -> None:
    current = record_dispatch(
        item("ORD-1"), run_id="SOR-0000000000000001", mover=Mover.SYSTEM, actor=None, at=AT
    )
    for n in range(2, 5):
        run_id = current.runs[-1].run_id
        current = apply_move(current, QueueMove.REVIEW, Mover.SYSTEM, at=AT, actor=None)
        current = record_round(current, run_id, assess_review(failing_review()), AT)
        decision = decide_after_review(current, escalation_model="anthropic:bigger")
        current = apply_review_decision(current, decision, at=AT)
        current = record_dispatch(current, run_id=f"SOR-{n:016d}", mover=Mover.SYSTEM, actor=None, at=AT)
    last = current.runs[-1]
    assert (last.escalated, last.model) == (True, "anthropic:bigger")
    assert current.events[-1].data["model"] == "anthropic:bigger"


def test_a_send_back_from_human_review_is_the_first_dispatch_of_a_new_cycle() -> None:
    sent_back = record_dispatch(
        item("ORD-1", status=QueueStatus.HUMAN_REVIEW), run_id=RUN, mover=Mover.OPERATOR, actor="alice", at=AT
    )
    assert (sent_back.cycle, sent_back.runs[-1].cycle, sent_back.runs[-1].kind) == (
        2,
        2,
        DispatchKind.DISPATCH,
    )
