"""Model job contracts: the ``ModelJob`` child workflow's input and result, and one model call.

A model job is one primary analysis or one review, including its retries and fallbacks (docs/architecture.md
"Run lifecycle"). The review job is blinded: it receives the task, the evidence and the primary's
findings only — never the author's profile, model, confidence or verdict.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from contracts.context_packs import ContextPack
from contracts.enums import TaskType
from contracts.execution import ChangeUnderReview
from contracts.model_classes import ModelClass, ReasoningEffort
from contracts.output import Finding, JobKind, SpecialistOutput
from contracts.proofs import ActionProof
from contracts.research_teams import JobOutputRef, ResearchJobContext
from contracts.runs import ModelSnapshot


class JobContext(BaseModel):
    """What the model sees: the task, evidence ids and, for a review, the findings under review.

    A worktree run's change job has ``expects_patch`` (its result must carry the change as a unified
    diff); the review of that change gets ``change``: what git says changed in the worktree, never
    the author's own patch text.

    A research team's job has ``research``: the evidence records and stored results it may see, by
    reference (``contracts.research_teams``); its pack is built from the store, and its output is
    stored there and returned by reference."""

    model_config = ConfigDict(frozen=True)

    title: str
    task: str
    evidence_refs: list[str]
    findings_under_review: list[Finding] = []
    expects_patch: bool = False
    change: ChangeUnderReview | None = None
    research: ResearchJobContext | None = None
    beyond: bool = Field(default=False, exclude_if=lambda v: not v)
    """A goal queue's beyond-source pass (docs/architecture.md "Intake"): its findings must quote
    ``path:line`` text; no other job's may. Left out of a dump when false."""


class ModelJobInput(BaseModel):
    """Input of the ``ModelJob`` child workflow. ``job_id`` is the idempotency key of its calls."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    run_id: str
    kind: JobKind
    profile_id: str
    catalog_sha256: str
    context: JobContext
    model: ModelSnapshot
    max_attempts: int = 2
    task_type: TaskType | None = None
    repo_alias: str | None = None
    base_commit: str | None = None
    model_class: ModelClass | None = None
    """The class whose pool the job's calls draw on (``contracts.model_classes``); None: ``core``."""
    effort: ReasoningEffort | None = None
    """The reasoning effort the selection captured for the job's class (None: not asked)."""


class ContextPackRequest(BaseModel):
    """Input of the ``build_context_pack`` activity: the job's identity and context, and the
    contract's repository alias and base commit (``None`` when the run names no allow-listed one)."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    kind: JobKind
    profile_id: str
    catalog_sha256: str
    context: JobContext
    task_type: TaskType | None = None
    repo_alias: str | None = None
    base_commit: str | None = None

    @classmethod
    def for_job(cls, job: ModelJobInput) -> ContextPackRequest:
        """The pack request of ``job``: its identity, context and the contract's repository."""
        return cls(
            job_id=job.job_id,
            kind=job.kind,
            profile_id=job.profile_id,
            catalog_sha256=job.catalog_sha256,
            context=job.context,
            task_type=job.task_type,
            repo_alias=job.repo_alias,
            base_commit=job.base_commit,
        )


class ModelCallRequest(BaseModel):
    """Input of the ``call_model`` activity: one call to one model."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    kind: JobKind
    profile_id: str
    catalog_sha256: str
    context: JobContext
    model_id: str
    run_id: str = ""
    attempt: int = 1
    pack: ContextPack | None = None
    lease_id: str | None = None
    effort: ReasoningEffort | None = None
    """The reasoning effort asked of the model (the selection's effort for the job's class)."""
    class_pool: str | None = None
    """The class pool (``contracts.model_classes.class_pool_id``) whose lease goes with
    ``lease_id``; the call gives it back as it ends, with the model's."""


class CallUsage(BaseModel):
    """What one call cost: wall-clock latency in milliseconds and token usage when the provider
    reports it (``None``: not reported, e.g. the replay provider, or no answer arrived)."""

    model_config = ConfigDict(frozen=True)

    latency_ms: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    effort_requested: ReasoningEffort | None = None
    """The reasoning effort the call asked for (None: the provider's default)."""
    reasoning_tokens: int | None = None
    reasoning_observed: bool | None = None
    """What the answer showed of reasoning: tokens the provider reports spent on it, and whether it
    shows any was done (None: the provider shows neither way)."""


class ModelCallResult(BaseModel):
    """A validated model result, the model that produced it and what the call cost.

    A failed call raises instead; its ``ApplicationError`` carries one detail, a
    ``contracts.failures.ModelCallFailureDetail`` with the call's :class:`CallUsage` (none when the
    activity itself timed out).
    """

    model_config = ConfigDict(frozen=True)

    model_id: str
    output: SpecialistOutput
    usage: CallUsage = CallUsage()
    lease_released: bool = False
    class_lease_released: bool = False


class ModelAttempt(BaseModel):
    """One call to one model and how it ended: ``ok`` or the error type that ended it.

    ``attempt`` counts calls to this model (1 or 2: timeout, transport and rate-limit errors are tried
    once more); ``retried`` says this failure was followed by another attempt on the same model,
    ``fallback`` that it moved the job to the next model of the chain. Histories recorded before
    attempts were reported one by one hold a single entry per model (``attempt`` 1, no usage).
    """

    model_config = ConfigDict(frozen=True)

    model_id: str
    outcome: str
    error_type: str | None = None
    message: str | None = None
    fallback: bool = False
    attempt: int = 1
    retried: bool = False
    usage: CallUsage = CallUsage()


class ModelJobResult(BaseModel):
    """The job's validated output, the model that produced it and every attempt along the chain.

    A research job's output (and its pack) is stored instead and comes back by reference:
    ``output`` and ``pack`` are ``None`` and ``output_ref`` names it. Every other job has ``output``."""

    model_config = ConfigDict(frozen=True)

    output: SpecialistOutput | None
    model_id: str
    attempts: list[ModelAttempt]
    pack: ContextPack | None = None
    pack_sha256: str | None = None
    output_ref: JobOutputRef | None = None

    def require_output(self) -> SpecialistOutput:
        """The output carried inline. Raises ``ValueError`` for a result stored by reference."""
        if self.output is None:
            raise ValueError("this model job's output is stored by reference")
        return self.output


TEST_MODEL_ACTION: Final = "test_model"
"""The protected action a model check's proof names (``specialists models test``)."""
CHECK_TIMEOUT: Final = timedelta(minutes=11)
"""How long a check's one call may take: longer than the largest model timeout (600 s), so the
provider's own timeout reports first."""


class ModelCheckRequest(BaseModel):
    """Input of the ``ModelCheck`` workflow (``specialists models test``): one tiny call to ``model_id``
    made by ``actor``, with a proof of the action token bound to the check id and the model id."""

    model_config = ConfigDict(frozen=True)

    check_id: str
    model_id: str
    actor: str
    proof: ActionProof | None = None


class ModelCheckCall(BaseModel):
    """Input of the ``check_model`` activity."""

    model_config = ConfigDict(frozen=True)

    check_id: str
    model_id: str


class ModelCheckResult(BaseModel):
    """How the check ended: ``ok``; ``refused`` with the authorisation's refusal code in
    ``error_type``; or the model's error class (``contracts.errors.ErrorType``) and its message. With
    the call's usage when a call was made."""

    model_config = ConfigDict(frozen=True)

    check_id: str
    model_id: str
    ok: bool
    refused: bool = False
    error_type: str | None = None
    message: str | None = None
    usage: CallUsage = CallUsage()
