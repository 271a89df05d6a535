"""``ResearchTeam``: six blinded specialist stages over one research case, ending with people.

Lifecycle (DESIGN.md "Research team"), as this module runs it::

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
(before every stage). Handlers only change state; ``run`` tells the story and waits on conditions.
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
    from contracts.enums import TaskType
    from contracts.errors import ErrorType
    from contracts.model_jobs import JobContext, ModelJobInput
    from contracts.output import JobKind, ReviewVerdict
    from contracts.proofs import ActionProof
    from contracts.research_coordinator import (
        Admission,
        AdmissionCall,
        AdvanceCall,
        AdvanceGrant,
        TeamFinished,
        coordinator_workflow_id,
    )
    from contracts.research_teams import (
        BLOCK_OUTCOMES,
        DISAGREEMENT_OUTCOMES,
        MATERIAL_SEVERITIES,
        MAX_TEAM_JOBS,
        STAGES,
        WRITER_STAGE,
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
        job_visibility,
    )
    from contracts.runs import AuditEvent, AuthorizeRequest, RunError
    from contracts.temporal_names import WorkflowType
    from workflows.authorization import check_action
    from workflows.model_job import ModelJobWorkflow

CAPTURE_TEAM_ACTIVITY = "capture_team"
CHECK_TEAM_INPUTS_ACTIVITY = "check_team_inputs"
REQUEST_ADMISSION_ACTIVITY = "request_team_admission"
REQUEST_ADVANCE_ACTIVITY = "request_stage_advance"

ASK_AGAIN_AFTER = timedelta(minutes=2)
"""A team waiting this long for a grant asks the coordinator again."""

# workflow.patched() ids: each marks a change to logic that recorded histories already exercise.
PATCH_COORDINATED = "team-coordinated"
"""Admission by the deployment's coordinator at the start, a grant before each stage, and the status
back at ``running_stage`` as soon as a disagreement is adjudicated."""

TEAM_STATUS_KEY = SearchAttributeKey.for_keyword("TeamStatus")
CASE_KEY = SearchAttributeKey.for_keyword("ResearchCaseId")

_SHORT_ACTIVITY = timedelta(seconds=10)
_BOOKKEEPING_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(milliseconds=200))
# The pre-stage check reads the store: a team runs for hours, so an outage is waited out (the
# deadline bounds it) rather than failing the team; a missing case is non-retryable.
_CHECK_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(minutes=1))
# Asking the coordinator is cheap and a waiting team should not sit out long backoffs: retried
# every few seconds at most (the team asks again every ASK_AGAIN_AFTER anyway).
_ASK_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=5))


@workflow.defn(name=WorkflowType.RESEARCH_TEAM)
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
        self._audit: list[AuditEvent] = []
        self._cancel: TeamCancelRequest | None = None
        self._awaiting: tuple[int, frozenset[AdjudicationOutcome]] | None = None
        self._adjudication: Adjudication | None = None
        self._used_nonces: set[str] = set()
        self._actions_in_flight = 0
        # True once the team's work is being stopped (its deadline, or its workflow cancelled):
        # whatever the work waited on then ends as a cancellation, never as a block or a change.
        self._stopping = False
        self._work: asyncio.Future[TeamStatus] | None = None
        self._coordinated = False
        self._admitted = False
        self._admission_asked = False
        self._grants: dict[int, AdvanceGrant] = {}
        self._record(
            "team_started",
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
                await self._leave_coordinator()
            self._set_status(TeamStatus.CANCELLED)  # whatever the stopped work set meanwhile
            raise

    async def _run(self, team: TeamInput) -> TeamView:
        workflow.upsert_search_attributes(
            [CASE_KEY.value_set(team.case_id), TEAM_STATUS_KEY.value_set(self._status.value)]
        )
        refusal = await self._authorize(
            "team_start", team.actor, proof=team.proof, digest=team.request_digest
        )
        if refusal is not None:
            self._error = RunError(type=refusal.code or "action_refused", message=refusal.message or "")
            return await self._finish(TeamStatus.FAILED)
        if self._cancel is not None:
            return await self._finish(TeamStatus.CANCELLED)
        # Teams started before the coordinator existed replay without admission and grants.
        if workflow.patched(PATCH_COORDINATED):
            self._coordinated = True
            refused = await self._admission(team)
            if refused is not None:
                self._error = refused
                return await self._finish(TeamStatus.FAILED)
        try:
            capture = await workflow.execute_activity(
                CAPTURE_TEAM_ACTIVITY,
                TeamCaptureRequest(team_id=team.team_id, case_id=team.case_id),
                result_type=TeamCapture,
                start_to_close_timeout=_SHORT_ACTIVITY,
                retry_policy=_BOOKKEEPING_RETRY,
            )
        except ActivityError as error:
            self._error = _error_of(error)
            self._record("step_failed", data={"step": "capture_team", **self._error.model_dump()})
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
        self._record(
            "inputs_captured",
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
            self._record("deadline_reached", data={"deadline_seconds": capture.deadline_seconds})
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
                self._record("inputs_changed", data={"stage": number, "message": changed})
                return TeamStatus.INVALIDATED
            self._set_status(TeamStatus.RUNNING_STAGE)
            self._update_stage(number, state="running")
            self._record("stage_started", data={"stage": number, "name": assignment.spec.name})
            ended = await self._run_stage(assignment, capture)
            if ended is not None:
                return ended
        if self._cancel is not None:
            return TeamStatus.CANCELLED
        self._current = None
        self._record("team_completed", data={"jobs_used": self._jobs_used})
        return TeamStatus.AWAITING_HUMAN_REVIEW

    async def _inputs_changed(self, capture: TeamCapture) -> str | None:
        """Why the team's inputs no longer hold (evidence digest or catalog sha256), or ``None``. A
        check that cannot be made (the case is gone, the worker's catalog no longer loads) is a
        change too: the team cannot show that its inputs still hold."""
        checking = asyncio.ensure_future(
            workflow.execute_activity(
                CHECK_TEAM_INPUTS_ACTIVITY,
                TeamInputsCheckRequest(team_id=self._input.team_id, case_id=capture.case_id),
                result_type=TeamInputsCheck,
                start_to_close_timeout=_SHORT_ACTIVITY,
                retry_policy=_CHECK_RETRY,
            )
        )
        # A cancel does not wait for a check that keeps retrying (the store may be down for long).
        await workflow.wait_condition(lambda: checking.done() or self._cancel is not None)
        if not checking.done():
            _abandon(checking)
            return None
        try:
            check = checking.result()
        except ActivityError as error:
            if self._stopping:
                raise asyncio.CancelledError() from error
            failure = _error_of(error)
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
                self._record("inputs_changed", data={"stage": number, "message": outcome.message})
                return TeamStatus.INVALIDATED
            self._block = outcome
            self._update_stage(number, state="blocked")
            self._set_status(TeamStatus.BLOCKED)
            self._record("stage_blocked", data=outcome.model_dump(mode="json"))
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
        if review.verdict is ReviewVerdict.DISAGREE and (
            analysis.max_severity in MATERIAL_SEVERITIES or review.max_severity in MATERIAL_SEVERITIES
        ):
            self._update_stage(number, state="awaiting_adjudication")
            self._set_status(TeamStatus.AWAITING_ADJUDICATION)
            self._record(
                "material_disagreement",
                data={
                    "stage": number,
                    "analysis_max_severity": _value(analysis.max_severity),
                    "review_max_severity": _value(review.max_severity),
                },
            )
            answer = await self._await_adjudication(number, DISAGREEMENT_OUTCOMES)
            if answer is None:
                return TeamStatus.CANCELLED
            if self._coordinated:  # (teams started before PATCH_COORDINATED kept the status)
                self._set_status(TeamStatus.RUNNING_STAGE)
        elif review.verdict in (ReviewVerdict.DISAGREE, ReviewVerdict.INSUFFICIENT_EVIDENCE):
            assert review.verdict is not None
            limitation = f"stage {number} reviewer ({review.profile_id}) returned {review.verdict.value}" + (
                " on findings of at most medium severity"
                if review.verdict is ReviewVerdict.DISAGREE
                else ": the evidence does not settle the findings"
            )
            self._update_stage(number, limitations=[*stage.limitations, limitation])
            self._record("limitation_recorded", data={"stage": number, "limitation": limitation})
        self._update_stage(number, state="done")
        self._record("stage_completed", data={"stage": number})
        return None

    async def _job(
        self, assignment: StageAssignment, capture: TeamCapture, kind: JobKind
    ) -> JobOutputRef | StageBlock:
        """One model job of the stage as a ``ModelJob`` child; its stored output by reference, or why
        the stage is blocked (the job failed, or it would exceed the team's 12 jobs)."""
        spec = assignment.spec
        number = spec.number
        if self._jobs_used >= MAX_TEAM_JOBS:
            self._record(
                "job_refused",
                data={
                    "stage": number,
                    "kind": kind.value,
                    "jobs_used": self._jobs_used,
                    "limit": MAX_TEAM_JOBS,
                },
            )
            return StageBlock(
                stage=number,
                kind=kind,
                error_type=ErrorType.JOB_BUDGET_EXHAUSTED,
                message=(
                    f"the team has used all {MAX_TEAM_JOBS} model jobs; job {MAX_TEAM_JOBS + 1} is refused"
                ),
            )
        self._jobs_used += 1
        stage = self._stages[number - 1]
        visibility = job_visibility(
            team_id=self._input.team_id,
            case_id=capture.case_id,
            stage=spec,
            kind=kind,
            evidence=capture.evidence,
            analyses=[(s.number, s.analysis) for s in self._stages if s.analysis is not None],
            reviews=[(s.number, s.review) for s in self._stages if s.review is not None],
        )
        profile = spec.profile_id if kind is JobKind.ANALYSIS else assignment.reviewer_id
        job = ModelJobInput(
            job_id=f"{self._input.team_id}-s{number}-{kind.value}-{self._jobs_used}",
            run_id=self._input.team_id,
            kind=kind,
            profile_id=profile,
            catalog_sha256=capture.catalog_sha256,
            context=JobContext(
                title=f"{capture.subject_title} (stage {number})",
                task=_task(capture, spec.focus, number, kind),
                # Earlier results it is shown may be cited too (attribution), by their stored ids.
                evidence_refs=[
                    *(ref.evidence_id for ref in visibility.evidence),
                    *(ref.job_id for ref in visibility.prior_results),
                ],
                research=visibility,
            ),
            model=capture.model,
            task_type=TaskType.RESEARCH,
        )
        omitted = {**stage.omitted, kind.value: visibility.omitted}
        drew_on = (
            [ref.job_id for ref in visibility.prior_results]
            if number == WRITER_STAGE and kind is JobKind.ANALYSIS
            else stage.drew_on
        )
        self._update_stage(number, omitted=omitted, drew_on=drew_on, jobs=stage.jobs + 1)
        self._record(
            "model_job_started",
            data={
                "stage": number,
                "kind": kind.value,
                "job_id": job.job_id,
                "profile": profile,
                "models": job.model.chain,
                "evidence": [ref.evidence_id for ref in visibility.evidence],
                "prior_results": [ref.job_id for ref in visibility.prior_results],
                "omitted": len(visibility.omitted),
                "jobs_used": self._jobs_used,
            },
        )
        try:
            result = await workflow.execute_child_workflow(
                ModelJobWorkflow.run, job, id=job.job_id, task_queue=workflow.info().task_queue
            )
        except ChildWorkflowError as error:
            if self._stopping:  # cancelled by the deadline: not a block
                raise asyncio.CancelledError() from error
            cause = error.cause
            error_type = (cause.type if isinstance(cause, ApplicationError) else None) or ErrorType.MODEL_TASK
            message = cause.message if isinstance(cause, ApplicationError) else str(error)
            attempts = list(cause.details[0]) if isinstance(cause, ApplicationError) and cause.details else []
            self._record(
                "model_job_failed",
                data={
                    "stage": number,
                    "kind": kind.value,
                    "job_id": job.job_id,
                    "error_type": error_type,
                    "message": message,
                    "attempts": attempts,
                },
            )
            return StageBlock(stage=number, kind=kind, error_type=error_type, message=message)
        ref = result.output_ref
        if ref is None:  # a research job always stores its output; anything else is a missing result
            return StageBlock(
                stage=number,
                kind=kind,
                error_type="missing_result",
                message="the job returned no stored result",
            )
        self._record(
            "model_job_completed",
            data={
                "stage": number,
                "kind": kind.value,
                "job_id": ref.job_id,
                "output_sha256": ref.sha256,
                "pack_sha256": result.pack_sha256,
                "model": ref.model_id,
                "attempts": [attempt.model_dump(mode="json") for attempt in result.attempts],
                "findings": ref.findings,
                "max_severity": _value(ref.max_severity),
                "verdict": _value(ref.verdict),
            },
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
        await self._settle_actions()
        self._awaiting = None
        if self._stopping:
            raise asyncio.CancelledError()
        answer = self._adjudication
        if answer is not None:
            self._update_stage(number, adjudication=answer)
        return answer

    # ---------------------------------------------------------------------------------------- handlers

    @workflow.query(name="view")
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
            audit=list(self._audit),
        )

    @workflow.signal(name="advance_granted")
    def advance_granted(self, grant: AdvanceGrant) -> None:
        """The coordinator granted this team's advance to ``grant.stage``."""
        self._grants[grant.stage] = grant

    @workflow.update(name="adjudicate")
    async def adjudicate(self, request: AdjudicateRequest) -> TeamActionResult:
        """Record a registered human's outcome for the stage the team waits on."""
        digest = adjudication_digest(request.stage, request.outcome)
        refusal = await self._authorize("adjudicate", request.actor, proof=request.proof, digest=digest)
        if refusal is not None:
            return refusal
        problem = self._adjudication_problem(request)
        if problem is not None:  # the state moved on while the action was being authorised
            return self._refuse("adjudicate", request.actor, *problem)
        self._adjudication = Adjudication(
            stage=request.stage,
            outcome=request.outcome,
            actor=request.actor,
            note=request.note,
            at=workflow.now(),
        )
        self._record(
            "adjudicated",
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
        if self._cancel is not None or self._stopping:
            return ("cancelling", f"team {self._input.team_id} is being cancelled or has expired")
        if self._awaiting is None or self._adjudication is not None:
            return (
                "not_awaiting_adjudication",
                f"team {self._input.team_id} is {self._status.value}; only a team awaiting "
                "adjudication or blocked can be adjudicated",
            )
        stage, allowed = self._awaiting
        if request.stage != stage:
            return (
                "wrong_stage",
                f"team {self._input.team_id} waits on stage {stage}, not stage {request.stage}",
            )
        if request.outcome not in allowed:
            choices = " | ".join(sorted(outcome.value for outcome in allowed))
            what = "a blocked stage" if allowed == BLOCK_OUTCOMES else "a disagreement"
            return (
                "outcome_not_allowed",
                f"for {what} the outcome is one of {choices}, not {request.outcome.value}",
            )
        if request.outcome is AdjudicationOutcome.RETRY_STAGE and self._jobs_used >= MAX_TEAM_JOBS:
            return (
                ErrorType.JOB_BUDGET_EXHAUSTED,
                f"the team has used all {MAX_TEAM_JOBS} model jobs, so a retry would be job "
                f"{MAX_TEAM_JOBS + 1}; choose stop",
            )
        return None

    @workflow.signal(name="cancel")
    async def cancel(self, request: TeamCancelRequest) -> None:
        """Stop further stages; a running job may finish, nothing starts after it. A second cancel
        is one cancel: it is refused (``already_cancelling``) and changes nothing."""
        refusal = await self._authorize("team_cancel", request.actor, proof=request.proof)
        if refusal is not None:
            return
        # Each event names the request it answers (its proof's nonce), so the caller finds its own.
        nonce = request.proof.nonce if request.proof else None
        if self._status.final:
            self._refuse(
                "team_cancel", request.actor, "already_finished", f"team is {self._status.value}", nonce
            )
            return
        if self._cancel is not None:
            self._refuse(
                "team_cancel",
                request.actor,
                "already_cancelling",
                "the team is already being cancelled",
                nonce,
            )
            return
        self._cancel = request
        self._record(
            "cancel_requested", actor=request.actor, data={"reason": request.reason, "request": nonce}
        )

    async def _authorize(
        self, action: str, actor: str | None, *, proof: ActionProof | None = None, digest: str = ""
    ) -> TeamActionResult | None:
        """Run the authorisation step (``workflows.authorization.check_action``); ``None`` when
        allowed, else the recorded refusal, naming the request (its proof's nonce) it answers."""
        request = AuthorizeRequest(
            run_id=self._input.team_id, action=action, actor=actor, digest=digest, proof=proof
        )
        self._actions_in_flight += 1
        try:
            result = await check_action(request, self._used_nonces)
        finally:
            self._actions_in_flight -= 1
        if result.allowed:
            return None
        nonce = proof.nonce if proof is not None else None
        return self._refuse(action, actor, result.code or "forbidden", result.message or "refused", nonce)

    def _refuse(
        self, action: str, actor: str | None, code: str, message: str, request: str | None = None
    ) -> TeamActionResult:
        data: dict[str, Any] = {"action": action, "code": code, "message": message}
        if request is not None:
            data["request"] = request
        self._record("action_refused", actor=actor, data=data)
        return TeamActionResult(accepted=False, status=self._status, code=code, message=message)

    async def _settle_actions(self) -> None:
        await workflow.wait_condition(lambda: self._actions_in_flight == 0)

    # ------------------------------------------------------------------------------------ state/audit

    def _record(self, kind: str, *, actor: str | None = None, data: dict[str, Any] | None = None) -> None:
        self._audit.append(
            AuditEvent(seq=len(self._audit) + 1, at=workflow.now(), kind=kind, actor=actor, data=data or {})
        )

    def _update_stage(self, number: int, **changes: Any) -> None:
        self._stages[number - 1] = self._stages[number - 1].model_copy(update=changes)

    def _set_status(self, status: TeamStatus) -> None:
        if status is self._status:
            return
        previous = self._status
        self._status = status
        self._record("status_changed", data={"from": previous.value, "to": status.value})
        workflow.upsert_search_attributes([TEAM_STATUS_KEY.value_set(status.value)])

    async def _finish(self, status: TeamStatus) -> TeamView:
        self._set_status(status)
        await workflow.wait_condition(workflow.all_handlers_finished)
        if self._admission_asked:  # admitted, or perhaps admitted by a request whose answer was lost
            await self._leave_coordinator()
        return self.view()

    # ------------------------------------------------------------------------------------ coordinator

    async def _admission(self, team: TeamInput) -> RunError | None:
        """Ask the deployment's coordinator to admit this team; the refusal (``team_limit_reached``
        names the limit), or ``None`` once admitted."""
        self._admission_asked = True
        try:
            admission = await workflow.execute_activity(
                REQUEST_ADMISSION_ACTIVITY,
                AdmissionCall(team_id=team.team_id, case_id=team.case_id),
                result_type=Admission,
                start_to_close_timeout=_SHORT_ACTIVITY,
                retry_policy=_BOOKKEEPING_RETRY,
            )
        except ActivityError as error:
            failure = _error_of(error)
            self._record("step_failed", data={"step": "request_team_admission", **failure.model_dump()})
            return RunError(
                type="admission_failed",
                message=f"the research coordinator could not be asked ({failure.type}: {failure.message}); "
                "start again with a new request id",
            )
        if not admission.admitted:
            self._record(
                "admission_refused",
                data={"code": admission.code, "active": admission.active, "limit": admission.limit},
            )
            return RunError(type=admission.code or "team_limit_reached", message=admission.message or "")
        self._admitted = True
        self._record("admitted", data={"active": admission.active, "limit": admission.limit})
        return None

    async def _granted(self, number: int) -> bool:
        """Ask the coordinator for the advance to stage ``number`` and wait for its grant (the
        deadline keeps running). False when the team is cancelled meanwhile."""
        self._set_status(TeamStatus.WAITING_FOR_GRANT)
        while True:
            requesting = asyncio.ensure_future(
                workflow.execute_activity(
                    REQUEST_ADVANCE_ACTIVITY,
                    AdvanceCall(team_id=self._input.team_id, stage=number),
                    start_to_close_timeout=_SHORT_ACTIVITY,
                    retry_policy=_ASK_RETRY,
                )
            )
            try:
                await workflow.wait_condition(
                    lambda: number in self._grants or self._cancel is not None, timeout=ASK_AGAIN_AFTER
                )
                break
            except TimeoutError:
                # Asked again (the request is idempotent): a coordinator that was lost or reset
                # learns of this team again instead of leaving it waiting until its deadline.
                if not requesting.done():
                    _abandon(requesting)
        if not requesting.done():
            _abandon(requesting)
        if number not in self._grants:
            return False
        self._record("advance_granted", data={"stage": number, "cycle": self._grants[number].cycle})
        return True

    async def _leave_coordinator(self) -> None:
        """Tell the coordinator this team ended, so its place is free (shielded: sent even while the
        team is being cancelled; a coordinator that is gone has nothing to free)."""
        handle = workflow.get_external_workflow_handle(coordinator_workflow_id(workflow.info().task_queue))
        try:
            await asyncio.shield(
                asyncio.ensure_future(
                    handle.signal("team_finished", TeamFinished(team_id=self._input.team_id))
                )
            )
        except Exception as error:  # the server reports a missing workflow as a failed signal
            workflow.logger.info("team %s: no coordinator to leave (%s)", self._input.team_id, error)


def _task(capture: TeamCapture, focus: str, number: int, kind: JobKind) -> str:
    """The task a stage's job is given: the case subject and the stage's focus (or, for its review,
    what to check)."""
    subject = f"{capture.subject_kind} {capture.subject_identifier}: {capture.subject_title}"
    if kind is JobKind.REVIEW:
        return (
            f"Research case {capture.case_id} ({subject}). Independently check the findings of stage "
            f"{number} against the original evidence."
        )
    return f"Research case {capture.case_id} ({subject}). Stage {number}: {focus}"


def _abandon(task: asyncio.Future[Any]) -> None:
    """Cancel a task whose result is no longer wanted, and take its outcome when it ends, so its
    cancellation is not reported as an exception nobody retrieved."""
    task.cancel()
    task.add_done_callback(lambda done: done.cancelled() or done.exception())


def _value(member: Any) -> str | None:
    """An enum member's value for the audit data (``None`` stays ``None``)."""
    return None if member is None else str(member.value)


def _error_of(error: ActivityError) -> RunError:
    cause = error.cause
    error_type = cause.type if isinstance(cause, ApplicationError) and cause.type else "activity_failed"
    message = cause.message if isinstance(cause, ApplicationError) else str(cause or error)
    return RunError(type=error_type, message=message)
