"""Specialist run contracts: the run's input, its execution contract, operator actions and its view.

These models cross the Temporal boundary (client → workflow → activities); new fields always get
defaults so recorded histories keep replaying (docs/architecture.md "Temporal conventions").
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from contracts.config import RepositoryConfig
from contracts.context_packs import ContextPack
from contracts.enums import FallbackMode, RiskLevel, TaskType, Tier
from contracts.execution import ExecutionRecord
from contracts.hashing import canonical_sha256
from contracts.ids import RUN_ID_PATTERN
from contracts.model_classes import ModelClass, ReasoningEffort
from contracts.models import ModelId, ModelSelectionRecord
from contracts.orchestration import AdvisoryTopic, OrchestrationDecision
from contracts.output import JobKind, SpecialistOutput
from contracts.pass_records import PassRecord
from contracts.probes import ProbeRecord
from contracts.proofs import ActionProof
from contracts.queue_items import QueueStatus
from contracts.review_waves import WaveRecord
from contracts.routing import RouteDecision, RouteOverride
from contracts.schedules import CaseGrant
from contracts.work_item import WorkItem

Note = Annotated[str, StringConstraints(max_length=2_000)]


class RunStatus(StrEnum):
    """Run statuses (docs/architecture.md "Run lifecycle")."""

    ROUTING = "routing"
    RECOMMENDED = "recommended"
    READY = "ready"
    QUEUED = "queued"
    RUNNING = "running"
    VERIFYING = "verifying"
    REVIEWING = "reviewing"
    AWAITING_APPROVAL = "awaiting_approval"
    APPROVED = "approved"
    AWAITING_DECISION = "awaiting_decision"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    CANCEL_REQUESTED = "cancel_requested"
    CANCELLED = "cancelled"
    FAILED = "failed"
    EXPIRED = "expired"

    @property
    def terminal(self) -> bool:
        """True when nothing more happens to the run."""
        return self in TERMINAL_STATUSES

    @property
    def needs_person(self) -> bool:
        """True when the run waits for an operator (enqueue, approval or decision)."""
        return self in (RunStatus.READY, RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_DECISION)


TERMINAL_STATUSES = frozenset(
    {
        RunStatus.RECOMMENDED,
        RunStatus.ACCEPTED,
        RunStatus.REJECTED,
        RunStatus.CANCELLED,
        RunStatus.FAILED,
        RunStatus.EXPIRED,
    }
)


GRANT_TIERS: frozenset[Tier] = frozenset({Tier.READ_ONLY, Tier.WORKTREE, Tier.PR_READY})
"""The tiers a run the goal queue starts by itself under its autopilot grant may have
(docs/architecture.md "Goal queue"): a read_only run is analysed at once; a worktree or pr_ready run
still waits for its own digest-bound approval and execute by a person."""


class QueueGrant(BaseModel):
    """What authorises the create of a run the goal queue started by itself (docs/architecture.md "Goal
    queue"): the operator's standing grant, given by the signed ``queue autopilot on`` that the queue
    ``queue_workflow_id`` recorded, for item ``item_key``. The run accepts it only as a child of that
    queue's workflow, for a tier in :data:`GRANT_TIERS`, while ``granted_by`` is still registered and
    active."""

    model_config = ConfigDict(frozen=True)

    queue_workflow_id: str
    item_key: str
    granted_by: str
    granted_at: dt.datetime


class QueueVerdict(BaseModel):
    """Signal ``queue_verdict`` to a run its queue's autopilot started: the queue's FAIL verdict of
    round ``round`` of item ``item_key`` on this run (docs/architecture.md "Goal queue"). A signal names
    no sender, so the run believes none of it: it applies its grant's "reject on the queue's FAIL
    verdict" only after ``check_queue_verdict`` found that verdict recorded in its queue."""

    model_config = ConfigDict(frozen=True)

    queue_workflow_id: str
    item_key: str
    round: int


class QueueItemStatusUpdate(BaseModel):
    """Signal ``queue_item_status`` from the goal queue to the latest run of an item: the item's
    status now, which the run shows as its ``QueueItemStatus`` search attribute (docs/architecture.md
    "Goal queue", "Item status on runs"). A signal names no sender: the attribute is a finding aid
    for the Temporal UI and list filters, never a source of truth — the queue's ``view`` is."""

    model_config = ConfigDict(frozen=True)

    item_key: str
    status: QueueStatus


class QueueVerdictCheck(BaseModel):
    """Input of activity ``check_queue_verdict``: does queue ``queue_workflow_id`` hold a FAIL round of
    item ``item_key`` on run ``run_id``?"""

    model_config = ConfigDict(frozen=True)

    queue_workflow_id: str
    item_key: str
    run_id: str


class QueueVerdictFound(BaseModel):
    """Output of ``check_queue_verdict``: the FAIL round found (its number and findings line), or why
    none was."""

    model_config = ConfigDict(frozen=True)

    found: bool
    round: int | None = None
    reason: str = ""


class RunInput(BaseModel):
    """The workflow input of ``SpecialistRunWorkflow``.

    ``requested_tier`` is the operator's tier (``None`` with ``automatic``); ``request_digest`` is the
    sha256 of the canonical create request, used to tell a repeated delivery from a conflicting one.
    ``queue_grant`` stands in for ``proof`` on a run the goal queue's autopilot started (``None``
    otherwise, and in histories recorded before the queue started runs by itself).

    Two fields only the goal queue sets (docs/architecture.md "Goal queue"): ``escalation_model``, the
    model an escalated review round's run uses as its primary (the selection's chain follows it as
    fallbacks), and ``follows``, the item's previous run that this one re-dispatches or recovers (its
    preserved worktrees are listed by ``specialists worktrees``). ``review_wave``: the operator asks
    for a review wave; ``advisory``: the operator asks for an advisory pass on that topic
    (docs/architecture.md "Orchestration"). All four are part of the request digest when set and
    left out of it otherwise, so the digests of requests made before they existed are unchanged.
    """

    model_config = ConfigDict(frozen=True)

    run_id: str
    work_item: WorkItem
    requested_tier: Tier | None = None
    automatic: bool = False
    override: RouteOverride | None = None
    enqueue: bool = False
    request_id: str | None = None
    request_digest: str
    created_by: str | None = None
    proof: ActionProof | None = None
    queue_grant: QueueGrant | None = None
    escalation_model: ModelId | None = None
    follows: Annotated[str, StringConstraints(pattern=RUN_ID_PATTERN.pattern)] | None = None
    review_wave: bool = False
    advisory: AdvisoryTopic | None = None
    analysis_only: bool = False
    """A research-case task marked analysis-only (``contracts.policy.effective_tier``): read_only
    analysis and review at most, kept at read_only even at high risk. Set by the daily case analysis."""
    case_grant: CaseGrant | None = None
    """Stands in for ``proof`` on a run the daily case analysis started (docs/architecture.md
    "Schedules"): the schedule's standing grant; ``None`` otherwise."""


OPTIONAL_REQUEST_FIELDS = ("escalation_model", "follows", "review_wave", "advisory", "analysis_only")
"""Request fields added after runs were first recorded: digested only when set (not ``None`` or
``False``)."""


def run_request_digest(run_input: RunInput) -> str:
    """sha256 of the canonical create request (what the operator asked for, not ids, digests or what
    authorises it)."""
    payload = run_input.model_dump(
        mode="json", exclude={"run_id", "request_digest", "created_by", "proof", "queue_grant", "case_grant"}
    )
    for name in OPTIONAL_REQUEST_FIELDS:
        if payload[name] is None or payload[name] is False:
            del payload[name]
    return canonical_sha256(payload)


class ModelAssignment(BaseModel):
    """Which models one job of a run uses, and why (docs/architecture.md "Model selection").

    ``kind`` is the job (the primary's analysis or the independent review), ``profile`` the catalog
    profile doing it, ``models`` the chain the job will try in order, ``uses_support_model`` whether
    that chain is the selection's support model (else the primary chain: primary + ordered fallbacks
    when the mode allows them) and ``reason`` a sentence saying why, for operators and the audit
    trail. Built by :func:`catalog.capture.assign_models`; frozen into the contract and its digest.
    """

    model_config = ConfigDict(frozen=True)

    kind: JobKind
    profile: str
    models: Annotated[list[str], Field(min_length=1)]
    uses_support_model: bool
    reason: str


class ModelSnapshot(BaseModel):
    """The model selection captured into a contract; later selection changes never alter it.

    ``assignments`` say which models each job uses (at most one per job kind); contracts captured
    before support routing have none and every job uses :attr:`chain`, exactly as before. Raises
    ``pydantic.ValidationError`` when two assignments name the same job kind or an assignment's
    models are not the chain it claims (``[support]``, or :attr:`chain`), so the chain a contract
    shows is always the chain its jobs run.
    """

    model_config = ConfigDict(frozen=True)

    primary: str
    fallbacks: list[str] = []
    fallback_mode: FallbackMode = FallbackMode.PRIMARY_ONLY
    support: str | None = None
    advisory: str | None = None
    """The selection's advisory model, captured for the advisory pass an operator asked for
    (:meth:`for_advisory`); None in contracts captured before advisory passes and without one."""
    source: str
    # Defaults to empty so model snapshots recorded before support routing still validate.
    assignments: list[ModelAssignment] = []
    efforts: dict[str, str] = {}
    """The selection's reasoning effort by model class (``contracts.model_classes``), covered by the
    digest; empty in contracts captured before efforts (every call asks the provider's default)."""

    @classmethod
    def from_selection(cls, record: ModelSelectionRecord) -> ModelSnapshot:
        """The snapshot of a stored selection, before any assignment: its chain, support and
        advisory models and efforts, with who selected it and when as its ``source``."""
        chosen = record.selection
        return cls(
            primary=chosen.primary,
            fallbacks=list(chosen.fallbacks),
            fallback_mode=chosen.fallback_mode,
            support=chosen.support,
            advisory=chosen.advisory,
            efforts={model_class.value: effort.value for model_class, effort in chosen.efforts.items()},
            source=f"model selection by {record.selected_by} at {record.selected_at.isoformat()}",
        )

    def effort_for(self, model_class: ModelClass) -> ReasoningEffort | None:
        """The effort captured for ``model_class``'s calls, or None."""
        effort = self.efforts.get(model_class.value)
        return ReasoningEffort(effort) if effort is not None else None

    @property
    def chain(self) -> list[str]:
        """Models to try, in order: the primary, then fallbacks when the mode allows them."""
        if self.fallback_mode is FallbackMode.ORDERED:
            return [self.primary, *self.fallbacks]
        return [self.primary]

    @model_validator(mode="after")
    def _assignments_consistent(self) -> ModelSnapshot:
        kinds = [assignment.kind for assignment in self.assignments]
        if len(set(kinds)) != len(kinds):
            raise ValueError("a model snapshot holds at most one assignment per job kind")
        for assignment in self.assignments:
            if assignment.uses_support_model:
                if self.support is None or assignment.models != [self.support]:
                    raise ValueError(
                        f"the {assignment.kind.value} assignment uses the support model, "
                        f"so its models must be [{self.support}], not {assignment.models}"
                    )
            elif assignment.models != self.chain:
                raise ValueError(
                    f"the {assignment.kind.value} assignment uses the primary chain {self.chain}, "
                    f"not {assignment.models}"
                )
        return self

    def assignment_for(self, kind: JobKind) -> ModelAssignment | None:
        """The assignment of the job ``kind``, or ``None`` when the contract has none for it."""
        for assignment in self.assignments:
            if assignment.kind is kind:
                return assignment
        return None

    def for_job(self, kind: JobKind) -> ModelSnapshot:
        """The snapshot a job of ``kind`` must run with. Pure; raises nothing.

        Without an assignment for ``kind`` (every contract captured before support routing) returns
        ``self`` unchanged, so those jobs behave exactly as before. With an assignment, returns a
        snapshot of that job's chain alone, without assignments — so a review job's input never
        carries the analysis assignment, which names the author's profile: on the primary chain, the
        same primary, fallbacks and mode; on the support model, the support model as primary, no
        fallbacks and fallback mode ``primary_only``.

        The support model never falls back to the primary chain: the assignment frozen into the
        contract (and approved by its digest) names exactly ``[support]``, and a hidden second path
        onto the primary chain would run support work on the scarcer primary models without the
        contract saying so. A failing support model fails the job with its error class, as a failing
        primary does under ``primary_only``; the operator can change the selection and run again.
        """
        assignment = self.assignment_for(kind)
        if assignment is None:
            return self
        if not assignment.uses_support_model:
            return self._alone(self.primary, list(self.fallbacks), self.fallback_mode)
        return self._alone(assignment.models[0], [], FallbackMode.PRIMARY_ONLY)

    def for_advisory(self) -> ModelSnapshot:
        """The snapshot an advisory pass runs with: the advisory model alone, no fallbacks (like the
        support model, it never falls back onto the primary chain: the contract names exactly it).
        Raises ``ValueError`` when the snapshot has no advisory model (capture refuses such a run)."""
        if self.advisory is None:
            raise ValueError("the contract's model snapshot has no advisory model")
        return self._alone(self.advisory, [], FallbackMode.PRIMARY_ONLY)

    def _alone(self, primary: str, fallbacks: list[str], mode: FallbackMode) -> ModelSnapshot:
        """A job's own snapshot: ``primary``, ``fallbacks`` and ``mode`` without the assignments."""
        return ModelSnapshot(
            primary=primary,
            fallbacks=fallbacks,
            fallback_mode=mode,
            support=self.support,
            advisory=self.advisory,
            source=self.source,
            efforts=dict(self.efforts),
        )


class Budgets(BaseModel):
    """Limits frozen into a contract: runtime in seconds, model attempts, changed files."""

    model_config = ConfigDict(frozen=True)

    runtime_seconds: int = Field(gt=0)
    max_attempts: int = Field(default=2, ge=1, le=5)
    max_changed_files: int = 40
    approval_window_seconds: int = Field(default=7 * 24 * 3600, gt=0)


class UpstreamRef(BaseModel):
    """The upstream pin of the catalog the contract was captured from."""

    model_config = ConfigDict(frozen=True)

    repository: str
    commit: str
    license: str


class ExecutionContract(BaseModel):
    """What a run may do, frozen at capture. Its RFC 8785 canonical-JSON sha256 is the digest."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    task: str
    evidence_refs: list[str]
    task_type: TaskType
    repo_alias: str | None
    tier: Tier
    automatic: bool
    risk: RiskLevel
    catalog_version: str
    catalog_sha256: str
    upstream: UpstreamRef
    primary: str
    reviewer: str
    model: ModelSnapshot | None
    allowed_actions: list[str]
    forbidden_actions: list[str]
    budgets: Budgets
    stop_conditions: list[str]
    base_commit: str | None = None
    # The repository's configuration when the run was captured (worktree and pr_ready runs only):
    # which executor makes the change, its command, verification commands, environment names,
    # network access and command timeout. ``None`` for every other tier and for contracts captured
    # before repositories had a configuration. Later configuration changes never alter it.
    repository_config: RepositoryConfig | None = None
    # How the run is reviewed and why (docs/architecture.md "Orchestration"); ``None`` in contracts
    # captured before the decision existed.
    orchestration: OrchestrationDecision | None = None


class CapturedContract(BaseModel):
    """The capture activity's result: route, tier reasons, contract and its digest (computed once)."""

    model_config = ConfigDict(frozen=True)

    route: RouteDecision
    tier_reasons: list[str]
    contract: ExecutionContract
    contract_sha256: str


class AuditEvent(BaseModel):
    """One audit event: sequence number, workflow time (UTC), kind, actor and JSON-safe data."""

    model_config = ConfigDict(frozen=True)

    seq: int
    at: dt.datetime
    kind: str
    actor: str | None = None
    data: dict[str, Any] = {}


class DecisionOutcome(StrEnum):
    ACCEPTED = "accepted"
    REJECTED = "rejected"


class DecisionRequest(BaseModel):
    """Update ``decide``: the operator accepts or rejects the reviewed result."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    actor: str
    outcome: DecisionOutcome
    note: Note = ""
    proof: ActionProof | None = None


class Decision(BaseModel):
    """A recorded decision."""

    model_config = ConfigDict(frozen=True)

    actor: str
    outcome: DecisionOutcome
    note: str
    at: dt.datetime


class EnqueueRequest(BaseModel):
    """Update ``enqueue``: move a ``ready`` run to the queue."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    actor: str | None = None
    proof: ActionProof | None = None


class ApproveRequest(BaseModel):
    """Update ``approve``: approve exactly the contract with digest ``contract_sha256``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    actor: str
    contract_sha256: str
    proof: ActionProof | None = None


class ExecuteRequest(BaseModel):
    """Update ``execute``: carry out an approved worktree run's contract (protected; its proof is bound
    to the contract digest that was approved). Accepted once per run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    actor: str
    proof: ActionProof | None = None


class Approval(BaseModel):
    """A recorded approval: who approved which contract digest, when."""

    model_config = ConfigDict(frozen=True)

    actor: str
    contract_sha256: str
    at: dt.datetime


class CancelRequest(BaseModel):
    """Signal ``cancel``: stop the run (a running model job finishes first)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    actor: str
    reason: Note = ""
    proof: ActionProof | None = None


class ActionResult(BaseModel):
    """What an update returns: the run's status after the action, or why it was refused."""

    model_config = ConfigDict(frozen=True)

    accepted: bool
    status: RunStatus
    code: str | None = None
    message: str | None = None


class RunError(BaseModel):
    """Why a run failed: an error type from ``contracts.errors`` and a message.

    ``exit_code``: when an activity refused with an operator error (the run's capture refusing a
    create), the exit code of its class (:mod:`contracts.refusal_detail`), so the CLI reports it as
    that refusal; ``None`` for any other failure and in histories recorded before it existed.
    """

    model_config = ConfigDict(frozen=True)

    type: str
    message: str
    exit_code: int | None = None


class ContextPackRecord(BaseModel):
    """A completed model job's context pack and its sha256 (the one in its audit event)."""

    model_config = ConfigDict(frozen=True)

    sha256: str
    pack: ContextPack


class RunView(BaseModel):
    """The ``show`` view of a run (docs/architecture.md "Operator contract", ``create/show --json``), answered
    by query ``view``."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    status: RunStatus
    tier: Tier | None
    automatic: bool
    route: RouteDecision | None
    contract: ExecutionContract | None
    contract_sha256: str | None
    result: SpecialistOutput | None
    review: SpecialistOutput | None
    decision: Decision | None
    approval: Approval | None = None
    error: RunError | None = None
    request_digest: str
    created_at: dt.datetime
    audit: list[AuditEvent]
    context_packs: list[ContextPackRecord] = []
    execution: ExecutionRecord | None = None
    follows: str | None = None
    """The goal queue's previous run of the same item, which this run re-dispatches or recovers."""
    wave: WaveRecord | None = None
    passes: list[PassRecord] = []
    probes: list[ProbeRecord] = []
    """The analysis's probe requests and what became of each (operator-run evidence, kept apart from
    ``result`` and ``review``: docs/architecture.md "Probe requests")."""


class RunProgress(BaseModel):
    """How far a run is, answered by query ``status``: what a poller compares between polls.

    The view changes only with the status or with a new audit event, so a poller fetches the full
    :class:`RunView` (query ``view``) only when ``(status, audit_events)`` differs from its last poll.
    """

    model_config = ConfigDict(frozen=True)

    status: RunStatus
    audit_events: int


class AuthorizeRequest(BaseModel):
    """Input of the ``authorize_action`` activity: may ``actor`` take ``action`` on ``run_id``?"""

    model_config = ConfigDict(frozen=True)

    run_id: str
    action: str
    actor: str | None
    digest: str = ""
    proof: ActionProof | None = None
    standing_grant: bool = False
    """``True`` when no per-action proof is asked: a workflow has checked a standing grant (the goal
    queue's autopilot, docs/architecture.md "Goal queue") and only the granting ``actor`` being still
    registered and active is checked."""
    grant_target: str | None = None
    """With ``standing_grant`` and a ``proof``: the proof is the standing grant's signature of
    ``action`` on ``grant_target`` (a schedule id), bound to ``digest``; it is checked against the
    actor's key in force, with no freshness limit and no nonce spent (docs/architecture.md
    "Schedules")."""


class AuthorizeResult(BaseModel):
    """``allowed``, or the refusal ``code`` and ``message``."""

    model_config = ConfigDict(frozen=True)

    allowed: bool
    code: str | None = None
    message: str | None = None


class RunSummary(BaseModel):
    """The listable facts of a run, written to the projection (docs/architecture.md "Operator contract",
    ``list --json``)."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    status: RunStatus
    tier: Tier | None
    automatic: bool
    primary: str | None
    reviewer: str | None
    risk: RiskLevel | None
    repo_alias: str | None
    title: str
    contract_sha256: str | None
    request_id: str | None
    created_at: dt.datetime
    updated_at: dt.datetime


class ProjectRunRequest(BaseModel):
    """Input of the ``project_run`` activity: the summary and the audit events not yet projected."""

    model_config = ConfigDict(frozen=True)

    summary: RunSummary
    events: list[AuditEvent]
