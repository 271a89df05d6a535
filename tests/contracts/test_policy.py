"""The automation policy and the effective-tier rule, checked over the whole input space."""

from __future__ import annotations

import itertools

import pytest
from pydantic import ValidationError

from contracts.enums import AutomationMode, RiskLevel, Tier
from contracts.errors import InvalidInput, Refused
from contracts.policy import AutomationPolicy, TierDecision, effective_tier

ALL_POLICIES = [
    AutomationPolicy(mode=mode, maximum_automatic_tier=ceiling)
    for mode in AutomationMode
    for ceiling in (Tier.RECOMMEND, Tier.READ_ONLY)
]
HIGH = {RiskLevel.HIGH, RiskLevel.CRITICAL}


def expected_automatic(policy: AutomationPolicy, risk: RiskLevel, analysis_only: bool) -> Tier | None:
    """The rule of docs/architecture.md "Run lifecycle" written as a plain table lookup (None = refused)."""
    if policy.mode is AutomationMode.OFF:
        return None
    if policy.mode is AutomationMode.RECOMMEND:
        return Tier.RECOMMEND
    if policy.maximum_automatic_tier is Tier.RECOMMEND:
        return Tier.RECOMMEND
    if risk in HIGH and not analysis_only:
        return Tier.RECOMMEND
    return Tier.READ_ONLY


def test_default_policy_is_mode_recommend_with_ceiling_recommend() -> None:
    policy = AutomationPolicy()
    assert policy.mode is AutomationMode.RECOMMEND
    assert policy.maximum_automatic_tier is Tier.RECOMMEND


@pytest.mark.parametrize("ceiling", [Tier.WORKTREE, Tier.PR_READY])
def test_a_ceiling_above_read_only_is_refused(ceiling: Tier) -> None:
    with pytest.raises(ValidationError, match="can never exceed 'read_only'"):
        AutomationPolicy(mode=AutomationMode.GUARDED, maximum_automatic_tier=ceiling)


@pytest.mark.parametrize(
    ("policy", "risk", "analysis_only"),
    list(itertools.product(ALL_POLICIES, RiskLevel, [False, True])),
    ids=lambda v: (
        getattr(v, "value", str(v))
        if not isinstance(v, AutomationPolicy)
        else f"{v.mode.value}-{v.maximum_automatic_tier.value}"
    ),
)
def test_automatic_tier_follows_the_policy_table(
    policy: AutomationPolicy, risk: RiskLevel, analysis_only: bool
) -> None:
    expected = expected_automatic(policy, risk, analysis_only)
    if expected is None:
        with pytest.raises(Refused) as refused:
            effective_tier(
                requested=None,
                automatic=True,
                risk=risk,
                analysis_only=analysis_only,
                policy=policy,
            )
        assert refused.value.code == "automation_off"
        return
    decision = effective_tier(
        requested=None, automatic=True, risk=risk, analysis_only=analysis_only, policy=policy
    )
    assert decision.tier is expected
    assert decision.automatic
    assert not decision.requires_approval
    assert decision.reasons
    # Invariants that hold whatever the table says.
    assert decision.tier.rank <= Tier.READ_ONLY.rank
    assert decision.tier.rank <= policy.maximum_automatic_tier.rank


@pytest.mark.parametrize(
    ("policy", "risk", "analysis_only", "requested"),
    list(itertools.product(ALL_POLICIES, RiskLevel, [False, True], Tier)),
    ids=str,
)
def test_operator_runs_get_the_requested_tier_and_edit_tiers_need_approval(
    policy: AutomationPolicy, risk: RiskLevel, analysis_only: bool, requested: Tier
) -> None:
    if analysis_only and requested.rank > Tier.READ_ONLY.rank:
        with pytest.raises(Refused) as refused:
            effective_tier(
                requested=requested,
                automatic=False,
                risk=risk,
                analysis_only=analysis_only,
                policy=policy,
            )
        assert refused.value.code == "analysis_only_ceiling"
        return
    decision = effective_tier(
        requested=requested, automatic=False, risk=risk, analysis_only=analysis_only, policy=policy
    )
    assert decision == TierDecision(
        tier=requested,
        automatic=False,
        requires_approval=requested in (Tier.WORKTREE, Tier.PR_READY),
        reasons=decision.reasons,
    )


def test_high_risk_drops_an_automatic_guarded_run_to_recommend_with_a_reason() -> None:
    policy = AutomationPolicy(mode=AutomationMode.GUARDED, maximum_automatic_tier=Tier.READ_ONLY)
    decision = effective_tier(
        requested=None, automatic=True, risk=RiskLevel.CRITICAL, analysis_only=False, policy=policy
    )
    assert decision.tier is Tier.RECOMMEND
    assert any("critical risk reduces" in reason for reason in decision.reasons)


def test_analysis_only_research_task_keeps_read_only_at_high_risk() -> None:
    policy = AutomationPolicy(mode=AutomationMode.GUARDED, maximum_automatic_tier=Tier.READ_ONLY)
    decision = effective_tier(
        requested=None, automatic=True, risk=RiskLevel.HIGH, analysis_only=True, policy=policy
    )
    assert decision.tier is Tier.READ_ONLY
    assert any("analysis-only" in reason for reason in decision.reasons)


def test_automatic_with_an_explicit_tier_is_invalid_input() -> None:
    with pytest.raises(InvalidInput) as error:
        effective_tier(
            requested=Tier.READ_ONLY,
            automatic=True,
            risk=RiskLevel.LOW,
            analysis_only=False,
            policy=AutomationPolicy(),
        )
    assert error.value.code == "tier_conflict"
    assert error.value.exit_code == 2


def test_neither_tier_nor_automatic_is_invalid_input() -> None:
    with pytest.raises(InvalidInput) as error:
        effective_tier(
            requested=None,
            automatic=False,
            risk=RiskLevel.LOW,
            analysis_only=False,
            policy=AutomationPolicy(),
        )
    assert error.value.code == "tier_required"
