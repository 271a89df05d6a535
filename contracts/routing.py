"""Router output: the ``RouteDecision`` (docs/architecture.md "Operator contract", ``route --json``)."""

from pydantic import BaseModel, ConfigDict, Field

from contracts.enums import RiskLevel, TaskType, Tier
from contracts.orchestration import OrchestrationDecision


class Alternative(BaseModel):
    """A profile that also matched, with its score (higher is a better match)."""

    model_config = ConfigDict(frozen=True)

    profile: str
    score: float


class RouteOverride(BaseModel):
    """An operator's manual choice of primary profile, recorded with its reason."""

    model_config = ConfigDict(frozen=True)

    profile: str
    reason: str


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
