"""Router output: the ``RouteDecision`` (docs/architecture.md "Operator contract", ``route --json``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from contracts.enums import RiskLevel, TaskType, Tier


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
    work item is missing. ``effective_tier``/``tier_reasons`` are set only when a tier preview was asked
    for.
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

    def to_json_dict(self) -> dict[str, object]:
        """The ``route --json`` object; tier keys appear only when a tier preview was made."""
        data = self.model_dump(mode="json")
        if self.effective_tier is None:
            data.pop("effective_tier")
            data.pop("tier_reasons")
        return data
