"""Activities a research team uses to talk to the deployment's ``ResearchCoordinator``.

``request_team_admission`` sends update ``admit`` with start: the coordinator is started on demand on
this task queue (with the deployment's cycle length) by the first team that asks, and answers at once.
``request_stage_advance`` makes sure the team is still admitted (the same idempotent ``admit``: a
coordinator that was reset learns the team again) and queues its request (signal
``request_advance``); the grant arrives at the team as a signal, so the activity never waits for it.
"""

from __future__ import annotations

from typing import Any

from temporalio import activity
from temporalio.client import WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from activities.config import ActivityConfig
from contracts.research_coordinator import (
    Admission,
    AdmissionCall,
    AdmitRequest,
    AdvanceCall,
    AdvanceRequest,
    CoordinatorState,
    TeamIds,
    coordinator_workflow_id,
)
from contracts.temporal_names import ActivityName, CoordinatorMessage, WorkflowType
from runtime.logs import run_logger

COORDINATOR_WORKFLOW = WorkflowType.RESEARCH_COORDINATOR


class CoordinationActivities:
    """The team's coordinator activities, bound to the deployment's coordinator settings."""

    def __init__(self, config: ActivityConfig) -> None:
        self._config = config

    def _initial_state(self) -> CoordinatorState:
        return CoordinatorState(
            cycle_seconds=self._config.team_cycle_seconds,
            continue_as_new_after_events=self._config.coordinator_continue_as_new_events,
        )

    async def _admit(self, team_id: str, case_id: str) -> Admission:
        task_queue = activity.info().task_queue
        start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
            COORDINATOR_WORKFLOW,
            self._initial_state(),
            id=coordinator_workflow_id(task_queue),
            task_queue=task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        admission: Admission = await activity.client().execute_update_with_start_workflow(
            CoordinatorMessage.ADMIT,
            AdmitRequest(team_id=team_id, case_id=case_id, cycle_seconds=self._config.team_cycle_seconds),
            start_workflow_operation=start,
            result_type=Admission,
        )
        return admission

    @activity.defn(name=ActivityName.REQUEST_TEAM_ADMISSION)
    async def request_team_admission(self, call: AdmissionCall) -> Admission:
        """Ask the coordinator to admit the team (starting the coordinator if none runs). Returns its
        answer; a refusal (``team_limit_reached``) is an answer, not an error. Raises what Temporal
        raises (retried by the team's retry policy; ``admit`` is idempotent by team id)."""
        admission = await self._admit(call.team_id, call.case_id)
        run_logger(call.team_id, activity="request_team_admission").info(
            "team_admission", admitted=admission.admitted, active=admission.active, limit=admission.limit
        )
        return admission

    @activity.defn(name=ActivityName.FIND_CLOSED_TEAMS)
    async def find_closed_teams(self, active: TeamIds) -> TeamIds:
        """The teams of ``active`` whose workflow has closed (or never existed): a team ended without
        telling the coordinator — an operator terminated it, or it timed out — frees its place
        this way. Raises what Temporal raises for anything but a missing workflow (retried)."""
        closed = []
        for team_id in active.team_ids:
            try:
                description = await activity.client().get_workflow_handle(team_id).describe()
            except RPCError as error:
                if error.status == RPCStatusCode.NOT_FOUND:
                    closed.append(team_id)
                    continue
                raise
            if description.close_time is not None:
                closed.append(team_id)
        return TeamIds(team_ids=closed)

    @activity.defn(name=ActivityName.REQUEST_STAGE_ADVANCE)
    async def request_stage_advance(self, call: AdvanceCall) -> None:
        """Queue the team's request to start ``call.stage``. Raises a retryable ``ApplicationError``
        (``team_not_admitted``) when the coordinator no longer admits the team — it was reset while
        full — so the request is tried again until a place is free (the team's deadline bounds it)."""
        admission = await self._admit(call.team_id, "")
        if not admission.admitted:
            raise ApplicationError(
                f"the coordinator does not admit team {call.team_id} now: {admission.message}",
                type="team_not_admitted",
            )
        handle = activity.client().get_workflow_handle(coordinator_workflow_id(activity.info().task_queue))
        await handle.signal(
            CoordinatorMessage.REQUEST_ADVANCE, AdvanceRequest(team_id=call.team_id, stage=call.stage)
        )
        run_logger(call.team_id, activity="request_stage_advance").info(
            "stage_advance_requested", stage=call.stage
        )
