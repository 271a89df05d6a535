"""The goal queue's intake: scan a repository and diff its findings against the queue
(docs/architecture.md "Goal queue", "Intake").

The ``intake`` update of ``WorkQueue`` authorises the actor (action ``queue_intake``, like ``add``),
runs the ``scan_repository`` activity here, then applies
:func:`contracts.intake_diff.apply_intake` to the queue as it is once the scan has returned (another
update may have changed it meanwhile), in one workflow task. A scan never approves anything.

Deterministic: no I/O of its own; imported by workflow modules.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from contracts.intake import BeyondDrop, IntakeAnswer, IntakeRequest, ScanRequest, ScanResult
    from contracts.intake_beyond import (
        BEYOND_PROFILE,
        BeyondPrepared,
        BeyondPrepareRequest,
        QuoteCheckRequest,
        QuoteCheckResult,
        beyond_finding,
        beyond_task,
        drop,
    )
    from contracts.model_classes import ModelClass
    from contracts.model_jobs import JobContext, ModelJobInput, ModelJobResult
    from contracts.output import JobKind
    from contracts.queue_messages import QUEUE_ID_PREFIX
    from contracts.refusals import RefusalCode
    from contracts.runs import AuthorizeRequest
    from contracts.schedules import (
        SCHEDULE_ENABLE_ACTION,
        ScheduleKind,
        SweepCheckRequest,
        SweepCheckResult,
        grant_digest,
        schedule_id,
        scheduled_intake_problem,
    )
    from contracts.temporal_names import ActivityName, WorkflowType
    from contracts.ui_summaries import model_job_summary
    from workflows.authorization import AUTHORIZE_RETRY, AUTHORIZE_TIMEOUT, check_action

PATCH_INTAKE = "queue-intake-scan"
"""Executions that take an ``intake`` update record this marker where the update first runs (no
recorded history took one: they replay unchanged)."""
PATCH_SCHEDULED_INTAKE = "queue-scheduled-intake"
"""Executions whose ``intake`` update took a scan asked by an ``intake-scan`` sweep record this marker
where that update is authorised (no recorded history took one: they replay unchanged)."""
PATCH_BEYOND = "queue-intake-beyond"
"""Executions whose ``intake`` update asked for the beyond-source pass record this marker where the
pass starts (no recorded history took one before: they replay unchanged)."""
SCAN_TIMEOUT = timedelta(minutes=5)
BEYOND_TIMEOUT = timedelta(seconds=30)
BEYOND_JOB_TIMEOUT = timedelta(minutes=20)
SCAN_RETRY = RetryPolicy(maximum_attempts=2, initial_interval=timedelta(seconds=1))


async def scan_repository(request: IntakeRequest) -> ScanResult | IntakeAnswer:
    """The scan of ``request.repo_alias``, or a refused answer carrying the activity's error type
    (``unknown_repository``, ``repository_deactivated``, ``git_failed`` …) and message."""
    try:
        result: ScanResult = await workflow.execute_activity(
            ActivityName.SCAN_REPOSITORY,
            ScanRequest(repo_alias=request.repo_alias, bounds=request.bounds),
            result_type=ScanResult,
            start_to_close_timeout=SCAN_TIMEOUT,
            retry_policy=SCAN_RETRY,
        )
    except ActivityError as error:
        cause = error.cause
        code = cause.type if isinstance(cause, ApplicationError) and cause.type else "scan_failed"
        message = cause.message if isinstance(cause, ApplicationError) else str(error)
        return IntakeAnswer(accepted=False, code=code, message=message, repo_alias=request.repo_alias)
    return result


async def authorize_scheduled(request: IntakeRequest) -> tuple[str, str] | None:
    """``None`` when ``request.scheduled`` authorises this scan; else the refusal's code and message.

    Three checks, in order: the grant is the ``intake-scan`` schedule's of this queue's task queue,
    given by ``request.actor``, bound to that schedule, kind and interval, and names a sweep of that
    schedule (:func:`contracts.schedules.scheduled_intake_problem`, pure); its signature of
    ``schedule_enable`` on the schedule id verifies with the actor's key in force and the actor is
    active (``authorize_action`` with ``standing_grant``: no freshness limit, no nonce, as for the
    sweep itself); the sweep it names is a running ``IntakeSweep`` on this task queue
    (``check_intake_sweep``; the task queue is the one the queue's id names). A grant copied
    elsewhere therefore authorises only an intake scan of this queue while a sweep of that schedule
    runs, which is what the schedule asks for anyway.
    """
    scheduled = request.scheduled
    assert scheduled is not None
    # The queue's own id names its task queue (``work-queue@<task queue>``); ``workflow.info()``'s
    # task queue is another one when a history is replayed, so it would not replay.
    task_queue = workflow.info().workflow_id.removeprefix(QUEUE_ID_PREFIX)
    problem = scheduled_intake_problem(scheduled, request.actor, task_queue)
    if problem is not None:
        return RefusalCode.PROOF_INVALID, problem
    grant = scheduled.grant
    sid = schedule_id(ScheduleKind.INTAKE_SCAN, task_queue)
    checked = await check_action(
        AuthorizeRequest(
            run_id=workflow.info().workflow_id,
            action=SCHEDULE_ENABLE_ACTION,
            actor=request.actor,
            digest=grant_digest(sid, ScheduleKind.INTAKE_SCAN, grant.interval_seconds),
            proof=grant.proof,
            standing_grant=True,
            grant_target=sid,
        ),
        set(),  # a standing grant's nonce is the same on every scan: it is never spent
    )
    if not checked.allowed:
        return checked.code or RefusalCode.FORBIDDEN, checked.message or "refused"
    try:
        sweep: SweepCheckResult = await workflow.execute_activity(
            ActivityName.CHECK_INTAKE_SWEEP,
            SweepCheckRequest(
                sweep_workflow_id=scheduled.sweep_workflow_id, schedule_id=sid, task_queue=task_queue
            ),
            result_type=SweepCheckResult,
            start_to_close_timeout=AUTHORIZE_TIMEOUT,
            retry_policy=AUTHORIZE_RETRY,
        )
    except ActivityError as error:
        return (
            RefusalCode.AUTHORIZATION_UNAVAILABLE,
            f"the sweep could not be checked: {error.cause or error}",
        )
    if not sweep.running:
        return RefusalCode.PROOF_INVALID, sweep.reason
    return None


def _refused(request: IntakeRequest, error: ActivityError | ChildWorkflowError) -> IntakeAnswer:
    cause = error.cause
    while isinstance(cause, (ActivityError, ChildWorkflowError)):
        cause = cause.cause
    code = cause.type if isinstance(cause, ApplicationError) and cause.type else "beyond_failed"
    message = cause.message if isinstance(cause, ApplicationError) else str(error)
    return IntakeAnswer(accepted=False, code=code, message=message, repo_alias=request.repo_alias)


async def beyond_scan(
    request: IntakeRequest, scanned: ScanResult
) -> tuple[ScanResult, list[BeyondDrop]] | IntakeAnswer:
    """The beyond-source pass over the commit ``scanned`` read: ``prepare_beyond_scan`` (the model
    selection snapshotted now, the documents, the bounded history), one ``ModelJob`` child (analysis,
    read_only, profile :data:`BEYOND_PROFILE`, the core class's pool), then ``check_beyond_quotes``.
    Returns ``scanned`` with the checked proposals added as ``beyond`` findings and the drops, or a
    refused answer naming what failed."""
    alias, commit = scanned.repo_alias, scanned.commit
    try:
        prepared: BeyondPrepared = await workflow.execute_activity(
            ActivityName.PREPARE_BEYOND_SCAN,
            BeyondPrepareRequest(repo_alias=alias, commit=commit),
            result_type=BeyondPrepared,
            start_to_close_timeout=BEYOND_TIMEOUT,
            retry_policy=SCAN_RETRY,
        )
    except ActivityError as error:
        return _refused(request, error)
    title = f"Beyond-source pass of {alias}"
    job = ModelJobInput(
        job_id=f"{workflow.info().workflow_id}-beyond-{workflow.uuid4().hex[:16]}",
        run_id=workflow.info().workflow_id,
        kind=JobKind.ANALYSIS,
        profile_id=BEYOND_PROFILE,
        catalog_sha256=prepared.catalog_sha256,
        context=JobContext(
            title=title,
            task=beyond_task(alias, commit, prepared.history),
            evidence_refs=prepared.evidence_refs,
            beyond=True,
        ),
        model=prepared.model,
        repo_alias=alias,
        base_commit=commit,
        model_class=ModelClass.CORE,
        effort=prepared.model.effort_for(ModelClass.CORE),
    )
    try:
        result: ModelJobResult = await workflow.execute_child_workflow(
            WorkflowType.MODEL_JOB,
            job,
            id=job.job_id,
            result_type=ModelJobResult,
            task_queue=workflow.info().task_queue,
            execution_timeout=BEYOND_JOB_TIMEOUT,
            static_summary=model_job_summary(JobKind.ANALYSIS.value, BEYOND_PROFILE, title),
        )
    except ChildWorkflowError as error:
        return _refused(request, error)
    findings = result.require_output().findings
    try:
        checked: QuoteCheckResult = await workflow.execute_activity(
            ActivityName.CHECK_BEYOND_QUOTES,
            QuoteCheckRequest(repo_alias=alias, commit=commit, findings=findings),
            result_type=QuoteCheckResult,
            start_to_close_timeout=BEYOND_TIMEOUT,
            retry_policy=SCAN_RETRY,
        )
    except ActivityError as error:
        return _refused(request, error)
    kept = []
    dropped = list(checked.dropped)
    for index in checked.kept:
        made = beyond_finding(alias, commit, findings[index])
        if made is None:
            dropped.append(drop(findings[index], "an evidence ref would be over the bound"))
        else:
            kept.append(made)
    return scanned.model_copy(update={"findings": [*scanned.findings, *kept]}), dropped
