"""The output contract every model job's result is validated against (docs/architecture.md "Run lifecycle").

Model output is untrusted data: it is parsed into these models with unknown keys refused, every
evidence id it cites must be one the job was given, and the serialised result is bounded (48 KiB).
"""

from __future__ import annotations

import functools
import json
from enum import StrEnum
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from contracts.enums import RiskLevel
from contracts.probes import MAX_PROBES, ProbeRequest

MAX_GAPS: Final = 50
"""The most gaps one output names."""
MAX_RESULT_BYTES: Final = 48 * 1024
MAX_REQUEST_BYTES: Final = 60 * 1024

ShortLine = Annotated[str, StringConstraints(min_length=1, max_length=300)]
Detail = Annotated[str, StringConstraints(max_length=4_000)]


class JobKind(StrEnum):
    """What a model job does: the primary's analysis, or the independent review of it."""

    ANALYSIS = "analysis"
    REVIEW = "review"


class ConfidenceBand(StrEnum):
    """Confidence in words: low < 0.4 <= medium < 0.75 <= high."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


def band_for(confidence: float) -> ConfidenceBand:
    """The band a confidence value falls in (see :class:`ConfidenceBand`)."""
    if confidence < 0.4:
        return ConfidenceBand.LOW
    if confidence < 0.75:
        return ConfidenceBand.MEDIUM
    return ConfidenceBand.HIGH


class ClosureStatus(StrEnum):
    """Whether the job closed the question it was given."""

    CLOSED = "closed"
    PARTIAL = "partial"
    OPEN = "open"


class ReviewVerdict(StrEnum):
    """The independent reviewer's verdict on the primary's findings."""

    AGREE = "agree"
    DISAGREE = "disagree"
    INSUFFICIENT_EVIDENCE = "insufficient_evidence"


MAX_FINDING_QUOTES: Final = 5
"""The most exact quotes one finding may carry (a beyond-source proposal's evidence)."""


class SourceQuote(BaseModel):
    """An exact quote a finding cites: a repository path, a 1-based line and text that line must
    contain (checked by the system against the repository, never trusted)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: Annotated[str, StringConstraints(min_length=1, max_length=300)]
    line: int = Field(ge=1, le=10_000_000)
    text: Annotated[str, StringConstraints(min_length=1, max_length=500)]


class Finding(BaseModel):
    """One finding: severity, a one-line title, the evidence ids it rests on and a detail."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    severity: RiskLevel
    title: ShortLine
    evidence_refs: Annotated[list[ShortLine], Field(max_length=50)] = []
    detail: Detail = ""
    quotes: Annotated[
        list[SourceQuote], Field(max_length=MAX_FINDING_QUOTES, exclude_if=lambda v: not v)
    ] = []
    """A beyond-source pass's proposal only: the ``path:line`` quotes it rests on (docs/architecture.md
    "Intake"). Any other job returning one breaks the contract. Left out of a dump when empty, so a
    finding without quotes serialises (and hashes) as it did before."""


class SpecialistOutput(BaseModel):
    """A model job's structured result.

    ``role`` is the profile id that did the job and ``axis`` what it examined; ``verdict`` is required
    for a review job and forbidden for an analysis job; ``patch`` is required for a worktree run's
    change job and forbidden for any other (checked by :func:`check_output_for_job`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: ShortLine
    axis: ShortLine
    inspected_evidence: Annotated[list[ShortLine], Field(max_length=50)]
    findings: Annotated[list[Finding], Field(max_length=50)]
    confidence: float = Field(ge=0.0, le=1.0)
    confidence_band: ConfidenceBand
    gaps: Annotated[list[ShortLine], Field(max_length=MAX_GAPS)] = []
    closure: ClosureStatus
    recommended_next_action: ShortLine
    verdict: ReviewVerdict | None = None
    patch: Annotated[str, StringConstraints(min_length=1, max_length=MAX_RESULT_BYTES)] | None = None
    """A worktree run's change job only: the change as one unified diff in git's format
    (``diff --git a/PATH b/PATH``) against the base commit. Untrusted: it is checked and applied by
    git in an isolated worktree, and what git then reports — never this text — is the evidence."""
    probe_requests: Annotated[
        list[ProbeRequest], Field(max_length=MAX_PROBES, exclude_if=lambda v: not v)
    ] = []
    """A read_only run's analysis only: commands it asks an operator to run (never run by the pass;
    docs/architecture.md "Probe requests"). Any other job returning one breaks the contract. Left out
    of a dump when empty, so a result without probes serialises (and hashes) as it did before."""

    @model_validator(mode="after")
    def _band_matches_confidence(self) -> SpecialistOutput:
        expected = band_for(self.confidence)
        if self.confidence_band is not expected:
            raise ValueError(
                f"confidence_band {self.confidence_band.value!r} does not match confidence "
                f"{self.confidence} (expected {expected.value!r})"
            )
        return self


class OutputContractViolation(ValueError):
    """A model result broke the output contract; the message says which rule."""


@functools.cache
def output_schema_text() -> str:
    """The JSON Schema of :class:`SpecialistOutput` as canonical JSON text (sorted keys), computed
    once per process: pydantic builds it afresh on every ``model_json_schema()`` call."""
    return json.dumps(SpecialistOutput.model_json_schema(), sort_keys=True)


def output_json_schema() -> dict[str, Any]:
    """The JSON Schema of :class:`SpecialistOutput`, a fresh copy the caller may change."""
    schema: dict[str, Any] = json.loads(output_schema_text())
    return schema


def check_output_for_job(
    output: SpecialistOutput,
    *,
    kind: JobKind,
    profile_id: str,
    evidence_ids: list[str],
    expects_patch: bool = False,
    allows_probes: bool = False,
    allows_quotes: bool = False,
) -> None:
    """Check the rules that depend on the job: role, verdict presence, patch presence (``expects_patch``:
    the job is a worktree run's change job), probe requests (``allows_probes``: the job is a
    read_only run's analysis, the only one that may ask for probes), quotes (``allows_quotes``: the
    job is a queue's beyond-source pass, the only one whose findings may quote), cited evidence ids.

    Raises :class:`OutputContractViolation` naming the first broken rule.
    """
    if output.role != profile_id:
        raise OutputContractViolation(f"role {output.role!r} is not the job's profile {profile_id!r}")
    if kind is JobKind.REVIEW and output.verdict is None:
        raise OutputContractViolation("a review result must carry a verdict")
    if kind is JobKind.ANALYSIS and output.verdict is not None:
        raise OutputContractViolation("an analysis result must not carry a verdict")
    if expects_patch and output.patch is None:
        raise OutputContractViolation("a worktree change result must carry its change in 'patch'")
    if not expects_patch and output.patch is not None:
        raise OutputContractViolation("only a worktree run's change job may return a patch")
    if output.probe_requests and not allows_probes:
        raise OutputContractViolation("only a read_only run's analysis may return probe requests")
    if not allows_quotes and any(finding.quotes for finding in output.findings):
        raise OutputContractViolation("only a beyond-source pass's findings may carry quotes")
    known = set(evidence_ids)
    cited = set(output.inspected_evidence)
    for finding in output.findings:
        cited.update(finding.evidence_refs)
    unknown = sorted(cited - known)
    if unknown:
        raise OutputContractViolation(f"result cites evidence the job was not given: {', '.join(unknown)}")
