"""Route next (``contracts.queue_routing``): the persisted automatic policy applied to the queue's
highest-priority approved item — off refuses, recommend mode and high or critical risk record a
recommendation without a run, guarded mode yields at most an automatic read_only run — and the
queue's own checks of what arrives."""

from __future__ import annotations

import datetime as dt

import pytest

from contracts.enums import AutomationMode, RiskLevel, TaskType, Tier
from contracts.errors import Refused
from contracts.ids import new_run_id
from contracts.policy import AutomationPolicy
from contracts.queue_dispatch import dispatch_work_item
from contracts.queue_items import QueueItem, QueueRefused
from contracts.queue_messages import RoutedNext
from contracts.queue_routing import (
    check_next,
    next_item,
    route_next_decision,
    routed_problem,
    routed_run_input,
)
from contracts.routing import RouteDecision
from tests.contracts.test_queue_dispatch import approved

AT = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC)
GUARDED = AutomationPolicy(mode=AutomationMode.GUARDED, maximum_automatic_tier=Tier.READ_ONLY)


def _route(risk: RiskLevel = RiskLevel.LOW) -> RouteDecision:
    return RouteDecision(
        primary="database-optimizer",
        reviewer="code-reviewer",
        confidence=0.8,
        score=3.0,
        risk=risk,
        reasons=["keyword slow query"],
        alternatives=[],
        evidence_gaps=[],
        repo_alias="orders",
        task_type=TaskType.INVESTIGATE,
    )


def _items() -> list[QueueItem]:
    made = [
        approved(title="Low", value="L", urgency="L"),
        approved(title="Top", value="H", urgency="H"),
        approved(title="Middle", value="M", urgency="M"),
    ]
    return [item.model_copy(update={"key": f"ORD-{n}"}) for n, item in enumerate(made, start=1)]


def test_the_next_item_is_the_highest_priority_approved_one_and_none_is_refused() -> None:
    assert next_item(_items()).title == "Top"
    with pytest.raises(QueueRefused) as refused:
        next_item([])
    assert refused.value.code == "nothing_to_route"


def test_mode_off_refuses_and_recommend_mode_only_recommends() -> None:
    item = next_item(_items())
    with pytest.raises(Refused) as refused:
        route_next_decision(item, _route(), AutomationPolicy(mode=AutomationMode.OFF))
    assert refused.value.code == "automation_off"
    routed = route_next_decision(item, _route(), AutomationPolicy(mode=AutomationMode.RECOMMEND))
    assert (routed.tier, routed.policy_mode) == (Tier.RECOMMEND, AutomationMode.RECOMMEND)


def test_guarded_mode_yields_read_only_for_low_risk_and_a_recommendation_for_high_or_critical() -> None:
    item = next_item(_items())
    routed = route_next_decision(item, _route(), GUARDED)
    assert (routed.tier, routed.primary, routed.reviewer) == (
        Tier.READ_ONLY,
        "database-optimizer",
        "code-reviewer",
    )
    assert routed.reasons == ["policy mode guarded allows automatic runs up to read_only"]
    critical = route_next_decision(item, _route(RiskLevel.CRITICAL), GUARDED)
    assert critical.tier is Tier.RECOMMEND and "critical risk reduces" in critical.reasons[-1]
    # The item's own risk counts when it is above the route's.
    risky = approved(title="Risky", risk="high")
    routed = route_next_decision(risky, _route(), GUARDED)
    assert routed.tier is Tier.RECOMMEND and routed.risk is RiskLevel.HIGH
    assert routed.reasons[0] == "the item's own risk high is above the route's low"


def test_the_read_only_run_is_automatic_enqueued_and_the_queue_accepts_exactly_it() -> None:
    item = next_item(_items())
    routed = route_next_decision(item, _route(), GUARDED)
    run = routed_run_input(item, run_id=new_run_id(), actor="alice")
    assert run.automatic and run.requested_tier is None and run.enqueue
    assert run.work_item == dispatch_work_item(item) and run.created_by == "alice"
    assert routed_problem(item, routed, run, "alice") is None
    cases = {
        "carries its run": (routed, None),
        "not the automatic read_only run": (routed, run.model_copy(update={"automatic": False})),
        "never worktree": (routed.model_copy(update={"tier": Tier.WORKTREE}), run),
        "recommendations only": (routed.model_copy(update={"policy_mode": AutomationMode.RECOMMEND}), run),
        "only recommends it": (routed.model_copy(update={"risk": RiskLevel.HIGH}), run),
    }
    for words, (decision, sent) in cases.items():
        problem = routed_problem(item, decision, sent, "alice")
        assert problem is not None and words in problem, (words, problem)
    recommend = routed.model_copy(update={"tier": Tier.RECOMMEND})
    assert routed_problem(item, recommend, None, "alice") is None
    assert routed_problem(item, recommend, run, "alice") == "a recommendation starts no run"


def test_an_item_that_is_no_longer_next_is_refused_naming_the_next() -> None:
    items = _items()
    top = next_item(items)
    assert check_next(items, top.key) == top
    low = items[0]
    with pytest.raises(QueueRefused) as refused:
        check_next(items, low.key)
    assert refused.value.code == "not_next_item" and refused.value.extra["next"] == top.key
    assert isinstance(
        RoutedNext.model_validate(route_next_decision(top, _route(), GUARDED).to_json()), RoutedNext
    )
