"""``ResearchCoordinator``: admission of at most 20 active research teams and at most 5 stage advances
per cycle, for one deployment.

Started on demand (update-with-start ``admit`` from the first team's admission activity), one per task
queue (``contracts.research_coordinator.coordinator_workflow_id``). Handlers only change state:

* update ``admit`` — a team asks to run: admitted while fewer than the limit are active, again (same
  answer) for a team already admitted; refused with the limit named otherwise. At the limit it first
  frees the places of teams whose workflow closed without saying so (terminated by an operator, timed
  out): activity ``find_closed_teams``;
* signal ``request_advance`` — an active team waits to start a stage (a repeat is one request; a team
  that was never admitted is ignored: the coordinator advances only teams explicitly started);
* signal ``team_finished`` — a team ended: its place and any request it left are given back.

``run`` grants in cycles: when a request waits, a cycle begins and lasts the cycle length (a durable
timer); within it the oldest waiting requests are granted as they come — by signalling
``advance_granted`` to each team — until 5 have been granted, and the rest wait for the next cycle.
No cycle grants more than 5, a lone team's included: a team alone waits only from its sixth advance
in a cycle on (its first five are granted as they come), then for the next cycle. With nothing
waiting the coordinator waits without a timer, so an idle coordinator adds nothing to its history.
Requests are kept per team and stage: a late duplicate of a granted stage is ignored. It continues
as new — carrying the active teams, the waiting requests, the last stage granted to each team and the
recent cycles — once its history holds ``continue_as_new_after_events`` events or the server
suggests it (never within a cycle, so no cycle's bound is reset).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from contracts.refusals import RefusalCode
    from contracts.research_coordinator import (
        RECENT_CYCLES,
        REMEMBERED_FINISHED,
        Admission,
        AdmitRequest,
        AdvanceGrant,
        AdvanceRequest,
        CoordinatorState,
        CoordinatorView,
        CycleRecord,
        TeamFinished,
        TeamIds,
    )
    from contracts.temporal_names import ActivityName, CoordinatorMessage, TeamMessage, WorkflowType
    from workflows.versioning import auto_upgrade


@workflow.defn(
    name=WorkflowType.RESEARCH_COORDINATOR,
    versioning_behavior=auto_upgrade(),
)
class ResearchCoordinatorWorkflow:
    """Admit research teams and grant their stage advances, a bounded number per cycle."""

    @workflow.init
    def __init__(self, state: CoordinatorState) -> None:
        self._active = list(state.active)
        self._waiting = list(state.waiting)
        self._cycle = state.cycle
        self._recent = list(state.recent_cycles)
        self._finished = list(state.finished)
        self._last_granted = dict(state.last_granted)
        self._granted_this_cycle: list[str] = []
        self._settings = state

    @workflow.run
    async def run(self, state: CoordinatorState) -> None:
        while True:
            await workflow.wait_condition(lambda: bool(self._waiting) or self._should_continue_as_new())
            if self._should_continue_as_new():
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(self._carried())
            await self._run_cycle()

    async def _run_cycle(self) -> None:
        """One cycle, begun because a request waits: grant the oldest waiting requests as they come,
        at most ``advances_per_cycle`` in all, until the cycle's length has passed."""
        per_cycle = self._settings.advances_per_cycle
        self._cycle += 1
        self._granted_this_cycle = []
        record = CycleRecord(cycle=self._cycle, at=workflow.now(), granted=[])
        self._recent = [*self._recent, record][-RECENT_CYCLES:]
        ends = workflow.now() + timedelta(seconds=self._settings.cycle_seconds)
        while True:
            await self._grant(self._waiting[: per_cycle - len(self._granted_this_cycle)])
            left = (ends - workflow.now()).total_seconds()
            if left <= 0:
                return
            try:
                await workflow.wait_condition(
                    lambda: bool(self._waiting) and len(self._granted_this_cycle) < per_cycle,
                    timeout=timedelta(seconds=left),
                )
            except TimeoutError:
                return

    async def _grant(self, requests: list[AdvanceRequest]) -> None:
        """Grant ``requests`` in this cycle: each team is signalled ``advance_granted``. A team that
        cannot be signalled has ended without saying so: its place is freed."""
        if not requests:
            return
        self._waiting = self._waiting[len(requests) :]
        granted = [f"{request.team_id}:{request.stage}" for request in requests]
        self._granted_this_cycle = [*self._granted_this_cycle, *granted]
        current = self._recent[-1]
        self._recent[-1] = current.model_copy(update={"granted": list(self._granted_this_cycle)})
        for request in requests:
            self._last_granted[request.team_id] = request.stage
            handle = workflow.get_external_workflow_handle(request.team_id)
            try:
                await handle.signal(
                    TeamMessage.ADVANCE_GRANTED, AdvanceGrant(stage=request.stage, cycle=self._cycle)
                )
            except Exception as error:  # the server reports a closed or missing workflow so
                workflow.logger.info("team %s could not take its grant (%s)", request.team_id, error)
                self.team_finished(TeamFinished(team_id=request.team_id))

    def _should_continue_as_new(self) -> bool:
        info = workflow.info()
        return (
            info.get_current_history_length() >= self._settings.continue_as_new_after_events
            or info.is_continue_as_new_suggested()
        )

    def _carried(self) -> CoordinatorState:
        return self._settings.model_copy(
            update={
                "active": list(self._active),
                "waiting": list(self._waiting),
                "cycle": self._cycle,
                "recent_cycles": list(self._recent),
                "finished": list(self._finished),
                "last_granted": dict(self._last_granted),
                "runs": self._settings.runs + 1,
            }
        )

    # ---------------------------------------------------------------------------------------- handlers

    @workflow.update(name=CoordinatorMessage.ADMIT)
    async def admit(self, request: AdmitRequest) -> Admission:
        """Admit the team while fewer than the limit are active; the same team again gets the same
        answer. At the limit, teams whose workflow closed without saying so (terminated, timed out)
        are found by an activity and their places freed before the answer."""
        if request.cycle_seconds is not None and request.cycle_seconds != self._settings.cycle_seconds:
            # The deployment's setting as the latest team saw it: a changed setting applies from the
            # next cycle, without restarting the coordinator.
            self._settings = self._settings.model_copy(update={"cycle_seconds": request.cycle_seconds})
        limit = self._settings.max_active
        if request.team_id not in self._active and len(self._active) >= limit:
            await self._free_closed_places()
        if request.team_id in self._active:
            return Admission(admitted=True, active=len(self._active), limit=limit)
        if request.team_id in self._finished:
            return Admission(
                admitted=False,
                active=len(self._active),
                limit=limit,
                code=RefusalCode.TEAM_FINISHED,
                message=f"team {request.team_id} has already finished",
            )
        if len(self._active) >= limit:
            return Admission(
                admitted=False,
                active=len(self._active),
                limit=limit,
                code=RefusalCode.TEAM_LIMIT_REACHED,
                message=(
                    f"the deployment runs at most {limit} active research teams and {len(self._active)} "
                    "are active: wait for one to finish, or cancel one, and start again with a new request id"
                ),
            )
        self._active.append(request.team_id)
        return Admission(admitted=True, active=len(self._active), limit=limit)

    async def _free_closed_places(self) -> None:
        try:
            closed = await workflow.execute_activity(
                ActivityName.FIND_CLOSED_TEAMS,
                TeamIds(team_ids=list(self._active)),
                result_type=TeamIds,
                start_to_close_timeout=timedelta(seconds=10),
                retry_policy=RetryPolicy(maximum_attempts=3, initial_interval=timedelta(milliseconds=200)),
            )
        except ActivityError as error:  # the answer is then given on what is known
            workflow.logger.info("could not look for closed teams: %s", error)
            return
        for team_id in closed.team_ids:
            workflow.logger.info("team %s closed without saying so: its place is freed", team_id)
            self.team_finished(TeamFinished(team_id=team_id))

    @admit.validator
    def _validate_admit(self, request: AdmitRequest) -> None:
        if not request.team_id:
            raise ApplicationError("a team id is required", type=RefusalCode.INVALID_TEAM_ID)

    @workflow.signal(name=CoordinatorMessage.REQUEST_ADVANCE)
    def request_advance(self, request: AdvanceRequest) -> None:
        """Queue the team's request for its next stage. A repeat is one request; a request for a stage
        already granted (a late duplicate) is ignored, and one for a later stage replaces the team's
        waiting one. A team never admitted, or already finished, is ignored."""
        if request.team_id not in self._active:
            workflow.logger.info(
                "advance request from team %s, which is not active: ignored", request.team_id
            )
            return
        if request.stage <= self._last_granted.get(request.team_id, 0):
            return
        for index, waiting in enumerate(self._waiting):
            if waiting.team_id == request.team_id:
                if request.stage > waiting.stage:
                    self._waiting[index] = request
                return
        self._waiting.append(request)

    @workflow.signal(name=CoordinatorMessage.TEAM_FINISHED)
    def team_finished(self, message: TeamFinished) -> None:
        """Give the team's place back and drop any request it left."""
        if message.team_id in self._active:
            self._active.remove(message.team_id)
        self._last_granted.pop(message.team_id, None)
        self._waiting = [waiting for waiting in self._waiting if waiting.team_id != message.team_id]
        if message.team_id not in self._finished:
            self._finished = [*self._finished, message.team_id][-REMEMBERED_FINISHED:]

    @workflow.query(name=CoordinatorMessage.STATE)
    def state(self) -> CoordinatorView:
        """The active teams, the requests waiting, the current cycle and its grants, the limits."""
        return CoordinatorView(
            workflow_id=workflow.info().workflow_id,
            active=list(self._active),
            active_count=len(self._active),
            max_active=self._settings.max_active,
            waiting=list(self._waiting),
            cycle=self._cycle,
            granted_this_cycle=list(self._granted_this_cycle),
            advances_per_cycle=self._settings.advances_per_cycle,
            cycle_seconds=self._settings.cycle_seconds,
            recent_cycles=list(self._recent),
            runs=self._settings.runs,
            history_events=workflow.info().get_current_history_length(),
        )
