"""Router output: the ``RouteDecision`` (docs/architecture.md "Operator contract", ``route --json``)."""

from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from contracts.enums import RiskLevel, TaskType, Tier
from contracts.orchestration import OrchestrationDecision
from contracts.text_rules import check_one_line

MAX_OVERRIDE_REASON_CHARS: Final = 2000
"""The longest reason an override may give (it is shown in the route's reasons, one line)."""


class Alternative(BaseModel):
    """A profile that also matched, with its score (higher is a better match)."""

    model_config = ConfigDict(frozen=True)

    profile: str
    score: float


class RouteOverride(BaseModel):
    """An operator's manual choice of primary profile, recorded with its reason (held at the operator
    surfaces to :func:`override_reason_problem`)."""

    model_config = ConfigDict(frozen=True)

    profile: str
    reason: str


def override_reason_problem(reason: str) -> tuple[str, str] | None:
    """Why ``reason`` (already stripped) cannot be an override's reason, as ``(code, message)``:
    blank (``override_reason_required``), over :data:`MAX_OVERRIDE_REASON_CHARS`
    (``override_reason_too_long``), or not one line of printable text (``invalid_override_reason``,
    naming the character and where it is); ``None`` when it can."""
    if not reason:
        return "override_reason_required", "an override needs a non-blank reason"
    if len(reason) > MAX_OVERRIDE_REASON_CHARS:
        return (
            "override_reason_too_long",
            f"the override reason is {len(reason)} characters; the limit is {MAX_OVERRIDE_REASON_CHARS}",
        )
    try:
        check_one_line(reason, "the override reason")
    except ValueError as error:
        return "invalid_override_reason", str(error)
    return None


class RouteDecision(BaseModel):
    """Which specialist does the work, who reviews it independently, and why.

    ``confidence`` is 0..1; ``score`` is the primary's raw match score (0 when routed by fallback or
    override); ``alternatives`` are the next best matches, best first; ``evidence_gaps`` name what the
    work item is missing. ``effective_tier``/``tier_reasons`` and ``orchestration`` (how a run at that
    tier would be reviewed, docs/architecture.md "Orchestration") are set only when a tier preview was
    asked for; a run's contract carries its own orchestration decision.
    """

    model_config = ConfigDict(frozen=True)

    primary: str
    reviewer: str
    confidence: float = Field(ge=0.0, le=1.0)
    score: float
    risk: RiskLevel
    reasons: list[str]
    alternatives: list[Alternative]
    evidence_gaps: list[str]
    repo_alias: str | None
    task_type: TaskType
    override: RouteOverride | None = None
    effective_tier: Tier | None = None
    tier_reasons: list[str] | None = None
    orchestration: OrchestrationDecision | None = None

    def to_json_dict(self) -> dict[str, object]:
        """The ``route --json`` object: ``model_dump(mode="json")`` without the tier keys unless a tier
        preview was made. Written out field by field (``tests/contracts/test_routing.py`` holds the two
        equal): pydantic's first JSON-mode dump in a process costs a route preview more than its
        route."""
        override = self.override
        data: dict[str, object] = {
            "primary": self.primary,
            "reviewer": self.reviewer,
            "confidence": self.confidence,
            "score": self.score,
            "risk": self.risk.value,
            "reasons": list(self.reasons),
            "alternatives": [{"profile": a.profile, "score": a.score} for a in self.alternatives],
            "evidence_gaps": list(self.evidence_gaps),
            "repo_alias": self.repo_alias,
            "task_type": self.task_type.value,
            "override": None
            if override is None
            else {"profile": override.profile, "reason": override.reason},
        }
        if self.effective_tier is not None:
            data["effective_tier"] = self.effective_tier.value
            data["tier_reasons"] = None if self.tier_reasons is None else list(self.tier_reasons)
        if self.orchestration is not None:
            data["orchestration"] = self.orchestration.to_json_dict()
        return data
