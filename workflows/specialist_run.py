"""``SpecialistRun``: one work item, carried from routing to an operator's decision.

Lifecycle (docs/architecture.md "Run lifecycle"), as this module runs it::

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

``run`` is that story, one named phase after another (``_authorize_creation``, ``_capture``,
``_wait_for_enqueue``, ``_analyse``, ``_await_approval``, ``_await_execute``, ``_execute_worktree``,
``_review_and_decide``); a phase either lets the run go on (``None``) or names the status it ends
with. Activities do every piece of I/O: ``capture_contract`` (route, policy, model snapshot, digest),
``project_run`` (the SQL projection), ``authorize_action`` (who may act: a registered human with a
valid proof of the action token), ``execute_worktree_attempt`` (an approved worktree run's patch
applied, or its repository's agent run, and checked in a fresh worktree). Model calls are
``ModelJob`` child workflows. Handlers only change state; the phases wait on conditions.
"""

import asyncio
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from contracts.audit import AuditKind
    from contracts.enums import Tier
    from contracts.errors import ErrorType
    from contracts.execution import COMMAND_EXECUTOR, ChangeUnderReview, ExecutionRecord
    from contracts.orchestration import ReviewShape
    from contracts.output import JobKind
    from contracts.policy import APPROVAL_TIERS
    from contracts.probes import ApproveProbeRequest
    from contracts.queue_messages import QUEUE_ID_PREFIX, RunProgressed
    from contracts.refusals import RefusalCode
    from contracts.runs import (
        GRANT_TIERS,
        ActionResult,
        Approval,
        ApproveRequest,
        CancelRequest,
        CapturedContract,
        Decision,
        DecisionOutcome,
        DecisionRequest,
        EnqueueRequest,
        ExecuteRequest,
        ProjectRunRequest,
        QueueItemStatusUpdate,
        QueueVerdict,
        RunError,
        RunInput,
        RunProgress,
        RunStatus,
        RunView,
    )
    from contracts.schedules import SCHEDULE_ENABLE_ACTION
    from contracts.temporal_names import ActivityName, QueueMessage, RunMessage, WorkflowType
    from workflows.audit import activity_failure
    from workflows.authorization import ProtectedActions
    from workflows.patches import Behaviours
    from workflows.probes import (
        PATCH_PROBE_REQUESTS,
        handle_probe_approval,
        probes_pending,
        record_probes,
        validate_probe_approval,
        wait_for_decision,
    )
    from workflows.queue_verdict import apply_queue_verdict
    from workflows.review_wave import PATCH_REVIEW_WAVES, run_wave
    from workflows.run_jobs import run_model_job
    from workflows.run_state import QUEUE_ITEM_STATUS_KEY, RunState, route_attributes
    from workflows.versioning import pinned
    from workflows.worktree_attempt import attempt_worktree, uses_command_executor

_SHORT_ACTIVITY = timedelta(seconds=10)
# Bookkeeping activities (capture, projection) are cheap and idempotent: a few quick retries cover a
# database hiccup; a refusal is a non-retryable ApplicationError and is not retried.
_BOOKKEEPING_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(milliseconds=200))
_PROJECTION_RETRY = RetryPolicy(maximum_attempts=5, initial_interval=timedelta(milliseconds=200))

# workflow.patched() ids: each marks a change to logic that recorded histories already exercise
# (and run_jobs.PATCH_AUDIT_MODEL_ATTEMPTS). Runs started since PATCH_RUN_V6 record that one marker
# and have every behaviour; runs started under PATCH_RUN_V5 ask only the ids added after it
# (RUN_V5_LATER); the older ids are asked only by runs recorded before both
# (docs/architecture.md "Temporal conventions").
PATCH_AUTHORIZE_CREATE = "authorize-protected-create"
PATCH_ONE_UPSERT_PER_TASK = "one-search-attribute-upsert-per-task"
PATCH_RUN_V5 = "run-v5"
PATCH_CASE_SWEEP_GRANT = "case-sweep-grant"
"""Runs the daily case analysis started carry its schedule's grant in place of a proof
(docs/architecture.md "Schedules"); asked only by such runs, so no recorded history asks it."""
PATCH_CREATOR_PROVED = "run-creator-proved"
"""Runs started since prove the creator they name even when creating them is not protected: a
``created_by`` is the audit's ``run_created`` actor, so it carries that actor's proof (docs/architecture.md
"Operator contract"); asked only by a run that names its creator and was started by a client."""
PATCH_TELLS_QUEUE = "run-tells-its-queue"
"""Runs started since, by a goal queue, signal it ``run_progressed`` when they reach their decision
and when they end (docs/architecture.md "Goal queue"); asked only by a queue's child run."""
RUN_V5_LATER = (
    PATCH_CASE_SWEEP_GRANT,
    PATCH_CREATOR_PROVED,
    PATCH_TELLS_QUEUE,
    PATCH_PROBE_REQUESTS,
    PATCH_REVIEW_WAVES,
)
"""The ids that came after PATCH_RUN_V5, each asked where its behaviour is first reached: a marker
and a ``TemporalChangeVersion`` upsert each (after the first workflow task, a visibility write)."""
PATCH_RUN_V6 = "run-v6"
"""Every behaviour above under one marker, asked in the first workflow task."""


@workflow.defn(name=WorkflowType.SPECIALIST_RUN, versioning_behavior=pinned())
class SpecialistRunWorkflow:
    """Carry one specialist run through its lifecycle; the workflow history is its audit trail."""

    @workflow.init
    def __init__(self, run_input: RunInput) -> None:
        # Everything a handler may touch is set here, so a signal or update that arrives in the first
        # workflow task (before run() starts) finds initialised state.
        # The run's marker (PATCH_RUN_V6; before it, PATCH_RUN_V5 or PATCH_ONE_UPSERT_PER_TASK) is
        # asked in the first workflow task, where the patch's own search attribute
        # (TemporalChangeVersion) costs no visibility write of its own, as an upsert in any later
        # task but the closing one does (docs/architecture.md "Temporal conventions").
        behaviours = Behaviours(PATCH_RUN_V6, previous=PATCH_RUN_V5, added_since_previous=RUN_V5_LATER)
        self._state = RunState(run_input, workflow.now(), behaviours, enqueued=run_input.enqueue)
        self._state.one_upsert_per_task = self._state.behaviours.has(PATCH_ONE_UPSERT_PER_TASK)
        self._actions = ProtectedActions(run_input.run_id, self._state.audit, self._refused)
        self._tells_queue: bool | None = None  # asked once, when the run first tells its queue
        self._state.audit.record(
            AuditKind.RUN_CREATED,
            actor=run_input.created_by,
            data={
                "title": run_input.work_item.title,
                "requested_tier": run_input.requested_tier.value if run_input.requested_tier else None,
                "automatic": run_input.automatic,
                "enqueue": run_input.enqueue,
                "request_id": run_input.request_id,
                # A run the queue's autopilot started says so (only such runs carry the key).
                **(
                    {"queue_grant": run_input.queue_grant.model_dump(mode="json"), "by": "queue_autopilot"}
                    if run_input.queue_grant is not None
                    else {}
                ),
            },
        )

    # ------------------------------------------------------------------------------------------ story

    @workflow.run
    async def run(self, run_input: RunInput) -> RunView:
        self._state.show_details()
        ended = (
            await self._cancelled()
            or await self._authorize_creation()
            or await self._capture()
            or await self._cancelled()
        )
        if ended is None:
            tier = self._state.contract.tier
            if tier is Tier.RECOMMEND:
                ended = RunStatus.RECOMMENDED
            elif tier in APPROVAL_TIERS:
                # Before approvals existed, capture refused these tiers, so no recorded history
                # reaches this branch: it needs no patch marker.
                ended = await self._approve_and_execute()
            else:
                ended = await self._enqueue_and_analyse()
        return await self._finish(ended)

    async def _enqueue_and_analyse(self) -> RunStatus:
        """A read_only run: enqueued, analysed, reviewed, decided."""
        ended = await self._wait_for_enqueue()
        if ended is not None:
            return ended
        deadline = await self._start_running()
        return await self._analyse(deadline) or await self._review_and_decide(deadline)

    async def _approve_and_execute(self) -> RunStatus:
        """A worktree or pr_ready run: approved, executed in a worktree, its change reviewed, decided."""
        ended = await self._await_approval() or await self._await_execute()
        if ended is not None:
            return ended
        deadline = await self._start_running()
        change = await self._execute_worktree(deadline)
        if isinstance(change, RunStatus):
            return change
        return await self._review_and_decide(deadline, change)

    # ----------------------------------------------------------------------------------------- phases

    async def _cancelled(self) -> RunStatus | None:
        """``cancelled`` once the actions being authorised have settled and one was a cancel."""
        await self._actions.settled()
        return RunStatus.CANCELLED if self._state.cancel is not None else None

    async def _authorize_creation(self) -> RunStatus | None:
        """Creating a run that is enqueued at once or whose tier the policy picks is a protected
        action, and any other creation that names its creator proves it (:meth:`_authorize_creator`):
        ``failed`` with the refusal as its error. Histories recorded before these checks existed
        replay without them."""
        run_input = self._state.run_input
        if not (run_input.enqueue or run_input.automatic):
            refusal = await self._authorize_creator()
        elif not self._state.behaviours.has(PATCH_AUTHORIZE_CREATE):
            return None
        elif run_input.queue_grant is not None:  # only such inputs take this branch: no patch needed
            refusal = await self._authorize_queue_grant(run_input)
        elif run_input.case_grant is not None and self._state.behaviours.has(PATCH_CASE_SWEEP_GRANT):
            refusal = await self._authorize_case_grant(run_input)
        else:
            refusal = await self._actions.authorize(
                "create", run_input.created_by, proof=run_input.proof, digest=run_input.request_digest
            )
        if refusal is None:
            return None
        self._state.error = RunError(
            type=refusal.code or RefusalCode.ACTION_REFUSED, message=refusal.message or ""
        )
        return RunStatus.FAILED

    async def _authorize_creator(self) -> ActionResult | None:
        """A run that is not protected but names its creator (``created_by``, the audit's
        ``run_created`` actor) carries that actor's proof of the create; the refusal when it does not
        verify. A run a workflow started (a goal queue's, checked by its queue) and runs started
        before this check existed are not asked."""
        run_input = self._state.run_input
        if (
            run_input.created_by is None
            or workflow.info().parent is not None
            or not self._state.behaviours.has(PATCH_CREATOR_PROVED)
        ):
            return None
        return await self._actions.authorize(
            "create", run_input.created_by, proof=run_input.proof, digest=run_input.request_digest
        )

    async def _authorize_queue_grant(self, run_input: RunInput) -> ActionResult | None:
        """A run the goal queue started by itself carries the queue's standing autopilot grant instead
        of a person's proof (docs/architecture.md "Goal queue"): accepted only as a child of that
        queue's workflow (a client cannot set a parent), created by the granting actor, for a tier the
        grant may start, while that actor is registered and active."""
        grant = run_input.queue_grant
        assert grant is not None
        parent = workflow.info().parent
        problem = None
        if parent is None or parent.workflow_id != grant.queue_workflow_id:
            problem = f"a queue's grant is accepted only on a run its queue {grant.queue_workflow_id} started"
        elif run_input.created_by != grant.granted_by:
            problem = f"a run under {grant.granted_by}'s grant is created by {grant.granted_by}"
        elif run_input.requested_tier not in GRANT_TIERS or run_input.automatic or run_input.override:
            problem = "a queue's grant starts a run of the item's own tier, neither automatic nor overridden"
        if problem is not None:
            return self._actions.refuse("create", run_input.created_by, RefusalCode.FORBIDDEN, problem)
        return await self._actions.authorize("create", grant.granted_by, standing_grant=True)

    async def _authorize_case_grant(self, run_input: RunInput) -> ActionResult | None:
        """A run the daily case analysis started carries its schedule's standing grant instead of a
        person's proof (docs/architecture.md "Schedules"): accepted only as a child of the sweep
        execution it names (a client cannot set a parent), created by the granting actor, automatic
        and analysis-only with no tier or override, while the grant's signature verifies with the
        actor's key in force."""
        case_grant = run_input.case_grant
        assert case_grant is not None
        grant = case_grant.grant
        parent = workflow.info().parent
        problem = None
        if parent is None or parent.workflow_id != case_grant.sweep_workflow_id:
            problem = (
                "a schedule's grant is accepted only on a run its sweep "
                f"{case_grant.sweep_workflow_id} started"
            )
        elif not case_grant.sweep_workflow_id.startswith(grant.schedule_id + "-"):
            sweep = case_grant.sweep_workflow_id
            problem = f"the sweep {sweep} is not an execution of {grant.schedule_id}"
        elif run_input.created_by != grant.granted_by:
            problem = f"a run under {grant.granted_by}'s grant is created by {grant.granted_by}"
        elif (
            not run_input.automatic
            or not run_input.analysis_only
            or run_input.requested_tier is not None
            or run_input.override is not None
        ):
            problem = "a schedule's grant starts automatic analysis-only runs only, with no tier or override"
        if problem is not None:
            return self._actions.refuse("create", run_input.created_by, RefusalCode.FORBIDDEN, problem)
        return await self._actions.authorize(
            SCHEDULE_ENABLE_ACTION,
            grant.granted_by,
            proof=grant.proof,
            digest=grant.digest,
            standing_grant=True,
            grant_target=grant.schedule_id,
        )

    async def _capture(self) -> RunStatus | None:
        """The contract, captured once (``capture_contract``); ``failed`` when capture refuses it."""
        try:
            captured = await workflow.execute_activity(
                ActivityName.CAPTURE_CONTRACT,
                self._state.run_input,
                result_type=CapturedContract,
                start_to_close_timeout=_SHORT_ACTIVITY,
                retry_policy=_BOOKKEEPING_RETRY,
            )
        except ActivityError as error:
            return self._step_failed(error, ActivityName.CAPTURE_CONTRACT)
        self._state.captured = captured
        self._state.show_details()
        contract = captured.contract
        self._state.audit.record(
            AuditKind.CONTRACT_CAPTURED,
            data={
                "contract_sha256": captured.contract_sha256,
                "tier": contract.tier.value,
                "primary": contract.primary,
                "reviewer": contract.reviewer,
                "risk": contract.risk.value,
                "catalog_sha256": contract.catalog_sha256,
                "model": contract.model.primary if contract.model else None,
                "tier_reasons": captured.tier_reasons,
            },
        )
        self._state.update_attributes(route_attributes(contract))
        return None

    async def _wait_for_enqueue(self) -> RunStatus | None:
        """A run created without ``enqueue`` waits ``ready`` for it (or a cancel)."""
        if self._state.enqueued:
            return None
        await self._transition(RunStatus.READY)
        await workflow.wait_condition(lambda: self._state.enqueued or self._state.cancel is not None)
        return await self._cancelled()

    async def _start_running(self) -> datetime:
        """Queued, then running; the runtime budget's deadline (it starts now, not while the run
        waited to be enqueued or approved). The run passes through ``queued`` without waiting, so
        (under ``PATCH_ONE_UPSERT_PER_TASK``) its search attributes go from the status it waited in
        straight to ``running``; the audit trail and the projection keep ``queued``."""
        await self._transition(RunStatus.QUEUED, publish=False)
        await self._transition(RunStatus.RUNNING)
        return workflow.now() + timedelta(seconds=self._state.contract.budgets.runtime_seconds)

    async def _analyse(self, deadline: datetime) -> RunStatus | None:
        """The analysis job."""
        analysis = await run_model_job(self._state, JobKind.ANALYSIS, deadline)
        if analysis is None:
            return self._state.status
        self._state.result = analysis.require_output()
        record_probes(self._state)  # docs/architecture.md "Probe requests"
        return RunStatus.CANCELLED if self._state.cancel is not None else None

    async def _review_and_decide(
        self, deadline: datetime, change: ChangeUnderReview | None = None
    ) -> RunStatus:
        """The blinded review (of ``change`` too, for a worktree run), then the operator's decision."""
        state = self._state
        await self._transition(RunStatus.REVIEWING)
        orchestration = state.contract.orchestration
        if (
            orchestration is not None
            and orchestration.shape is ReviewShape.WAVE
            and orchestration.roster
            and state.behaviours.has(PATCH_REVIEW_WAVES)
        ):
            # docs/architecture.md "Orchestration": the frozen roster, joined before the decision.
            if await run_wave(state, orchestration.roster, deadline, change) is None:
                return state.status
        else:
            review = await run_model_job(state, JobKind.REVIEW, deadline, change=change)
            if review is None:
                return state.status
            state.review = review.require_output()
        if state.cancel is not None:
            return RunStatus.CANCELLED
        # Its queue (if a queue started it) is told in the same task as the projection is written.
        self._state.set_status(RunStatus.AWAITING_DECISION)
        self._state.publish_attributes()
        await asyncio.gather(self._tell_queue(), self._project())
        # Approved probes run here, one at a time (none in histories recorded before probes).
        await wait_for_decision(state)
        await self._actions.settled()
        if state.decision is None:
            return RunStatus.CANCELLED
        return (
            RunStatus.ACCEPTED if state.decision.outcome is DecisionOutcome.ACCEPTED else RunStatus.REJECTED
        )

    async def _await_approval(self) -> RunStatus | None:
        """Wait (durably, up to the approval window) for an approval of the exact contract digest;
        ``expired`` when none came."""
        state = self._state
        window = timedelta(seconds=state.contract.budgets.approval_window_seconds)
        await self._transition(RunStatus.AWAITING_APPROVAL)
        try:
            await workflow.wait_condition(
                lambda: state.approval is not None or state.cancel is not None, timeout=window
            )
        except TimeoutError:
            await self._actions.settled()
            if state.approval is None and state.cancel is None:
                state.audit.record(
                    AuditKind.APPROVAL_WINDOW_EXPIRED, data={"window_seconds": window.total_seconds()}
                )
                state.error = RunError(
                    type=ErrorType.APPROVAL_WINDOW_EXPIRED,
                    message=f"no approval within {window}: create the run again",
                )
                return RunStatus.EXPIRED
        return await self._cancelled()

    async def _await_execute(self) -> RunStatus | None:
        """An approved run waits for ``execute`` (or a cancel). Before ``execute`` existed the run
        could only be cancelled here; a recorded history of that path takes the cancel branch with
        the same commands, and none holds an execute."""
        state = self._state
        await self._transition(RunStatus.APPROVED)
        await workflow.wait_condition(lambda: state.execute is not None or state.cancel is not None)
        await self._actions.settled()
        return RunStatus.CANCELLED if state.cancel is not None or state.execute is None else None

    async def _execute_worktree(self, deadline: datetime) -> ChangeUnderReview | RunStatus:
        """The approved contract, carried out: the change job writes a patch; one activity applies it
        in a fresh worktree at the base commit and fails closed. The change git computed (for the
        reviewer), or the status the run ends with.

        A run that captured the ``command`` executor has no change job: the activity runs the
        repository's agent in the worktree instead (a branch no run before that executor reaches)."""
        state = self._state
        assert state.execute is not None
        command = uses_command_executor(state.contract)
        patch = ""  # the command executor's agent makes the change itself
        if not command:
            change_job = await run_model_job(state, JobKind.ANALYSIS, deadline, expects_patch=True)
            if change_job is None:
                return state.status
            state.result = change_job.require_output()
            if state.cancel is not None:
                return RunStatus.CANCELLED
            assert state.result.patch is not None  # call_model checks that a change job's result has one
            patch = state.result.patch
        actor = state.execute.actor
        state.execution = (
            ExecutionRecord(actor=actor, executor=COMMAND_EXECUTOR)
            if command
            else ExecutionRecord(actor=actor)
        )
        # From here a cancel waits for the attempt (cancel_requested), and one that arrived meanwhile,
        # or is still being authorised, stops the run before any worktree is made.
        state.executing = True
        await self._transition(RunStatus.VERIFYING)
        await self._actions.settled()
        if state.cancel is not None:
            state.executing = False
            return RunStatus.CANCELLED
        execution = await attempt_worktree(state, patch, deadline)
        if execution is None:
            return state.status
        if state.cancel is not None:
            return RunStatus.CANCELLED
        try:
            return ChangeUnderReview.from_evidence(execution.evidence, execution.verification)
        except ValueError as error:
            state.error = RunError(type=ErrorType.CHANGE_TOO_LARGE_FOR_REVIEW, message=str(error))
            state.audit.record(AuditKind.STEP_FAILED, data={"step": "review", "error_type": state.error.type})
            return RunStatus.FAILED

    # ---------------------------------------------------------------------------------------- handlers

    @workflow.query(name=RunMessage.VIEW)
    def view(self) -> RunView:
        """The run as ``show`` presents it."""
        return self._state.view()

    @workflow.query(name=RunMessage.STATUS)
    def status(self) -> RunProgress:
        """Status and audit length: what a poller checks before it asks for the whole view."""
        return RunProgress(status=self._state.status, audit_events=len(self._state.audit.events))

    @workflow.update(name=RunMessage.ENQUEUE)
    async def enqueue(self, request: EnqueueRequest) -> ActionResult:
        """Move a ``ready`` run to the queue — unless a cancel came first: a cancel authorised while
        this enqueue was being authorised wins, and the enqueue is refused (``cancelling``, audited)
        rather than recorded as ``enqueued`` on a run that ends ``cancelled``. Only the audit entry
        and the answer differ: the commands are those of the accepted path, so recorded histories
        replay unchanged."""
        refusal = await self._actions.authorize("enqueue", request.actor, proof=request.proof)
        if refusal is not None:
            return refusal
        if self._state.status is not RunStatus.READY:
            return self._actions.refuse("enqueue", request.actor, RefusalCode.NOT_READY, self._status_text())
        if self._state.cancel is not None:
            return self._actions.refuse(
                "enqueue",
                request.actor,
                RefusalCode.CANCELLING,
                "run is being cancelled: a cancel came first",
            )
        self._state.enqueued = True
        self._state.audit.record(AuditKind.ENQUEUED, actor=request.actor)
        return ActionResult(accepted=True, status=RunStatus.QUEUED)

    @enqueue.validator
    def _validate_enqueue(self, request: EnqueueRequest) -> None:
        if self._state.status is not RunStatus.READY:
            raise ApplicationError(
                f"run {self._run_id} is {self._state.status.value}; only a ready run can be enqueued",
                type=RefusalCode.NOT_READY,
            )

    @workflow.update(name=RunMessage.DECIDE)
    async def decide(self, request: DecisionRequest) -> ActionResult:
        """Record the operator's decision on the reviewed result."""
        refusal = await self._actions.authorize("decide", request.actor, proof=request.proof)
        if refusal is not None:
            return refusal
        state = self._state
        if state.status is not RunStatus.AWAITING_DECISION or state.decision is not None:
            return self._actions.refuse(
                "decide", request.actor, RefusalCode.NOT_AWAITING_DECISION, self._status_text()
            )
        if probes_pending(state):  # approved while this decide was being authorised
            return self._actions.refuse(
                "decide", request.actor, RefusalCode.PROBE_RUNNING, "an approved probe has not finished"
            )
        state.decision = Decision(
            actor=request.actor, outcome=request.outcome, note=request.note, at=workflow.now()
        )
        state.audit.record(
            AuditKind.DECIDED,
            actor=request.actor,
            data={"outcome": request.outcome.value, "note": request.note},
        )
        status = RunStatus.ACCEPTED if request.outcome is DecisionOutcome.ACCEPTED else RunStatus.REJECTED
        return ActionResult(accepted=True, status=status)

    @decide.validator
    def _validate_decide(self, request: DecisionRequest) -> None:
        state = self._state
        if state.status is not RunStatus.AWAITING_DECISION or state.decision is not None:
            raise ApplicationError(
                f"run {self._run_id} is {state.status.value}; only a run awaiting a decision can be decided",
                type=RefusalCode.NOT_AWAITING_DECISION,
            )
        if probes_pending(state):
            raise ApplicationError(
                f"run {self._run_id} has an approved probe that has not finished: decide once it has "
                f"(`specialists probes {self._run_id}`), or cancel the run",
                type=RefusalCode.PROBE_RUNNING,
            )

    @workflow.update(name=RunMessage.APPROVE_PROBE)
    async def approve_probe(self, request: ApproveProbeRequest) -> ActionResult:
        """Approve one of the analysis's probe requests, exactly the one whose digest is named
        (protected; docs/architecture.md "Probe requests"); the run then runs it confined."""
        return await handle_probe_approval(self._state, self._actions, request)

    @approve_probe.validator
    def _validate_approve_probe(self, request: ApproveProbeRequest) -> None:
        validate_probe_approval(self._state, request)

    @workflow.update(name=RunMessage.APPROVE)
    async def approve(self, request: ApproveRequest) -> ActionResult:
        """Approve exactly the captured contract (its digest), by a registered human with the token."""
        digest = self._state.contract_sha256
        refusal = await self._actions.authorize("approve", request.actor, proof=request.proof, digest=digest)
        if refusal is not None:
            return refusal
        state = self._state
        if state.status is not RunStatus.AWAITING_APPROVAL or state.approval is not None:
            # Another approval (or a cancel, or the window) won while this one was being authorised.
            return self._actions.refuse(
                "approve", request.actor, RefusalCode.NOT_AWAITING_APPROVAL, self._status_text()
            )
        state.approval = Approval(actor=request.actor, contract_sha256=digest, at=workflow.now())
        state.audit.record(AuditKind.APPROVED, actor=request.actor, data={"contract_sha256": digest})
        return ActionResult(accepted=True, status=RunStatus.APPROVED)

    @approve.validator
    def _validate_approve(self, request: ApproveRequest) -> None:
        state = self._state
        if state.status is not RunStatus.AWAITING_APPROVAL or state.approval is not None:
            raise ApplicationError(
                f"run {self._run_id} is {state.status.value}; only a run awaiting approval can be approved",
                type=RefusalCode.NOT_AWAITING_APPROVAL,
            )
        if request.contract_sha256 != state.contract_sha256:
            raise ApplicationError(
                f"contract digest {request.contract_sha256!r} is not the run's contract "
                f"({state.contract_sha256}): review the current contract with `show`",
                type=RefusalCode.STALE_CONTRACT_DIGEST,
            )

    @workflow.update(name=RunMessage.EXECUTE)
    async def execute(self, request: ExecuteRequest) -> ActionResult:
        """Carry out an approved worktree run: by a registered human with a proof bound to the
        approved contract digest; accepted once — a second or concurrent execute is refused here,
        audited as ``action_refused`` (the validator lets one through once an execute was accepted)."""
        digest = self._state.contract_sha256
        refusal = await self._actions.authorize("execute", request.actor, proof=request.proof, digest=digest)
        if refusal is not None:
            return refusal
        state = self._state
        if state.status is not RunStatus.APPROVED or state.execute is not None or state.cancel is not None:
            # Another execute (or a cancel) won while this one was being authorised.
            return self._actions.refuse(
                "execute", request.actor, RefusalCode.ALREADY_EXECUTING, self._status_text()
            )
        state.execute = request
        state.audit.record(AuditKind.EXECUTE_REQUESTED, actor=request.actor, data={"contract_sha256": digest})
        return ActionResult(accepted=True, status=RunStatus.QUEUED)

    @execute.validator
    def _validate_execute(self, request: ExecuteRequest) -> None:
        # An execute of a run that is already executing (or executed) reaches the handler, which
        # authorises it and refuses it there, audited as action_refused like an execute that lost a
        # race while both were authorised: refused here it would leave no trace. Validators do not
        # run on replay and a refused update never enters history, so this changes no recorded
        # history; the handler's commands are those it always had for a refused execute.
        state = self._state
        if state.execute is not None:
            return
        if state.status is not RunStatus.APPROVED:
            raise ApplicationError(
                f"run {self._run_id} is {state.status.value}; only an approved run executes",
                type=RefusalCode.NOT_APPROVED,
            )

    @workflow.signal(name=RunMessage.QUEUE_VERDICT)
    async def queue_verdict(self, verdict: QueueVerdict) -> None:
        """Its queue's FAIL verdict: rejected once verified (:mod:`workflows.queue_verdict`)."""
        await apply_queue_verdict(self._state, self._actions, verdict)

    @workflow.signal(name=RunMessage.QUEUE_ITEM_STATUS)
    def queue_item_status(self, update: QueueItemStatusUpdate) -> None:
        """Its queue item's status now, shown as the ``QueueItemStatus`` search attribute while the run
        is open (docs/architecture.md "Goal queue", "Item status on runs"); nothing else changes."""
        if not self._state.status.terminal:
            workflow.upsert_search_attributes([QUEUE_ITEM_STATUS_KEY.value_set(update.status.value)])

    @workflow.signal(name=RunMessage.CANCEL)
    async def cancel(self, request: CancelRequest) -> None:
        """Stop the run; a model job that is running finishes first."""
        refusal = await self._actions.authorize("cancel", request.actor, proof=request.proof)
        if refusal is not None:
            return
        state = self._state
        if state.status.terminal or state.cancel is not None:
            self._actions.refuse("cancel", request.actor, RefusalCode.ALREADY_FINISHED, self._status_text())
            return
        state.cancel = request
        state.audit.record(AuditKind.CANCEL_REQUESTED, actor=request.actor, data={"reason": request.reason})
        if state.model_job_running or state.executing or state.probe_running:
            state.set_status(RunStatus.CANCEL_REQUESTED)
            state.publish_attributes()

    def _refused(self, code: str, message: str) -> ActionResult:
        """A refused action's answer: the run's status now, the code and message."""
        return ActionResult(accepted=False, status=self._state.status, code=code, message=message)

    def _status_text(self) -> str:
        return f"run is {self._state.status.value}"

    @property
    def _run_id(self) -> str:
        return self._state.run_input.run_id

    # ------------------------------------------------------------------------------------ state/audit

    async def _transition(self, status: RunStatus, *, publish: bool = True) -> None:
        self._state.set_status(status)
        if publish:
            self._state.publish_attributes()
        await self._project()

    async def _finish(self, status: RunStatus) -> RunView:
        self._state.set_status(status)
        await workflow.wait_condition(workflow.all_handlers_finished)
        await self._project()
        # The final status (and a recommendation's route) in the task that closes the run: the
        # server writes its visibility record then anyway, one activity after the status changed.
        self._state.publish_attributes()
        await self._tell_queue()
        return self.view()

    async def _tell_queue(self) -> None:
        """Wake the goal queue that started this run, so it reads the run's progress now (behind
        :data:`PATCH_TELLS_QUEUE`; nothing for a run no queue started). The queue believes nothing in
        the signal: it reads the run's own status. One it cannot be sent to is only logged."""
        parent = workflow.info().parent
        if parent is None or not parent.workflow_id.startswith(QUEUE_ID_PREFIX):
            return
        if self._tells_queue is None:
            self._tells_queue = self._state.behaviours.has(PATCH_TELLS_QUEUE)
        if not self._tells_queue:
            return
        try:
            await workflow.get_external_workflow_handle(parent.workflow_id).signal(
                QueueMessage.RUN_PROGRESSED, RunProgressed(run_id=self._run_id)
            )
        except Exception as error:  # the queue may have ended; its poll reads the run anyway
            workflow.logger.info("could not tell queue %s: %s", parent.workflow_id, error)

    def _step_failed(self, error: ActivityError, step: str) -> RunStatus:
        """A step's activity failed: its error is the run's, audited; the run ends ``failed``."""
        failure = activity_failure(error)
        self._state.error = failure
        self._state.audit.record(
            AuditKind.STEP_FAILED, data={"step": step, "error_type": failure.type, "message": failure.message}
        )
        return RunStatus.FAILED

    async def _project(self) -> None:
        """Write the run's summary and its new audit events to the SQL projection."""
        state = self._state
        summary = state.summary(workflow.now())
        events = state.audit.since(state.projected_seq)
        await workflow.execute_activity(
            ActivityName.PROJECT_RUN,
            ProjectRunRequest(summary=summary, events=events),
            start_to_close_timeout=_SHORT_ACTIVITY,
            retry_policy=_PROJECTION_RETRY,
        )
        if events:
            state.projected_seq = events[-1].seq
