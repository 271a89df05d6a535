"""``SpecialistRun``: one work item, carried from routing to an operator's decision.

Lifecycle (DESIGN.md "Run lifecycle"), as this module runs it::

    routing ─► recommended                         (tier recommend: no model runs)
    routing ─► ready ─(enqueue)─► queued ─► running ─► reviewing ─► awaiting_decision
            ─(decide)─► accepted | rejected
    routing ─► awaiting_approval ─(approve: contract digest)─► approved   (worktree | pr_ready)
            awaiting_approval ─(approval window)─► expired
    approved ─(execute: worktree only)─► queued ─► running ─► verifying ─► reviewing
            ─► awaiting_decision ─(decide)─► accepted | rejected
            (executor ``command``: no change job in running; the agent runs in verifying)
    any non-terminal ─(cancel)─► cancelled         (a running model job finishes first: cancel_requested)
    any ─► failed (error type + message)           running/reviewing ─(runtime budget)─► expired

Activities do every piece of I/O: ``capture_contract`` (route, policy, model snapshot, digest),
``project_run`` (the SQL projection), ``authorize_action`` (who may act: a registered human with a
valid proof of the action token), ``execute_worktree_attempt`` (an approved worktree run's patch
applied, or its repository's agent run, and checked in a fresh worktree). Model calls are
``ModelJob`` child workflows. Handlers only change state; ``run`` tells the story and waits on
conditions.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey, SearchAttributeUpdate
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError
from temporalio.exceptions import TimeoutError as TemporalTimeoutError

with workflow.unsafe.imports_passed_through():
    from contracts.enums import Tier
    from contracts.errors import ErrorType
    from contracts.execution import (
        COMMAND_EXECUTOR,
        ChangeUnderReview,
        CommandReport,
        ExecuteAttemptRequest,
        ExecutionRecord,
        WorktreeExecution,
        WorktreeLocation,
        command_task_text,
    )
    from contracts.model_jobs import JobContext, ModelJobInput, ModelJobResult
    from contracts.output import JobKind, SpecialistOutput
    from contracts.policy import APPROVAL_TIERS
    from contracts.proofs import ActionProof
    from contracts.runs import (
        ActionResult,
        Approval,
        ApproveRequest,
        AuditEvent,
        AuthorizeRequest,
        CancelRequest,
        CapturedContract,
        ContextPackRecord,
        Decision,
        DecisionOutcome,
        DecisionRequest,
        EnqueueRequest,
        ExecuteRequest,
        ProjectRunRequest,
        RunError,
        RunInput,
        RunStatus,
        RunSummary,
        RunView,
    )
    from contracts.temporal_names import WorkflowType
    from workflows.authorization import check_action
    from workflows.model_job import ModelJobWorkflow

CAPTURE_CONTRACT_ACTIVITY = "capture_contract"
PROJECT_RUN_ACTIVITY = "project_run"
EXECUTE_WORKTREE_ACTIVITY = "execute_worktree_attempt"

STATUS_KEY = SearchAttributeKey.for_keyword("SpecialistStatus")
TIER_KEY = SearchAttributeKey.for_keyword("SpecialistTier")
PROFILE_KEY = SearchAttributeKey.for_keyword("SpecialistProfile")
REVIEWER_KEY = SearchAttributeKey.for_keyword("SpecialistReviewer")
RISK_KEY = SearchAttributeKey.for_keyword("RiskLevel")
REPO_KEY = SearchAttributeKey.for_keyword("RepoAlias")

_SHORT_ACTIVITY = timedelta(seconds=10)
# Bookkeeping activities (capture, projection, authorisation) are cheap and idempotent: a few quick
# retries cover a database hiccup; a refusal is a non-retryable ApplicationError and is not retried.
_BOOKKEEPING_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(milliseconds=200))
# A worktree attempt is git work on local disk: minutes at most. One retry covers a worker lost
# mid-attempt (it claims the next attempt and makes a new worktree); fail-closed errors never retry.
_EXECUTION_TIMEOUT = timedelta(minutes=5)
_EXECUTION_RETRY = RetryPolicy(maximum_attempts=2, initial_interval=timedelta(seconds=1))
# The command executor's attempt also runs the repository's agent (its captured timeout, on top of
# the git work above); it heartbeats while the agent runs, so a lost worker is noticed in a minute.
_COMMAND_HEARTBEAT_TIMEOUT = timedelta(seconds=60)
_COMMAND_GIT_MARGIN_SECONDS = 60.0

# workflow.patched() ids: each marks a change to logic that recorded histories already exercise.
PATCH_AUTHORIZE_CREATE = "authorize-protected-create"
PATCH_AUDIT_MODEL_ATTEMPTS = "audit-model-attempts"


@workflow.defn(name=WorkflowType.SPECIALIST_RUN)
class SpecialistRunWorkflow:
    """Carry one specialist run through its lifecycle; the workflow history is its audit trail."""

    @workflow.init
    def __init__(self, run_input: RunInput) -> None:
        # Everything a handler may touch is set here, so a signal or update that arrives in the first
        # workflow task (before run() starts) finds initialised state.
        self._input = run_input
        self._status = RunStatus.ROUTING
        self._created_at = workflow.now()
        self._captured: CapturedContract | None = None
        self._result: SpecialistOutput | None = None
        self._review: SpecialistOutput | None = None
        self._decision: Decision | None = None
        self._approval: Approval | None = None
        self._error: RunError | None = None
        self._used_nonces: set[str] = set()
        self._audit: list[AuditEvent] = []
        self._projected_seq = 0
        self._enqueued = run_input.enqueue
        self._cancel: CancelRequest | None = None
        self._actions_in_flight = 0
        self._packs: list[ContextPackRecord] = []
        self._model_job_running = False
        self._execute: ExecuteRequest | None = None
        self._execution: ExecutionRecord | None = None
        self._executing = False
        self._record(
            "run_created",
            actor=run_input.created_by,
            data={
                "title": run_input.work_item.title,
                "requested_tier": run_input.requested_tier.value if run_input.requested_tier else None,
                "automatic": run_input.automatic,
                "enqueue": run_input.enqueue,
                "request_id": run_input.request_id,
            },
        )

    # ------------------------------------------------------------------------------------------ story

    @workflow.run
    async def run(self, run_input: RunInput) -> RunView:
        await self._settle_actions()
        if self._cancel is not None:
            return await self._finish(RunStatus.CANCELLED)

        # Creating a run that is enqueued at once or whose tier the policy picks is a protected action.
        # Histories recorded before this check existed replay without it.
        if (run_input.enqueue or run_input.automatic) and workflow.patched(PATCH_AUTHORIZE_CREATE):
            refusal = await self._authorize(
                "create", run_input.created_by, proof=run_input.proof, digest=run_input.request_digest
            )
            if refusal is not None:
                self._error = RunError(type=refusal.code or "action_refused", message=refusal.message or "")
                return await self._finish(RunStatus.FAILED)

        try:
            self._captured = await workflow.execute_activity(
                CAPTURE_CONTRACT_ACTIVITY,
                run_input,
                result_type=CapturedContract,
                start_to_close_timeout=_SHORT_ACTIVITY,
                retry_policy=_BOOKKEEPING_RETRY,
            )
        except ActivityError as error:
            return await self._fail_from(error, "capture_contract")
        contract = self._captured.contract
        self._record(
            "contract_captured",
            data={
                "contract_sha256": self._captured.contract_sha256,
                "tier": contract.tier.value,
                "primary": contract.primary,
                "reviewer": contract.reviewer,
                "risk": contract.risk.value,
                "catalog_sha256": contract.catalog_sha256,
                "model": contract.model.primary if contract.model else None,
                "tier_reasons": self._captured.tier_reasons,
            },
        )
        self._upsert_route_attributes()

        await self._settle_actions()
        if self._cancel is not None:
            return await self._finish(RunStatus.CANCELLED)
        if contract.tier is Tier.RECOMMEND:
            return await self._finish(RunStatus.RECOMMENDED)
        if contract.tier in APPROVAL_TIERS:
            # Before approvals existed, capture refused these tiers, so no recorded history reaches
            # this branch: it needs no patch marker.
            return await self._await_approval()

        if not self._enqueued:
            await self._transition(RunStatus.READY)
            await workflow.wait_condition(lambda: self._enqueued or self._cancel is not None)
            await self._settle_actions()
            if self._cancel is not None:
                return await self._finish(RunStatus.CANCELLED)
        await self._transition(RunStatus.QUEUED)
        await self._transition(RunStatus.RUNNING)

        # The runtime budget starts with execution, not while the run waited to be enqueued.
        deadline = workflow.now() + timedelta(seconds=contract.budgets.runtime_seconds)
        analysis = await self._model_job(JobKind.ANALYSIS, deadline)
        if analysis is None:
            return await self._finish(self._status)
        self._result = analysis.require_output()
        if self._cancel is not None:
            return await self._finish(RunStatus.CANCELLED)

        return await self._review_and_decide(deadline)

    async def _review_and_decide(self, deadline: Any, change: ChangeUnderReview | None = None) -> RunView:
        """The blinded review (of ``change`` too, for a worktree run), then the operator's decision."""
        await self._transition(RunStatus.REVIEWING)
        review = await self._model_job(JobKind.REVIEW, deadline, change=change)
        if review is None:
            return await self._finish(self._status)
        self._review = review.require_output()
        if self._cancel is not None:
            return await self._finish(RunStatus.CANCELLED)

        await self._transition(RunStatus.AWAITING_DECISION)
        await workflow.wait_condition(lambda: self._decision is not None or self._cancel is not None)
        await self._settle_actions()
        if self._decision is not None:
            outcome = self._decision.outcome
            return await self._finish(
                RunStatus.ACCEPTED if outcome is DecisionOutcome.ACCEPTED else RunStatus.REJECTED
            )
        return await self._finish(RunStatus.CANCELLED)

    async def _await_approval(self) -> RunView:
        """Wait (durably, up to the approval window) for an approval of the exact contract digest."""
        assert self._captured is not None
        window = timedelta(seconds=self._captured.contract.budgets.approval_window_seconds)
        await self._transition(RunStatus.AWAITING_APPROVAL)
        try:
            await workflow.wait_condition(
                lambda: self._approval is not None or self._cancel is not None, timeout=window
            )
        except TimeoutError:
            await self._settle_actions()
            if self._approval is None and self._cancel is None:
                self._record("approval_window_expired", data={"window_seconds": window.total_seconds()})
                self._error = RunError(
                    type=ErrorType.APPROVAL_WINDOW_EXPIRED,
                    message=f"no approval within {window}: create the run again",
                )
                return await self._finish(RunStatus.EXPIRED)
        await self._settle_actions()
        if self._cancel is not None:
            return await self._finish(RunStatus.CANCELLED)
        await self._transition(RunStatus.APPROVED)
        # An approved run waits for `execute` (worktree and pr_ready tiers) or a cancel. Before
        # `execute` existed the run could only be cancelled here; a recorded history of that path
        # takes the cancel branch with the same commands, and none holds an execute.
        await workflow.wait_condition(lambda: self._execute is not None or self._cancel is not None)
        await self._settle_actions()
        if self._cancel is not None or self._execute is None:
            return await self._finish(RunStatus.CANCELLED)
        return await self._execute_worktree(self._execute)

    async def _execute_worktree(self, request: ExecuteRequest) -> RunView:
        """The approved contract, carried out: the change job writes a patch; one activity applies it
        in a fresh worktree at the base commit and fails closed; the reviewer sees git's diff.

        A run that captured the ``command`` executor has no change job: the activity runs the
        repository's agent in the worktree instead (a branch no run before that executor reaches)."""
        assert self._captured is not None
        contract = self._captured.contract
        await self._transition(RunStatus.QUEUED)
        await self._transition(RunStatus.RUNNING)
        deadline = workflow.now() + timedelta(seconds=contract.budgets.runtime_seconds)
        config = contract.repository_config
        command = config is not None and config.executor.value == COMMAND_EXECUTOR
        if command:
            patch = ""  # the agent makes the change itself
        else:
            change_job = await self._model_job(JobKind.ANALYSIS, deadline, expects_patch=True)
            if change_job is None:
                return await self._finish(self._status)
            self._result = change_job.require_output()
            if self._cancel is not None:
                return await self._finish(RunStatus.CANCELLED)
            change_patch = self._result.patch
            assert change_patch is not None  # call_model checks that a change job's result carries one
            patch = change_patch
        self._execution = (
            ExecutionRecord(actor=request.actor, executor=COMMAND_EXECUTOR)
            if command
            else ExecutionRecord(actor=request.actor)
        )
        # From here a cancel waits for the attempt (cancel_requested), and one that arrived meanwhile,
        # or is still being authorised, stops the run before any worktree is made.
        self._executing = True
        await self._transition(RunStatus.VERIFYING)
        await self._settle_actions()
        if self._cancel is not None:
            self._executing = False
            return await self._finish(RunStatus.CANCELLED)
        execution = await self._run_execution(patch, deadline)
        if execution is None:
            return await self._finish(self._status)
        if self._cancel is not None:
            return await self._finish(RunStatus.CANCELLED)
        try:
            change = ChangeUnderReview.from_evidence(execution.evidence, execution.verification)
        except ValueError as error:
            self._error = RunError(type=ErrorType.CHANGE_TOO_LARGE_FOR_REVIEW, message=str(error))
            self._record("step_failed", data={"step": "review", "error_type": self._error.type})
            return await self._finish(RunStatus.FAILED)
        return await self._review_and_decide(deadline, change)

    async def _run_execution(self, patch: str, deadline: Any) -> WorktreeExecution | None:
        """Run ``execute_worktree_attempt``; the result, or ``None`` after moving the run to
        ``failed`` (the fail-closed type as the error; the worktree stays) or ``expired``."""
        assert self._captured is not None and self._execution is not None
        contract = self._captured.contract
        assert contract.repo_alias is not None and contract.base_commit is not None
        remaining = max((deadline - workflow.now()).total_seconds(), 1.0)
        config = contract.repository_config
        self._executing = True
        try:
            if config is not None and config.executor.value == COMMAND_EXECUTOR:
                # The agent's budget: the captured timeout, bounded by what is left of the run's
                # budget (less a margin for git's checks), so the activity kills it before Temporal
                # gives up on the activity.
                margin = min(_COMMAND_GIT_MARGIN_SECONDS, remaining / 4)
                agent_budget = max(min(float(config.command_timeout_seconds), remaining - margin), 1.0)
                pr_ready = self._pr_ready_fields(remaining - margin - agent_budget)
                execution: WorktreeExecution = await workflow.execute_activity(
                    EXECUTE_WORKTREE_ACTIVITY,
                    ExecuteAttemptRequest(
                        run_id=contract.run_id,
                        repo_alias=contract.repo_alias,
                        base_commit=contract.base_commit,
                        patch="",
                        executor=COMMAND_EXECUTOR,
                        repository_config=config,
                        task_text=command_task_text(
                            contract.task, contract.evidence_refs, contract.stop_conditions
                        ),
                        command_timeout_seconds=agent_budget,
                        **pr_ready,
                    ),
                    result_type=WorktreeExecution,
                    start_to_close_timeout=_EXECUTION_TIMEOUT
                    + timedelta(seconds=agent_budget + float(pr_ready.get("verify_budget_seconds", 0.0))),
                    schedule_to_close_timeout=timedelta(seconds=remaining),
                    heartbeat_timeout=_COMMAND_HEARTBEAT_TIMEOUT,
                    retry_policy=_EXECUTION_RETRY,
                )
            elif contract.tier is Tier.PR_READY:
                # A pr_ready run's verify commands get what is left of the budget, less git's margin.
                pr_ready = self._pr_ready_fields(remaining - min(_COMMAND_GIT_MARGIN_SECONDS, remaining / 4))
                execution = await workflow.execute_activity(
                    EXECUTE_WORKTREE_ACTIVITY,
                    ExecuteAttemptRequest(
                        run_id=contract.run_id,
                        repo_alias=contract.repo_alias,
                        base_commit=contract.base_commit,
                        patch=patch,
                        **pr_ready,
                    ),
                    result_type=WorktreeExecution,
                    start_to_close_timeout=_EXECUTION_TIMEOUT
                    + timedelta(seconds=float(pr_ready["verify_budget_seconds"])),
                    schedule_to_close_timeout=timedelta(seconds=remaining),
                    heartbeat_timeout=_COMMAND_HEARTBEAT_TIMEOUT,
                    retry_policy=_EXECUTION_RETRY,
                )
            else:
                execution = await workflow.execute_activity(
                    EXECUTE_WORKTREE_ACTIVITY,
                    ExecuteAttemptRequest(
                        run_id=contract.run_id,
                        repo_alias=contract.repo_alias,
                        base_commit=contract.base_commit,
                        patch=patch,
                    ),
                    result_type=WorktreeExecution,
                    start_to_close_timeout=_EXECUTION_TIMEOUT,
                    schedule_to_close_timeout=timedelta(seconds=remaining),
                    retry_policy=_EXECUTION_RETRY,
                )
        except ActivityError as error:
            cause = error.cause
            if isinstance(cause, ApplicationError):
                error_type, message = cause.type or ErrorType.EXECUTION_FAILED, cause.message
            elif isinstance(cause, TemporalTimeoutError):  # the runtime budget ran out meanwhile
                self._record("budget_exhausted", data={"step": "execute", "budget_seconds": remaining})
                self._error = RunError(
                    type=ErrorType.RUNTIME_BUDGET_EXHAUSTED, message="the runtime budget ran out"
                )
                self._execution = self._execution.model_copy(
                    update={"failure_type": ErrorType.RUNTIME_BUDGET_EXHAUSTED}
                )
                self._set_status(RunStatus.EXPIRED)
                return None
            else:
                error_type, message = ErrorType.EXECUTION_FAILED, str(cause or error)
            location = None
            report = None
            if isinstance(cause, ApplicationError) and cause.details and isinstance(cause.details[0], dict):
                location = WorktreeLocation.model_validate(cause.details[0])
                if len(cause.details) > 1 and isinstance(cause.details[1], dict):
                    report = CommandReport.model_validate(cause.details[1])
            self._execution = self._execution.model_copy(
                update={"location": location, "failure_type": error_type}
                | ({"command": report} if report is not None else {})
            )
            self._record(
                "worktree_failed",
                data={
                    "error_type": error_type,
                    "message": message,
                    "attempt": location.attempt if location else None,
                },
            )
            self._error = RunError(type=error_type, message=message)
            self._set_status(RunStatus.FAILED)
            return None
        finally:
            self._executing = False
        evidence = execution.evidence
        patch_sha256 = execution.applied.patch_sha256 if execution.applied is not None else None
        self._execution = self._execution.model_copy(
            update={
                "evidence": evidence,
                "patch_sha256": patch_sha256,
                "command": execution.command,
                "verification": execution.verification,
                "pr_patch": execution.pr_patch,
                "location": WorktreeLocation.of_attempt(execution.attempt, execution.host),
            }
        )
        self._record(
            "worktree_executed",
            data={
                "attempt": execution.attempt.attempt,
                "base_commit": evidence.base_commit,
                "files_changed": evidence.files_changed,
                "diff_sha256": evidence.diff_sha256,
                "diff_bytes": evidence.diff_bytes,
                "patch_sha256": patch_sha256,
                **(
                    {
                        "command_exit_status": execution.command.exit_status,
                        "command_duration_seconds": execution.command.duration_seconds,
                        "network_isolated": execution.command.network_isolated,
                    }
                    if execution.command is not None
                    else {}
                ),
                **(
                    {
                        "verification_exit_statuses": [item.exit_status for item in execution.verification],
                        "pr_patch_sha256": execution.pr_patch.sha256,
                    }
                    if execution.pr_patch is not None
                    else {}
                ),
            },
        )
        return execution

    def _pr_ready_fields(self, budget_seconds: float) -> dict[str, Any]:
        """The ``ExecuteAttemptRequest`` fields of a pr_ready run (none for a worktree run): its
        captured verify commands, each bounded by the captured timeout, all by ``budget_seconds``."""
        assert self._captured is not None
        contract = self._captured.contract
        if contract.tier is not Tier.PR_READY:
            return {}
        config = contract.repository_config
        return {
            "pr_ready": True,
            "verify": [list(argv) for argv in config.verify] if config is not None else [],
            "verify_timeout_seconds": float(config.command_timeout_seconds) if config is not None else None,
            "verify_budget_seconds": max(budget_seconds, 1.0),
        }

    async def _model_job(
        self,
        kind: JobKind,
        deadline: Any,
        *,
        expects_patch: bool = False,
        change: ChangeUnderReview | None = None,
    ) -> ModelJobResult | None:
        """Run one ``ModelJob`` child inside the runtime budget (``expects_patch``: a worktree run's
        change job; ``change``: what git says a worktree run changed, for its reviewer).

        Returns the result, or ``None`` after moving the run to ``failed`` or ``expired``.
        """
        assert self._captured is not None
        contract = self._captured.contract
        if contract.model is None:
            self._error = RunError(type=ErrorType.MODEL_NOT_CONFIGURED, message="no model in the contract")
            self._set_status(RunStatus.FAILED)
            return None
        profile = contract.primary if kind is JobKind.ANALYSIS else contract.reviewer
        findings = [] if kind is JobKind.ANALYSIS or self._result is None else self._result.findings
        job = ModelJobInput(
            job_id=f"{contract.run_id}-{kind.value}",
            run_id=contract.run_id,
            kind=kind,
            profile_id=profile,
            catalog_sha256=contract.catalog_sha256,
            # The reviewer sees the original task and evidence, then the findings only: never the
            # author's profile, model, confidence or verdict (DESIGN.md "Run lifecycle").
            context=JobContext(
                title=self._input.work_item.title,
                task=contract.task,
                evidence_refs=contract.evidence_refs,
                findings_under_review=findings,
                expects_patch=expects_patch,
                change=change,
            ),
            # The captured assignment picks the job's models; a contract captured before support
            # routing has none, so for_job returns the same snapshot and old runs replay unchanged.
            model=contract.model.for_job(kind),
            max_attempts=contract.budgets.max_attempts,
            task_type=contract.task_type,
            repo_alias=contract.repo_alias,
            base_commit=contract.base_commit,
        )
        assignment = contract.model.assignment_for(kind)
        self._record(
            "model_job_started",
            data={
                "kind": kind.value,
                "profile": profile,
                "models": job.model.chain,
                "uses_support_model": assignment.uses_support_model if assignment else False,
                "model_reason": assignment.reason if assignment else None,
            },
        )
        self._model_job_running = True
        child = asyncio.ensure_future(
            workflow.execute_child_workflow(
                ModelJobWorkflow.run,
                job,
                id=job.job_id,
                task_queue=workflow.info().task_queue,
            )
        )
        remaining = max((deadline - workflow.now()).total_seconds(), 0.001)
        try:
            await workflow.wait_condition(child.done, timeout=timedelta(seconds=remaining))
        except TimeoutError:
            child.cancel()
            self._model_job_running = False
            self._record("budget_exhausted", data={"kind": kind.value, "budget_seconds": remaining})
            self._error = RunError(
                type=ErrorType.RUNTIME_BUDGET_EXHAUSTED, message="the runtime budget ran out"
            )
            self._set_status(RunStatus.EXPIRED)
            return None
        finally:
            self._model_job_running = False
        try:
            result = child.result()
        except ChildWorkflowError as error:
            cause = error.cause
            error_type = cause.type if isinstance(cause, ApplicationError) else None
            message = cause.message if isinstance(cause, ApplicationError) else str(error)
            # ModelJob carries its attempts as one list (its only detail), as a completed job does.
            attempts = list(cause.details[0]) if isinstance(cause, ApplicationError) and cause.details else []
            # A job that built its context pack names it in a second detail.
            extra = cause.details[1] if isinstance(cause, ApplicationError) and len(cause.details) > 1 else {}
            pack_sha256 = extra.get("pack_sha256") if isinstance(extra, dict) else None
            self._record_attempts(kind, attempts)
            data: dict[str, Any] = {
                "kind": kind.value,
                "error_type": error_type,
                "message": message,
                "attempts": attempts,
            }
            if pack_sha256 is not None:
                data["pack_sha256"] = pack_sha256
            self._record("model_job_failed", data=data)
            self._error = RunError(type=error_type or ErrorType.MODEL_TASK, message=message)
            self._set_status(RunStatus.FAILED)
            return None
        self._record_attempts(kind, [attempt.model_dump(mode="json") for attempt in result.attempts])
        output = result.require_output()
        if result.pack is not None and result.pack_sha256 is not None:
            self._packs.append(ContextPackRecord(sha256=result.pack_sha256, pack=result.pack))
        self._record(
            "model_job_completed",
            data={
                **({"pack_sha256": result.pack_sha256} if result.pack_sha256 is not None else {}),
                "kind": kind.value,
                "model": result.model_id,
                "attempts": [attempt.model_dump(mode="json") for attempt in result.attempts],
                "findings": len(output.findings),
                "verdict": output.verdict.value if output.verdict else None,
            },
        )
        return result

    def _record_attempts(self, kind: JobKind, attempts: list[Any]) -> None:
        """One ``model_attempt`` audit event per call the job made, retried ones included: model,
        attempt number, outcome, error class, whether it was retried or fell back, latency, tokens."""
        if not workflow.patched(PATCH_AUDIT_MODEL_ATTEMPTS):
            return
        for attempt in attempts:
            if not isinstance(attempt, dict):
                continue
            usage = attempt.get("usage") or {}
            self._record(
                "model_attempt",
                data={
                    "kind": kind.value,
                    "model": attempt.get("model_id"),
                    "attempt": attempt.get("attempt", 1),
                    "outcome": attempt.get("outcome"),
                    "error_type": attempt.get("error_type"),
                    "message": attempt.get("message"),
                    "retried": attempt.get("retried", False),
                    "fallback": attempt.get("fallback", False),
                    "latency_ms": usage.get("latency_ms"),
                    "input_tokens": usage.get("input_tokens"),
                    "output_tokens": usage.get("output_tokens"),
                },
            )

    # ---------------------------------------------------------------------------------------- handlers

    @workflow.query(name="view")
    def view(self) -> RunView:
        """The run as ``show`` presents it."""
        captured = self._captured
        tier = captured.contract.tier if captured else self._input.requested_tier
        return RunView(
            run_id=self._input.run_id,
            status=self._status,
            tier=tier,
            automatic=self._input.automatic,
            route=captured.route if captured else None,
            contract=captured.contract if captured else None,
            contract_sha256=captured.contract_sha256 if captured else None,
            result=self._result,
            review=self._review,
            decision=self._decision,
            approval=self._approval,
            error=self._error,
            request_digest=self._input.request_digest,
            created_at=self._created_at,
            audit=list(self._audit),
            context_packs=list(self._packs),
            execution=self._execution,
        )

    @workflow.update(name="enqueue")
    async def enqueue(self, request: EnqueueRequest) -> ActionResult:
        """Move a ``ready`` run to the queue."""
        refusal = await self._authorize("enqueue", request.actor, proof=request.proof)
        if refusal is not None:
            return refusal
        if self._status is not RunStatus.READY:
            return self._refuse("enqueue", request.actor, "not_ready", f"run is {self._status.value}")
        self._enqueued = True
        self._record("enqueued", actor=request.actor)
        return ActionResult(accepted=True, status=RunStatus.QUEUED)

    @enqueue.validator
    def _validate_enqueue(self, request: EnqueueRequest) -> None:
        if self._status is not RunStatus.READY:
            raise ApplicationError(
                f"run {self._input.run_id} is {self._status.value}; only a ready run can be enqueued",
                type="not_ready",
            )

    @workflow.update(name="decide")
    async def decide(self, request: DecisionRequest) -> ActionResult:
        """Record the operator's decision on the reviewed result."""
        refusal = await self._authorize("decide", request.actor, proof=request.proof)
        if refusal is not None:
            return refusal
        if self._status is not RunStatus.AWAITING_DECISION or self._decision is not None:
            return self._refuse(
                "decide", request.actor, "not_awaiting_decision", f"run is {self._status.value}"
            )
        self._decision = Decision(
            actor=request.actor, outcome=request.outcome, note=request.note, at=workflow.now()
        )
        self._record(
            "decided", actor=request.actor, data={"outcome": request.outcome.value, "note": request.note}
        )
        status = RunStatus.ACCEPTED if request.outcome is DecisionOutcome.ACCEPTED else RunStatus.REJECTED
        return ActionResult(accepted=True, status=status)

    @decide.validator
    def _validate_decide(self, request: DecisionRequest) -> None:
        if self._status is not RunStatus.AWAITING_DECISION or self._decision is not None:
            raise ApplicationError(
                f"run {self._input.run_id} is {self._status.value}; only a run awaiting a decision "
                "can be decided",
                type="not_awaiting_decision",
            )

    @workflow.update(name="approve")
    async def approve(self, request: ApproveRequest) -> ActionResult:
        """Approve exactly the captured contract (its digest), by a registered human with the token."""
        assert self._captured is not None
        digest = self._captured.contract_sha256
        refusal = await self._authorize("approve", request.actor, proof=request.proof, digest=digest)
        if refusal is not None:
            return refusal
        if self._status is not RunStatus.AWAITING_APPROVAL or self._approval is not None:
            # Another approval (or a cancel, or the window) won while this one was being authorised.
            return self._refuse(
                "approve", request.actor, "not_awaiting_approval", f"run is {self._status.value}"
            )
        self._approval = Approval(actor=request.actor, contract_sha256=digest, at=workflow.now())
        self._record("approved", actor=request.actor, data={"contract_sha256": digest})
        return ActionResult(accepted=True, status=RunStatus.APPROVED)

    @approve.validator
    def _validate_approve(self, request: ApproveRequest) -> None:
        if self._status is not RunStatus.AWAITING_APPROVAL or self._approval is not None:
            raise ApplicationError(
                f"run {self._input.run_id} is {self._status.value}; only a run awaiting approval "
                "can be approved",
                type="not_awaiting_approval",
            )
        assert self._captured is not None
        if request.contract_sha256 != self._captured.contract_sha256:
            raise ApplicationError(
                f"contract digest {request.contract_sha256!r} is not the run's contract "
                f"({self._captured.contract_sha256}): review the current contract with `show`",
                type="stale_contract_digest",
            )

    @workflow.update(name="execute")
    async def execute(self, request: ExecuteRequest) -> ActionResult:
        """Carry out an approved worktree run: by a registered human with a proof bound to the
        approved contract digest; accepted once — a second or concurrent execute is refused."""
        assert self._captured is not None
        digest = self._captured.contract_sha256
        refusal = await self._authorize("execute", request.actor, proof=request.proof, digest=digest)
        if refusal is not None:
            return refusal
        if self._status is not RunStatus.APPROVED or self._execute is not None or self._cancel is not None:
            # Another execute (or a cancel) won while this one was being authorised.
            return self._refuse("execute", request.actor, "already_executing", f"run is {self._status.value}")
        self._execute = request
        self._record("execute_requested", actor=request.actor, data={"contract_sha256": digest})
        return ActionResult(accepted=True, status=RunStatus.QUEUED)

    @execute.validator
    def _validate_execute(self, request: ExecuteRequest) -> None:
        if self._execute is not None:
            raise ApplicationError(
                f"run {self._input.run_id} is already executing or executed ({self._status.value})",
                type="already_executing",
            )
        if self._status is not RunStatus.APPROVED:
            raise ApplicationError(
                f"run {self._input.run_id} is {self._status.value}; only an approved run executes",
                type="not_approved",
            )

    @workflow.signal(name="cancel")
    async def cancel(self, request: CancelRequest) -> None:
        """Stop the run; a model job that is running finishes first."""
        refusal = await self._authorize("cancel", request.actor, proof=request.proof)
        if refusal is not None:
            return
        if self._status.terminal or self._cancel is not None:
            self._refuse("cancel", request.actor, "already_finished", f"run is {self._status.value}")
            return
        self._cancel = request
        self._record("cancel_requested", actor=request.actor, data={"reason": request.reason})
        if self._model_job_running or self._executing:
            self._set_status(RunStatus.CANCEL_REQUESTED)

    async def _authorize(
        self, action: str, actor: str | None, *, proof: ActionProof | None = None, digest: str = ""
    ) -> ActionResult | None:
        """Run the authorisation step (``workflows.authorization.check_action``); ``None`` when
        allowed, else the recorded refusal. A proof's nonce is spent on first use, so a captured
        proof cannot be sent again."""
        request = AuthorizeRequest(
            run_id=self._input.run_id, action=action, actor=actor, digest=digest, proof=proof
        )
        self._actions_in_flight += 1
        try:
            result = await check_action(request, self._used_nonces)
        finally:
            self._actions_in_flight -= 1
        if result.allowed:
            return None
        return self._refuse(action, actor, result.code or "forbidden", result.message or "refused")

    def _refuse(self, action: str, actor: str | None, code: str, message: str) -> ActionResult:
        self._record("action_refused", actor=actor, data={"action": action, "code": code, "message": message})
        return ActionResult(accepted=False, status=self._status, code=code, message=message)

    async def _settle_actions(self) -> None:
        """Wait until operator actions being authorised have taken effect or been refused."""
        await workflow.wait_condition(lambda: self._actions_in_flight == 0)

    # ------------------------------------------------------------------------------------ state/audit

    def _record(self, kind: str, *, actor: str | None = None, data: dict[str, Any] | None = None) -> None:
        self._audit.append(
            AuditEvent(seq=len(self._audit) + 1, at=workflow.now(), kind=kind, actor=actor, data=data or {})
        )

    def _set_status(self, status: RunStatus) -> None:
        if status is self._status:
            return
        previous = self._status
        self._status = status
        self._record("status_changed", data={"from": previous.value, "to": status.value})
        workflow.upsert_search_attributes([STATUS_KEY.value_set(status.value)])

    def _upsert_route_attributes(self) -> None:
        assert self._captured is not None
        contract = self._captured.contract
        updates: list[SearchAttributeUpdate[Any]] = [
            TIER_KEY.value_set(contract.tier.value),
            PROFILE_KEY.value_set(contract.primary),
            REVIEWER_KEY.value_set(contract.reviewer),
            RISK_KEY.value_set(contract.risk.value),
        ]
        if contract.repo_alias:
            updates.append(REPO_KEY.value_set(contract.repo_alias))
        workflow.upsert_search_attributes(updates)

    async def _transition(self, status: RunStatus) -> None:
        self._set_status(status)
        await self._project()

    async def _finish(self, status: RunStatus) -> RunView:
        self._set_status(status)
        await workflow.wait_condition(workflow.all_handlers_finished)
        await self._project()
        return self.view()

    async def _fail_from(self, error: ActivityError, step: str) -> RunView:
        cause = error.cause
        error_type = cause.type if isinstance(cause, ApplicationError) and cause.type else "activity_failed"
        message = cause.message if isinstance(cause, ApplicationError) else str(cause or error)
        self._error = RunError(type=error_type, message=message)
        self._record("step_failed", data={"step": step, "error_type": error_type, "message": message})
        return await self._finish(RunStatus.FAILED)

    async def _project(self) -> None:
        """Write the run's summary and its new audit events to the SQL projection."""
        captured = self._captured
        contract = captured.contract if captured else None
        summary = RunSummary(
            run_id=self._input.run_id,
            status=self._status,
            tier=contract.tier if contract else self._input.requested_tier,
            automatic=self._input.automatic,
            primary=contract.primary if contract else None,
            reviewer=contract.reviewer if contract else None,
            risk=contract.risk if contract else None,
            repo_alias=self._input.work_item.repo_alias,
            title=self._input.work_item.title,
            contract_sha256=captured.contract_sha256 if captured else None,
            request_id=self._input.request_id,
            created_at=self._created_at,
            updated_at=workflow.now(),
        )
        events = [event for event in self._audit if event.seq > self._projected_seq]
        await workflow.execute_activity(
            PROJECT_RUN_ACTIVITY,
            ProjectRunRequest(summary=summary, events=events),
            start_to_close_timeout=_SHORT_ACTIVITY,
            retry_policy=RetryPolicy(maximum_attempts=5, initial_interval=timedelta(milliseconds=200)),
        )
        if events:
            self._projected_seq = events[-1].seq
