"""Enumerations shared by the CLI, workflows, activities and the store.

Values are part of the operator contract (docs/architecture.md "Operator contract"): they appear in JSON
output, search attributes and the database, so a value is never renamed, only added.
"""

from __future__ import annotations

from enum import StrEnum


class Tier(StrEnum):
    """Automation tier of a run, ordered from least to most authority."""

    RECOMMEND = "recommend"
    READ_ONLY = "read_only"
    WORKTREE = "worktree"
    PR_READY = "pr_ready"

    @property
    def rank(self) -> int:
        """Position in the authority order: recommend=0 … pr_ready=3."""
        return _TIER_ORDER.index(self)


_TIER_ORDER = (Tier.RECOMMEND, Tier.READ_ONLY, Tier.WORKTREE, Tier.PR_READY)


class RiskLevel(StrEnum):
    """Risk of a work item, ordered low < medium < high < critical."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        """Position in the order: low=0 … critical=3."""
        return _RISK_ORDER.index(self)

    @classmethod
    def from_rank(cls, rank: int) -> RiskLevel:
        """The level at ``rank``, clamped to 0..3."""
        return _RISK_ORDER[max(0, min(rank, len(_RISK_ORDER) - 1))]


_RISK_ORDER = (RiskLevel.LOW, RiskLevel.MEDIUM, RiskLevel.HIGH, RiskLevel.CRITICAL)


class TaskType(StrEnum):
    """What the work item asks for (docs/architecture.md "Operator contract", ``WorkItem``)."""

    INVESTIGATE = "investigate"
    FIX = "fix"
    REVIEW = "review"
    AUDIT = "audit"
    RESEARCH = "research"
    DOCUMENT = "document"
    TEST = "test"
    DESIGN = "design"


class AutomationMode(StrEnum):
    """Who may start runs without an operator choosing the tier."""

    OFF = "off"
    RECOMMEND = "recommend"
    GUARDED = "guarded"


class FallbackMode(StrEnum):
    """Whether a model call may walk the captured fallback list."""

    PRIMARY_ONLY = "primary_only"
    ORDERED = "ordered"


class WorkClass(StrEnum):
    """``support`` profiles do bounded support work and may use a cheaper support model."""

    SUPPORT = "support"
    CORE = "core"


class RiskFlag(StrEnum):
    """Risk flags a work item may carry; each raises the computed risk."""

    PRODUCTION = "production"
    CUSTOMER_DATA = "customer_data"
    CREDENTIALS = "credentials"
    DATA_LOSS = "data_loss"
    EXTERNAL_EXPOSURE = "external_exposure"
    REGULATED = "regulated"
