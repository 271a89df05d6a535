"""``IntakeSweep``: one pass of the scheduled intake scan, started by the ``intake-scan`` Temporal
Schedule (docs/architecture.md "Schedules").

The story: check the schedule's grant (the ``authorize_action`` activity verifies the enabling
person's signature with their key in force); list the active registered repositories
(``list_intake_repositories``; deactivated ones are skipped and reported); then, one repository at a
time, ask the goal queue for an intake scan (``request_intake_scan``, the queue's ``intake`` update
carrying the grant and this sweep's id), so the scan and its diff are exactly those of ``queue
scan``: nothing proposed twice, a changed source updates its proposal, nothing approved. A repository
whose scan is refused or fails (unavailable, a git error) is reported with its reason and the sweep
goes on with the next.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from contracts.intake import IntakeAnswer
    from contracts.runs import AuthorizeResult
    from contracts.schedules import (
        IntakeRepos,
        IntakeReposRequest,
        IntakeScanOutcome,
        IntakeSweepInput,
        IntakeSweepResult,
        ScheduledIntake,
        SweepScanRequest,
    )
    from contracts.temporal_names import ActivityName, WorkflowType
    from workflows.authorization import schedule_grant_request
    from workflows.versioning import auto_upgrade

_SHORT = timedelta(seconds=30)
_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(milliseconds=500))
# The queue's own scan may take its 5 minutes twice (workflows.queue_intake); a retried request finds
# the findings of the first already queued.
_SCAN_TIMEOUT = timedelta(minutes=12)
_SCAN_RETRY = RetryPolicy(maximum_attempts=2, initial_interval=timedelta(seconds=1))


@workflow.defn(name=WorkflowType.INTAKE_SWEEP, versioning_behavior=auto_upgrade())
class IntakeSweepWorkflow:
    """Ask the goal queue for an intake scan of each active registered repository."""

    @workflow.init
    def __init__(self, sweep: IntakeSweepInput) -> None:
        self._input = sweep

    @workflow.run
    async def run(self, sweep: IntakeSweepInput) -> IntakeSweepResult:
        grant = sweep.grant
        sweep_id = workflow.info().workflow_id
        allowed = await workflow.execute_activity(
            ActivityName.AUTHORIZE_ACTION,
            schedule_grant_request(grant, sweep_id),
            result_type=AuthorizeResult,
            start_to_close_timeout=_SHORT,
            retry_policy=_RETRY,
        )
        if not allowed.allowed:
            return IntakeSweepResult(refused=f"{allowed.code}: {allowed.message}")
        listed = await workflow.execute_activity(
            ActivityName.LIST_INTAKE_REPOSITORIES,
            IntakeReposRequest(sweep_workflow_id=sweep_id),
            result_type=IntakeRepos,
            start_to_close_timeout=_SHORT,
            retry_policy=_RETRY,
        )
        scheduled = ScheduledIntake(grant=grant, sweep_workflow_id=sweep_id)
        scanned = [await self._scan(alias, scheduled) for alias in listed.aliases]
        return IntakeSweepResult(scanned=scanned, skipped=listed.skipped)

    async def _scan(self, alias: str, scheduled: ScheduledIntake) -> IntakeScanOutcome:
        """The goal queue's answer for ``alias``, or why it could not be had."""
        try:
            answer: IntakeAnswer = await workflow.execute_activity(
                ActivityName.REQUEST_INTAKE_SCAN,
                SweepScanRequest(repo_alias=alias, task_queue=self._input.task_queue, scheduled=scheduled),
                result_type=IntakeAnswer,
                start_to_close_timeout=_SCAN_TIMEOUT,
                retry_policy=_SCAN_RETRY,
            )
        except ActivityError as error:
            cause = error.cause
            code = cause.type if isinstance(cause, ApplicationError) and cause.type else "scan_failed"
            message = cause.message if isinstance(cause, ApplicationError) else str(cause or error)
            return IntakeScanOutcome(repo_alias=alias, accepted=False, code=code, message=message)
        return IntakeScanOutcome(
            repo_alias=alias,
            accepted=answer.accepted,
            code=answer.code,
            message=answer.message,
            commit=answer.commit,
            proposed=[row.key for row in answer.proposed if row.key is not None],
            updated=[row.key for row in answer.updated if row.key is not None],
            recorded=len(answer.recorded),
            already_queued=len(answer.already_queued),
            not_reproposed=len(answer.not_reproposed),
            refused=len(answer.refused),
        )
