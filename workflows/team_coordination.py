"""A ``ResearchTeam``'s side of the deployment's ``ResearchCoordinator`` (docs/architecture.md
"Research team"): admission at the start (activity ``request_team_admission``), a request before
each stage (activity ``request_stage_advance``; the grant arrives as signal ``advance_granted``), and
signal ``team_finished`` when the team ends, so its place is free. Deterministic: no I/O of its own;
imported by ``workflows/research_team.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from contracts.audit import AuditKind
    from contracts.refusals import RefusalCode
    from contracts.research_coordinator import (
        Admission,
        AdmissionCall,
        AdvanceCall,
        TeamFinished,
        coordinator_workflow_id,
    )
    from contracts.research_teams import TeamInput
    from contracts.runs import RunError
    from contracts.temporal_names import ActivityName, CoordinatorMessage
    from workflows.audit import AuditTrail, activity_failure

ASK_AGAIN_AFTER = timedelta(minutes=2)
"""A team waiting this long for a grant asks the coordinator again."""

ASK_TIMEOUT = timedelta(seconds=10)
_ADMISSION_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(milliseconds=200))
# Asking the coordinator is cheap and a waiting team should not sit out long backoffs: retried
# every few seconds at most (the team asks again every ASK_AGAIN_AFTER anyway).
_ASK_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=5))


async def request_admission(team: TeamInput, audit: AuditTrail) -> RunError | None:
    """Ask the deployment's coordinator to admit ``team``; the refusal (``team_limit_reached`` names
    the limit; ``admission_failed`` when it could not be asked), or ``None`` once admitted."""
    try:
        admission = await workflow.execute_activity(
            ActivityName.REQUEST_TEAM_ADMISSION,
            AdmissionCall(team_id=team.team_id, case_id=team.case_id),
            result_type=Admission,
            start_to_close_timeout=ASK_TIMEOUT,
            retry_policy=_ADMISSION_RETRY,
        )
    except ActivityError as error:
        failure = activity_failure(error)
        audit.record(
            AuditKind.STEP_FAILED, data={"step": ActivityName.REQUEST_TEAM_ADMISSION, **failure.model_dump()}
        )
        return RunError(
            type="admission_failed",
            message=f"the research coordinator could not be asked ({failure.type}: {failure.message}); "
            "start again with a new request id",
        )
    if not admission.admitted:
        audit.record(
            AuditKind.ADMISSION_REFUSED,
            data={"code": admission.code, "active": admission.active, "limit": admission.limit},
        )
        return RunError(
            type=admission.code or RefusalCode.TEAM_LIMIT_REACHED, message=admission.message or ""
        )
    audit.record(AuditKind.ADMITTED, data={"active": admission.active, "limit": admission.limit})
    return None


async def ask_for_advance(team_id: str, stage: int, answered: Callable[[], bool]) -> None:
    """Ask the coordinator for the advance to ``stage`` until ``answered()`` (the grant arrived, or
    the team is being cancelled): again every ``ASK_AGAIN_AFTER`` (the request is idempotent), so a
    coordinator that was lost or reset learns of this team again instead of leaving it waiting until
    its deadline."""
    while True:
        requesting = asyncio.ensure_future(
            workflow.execute_activity(
                ActivityName.REQUEST_STAGE_ADVANCE,
                AdvanceCall(team_id=team_id, stage=stage),
                start_to_close_timeout=ASK_TIMEOUT,
                retry_policy=_ASK_RETRY,
            )
        )
        try:
            await workflow.wait_condition(answered, timeout=ASK_AGAIN_AFTER)
            break
        except TimeoutError:
            if not requesting.done():
                abandon(requesting)
    if not requesting.done():
        abandon(requesting)


async def leave_coordinator(team_id: str) -> None:
    """Tell the coordinator the team ended, so its place is free (shielded: sent even while the team
    is being cancelled; a coordinator that is gone has nothing to free)."""
    handle = workflow.get_external_workflow_handle(coordinator_workflow_id(workflow.info().task_queue))
    try:
        await asyncio.shield(
            asyncio.ensure_future(
                handle.signal(CoordinatorMessage.TEAM_FINISHED, TeamFinished(team_id=team_id))
            )
        )
    except Exception as error:  # the server reports a missing workflow as a failed signal
        workflow.logger.info("team %s: no coordinator to leave (%s)", team_id, error)


def abandon(task: asyncio.Future[Any]) -> None:
    """Cancel a task whose result is no longer wanted, and take its outcome when it ends, so its
    cancellation is not reported as an exception nobody retrieved."""
    task.cancel()
    task.add_done_callback(lambda done: done.cancelled() or done.exception())
