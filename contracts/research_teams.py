"""Research team contracts: the ``ResearchTeam`` workflow's input, stages, blinding rules and view.

A team (``RTM-`` + 16) runs six stages over one research case (docs/architecture.md "Research team"); each
stage is an analysis job and a blinded review job, both ``ModelJob`` children, at most 12 model jobs in all.
What each job may see is decided here, by the pure function :func:`job_visibility`, so the workflow,
the context-pack builder and the blinding test share one rule:

* stages 1–4 see every active record — factual ones as original evidence, interpretive ones labelled
  as interpretation — and the earlier stages' analyses, labelled as model output;
* stage 5 (the skeptical assessment) and every reviewer see factual records only and no other stage's
  output; a reviewer sees its own stage's findings, stripped of author, confidence and verdict;
* stage 6 (the writer) sees every active record and every earlier stage's analysis and review, and
  records which stored results it drew on.

Every context lists what it omitted and why. Evidence and results travel by reference: ids and
sha256, never content, so a team's history stays small.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Annotated, Final

from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints

from contracts.enums import RiskLevel
from contracts.errors import Refused
from contracts.ids import check_request_id
from contracts.output import JobKind, ReviewVerdict
from contracts.proofs import ActionProof
from contracts.research import (
    MAX_TEAM_EVIDENCE,
    MAX_TEAM_EVIDENCE_BYTES,
    EvidenceKind,
    EvidenceRecord,
    ResearchCase,
)
from contracts.runs import AuditEvent, ModelSnapshot, RunError

MAX_TEAM_JOBS: Final = 12
"""Most model jobs a team may run: six stages, an analysis and a review each. A stage retried after a
block counts again; the job beyond the limit is refused and blocks the team."""
DEFAULT_TEAM_DEADLINE_SECONDS: Final = 24 * 3600
"""How long a team may run from its start before it ends ``expired`` (per deployment:
``SPECIALISTS_TEAM_DEADLINE_SECONDS``)."""
MAX_RESEARCH_OUTPUT_BYTES: Final = 3_000
"""Largest result of one research job (compact JSON, UTF-8 bytes): the writer's request carries ten of
them beside the evidence, and must stay within the 60 KiB request bound. A longer result fails the job
(``result_too_large``), which blocks the team; nothing is shortened."""
MATERIAL_SEVERITIES: Final = frozenset({RiskLevel.HIGH, RiskLevel.CRITICAL})
"""A reviewer's ``disagree`` is material — the team pauses for a human — when the stage's findings or
the reviewer's own include one of these severities."""

Note = Annotated[str, StringConstraints(max_length=2_000)]


class TeamStatus(StrEnum):
    """Team statuses (docs/architecture.md "Operator contract")."""

    STARTING = "starting"
    WAITING_FOR_GRANT = "waiting_for_grant"
    RUNNING_STAGE = "running_stage"
    AWAITING_ADJUDICATION = "awaiting_adjudication"
    BLOCKED = "blocked"
    AWAITING_HUMAN_REVIEW = "awaiting_human_review"
    INVALIDATED = "invalidated"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    FAILED = "failed"

    @property
    def final(self) -> bool:
        """True when the team's workflow has ended (``awaiting_human_review`` included: the team's
        work is done and waits for people outside the system)."""
        return self in FINAL_TEAM_STATUSES

    @property
    def needs_person(self) -> bool:
        """True when the team waits for an operator's adjudication."""
        return self in (TeamStatus.AWAITING_ADJUDICATION, TeamStatus.BLOCKED)


FINAL_TEAM_STATUSES: Final = frozenset(
    {
        TeamStatus.AWAITING_HUMAN_REVIEW,
        TeamStatus.INVALIDATED,
        TeamStatus.CANCELLED,
        TeamStatus.EXPIRED,
        TeamStatus.FAILED,
    }
)


class StageSpec(BaseModel):
    """One stage: its number (1..6), short name, the catalog profile doing its analysis and the
    focus it is given."""

    model_config = ConfigDict(frozen=True)

    number: int
    name: str
    profile_id: str
    focus: str


STAGES: Final[tuple[StageSpec, ...]] = (
    StageSpec(
        number=1,
        name="source_synthesis",
        profile_id="research-synthesist",
        focus="Synthesise what the sources establish and name the gaps in prior art.",
    ),
    StageSpec(
        number=2,
        name="threat_observations",
        profile_id="threat-intelligence-analyst",
        focus="Report threat observations and the alternative explanations the evidence allows.",
    ),
    StageSpec(
        number=3,
        name="application_security",
        profile_id="application-security-engineer",
        focus="Assess the application security impact and propose a reproduction.",
    ),
    StageSpec(
        number=4,
        name="detection_proposals",
        profile_id="threat-detection-engineer",
        focus="Propose detections, each with a positive, a benign and an evasion test plan.",
    ),
    StageSpec(
        number=5,
        name="skeptical_assessment",
        profile_id="reality-checker",
        focus="Skeptically assess the original evidence: what it establishes and what it does not.",
    ),
    StageSpec(
        number=6,
        name="attributed_draft",
        profile_id="technical-writer",
        focus="Write an attributed draft from the stage results and list the unresolved limitations.",
    ),
)
SKEPTICAL_STAGE: Final = 5
WRITER_STAGE: Final = 6


class AdjudicationOutcome(StrEnum):
    """A human's outcome: for a disagreement ``accept_primary | accept_reviewer | record_both``; for a
    blocked stage ``retry_stage`` (a new job, counted against the budget) or ``stop``."""

    ACCEPT_PRIMARY = "accept_primary"
    ACCEPT_REVIEWER = "accept_reviewer"
    RECORD_BOTH = "record_both"
    RETRY_STAGE = "retry_stage"
    STOP = "stop"


DISAGREEMENT_OUTCOMES: Final = frozenset(
    {AdjudicationOutcome.ACCEPT_PRIMARY, AdjudicationOutcome.ACCEPT_REVIEWER, AdjudicationOutcome.RECORD_BOTH}
)
BLOCK_OUTCOMES: Final = frozenset({AdjudicationOutcome.RETRY_STAGE, AdjudicationOutcome.STOP})


# ------------------------------------------------------------------------------------ references


class EvidenceRef(BaseModel):
    """An evidence record by reference: id, kind and the sha256 of its content."""

    model_config = ConfigDict(frozen=True)

    evidence_id: str
    kind: EvidenceKind
    sha256: str


class JobOutputRef(BaseModel):
    """A stored model job output by reference (``job_id`` + ``sha256``), with the few facts the team
    decides on: the verdict of a review, how many findings and the highest severity among them."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    sha256: str
    stage: int
    kind: JobKind
    profile_id: str
    model_id: str
    verdict: ReviewVerdict | None = None
    findings: int = 0
    max_severity: RiskLevel | None = None


class ResearchJobContext(BaseModel):
    """What a research job may see, by reference (in ``JobContext.research``): the case, the stage,
    the evidence records it is shown, the stored results it is shown (``prior_results``: labelled as
    model output; ``under_review``: the findings a reviewer checks, stripped of author, confidence
    and verdict), and each item it was not shown with why (``omitted``)."""

    model_config = ConfigDict(frozen=True)

    team_id: str
    case_id: str
    stage: int
    stage_name: str
    focus: str
    evidence: list[EvidenceRef]
    prior_results: list[JobOutputRef] = []
    under_review: JobOutputRef | None = None
    omitted: list[str] = []


class StoreJobOutputRequest(BaseModel):
    """Input of the ``store_job_output`` activity: a research job's validated output and its pack."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    team_id: str
    kind: JobKind
    profile_id: str
    model_id: str
    output: dict[str, object]
    pack: dict[str, object] | None = None
    pack_sha256: str | None = None


class StoredJobOutput(BaseModel):
    """The ``store_job_output`` activity's result: the stored output's sha256."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    sha256: str


# ---------------------------------------------------------------------------------- visibility


def _severity_rank(level: RiskLevel) -> int:
    return [RiskLevel.LOW, RiskLevel.MEDIUM, RiskLevel.HIGH, RiskLevel.CRITICAL].index(level)


def highest_severity(levels: list[RiskLevel]) -> RiskLevel | None:
    """The highest of ``levels`` (low < medium < high < critical), ``None`` when empty."""
    return max(levels, key=_severity_rank) if levels else None


def job_visibility(
    *,
    team_id: str,
    case_id: str,
    stage: StageSpec,
    kind: JobKind,
    evidence: list[EvidenceRef],
    analyses: list[tuple[int, JobOutputRef]],
    reviews: list[tuple[int, JobOutputRef]],
) -> ResearchJobContext:
    """The references one research job may see, and what it is not shown and why. Pure.

    Inputs: the stage and job kind; the team's captured evidence (active records); the accepted
    analyses and reviews of earlier stages and, for a review job, this stage's analysis — each as
    ``(stage number, ref)``. Output: a :class:`ResearchJobContext`. The rules are in the module
    docstring (docs/architecture.md "Research team"). Raises ``ValueError`` for a review job without this
    stage's analysis.
    """
    factual_only = kind is JobKind.REVIEW or stage.number == SKEPTICAL_STAGE
    shown = [ref for ref in evidence if ref.kind.factual or not factual_only]
    omitted = [
        f"evidence {ref.evidence_id} ({ref.kind.value}): interpretive record; "
        + ("a reviewer" if kind is JobKind.REVIEW else "the skeptical stage")
        + " sees original evidence only"
        for ref in evidence
        if ref not in shown
    ]
    earlier_analyses = [(n, ref) for n, ref in analyses if n < stage.number]
    earlier_reviews = [(n, ref) for n, ref in reviews if n < stage.number]
    under_review: JobOutputRef | None = None
    prior: list[JobOutputRef] = []
    if kind is JobKind.REVIEW:
        own = [ref for n, ref in analyses if n == stage.number]
        if not own:
            raise ValueError(f"stage {stage.number}: a review needs the stage's analysis")
        under_review = own[-1]
        omitted.append(
            "the author's profile, model, confidence and verdict of the findings under review "
            "(blinded review)"
        )
        omitted += [
            f"stage {n} {ref.kind.value} {ref.job_id}: another stage's output; a reviewer sees only "
            "the findings of the stage it reviews"
            for n, ref in [*earlier_analyses, *earlier_reviews]
        ]
    elif stage.number == SKEPTICAL_STAGE:
        omitted += [
            f"stage {n} {ref.kind.value} {ref.job_id}: another stage's output; the skeptical stage "
            "assesses the original evidence alone"
            for n, ref in [*earlier_analyses, *earlier_reviews]
        ]
    elif stage.number == WRITER_STAGE:
        prior = [ref for _, ref in sorted([*earlier_analyses, *earlier_reviews], key=lambda item: item[0])]
    else:
        prior = [ref for _, ref in earlier_analyses]
        omitted += [
            f"stage {n} review {ref.job_id}: reviews are kept for the writer and the human reviewer"
            for n, ref in earlier_reviews
        ]
    return ResearchJobContext(
        team_id=team_id,
        case_id=case_id,
        stage=stage.number,
        stage_name=stage.name,
        focus=stage.focus,
        evidence=shown,
        prior_results=prior,
        under_review=under_review,
        omitted=omitted,
    )


# ------------------------------------------------------------------------------ workflow contracts


class TeamStartInput(BaseModel):
    """``research team-start --input FILE``: the caller's request id (one line of 1..200 printable
    characters, not blank: :func:`contracts.ids.check_request_id`). The same request id returns the
    same team."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    request_id: Annotated[str, AfterValidator(check_request_id)]


class TeamInput(BaseModel):
    """Input of the ``ResearchTeam`` workflow. ``request_digest`` binds the start proof to the case and
    request id."""

    model_config = ConfigDict(frozen=True)

    team_id: str
    case_id: str
    request_id: str
    actor: str
    request_digest: str
    proof: ActionProof | None = None


class StageAssignment(BaseModel):
    """A stage as captured: its spec and the catalog reviewer of its profile."""

    model_config = ConfigDict(frozen=True)

    spec: StageSpec
    reviewer_id: str


class TeamCaptureRequest(BaseModel):
    """Input of ``capture_team``: the team and its case."""

    model_config = ConfigDict(frozen=True)

    team_id: str
    case_id: str


class TeamCapture(BaseModel):
    """What a team froze at its start (activity ``capture_team``): the case's subject, its active
    evidence by reference and their digest, the catalog sha256, the model snapshot, the stages with
    their reviewers and the deployment's deadline in seconds."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    subject_title: str
    subject_kind: str
    subject_identifier: str
    evidence: list[EvidenceRef]
    evidence_digest: str
    catalog_sha256: str
    model: ModelSnapshot
    stages: list[StageAssignment]
    deadline_seconds: int


class TeamInputsCheckRequest(BaseModel):
    """Input of ``check_team_inputs``: the case to read again."""

    model_config = ConfigDict(frozen=True)

    team_id: str
    case_id: str


class TeamInputsCheck(BaseModel):
    """The case's evidence digest and the worker's catalog sha256, read now."""

    model_config = ConfigDict(frozen=True)

    evidence_digest: str
    catalog_sha256: str


class Adjudication(BaseModel):
    """A human's recorded outcome for a stage."""

    model_config = ConfigDict(frozen=True)

    stage: int
    outcome: AdjudicationOutcome
    actor: str
    note: str = ""
    at: dt.datetime


class AdjudicateRequest(BaseModel):
    """Update ``adjudicate``: a registered human's outcome for the stage the team waits on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    actor: str
    stage: int
    outcome: AdjudicationOutcome
    note: Note = ""
    proof: ActionProof | None = None


class TeamCancelRequest(BaseModel):
    """Signal ``cancel``: stop further stages (a running job may finish; nothing starts after it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    actor: str
    reason: Note = ""
    proof: ActionProof | None = None


class TeamActionResult(BaseModel):
    """What a team update returns: the status after the action, or why it was refused."""

    model_config = ConfigDict(frozen=True)

    accepted: bool
    status: TeamStatus
    code: str | None = None
    message: str | None = None


def adjudication_digest(stage: int, outcome: AdjudicationOutcome) -> str:
    """What an adjudication proof is bound to: the stage and the outcome."""
    return f"stage-{stage}:{outcome.value}"


class StageBlock(BaseModel):
    """Why a stage is blocked: the job kind that could not run or failed, the error type and message."""

    model_config = ConfigDict(frozen=True)

    stage: int
    kind: JobKind
    error_type: str
    message: str


class StageRecord(BaseModel):
    """One stage as the team carried it: its analysis and review (by reference), limitations recorded
    from the review, the adjudication, what its jobs were not shown (``omitted``, per job kind) and,
    for the writer, which stored results it drew on."""

    model_config = ConfigDict(frozen=True)

    number: int
    name: str
    profile_id: str
    reviewer_id: str | None = None
    state: str = "pending"
    analysis: JobOutputRef | None = None
    review: JobOutputRef | None = None
    limitations: list[str] = []
    adjudication: Adjudication | None = None
    omitted: dict[str, list[str]] = {}
    drew_on: list[str] = []
    jobs: int = 0


class TeamView(BaseModel):
    """``team-show``: the team as its workflow holds it (query ``view``; also its result)."""

    model_config = ConfigDict(frozen=True)

    team_id: str
    case_id: str
    request_id: str
    started_by: str
    status: TeamStatus
    created_at: dt.datetime
    deadline_at: dt.datetime | None = None
    capture: TeamCapture | None = None
    stages: list[StageRecord]
    current_stage: int | None = None
    jobs_used: int = 0
    jobs_limit: int = MAX_TEAM_JOBS
    block: StageBlock | None = None
    error: RunError | None = None
    audit: list[AuditEvent] = []


def check_team_evidence(case: ResearchCase) -> list[EvidenceRecord]:
    """The active records of ``case`` a team would start with, when they fit its bounds. Pure.

    Raises :class:`contracts.errors.Refused`: ``team_evidence_empty`` (no active record),
    ``team_evidence_limit`` (more than 25 active records) or ``team_evidence_too_large`` (more than
    :data:`contracts.research.MAX_TEAM_EVIDENCE_BYTES` of content); each asks the operator to narrow
    the case. Nothing is ever dropped to make a case fit.
    """
    active = case.active_evidence
    if not active:
        raise Refused(
            "team_evidence_empty",
            f"case {case.case_id} has no active evidence; a team needs 1..{MAX_TEAM_EVIDENCE} records",
        )
    if len(active) > MAX_TEAM_EVIDENCE:
        raise Refused(
            "team_evidence_limit",
            f"case {case.case_id} has {len(active)} active evidence records; a team takes at most "
            f"{MAX_TEAM_EVIDENCE}. Narrow the case: deactivate the records the team does not need "
            "(research evidence-deactivate) and start the team again",
        )
    size = sum(len(record.content.encode("utf-8")) for record in active)
    if size > MAX_TEAM_EVIDENCE_BYTES:
        largest = sorted(active, key=lambda record: len(record.content.encode("utf-8")), reverse=True)[:3]
        names = ", ".join(f"{r.evidence_id} ({len(r.content.encode('utf-8'))} bytes)" for r in largest)
        raise Refused(
            "team_evidence_too_large",
            f"case {case.case_id} has {size} bytes of active evidence; every stage's model request "
            f"must carry it and a team takes at most {MAX_TEAM_EVIDENCE_BYTES}. Largest: {names}. "
            "Narrow the case: deactivate or replace the largest records with the relevant part",
        )
    return active
