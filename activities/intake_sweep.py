"""Activities of the scheduled intake scan (docs/architecture.md "Schedules"):
``list_intake_repositories`` reads the registered repositories a sweep scans (deactivated ones
skipped); ``request_intake_scan`` asks the goal queue for one repository's scan through its ``intake``
update, carrying the schedule's grant; ``check_intake_sweep`` is how the queue confirms that the sweep
a scheduled scan names is a running ``IntakeSweep`` of that schedule.

The scan and its diff are the goal queue's own (``workflows.queue_intake``,
``contracts.intake_diff``): the sweep adds no second copy of them. Every activity here is read-only
or idempotent (a scan asked twice finds its findings already queued).
"""

from __future__ import annotations

from temporalio import activity
from temporalio.client import WithStartWorkflowOperation, WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from activities.store_access import SharedStore
from contracts.errors import OperatorError, ServiceUnavailable
from contracts.intake import IntakeAnswer, IntakeRequest
from contracts.queue_messages import QueueState, queue_workflow_id
from contracts.schedules import (
    IntakeRepos,
    IntakeRepoSkip,
    IntakeReposRequest,
    SweepCheckRequest,
    SweepCheckResult,
    SweepScanRequest,
    sweep_of_schedule,
)
from contracts.temporal_names import ActivityName, QueueMessage, WorkflowType


class IntakeSweepActivities:
    """``list_intake_repositories`` on the store; ``request_intake_scan`` and ``check_intake_sweep``
    on the worker's Temporal client."""

    def __init__(self, store: SharedStore) -> None:
        self._store = store

    @activity.defn(name=ActivityName.LIST_INTAKE_REPOSITORIES)
    def list_intake_repositories(self, request: IntakeReposRequest) -> IntakeRepos:
        """The active registered repositories by alias; each deactivated one is skipped
        (``deactivated``). A record that does not verify fails the activity (non-retryable
        ``configuration_unverified``): the sweep scans nothing it cannot trust."""
        try:
            records = self._store.get().list_repositories()
        except ServiceUnavailable:
            raise
        except OperatorError as error:
            raise ApplicationError(error.message, type=error.code, non_retryable=True) from None
        return IntakeRepos(
            aliases=[record.alias for record in records if record.active],
            skipped=[
                IntakeRepoSkip(repo_alias=record.alias, reason="deactivated")
                for record in records
                if not record.active
            ],
        )

    @activity.defn(name=ActivityName.REQUEST_INTAKE_SCAN)
    async def request_intake_scan(self, request: SweepScanRequest) -> IntakeAnswer:
        """The goal queue's answer to the ``intake`` update for ``request.repo_alias`` under the
        schedule's grant (the queue is started empty when none runs, as ``queue scan`` does). A
        refusal or a failed scan is an answer (``accepted`` false, its code and message), not an
        error; Temporal errors reaching the queue are raised and retried."""
        grant = request.scheduled.grant
        update = IntakeRequest(
            actor=grant.granted_by, repo_alias=request.repo_alias, scheduled=request.scheduled
        )
        start: WithStartWorkflowOperation[object, object] = WithStartWorkflowOperation(
            WorkflowType.WORK_QUEUE,
            QueueState(),
            id=queue_workflow_id(request.task_queue),
            task_queue=request.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        try:
            answer: IntakeAnswer = await activity.client().execute_update_with_start_workflow(
                QueueMessage.INTAKE, update, start_workflow_operation=start, result_type=IntakeAnswer
            )
        except WorkflowUpdateFailedError as error:
            cause = error.cause
            code = cause.type if isinstance(cause, ApplicationError) and cause.type else "refused"
            message = cause.message if isinstance(cause, ApplicationError) else str(cause or error)
            return IntakeAnswer(accepted=False, code=code, message=message, repo_alias=request.repo_alias)
        return answer

    @activity.defn(name=ActivityName.CHECK_INTAKE_SWEEP)
    async def check_intake_sweep(self, request: SweepCheckRequest) -> SweepCheckResult:
        """Whether ``request.sweep_workflow_id`` is a running ``IntakeSweep`` on the queue's task
        queue whose id is one the schedule ``request.schedule_id`` gives its executions."""
        if not sweep_of_schedule(request.sweep_workflow_id, request.schedule_id):
            return SweepCheckResult(
                running=False, reason=f"{request.sweep_workflow_id} is not a sweep of {request.schedule_id}"
            )
        handle = activity.client().get_workflow_handle(request.sweep_workflow_id)
        try:
            described = await handle.describe()
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                return SweepCheckResult(running=False, reason=f"no sweep {request.sweep_workflow_id}")
            raise
        kind, queue = described.workflow_type, described.task_queue
        if kind != WorkflowType.INTAKE_SWEEP or queue != request.task_queue:
            return SweepCheckResult(
                running=False, reason=f"{request.sweep_workflow_id} is a {kind} on {queue}"
            )
        if described.status != WorkflowExecutionStatus.RUNNING:
            return SweepCheckResult(running=False, reason=f"sweep {request.sweep_workflow_id} is not running")
        return SweepCheckResult(running=True)
