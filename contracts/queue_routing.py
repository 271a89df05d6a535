"""Route next: the persisted automatic policy applied to the queue's highest-priority approved item
(docs/architecture.md "Goal queue", "Route next").

``queue route-next`` takes the first item of :func:`contracts.queue_priority.dispatch_order`, routes
its work item and asks :func:`contracts.policy.effective_tier` what an automatic run of it may be,
at the higher of the route's risk and the item's own:

* mode ``off`` refuses (``automation_off``);
* mode ``recommend``, or high or critical risk → a **recommendation**: the route and the reasons are
  recorded on the item (a ``routed`` event); no run starts and the item stays ``approved``;
* mode ``guarded`` → at most ``read_only`` (the policy's ceiling can never be an edit tier): a
  ``read_only`` outcome dispatches an automatic run of the item into a free slot, which the queue
  follows and reviews as any other run.

The queue checks every part again when the request arrives: the item is still the next one, the
decision is one this module can produce, and the run is exactly :func:`routed_run_input`.
"""

from __future__ import annotations

from typing import Final

from contracts.enums import AutomationMode, RiskLevel, Tier
from contracts.policy import AutomationPolicy, effective_tier
from contracts.queue_dispatch import dispatch_lineage, dispatch_work_item
from contracts.queue_items import QueueItem, QueueRefusalCode, QueueRefused
from contracts.queue_messages import RoutedNext
from contracts.queue_priority import dispatch_order
from contracts.routing import RouteDecision
from contracts.runs import RunInput, run_request_digest

ROUTED_TIERS: Final = (Tier.RECOMMEND, Tier.READ_ONLY)
"""What route-next may yield: never an edit tier."""


def next_item(items: list[QueueItem]) -> QueueItem:
    """The highest-priority approved item (value × urgency, then age; high risk included: the policy
    turns it into a recommendation). Raises :class:`QueueRefused` ``nothing_to_route`` when none is
    approved."""
    ordered = dispatch_order(items)
    if not ordered:
        raise QueueRefused(
            QueueRefusalCode.NOTHING_TO_ROUTE,
            "no approved item to route: approve one first (`specialists queue approve KEY`)",
        )
    return ordered[0]


def route_next_decision(item: QueueItem, route: RouteDecision, policy: AutomationPolicy) -> RoutedNext:
    """What the policy makes of ``item`` routed as ``route``. Raises
    :class:`contracts.errors.Refused` ``automation_off`` under mode ``off``."""
    risk = route.risk
    reasons = []
    if item.risk is not None and item.risk.rank > risk.rank:
        risk = item.risk
        reasons.append(f"the item's own risk {item.risk.value} is above the route's {route.risk.value}")
    decision = effective_tier(requested=None, automatic=True, risk=risk, analysis_only=False, policy=policy)
    assert decision.tier in ROUTED_TIERS  # the policy's ceiling is never above read_only
    return RoutedNext(
        tier=decision.tier,
        policy_mode=policy.mode,
        primary=route.primary,
        reviewer=route.reviewer,
        risk=risk,
        reasons=[*reasons, *decision.reasons],
    )


def routed_run_input(item: QueueItem, *, run_id: str, actor: str) -> RunInput:
    """The automatic run a ``read_only`` route-next starts for ``item``: its work item, no tier asked
    (the policy picks it again when the run captures its contract), created enqueued by ``actor``,
    with the item's lineage."""
    escalation_model, follows = dispatch_lineage(item)
    draft = RunInput(
        run_id=run_id,
        work_item=dispatch_work_item(item),
        automatic=True,
        enqueue=True,
        request_digest="",
        created_by=actor,
        escalation_model=escalation_model,
        follows=follows,
    )
    return draft.model_copy(update={"request_digest": run_request_digest(draft)})


def check_next(items: list[QueueItem], key: str) -> QueueItem:
    """The item ``key`` when it is still the next approved one. Raises :class:`QueueRefused`
    ``not_next_item`` (naming the next, if any) otherwise: items moved since the CLI looked."""
    ordered = dispatch_order(items)
    if not ordered or ordered[0].key != key:
        now = ordered[0].key if ordered else "none"
        raise QueueRefused(
            QueueRefusalCode.NOT_NEXT_ITEM,
            f"{key} is not the next approved item any more (the next is {now}): run route-next again",
            key=key,
            next=ordered[0].key if ordered else None,
        )
    return ordered[0]


def routed_problem(item: QueueItem, routed: RoutedNext, run: RunInput | None, actor: str) -> str | None:
    """Why a route-next of ``item`` (the next approved one) with ``routed`` and ``run`` is not one the
    queue accepts, or ``None`` when it is: the tier recommend (no run) or read_only (exactly
    :func:`routed_run_input`), and a high-risk item is only ever recommended."""
    if routed.tier not in ROUTED_TIERS:
        return f"route-next yields recommend or read_only, never {routed.tier.value}"
    if routed.tier is Tier.RECOMMEND:
        return None if run is None else "a recommendation starts no run"
    if item.risk is RiskLevel.HIGH or routed.risk.rank >= RiskLevel.HIGH.rank:
        return f"{item.key} is {routed.risk.value} risk: route-next only recommends it"
    if routed.policy_mode is not AutomationMode.GUARDED:
        return f"policy mode {routed.policy_mode.value} allows recommendations only"
    if run is None:
        return "a read_only route-next carries its run"
    expected = routed_run_input(item, run_id=run.run_id, actor=actor)
    if run.model_copy(update={"proof": None}) != expected:
        return f"the run is not the automatic read_only run {item.key} asks for (its work item and lineage)"
    return None
