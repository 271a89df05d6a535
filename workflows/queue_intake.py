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
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from contracts.intake import IntakeAnswer, IntakeRequest, ScanRequest, ScanResult
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
    from contracts.temporal_names import ActivityName
    from workflows.authorization import AUTHORIZE_RETRY, AUTHORIZE_TIMEOUT, check_action

PATCH_INTAKE = "queue-intake-scan"
"""Executions that take an ``intake`` update record this marker where the update first runs (no
recorded history took one: they replay unchanged)."""
PATCH_SCHEDULED_INTAKE = "queue-scheduled-intake"
"""Executions whose ``intake`` update took a scan asked by an ``intake-scan`` sweep record this marker
where that update is authorised (no recorded history took one: they replay unchanged)."""
SCAN_TIMEOUT = timedelta(minutes=5)
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
