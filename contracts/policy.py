"""Automation policy and the effective-tier rule (docs/architecture.md "Run lifecycle"). Pure: no I/O.

The rule, in order:

* An operator-created run gets the tier the operator asked for; ``worktree`` and ``pr_ready`` still
  wait for an explicit approval of the exact contract digest.
* An automatic run (the policy, not an operator, picks the tier): mode ``off`` refuses it; mode
  ``recommend`` yields ``recommend``; mode ``guarded`` yields the policy ceiling, which can never be
  above ``read_only``. High or critical risk drops an automatic run to ``recommend`` — except an
  analysis-only research-case task, which keeps ``read_only`` (and can never get more).
* ``worktree`` and ``pr_ready`` are never automatic; an analysis-only task never exceeds ``read_only``.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, field_validator

from contracts.enums import AutomationMode, RiskLevel, Tier
from contracts.errors import InvalidInput, Refused

AUTOMATIC_TIERS: Final = frozenset({Tier.RECOMMEND, Tier.READ_ONLY})
APPROVAL_TIERS: Final = frozenset({Tier.WORKTREE, Tier.PR_READY})
_HIGH_RISK: Final = frozenset({RiskLevel.HIGH, RiskLevel.CRITICAL})


class AutomationPolicy(BaseModel):
    """The deployment's automation policy. Default: mode ``recommend``, ceiling ``recommend``.

    Raises ``pydantic.ValidationError`` when ``maximum_automatic_tier`` is above ``read_only``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: AutomationMode = AutomationMode.RECOMMEND
    maximum_automatic_tier: Tier = Tier.RECOMMEND

    @field_validator("maximum_automatic_tier")
    @classmethod
    def _ceiling_never_above_read_only(cls, value: Tier) -> Tier:
        if value not in AUTOMATIC_TIERS:
            raise ValueError(
                f"maximum_automatic_tier {value.value!r} is not allowed: automation can never exceed "
                "'read_only'"
            )
        return value


class TierDecision(BaseModel):
    """The tier a run gets and why. ``requires_approval`` is true for ``worktree``/``pr_ready``."""

    model_config = ConfigDict(frozen=True)

    tier: Tier
    automatic: bool
    requires_approval: bool
    reasons: list[str]


def effective_tier(
    *,
    requested: Tier | None,
    automatic: bool,
    risk: RiskLevel,
    analysis_only: bool,
    policy: AutomationPolicy,
) -> TierDecision:
    """Decide the tier of a run.

    Inputs: ``requested`` — the operator's tier (``None`` for an automatic run); ``automatic`` — the
    policy chooses; ``risk`` — the route's risk; ``analysis_only`` — a research-case task marked
    analysis-only; ``policy`` — the deployment policy.

    Returns a :class:`TierDecision`. Raises :class:`InvalidInput` (``tier_conflict``) when both or
    neither of ``requested``/``automatic`` are given; :class:`Refused` with code ``automation_off`` when
    the policy mode is ``off`` for an automatic run, or ``analysis_only_ceiling`` when an
    analysis-only task asks for more than ``read_only``.
    """
    if automatic and requested is not None:
        raise InvalidInput("tier_conflict", "--automatic and --tier are exclusive: give one")
    if not automatic and requested is None:
        raise InvalidInput("tier_required", "give --tier T for an operator run, or --automatic")

    if not automatic:
        assert requested is not None
        if analysis_only and requested.rank > Tier.READ_ONLY.rank:
            raise Refused(
                "analysis_only_ceiling",
                f"an analysis-only research task may get at most 'read_only', not {requested.value!r}",
            )
        reasons = [f"operator requested tier {requested.value}"]
        if requested in APPROVAL_TIERS:
            reasons.append("tier needs explicit approval of the exact contract digest before it runs")
        return TierDecision(
            tier=requested,
            automatic=False,
            requires_approval=requested in APPROVAL_TIERS,
            reasons=reasons,
        )

    if policy.mode is AutomationMode.OFF:
        raise Refused(
            "automation_off",
            "automation policy mode is 'off': automatic runs are refused "
            "(an operator may change it with `specialists policy --mode ...`)",
        )
    if policy.mode is AutomationMode.RECOMMEND:
        return TierDecision(
            tier=Tier.RECOMMEND,
            automatic=True,
            requires_approval=False,
            reasons=["policy mode recommend allows automatic recommendation records only"],
        )

    ceiling = policy.maximum_automatic_tier
    reasons = [f"policy mode guarded allows automatic runs up to {ceiling.value}"]
    tier = ceiling
    if risk in _HIGH_RISK and tier is not Tier.RECOMMEND:
        if analysis_only:
            reasons.append(f"{risk.value} risk kept at read_only: analysis-only research task (nothing more)")
        else:
            tier = Tier.RECOMMEND
            reasons.append(f"{risk.value} risk reduces an automatic run to recommend")
    return TierDecision(tier=tier, automatic=True, requires_approval=False, reasons=reasons)
