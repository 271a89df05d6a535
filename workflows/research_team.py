"""``ResearchTeam``: six blinded specialist stages over one research case, ending with people.

Lifecycle (docs/architecture.md "Research team"), as this module runs it::

    starting ─(authorise start, capture inputs)─► running_stage 1 … 6 ─► awaiting_human_review
    before each stage: evidence digest or catalog sha256 changed ─► invalidated
    review ``disagree`` on a high/critical finding ─► awaiting_adjudication ─(adjudicate)─► next stage
    missing result / provider failure / job 13 ─► blocked ─(retry_stage)─► the failed job again
                                                        ─(stop)─► failed
    any non-final ─(cancel)─► cancelled      (a running job may finish; nothing starts after it)
    deadline (24 h from the start by default) ─► expired  (the running job is cancelled)

Each stage is an analysis job and a blinded review job, both ``ModelJob`` children; what each job
sees is decided by :func:`contracts.research_teams.job_visibility` and travels by reference (ids and
sha256): the jobs' outputs are stored by the job and come back as :class:`JobOutputRef`, so this
history holds no evidence and no model output. At most 12 model jobs; the job beyond is refused and
blocks the team. The deadline is one durable timer, cancelled when the team ends first. The team
never approves or publishes anything: it ends at ``awaiting_human_review``.

Activities: ``authorize_action`` (a registered human with a proof of the action token),
``capture_team`` (case, evidence digest, catalog, model snapshot — once), ``check_team_inputs``
(before every stage); the coordinator's admission and grants (``workflows/team_coordination.py``).
What each job is given and what is audited of it is ``workflows/team_jobs.py``; when the team waits
for a person and what that person may answer, ``workflows/team_adjudication.py``. Handlers only
change state; ``run`` tells the story and waits on conditions.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from contracts.audit import AuditKind
    from contracts.errors import ErrorType
    from contracts.failures import ModelJobFailureDetail, failure_detail
    from contracts.output import JobKind
    from contracts.refusals import RefusalCode
    from contracts.research_coordinator import AdvanceGrant
    from contracts.research_teams import (
        BLOCK_OUTCOMES,
        DISAGREEMENT_OUTCOMES,
        MAX_TEAM_JOBS,
        STAGES,
        AdjudicateRequest,
        Adjudication,
        AdjudicationOutcome,
        JobOutputRef,
        StageAssignment,
        StageBlock,
        StageRecord,
        TeamActionResult,
        TeamCancelRequest,
        TeamCapture,
        TeamCaptureRequest,
        TeamInput,
        TeamInputsCheck,
        TeamInputsCheckRequest,
        TeamStatus,
        TeamView,
        adjudication_digest,
    )
    from contracts.runs import RunError
    from contracts.search_attributes import SearchAttribute
    from contracts.temporal_names import ActivityName, TeamMessage, WorkflowType
    from contracts.ui_summaries import team_details
    from workflows import team_jobs
    from workflows.audit import AuditTrail, activity_failure
    from workflows.authorization import ProtectedActions
    from workflows.model_job import ModelJobWorkflow
    from workflows.team_adjudication import (
        Awaiting,
        adjudication_problem,
        is_material_disagreement,
        limitation,
    )
    from workflows.team_coordination import abandon, ask_for_advance, leave_coordinator, request_admission
    from workflows.versioning import pinned

# workflow.patched() ids: each marks a change to logic that recorded histories already exercise.
PATCH_COORDINATED = "team-coordinated"
"""Admission by the deployment's coordinator at the start, a grant before each stage, and the status
back at ``running_stage`` as soon as a disagreement is adjudicated."""

TEAM_STATUS_KEY = SearchAttributeKey.for_keyword(SearchAttribute.TEAM_STATUS)
CASE_KEY = SearchAttributeKey.for_keyword(SearchAttribute.RESEARCH_CASE_ID)

_SHORT_ACTIVITY = timedelta(seconds=10)
_BOOKKEEPING_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(milliseconds=200))
# The pre-stage check reads the store: a team runs for hours, so an outage is waited out (the
# deadline bounds it) rather than failing the team; a missing case is non-retryable.
_CHECK_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(minutes=1))


@workflow.defn(name=WorkflowType.RESEARCH_TEAM, versioning_behavior=pinned())
class ResearchTeamWorkflow:
    """Carry one research team from its start to ``awaiting_human_review`` (or a stop)."""

    @workflow.init
    def __init__(self, team: TeamInput) -> None:
        # Everything a handler may touch is set here: a signal or update in the first workflow task
        # (before run() starts) finds initialised state.
        self._input = team
        self._status = TeamStatus.STARTING
        self._created_at = workflow.now()
        self._capture: TeamCapture | None = None
        self._stages = [StageRecord(number=s.number, name=s.name, profile_id=s.profile_id) for s in STAGES]
        self._current: int | None = None
        self._jobs_used = 0
        self._block: StageBlock | None = None
        self._error: RunError | None = None
        self._audit = AuditTrail()
        self._actions = ProtectedActions(team.team_id, self._audit, self._refused, name_requests=True)
        self._cancel: TeamCancelRequest | None = None
        self._awaiting: Awaiting | None = None
        self._adjudication: Adjudication | None = None
        # True once the team's work is being stopped (its deadline, or its workflow cancelled):
        # whatever the work waited on then ends as a cancellation, never as a block or a change.
        self._stopping = False
        self._work: asyncio.Future[TeamStatus] | None = None
        self._coordinated = False
        self._admission_asked = False
        self._grants: dict[int, AdvanceGrant] = {}
        self._audit.record(
            AuditKind.TEAM_STARTED,
            actor=team.actor,
            data={"case_id": team.case_id, "request_id": team.request_id},
        )

    # ------------------------------------------------------------------------------------------ story

    @workflow.run
    async def run(self, team: TeamInput) -> TeamView:
        try:
            return await self._run(team)
        except asyncio.CancelledError:
            # Cancelled through Temporal itself (not team-cancel): the work stops (a job started in
            # this same moment is ended with the team), and the status shown and the coordinator's
            # place follow.
            self._stopping = True
            if self._work is not None:
                self._work.cancel()
            self._set_status(TeamStatus.CANCELLED)
            if self._admission_asked:
                await leave_coordinator(self._input.team_id)
            self._set_status(TeamStatus.CANCELLED)  # whatever the stopped work set meanwhile
            raise

    async def _run(self, team: TeamInput) -> TeamView:
        self._show_details()
        workflow.upsert_search_attributes(
            [CASE_KEY.value_set(team.case_id), TEAM_STATUS_KEY.value_set(self._status.value)]
        )
        refusal = await self._actions.authorize(
            "team_start", team.actor, proof=team.proof, digest=team.request_digest
        )
        if refusal is not None:
            self._error = RunError(
                type=refusal.code or RefusalCode.ACTION_REFUSED, message=refusal.message or ""
            )
            return await self._finish(TeamStatus.FAILED)
        if self._cancel is not None:
            return await self._finish(TeamStatus.CANCELLED)
        # Teams started before the coordinator existed replay without admission and grants.
        if workflow.patched(PATCH_COORDINATED):
            self._coordinated = True
            self._admission_asked = True
            refused = await request_admission(team, self._audit)
            if refused is not None:
                self._error = refused
                return await self._finish(TeamStatus.FAILED)
        try:
            capture = await workflow.execute_activity(
                ActivityName.CAPTURE_TEAM,
                TeamCaptureRequest(team_id=team.team_id, case_id=team.case_id),
                result_type=TeamCapture,
                start_to_close_timeout=_SHORT_ACTIVITY,
                retry_policy=_BOOKKEEPING_RETRY,
            )
        except ActivityError as error:
            self._error = activity_failure(error)
            self._audit.record(
                AuditKind.STEP_FAILED, data={"step": ActivityName.CAPTURE_TEAM, **self._error.model_dump()}
            )
            return await self._finish(TeamStatus.FAILED)
        self._capture = capture
        # The stages as captured (a later deployment's stage list never changes a running team).
        self._stages = [
            StageRecord(
                number=a.spec.number,
                name=a.spec.name,
                profile_id=a.spec.profile_id,
                reviewer_id=a.reviewer_id,
            )
            for a in capture.stages
        ]
        self._audit.record(
            AuditKind.INPUTS_CAPTURED,
            data={
                "evidence": len(capture.evidence),
                "evidence_digest": capture.evidence_digest,
                "catalog_sha256": capture.catalog_sha256,
                "models": capture.model.chain,
                "deadline_seconds": capture.deadline_seconds,
            },
        )

        # One durable timer bounds the whole team; a team that ends first cancels it.
        remaining = self._created_at + timedelta(seconds=capture.deadline_seconds) - workflow.now()
        deadline = asyncio.ensure_future(workflow.sleep(max(remaining, timedelta(milliseconds=1))))
        work = self._work = asyncio.ensure_future(self._run_stages(capture))
        await workflow.wait_condition(lambda: work.done() or deadline.done())
        if not work.done():
            # Queued work is cancelled: the running job (if any) gets a cancellation request, and
            # whatever the work was waiting on ends as a cancellation, never as a block or a change.
            self._stopping = True
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await work
            self._audit.record(
                AuditKind.DEADLINE_REACHED, data={"deadline_seconds": capture.deadline_seconds}
            )
            self._error = RunError(
                type="team_deadline_exceeded",
                message=f"the team did not finish within {capture.deadline_seconds} s of its start",
            )
            return await self._finish(TeamStatus.EXPIRED)
        deadline.cancel()
        return await self._finish(work.result())

    async def _run_stages(self, capture: TeamCapture) -> TeamStatus:
        """Every stage in order; returns the status the team ends with."""
        for assignment in capture.stages:
            number = assignment.spec.number
            self._current = number
            if self._cancel is not None:
                return TeamStatus.CANCELLED
            if self._coordinated and not await self._granted(number):
                return TeamStatus.CANCELLED
            changed = await self._inputs_changed(capture)
            if changed is None and self._cancel is not None:
                return TeamStatus.CANCELLED
            if changed is not None:
                self._error = RunError(type="team_inputs_changed", message=changed)
                self._audit.record(AuditKind.INPUTS_CHANGED, data={"stage": number, "message": changed})
                return TeamStatus.INVALIDATED
            self._set_status(TeamStatus.RUNNING_STAGE)
            self._update_stage(number, state="running")
            self._audit.record(AuditKind.STAGE_STARTED, data={"stage": number, "name": assignment.spec.name})
            ended = await self._run_stage(assignment, capture)
            if ended is not None:
                return ended
        if self._cancel is not None:
            return TeamStatus.CANCELLED
        self._current = None
        self._audit.record(AuditKind.TEAM_COMPLETED, data={"jobs_used": self._jobs_used})
        return TeamStatus.AWAITING_HUMAN_REVIEW

    async def _inputs_changed(self, capture: TeamCapture) -> str | None:
        """Why the team's inputs no longer hold (evidence digest or catalog sha256), or ``None``. A
        check that cannot be made (the case is gone, the worker's catalog no longer loads) is a
        change too: the team cannot show that its inputs still hold."""
        checking = asyncio.ensure_future(
            workflow.execute_activity(
                ActivityName.CHECK_TEAM_INPUTS,
                TeamInputsCheckRequest(team_id=self._input.team_id, case_id=capture.case_id),
                result_type=TeamInputsCheck,
                start_to_close_timeout=_SHORT_ACTIVITY,
                retry_policy=_CHECK_RETRY,
            )
        )
        # A cancel does not wait for a check that keeps retrying (the store may be down for long).
        await workflow.wait_condition(lambda: checking.done() or self._cancel is not None)
        if not checking.done():
            abandon(checking)
            return None
        try:
            check = checking.result()
        except ActivityError as error:
            if self._stopping:
                raise asyncio.CancelledError() from error
            failure = activity_failure(error)
            return f"the team's inputs could not be checked ({failure.type}): {failure.message}"
        if check.evidence_digest != capture.evidence_digest:
            return (
                f"the case's active evidence changed since the team started (digest "
                f"{capture.evidence_digest[:12]} is now {check.evidence_digest[:12]})"
            )
        if check.catalog_sha256 != capture.catalog_sha256:
            return (
                f"the catalog changed since the team started ({capture.catalog_sha256[:12]} is now "
                f"{check.catalog_sha256[:12]})"
            )
        return None

    async def _run_stage(self, assignment: StageAssignment, capture: TeamCapture) -> TeamStatus | None:
        """The stage's analysis then review, with blocks and adjudication; ``None`` when the team goes
        on to the next stage, else the status it ends with."""
        number = assignment.spec.number
        kinds = (JobKind.ANALYSIS, JobKind.REVIEW)
        index = 0
        while index < len(kinds):
            if self._cancel is not None:
                return TeamStatus.CANCELLED
            outcome = await self._job(assignment, capture, kinds[index])
            if isinstance(outcome, JobOutputRef):
                field = "analysis" if outcome.kind is JobKind.ANALYSIS else "review"
                self._update_stage(number, **{field: outcome})
                index += 1
                continue
            if outcome.error_type == ErrorType.RESEARCH_INPUT_CHANGED:
                # An evidence record or stored result no longer matches the digest the team recorded:
                # its inputs changed, which ends it (a retry would read the same changed input).
                self._error = RunError(type="team_inputs_changed", message=outcome.message)
                self._audit.record(
                    AuditKind.INPUTS_CHANGED, data={"stage": number, "message": outcome.message}
                )
                return TeamStatus.INVALIDATED
            self._block = outcome
            self._update_stage(number, state="blocked")
            self._set_status(TeamStatus.BLOCKED)
            self._audit.record(AuditKind.STAGE_BLOCKED, data=outcome.model_dump(mode="json"))
            answer = await self._await_adjudication(number, BLOCK_OUTCOMES)
            self._block = None
            if answer is None:
                return TeamStatus.CANCELLED
            if answer.outcome is AdjudicationOutcome.STOP:
                self._error = RunError(
                    type=outcome.error_type,
                    message=f"stopped by {answer.actor} at blocked stage {number}: {outcome.message}",
                )
                return TeamStatus.FAILED
            self._set_status(TeamStatus.RUNNING_STAGE)
            self._update_stage(number, state="running")
        if self._cancel is not None:
            return TeamStatus.CANCELLED
        return await self._settle_review(number)

    async def _settle_review(self, number: int) -> TeamStatus | None:
        """Act on the stage's review: a material disagreement waits for a human; another
        ``disagree`` or ``insufficient_evidence`` is recorded as a limitation."""
        stage = self._stages[number - 1]
        analysis, review = stage.analysis, stage.review
        assert analysis is not None and review is not None
        if is_material_disagreement(analysis, review):
            self._update_stage(number, state="awaiting_adjudication")
            self._set_status(TeamStatus.AWAITING_ADJUDICATION)
            self._audit.record(
                AuditKind.MATERIAL_DISAGREEMENT,
                data={
                    "stage": number,
                    "analysis_max_severity": team_jobs.enum_value(analysis.max_severity),
                    "review_max_severity": team_jobs.enum_value(review.max_severity),
                },
            )
            answer = await self._await_adjudication(number, DISAGREEMENT_OUTCOMES)
            if answer is None:
                return TeamStatus.CANCELLED
            if self._coordinated:  # (teams started before PATCH_COORDINATED kept the status)
                self._set_status(TeamStatus.RUNNING_STAGE)
        elif (recorded := limitation(number, review)) is not None:
            self._update_stage(number, limitations=[*stage.limitations, recorded])
            self._audit.record(AuditKind.LIMITATION_RECORDED, data={"stage": number, "limitation": recorded})
        self._update_stage(number, state="done")
        self._audit.record(AuditKind.STAGE_COMPLETED, data={"stage": number})
        return None

    async def _job(
        self, assignment: StageAssignment, capture: TeamCapture, kind: JobKind
    ) -> JobOutputRef | StageBlock:
        """One model job of the stage as a ``ModelJob`` child; its stored output by reference, or why
        the stage is blocked (the job failed, or it would exceed the team's 12 jobs)."""
        number = assignment.spec.number
        if self._jobs_used >= MAX_TEAM_JOBS:
            refused, block = team_jobs.refused_job(number, kind, self._jobs_used)
            self._audit.record(AuditKind.JOB_REFUSED, data=refused)
            return block
        self._jobs_used += 1
        stage_job = team_jobs.stage_job(
            self._input.team_id, capture, assignment, kind, self._stages, self._jobs_used
        )
        job = stage_job.job
        self._update_stage(number, **stage_job.stage_changes)
        self._audit.record(
            AuditKind.MODEL_JOB_STARTED, data=team_jobs.started_data(number, stage_job, self._jobs_used)
        )
        try:
            result = await workflow.execute_child_workflow(
                ModelJobWorkflow.run, job, id=job.job_id, task_queue=workflow.info().task_queue
            )
        except ChildWorkflowError as error:
            if self._stopping:  # cancelled by the deadline: not a block
                raise asyncio.CancelledError() from error
            cause = error.cause
            error_type: str = ErrorType.MODEL_TASK
            message = str(error)
            detail = None
            if isinstance(cause, ApplicationError):
                error_type, message = cause.type or ErrorType.MODEL_TASK, cause.message
                detail = failure_detail(cause, ModelJobFailureDetail)
            failed = team_jobs.failed_data(
                number, job, error_type, message, detail or ModelJobFailureDetail()
            )
            self._audit.record(AuditKind.MODEL_JOB_FAILED, data=failed)
            return StageBlock(stage=number, kind=kind, error_type=error_type, message=message)
        ref = result.output_ref
        if ref is None:  # a research job always stores its output; anything else is a missing result
            return StageBlock(
                stage=number,
                kind=kind,
                error_type="missing_result",
                message="the job returned no stored result",
            )
        self._audit.record(
            AuditKind.MODEL_JOB_COMPLETED, data=team_jobs.completed_data(number, kind, ref, result)
        )
        return ref

    async def _await_adjudication(
        self, number: int, allowed: frozenset[AdjudicationOutcome]
    ) -> Adjudication | None:
        """Wait for a human's outcome for stage ``number`` (one of ``allowed``); ``None`` on cancel."""
        self._adjudication = None
        self._awaiting = (number, allowed)
        await workflow.wait_condition(
            lambda: self._adjudication is not None or self._cancel is not None or self._stopping
        )
        await self._actions.settled()
        self._awaiting = None
        if self._stopping:
            raise asyncio.CancelledError()
        answer = self._adjudication
        if answer is not None:
            self._update_stage(number, adjudication=answer)
        return answer

    # ---------------------------------------------------------------------------------------- handlers

    @workflow.query(name=TeamMessage.VIEW)
    def view(self) -> TeamView:
        """The team as ``team-show`` presents it."""
        capture = self._capture
        return TeamView(
            team_id=self._input.team_id,
            case_id=self._input.case_id,
            request_id=self._input.request_id,
            started_by=self._input.actor,
            status=self._status,
            created_at=self._created_at,
            deadline_at=(self._created_at + timedelta(seconds=capture.deadline_seconds) if capture else None),
            capture=capture,
            stages=list(self._stages),
            current_stage=self._current,
            jobs_used=self._jobs_used,
            block=self._block,
            error=self._error,
            audit=list(self._audit.events),
        )

    @workflow.signal(name=TeamMessage.ADVANCE_GRANTED)
    def advance_granted(self, grant: AdvanceGrant) -> None:
        """The coordinator granted this team's advance to ``grant.stage``."""
        self._grants[grant.stage] = grant

    @workflow.update(name=TeamMessage.ADJUDICATE)
    async def adjudicate(self, request: AdjudicateRequest) -> TeamActionResult:
        """Record a registered human's outcome for the stage the team waits on."""
        digest = adjudication_digest(request.stage, request.outcome)
        refusal = await self._actions.authorize(
            "adjudicate", request.actor, proof=request.proof, digest=digest
        )
        if refusal is not None:
            return refusal
        problem = self._adjudication_problem(request)
        if problem is not None:  # the state moved on while the action was being authorised
            return self._actions.refuse("adjudicate", request.actor, *problem)
        self._adjudication = Adjudication(
            stage=request.stage,
            outcome=request.outcome,
            actor=request.actor,
            note=request.note,
            at=workflow.now(),
        )
        self._audit.record(
            AuditKind.ADJUDICATED,
            actor=request.actor,
            data={"stage": request.stage, "outcome": request.outcome.value, "note": request.note},
        )
        status = (
            TeamStatus.FAILED if request.outcome is AdjudicationOutcome.STOP else TeamStatus.RUNNING_STAGE
        )
        return TeamActionResult(accepted=True, status=status)

    @adjudicate.validator
    def _validate_adjudicate(self, request: AdjudicateRequest) -> None:
        problem = self._adjudication_problem(request)
        if problem is not None:
            raise ApplicationError(problem[1], type=problem[0])

    def _adjudication_problem(self, request: AdjudicateRequest) -> tuple[str, str] | None:
        """Why ``request`` cannot be taken now (code, message), or ``None``."""
        return adjudication_problem(
            self._input.team_id,
            self._status.value,
            request,
            stopping=self._cancel is not None or self._stopping,
            awaiting=self._awaiting,
            answered=self._adjudication is not None,
            jobs_used=self._jobs_used,
        )

    @workflow.signal(name=TeamMessage.CANCEL)
    async def cancel(self, request: TeamCancelRequest) -> None:
        """Stop further stages; a running job may finish, nothing starts after it. A second cancel
        is one cancel: it is refused (``already_cancelling``) and changes nothing."""
        refusal = await self._actions.authorize("team_cancel", request.actor, proof=request.proof)
        if refusal is not None:
            return
        # Each event names the request it answers (its proof's nonce), so the caller finds its own.
        nonce = request.proof.nonce if request.proof else None
        if self._status.final:
            self._actions.refuse(
                "team_cancel",
                request.actor,
                RefusalCode.ALREADY_FINISHED,
                f"team is {self._status.value}",
                request=nonce,
            )
            return
        if self._cancel is not None:
            self._actions.refuse(
                "team_cancel",
                request.actor,
                RefusalCode.ALREADY_CANCELLING,
                "the team is already being cancelled",
                request=nonce,
            )
            return
        self._cancel = request
        self._audit.record(
            AuditKind.CANCEL_REQUESTED, actor=request.actor, data={"reason": request.reason, "request": nonce}
        )

    def _refused(self, code: str, message: str) -> TeamActionResult:
        """A refused action's answer: the team's status now, the code and message."""
        return TeamActionResult(accepted=False, status=self._status, code=code, message=message)

    # ------------------------------------------------------------------------------------ state/audit

    def _update_stage(self, number: int, **changes: Any) -> None:
        self._stages[number - 1] = self._stages[number - 1].model_copy(update=changes)
        self._show_details()

    def _set_status(self, status: TeamStatus) -> None:
        if status is self._status:
            return
        previous = self._status
        self._status = status
        self._audit.record(AuditKind.STATUS_CHANGED, data={"from": previous.value, "to": status.value})
        workflow.upsert_search_attributes([TEAM_STATUS_KEY.value_set(status.value)])
        self._show_details()

    def _show_details(self) -> None:
        """The team's current details in the Temporal UI (metadata, not history)."""
        done = sum(1 for stage in self._stages if stage.state == "done")
        workflow.set_current_details(team_details(self._status.value, done, len(self._stages)))

    async def _finish(self, status: TeamStatus) -> TeamView:
        self._set_status(status)
        await workflow.wait_condition(workflow.all_handlers_finished)
        if self._admission_asked:  # admitted, or perhaps admitted by a request whose answer was lost
            await leave_coordinator(self._input.team_id)
        return self.view()

    # ------------------------------------------------------------------------------------ coordinator

    async def _granted(self, number: int) -> bool:
        """Ask the coordinator for the advance to stage ``number`` and wait for its grant (the
        deadline keeps running). False when the team is cancelled meanwhile."""
        self._set_status(TeamStatus.WAITING_FOR_GRANT)
        await ask_for_advance(
            self._input.team_id, number, lambda: number in self._grants or self._cancel is not None
        )
        if number not in self._grants:
            return False
        self._audit.record(
            AuditKind.ADVANCE_GRANTED, data={"stage": number, "cycle": self._grants[number].cycle}
        )
        return True
