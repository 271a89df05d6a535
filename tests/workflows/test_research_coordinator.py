"""The research coordinator (``ResearchCoordinator``): at most 20 active teams, at most 5 stage
advances per cycle, idempotent starts and cancels, continue-as-new without losing a team, and the
deadline reaching a team whose job is running."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import Client, WithStartWorkflowOperation, WorkflowFailureError
from temporalio.common import SearchAttributeKey, WorkflowIDConflictPolicy
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from contracts.errors import Refused
from contracts.research_coordinator import (
    ADVANCES_PER_CYCLE,
    MAX_ACTIVE_TEAMS,
    Admission,
    AdmitRequest,
    AdvanceGrant,
    AdvanceRequest,
    CoordinatorState,
    CoordinatorView,
    coordinator_workflow_id,
)
from contracts.research_teams import TeamStatus, TeamView
from control.research_teams import get_coordinator, raise_if_start_refused, start_team
from tests.workflows.harness import Bench, bench, no_pending_activities, within
from tests.workflows.research_harness import (
    ScriptedResearch,
    cancel,
    create_case,
    ended,
    start,
    team_input,
    until_team,
)

SCRIPTED = "scripted:model"


async def coordinator(b: Bench) -> CoordinatorView:
    view = await get_coordinator(b.client, b.task_queue)
    assert view is not None
    return view


def kinds(view: TeamView) -> list[str]:
    return [event.kind for event in view.audit]


@within(120)
async def test_the_twenty_first_active_team_is_refused_naming_the_limit_and_an_ended_team_frees_a_place(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    # A one-hour cycle: its five grants go to the first requests; then every team waits for cycle 2,
    # an hour away, so all twenty stay active.
    async with bench(temporal_client, task_queue, tmp_path, team_cycle_seconds=3600) as b, b.worker():
        case = create_case(b)
        teams = [await start(b, case.case_id) for _ in range(MAX_ACTIVE_TEAMS)]
        assert all(view.status is not TeamStatus.FAILED for view in teams)
        state = await _settled_state(b, lambda s: len(s.waiting) == MAX_ACTIVE_TEAMS, tries=400)
        assert state.active_count == MAX_ACTIVE_TEAMS == 20
        assert state.cycle == 1 and len(state.granted_this_cycle) == ADVANCES_PER_CYCLE

        refused = await ended(b, (await start(b, case.case_id)).team_id)
        assert refused.status is TeamStatus.FAILED and refused.error is not None
        assert refused.error.type == "team_limit_reached"
        assert "at most 20 active research teams" in refused.error.message
        assert refused.capture is None and refused.jobs_used == 0
        with pytest.raises(Refused) as error:
            raise_if_start_refused(refused)
        assert error.value.code == "team_limit_reached"

        # A team that ends gives its place back: the next start is admitted.
        await cancel(b, teams[-1].team_id)
        assert (await ended(b, teams[-1].team_id)).status is TeamStatus.CANCELLED
        assert (await coordinator(b)).active_count == MAX_ACTIVE_TEAMS - 1
        admitted = await start(b, case.case_id)
        assert admitted.status is not TeamStatus.FAILED
        assert "admitted" in kinds(admitted)
        assert (await coordinator(b)).active_count == MAX_ACTIVE_TEAMS

        # A team an operator terminates never says it ended: at the limit, the coordinator looks
        # for closed teams and frees their places before it answers.
        terminated = teams[-2].team_id
        await b.client.get_workflow_handle(terminated).terminate("operator")
        late = await start(b, case.case_id)
        assert late.status is not TeamStatus.FAILED, late.error
        state = await coordinator(b)
        assert terminated not in state.active and late.team_id in state.active
        assert state.active_count == MAX_ACTIVE_TEAMS


@within(120)
async def test_ten_teams_advance_at_most_five_stages_per_cycle_and_all_finish(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    scripted = ScriptedResearch()
    async with (
        bench(
            temporal_client,
            task_queue,
            tmp_path,
            providers={"scripted": scripted},
            model=SCRIPTED,
            # Two-second cycles: long enough that, even on a loaded machine, more than five
            # advance requests queue up in some cycle and the limit is what holds them back.
            team_cycle_seconds=2,
        ) as b,
        b.worker(),
    ):
        case = create_case(b)
        ids = [(await start(b, case.case_id)).team_id for _ in range(10)]
        # While they run, a team shows waiting_for_grant.
        waiting = await until_team(b, ids[-1], lambda v: v.status is TeamStatus.WAITING_FOR_GRANT)
        views = [await ended(b, team_id, timeout=90) for team_id in ids]
        state = await coordinator(b)
    assert waiting.status is TeamStatus.WAITING_FOR_GRANT
    assert all(view.status is TeamStatus.AWAITING_HUMAN_REVIEW for view in views)
    cycles = [cycle for cycle in state.recent_cycles if cycle.granted]
    assert sum(len(cycle.granted) for cycle in cycles) == 60  # 10 teams x 6 stages
    assert max(len(cycle.granted) for cycle in cycles) == ADVANCES_PER_CYCLE
    assert all(len(cycle.granted) <= ADVANCES_PER_CYCLE for cycle in cycles)
    # A cycle lasts its full length before the next one grants.
    starts = [cycle.at for cycle in state.recent_cycles]
    assert all((later - earlier).total_seconds() >= 2 for earlier, later in itertools.pairwise(starts))
    assert state.active == [] and state.waiting == []
    # Each team's grants came one per stage, in order.
    for view in views:
        granted = [e.data["stage"] for e in view.audit if e.kind == "advance_granted"]
        assert granted == [1, 2, 3, 4, 5, 6]


@within(60)
async def test_racing_duplicate_starts_make_one_team_and_racing_cancels_are_one_cancel(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path, team_cycle_seconds=3600) as b, b.worker():
        case = create_case(b)
        team = team_input(case.case_id, "the-same-request")
        b.started.append(team.team_id)
        # The same request delivered three times at once (each with its own proof, as three CLI
        # processes would send it).
        deliveries = [team, *(team_input(case.case_id, "the-same-request") for _ in range(2))]
        results = await asyncio.gather(
            *(start_team(b.client, delivery, task_queue=b.task_queue) for delivery in deliveries)
        )
        assert {view.team_id for view, _ in results} == {team.team_id}
        assert [deduplicated for _, deduplicated in results].count(False) == 1
        state = await coordinator(b)
        assert state.active == [team.team_id]
        await until_team(b, team.team_id, lambda v: v.status is TeamStatus.WAITING_FOR_GRANT)

        outcomes = await asyncio.gather(
            cancel(b, team.team_id, reason="first"),
            cancel(b, team.team_id, reason="second"),
            return_exceptions=True,
        )
        view = await ended(b, team.team_id)
        state = await coordinator(b)
    refusals = [o for o in outcomes if isinstance(o, Exception)]
    assert len(refusals) <= 1
    assert all(
        isinstance(r, Refused) and r.code in ("already_cancelling", "already_finished") for r in refusals
    )
    assert view.status is TeamStatus.CANCELLED
    assert kinds(view).count("cancel_requested") == 1
    assert kinds(view).count("team_started") == 1 and kinds(view).count("admitted") == 1
    assert state.active == []


@within(120)
async def test_the_coordinator_continues_as_new_with_teams_in_flight_and_loses_none(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    scripted = ScriptedResearch()
    async with (
        bench(
            temporal_client,
            task_queue,
            tmp_path,
            providers={"scripted": scripted},
            model=SCRIPTED,
            team_cycle_seconds=0.2,
            coordinator_continue_as_new_events=40,
        ) as b,
        b.worker(),
    ):
        case = create_case(b)
        ids = [(await start(b, case.case_id)).team_id for _ in range(6)]
        views = [await ended(b, team_id, timeout=90) for team_id in ids]
        state = await coordinator(b)
        description = await temporal_client.get_workflow_handle(
            coordinator_workflow_id(task_queue)
        ).describe()
    assert all(view.status is TeamStatus.AWAITING_HUMAN_REVIEW for view in views)
    assert state.runs > 2  # it continued as new at least twice while the teams ran
    assert state.active == [] and state.waiting == []
    assert state.history_events < 60 and description.history_length < 60
    assert state.cycle >= 36 / ADVANCES_PER_CYCLE


@within(60)
async def test_the_deadline_cancels_a_running_job_and_the_team_ends_expired_with_nothing_after(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    scripted = ScriptedResearch(delays={(1, "analysis"): 30.0})
    async with bench(
        temporal_client, task_queue, tmp_path, providers={"scripted": scripted}, model=SCRIPTED
    ) as b:
        b.config = dataclasses.replace(b.config, team_deadline_seconds=3)
        async with b.worker():
            case = create_case(b)
            team_id = (await start(b, case.case_id)).team_id
            view = await ended(b, team_id, timeout=30)
            state = await coordinator(b)
    assert view.status is TeamStatus.EXPIRED, view.error
    assert view.error is not None and view.error.type == "team_deadline_exceeded"
    assert "stage_blocked" not in kinds(view) and "model_job_failed" not in kinds(view)
    assert view.jobs_used == 1 and view.stages[0].analysis is None
    assert kinds(view)[-2:] == ["deadline_reached", "status_changed"]
    assert state.active == []


# ------------------------------------------------------------------ the coordinator, driven directly


@workflow.defn(name="FakeTeam", sandboxed=False)
class FakeTeam:
    """Stands in for a team: keeps the grants it is signalled."""

    def __init__(self) -> None:
        self.grants: list[int] = []

    @workflow.signal(name="advance_granted")
    def advance_granted(self, grant: AdvanceGrant) -> None:
        self.grants.append(grant.stage)

    @workflow.query(name="grants")
    def granted(self) -> list[int]:
        return list(self.grants)

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: False)


async def _admit(b: Bench, team_id: str, cycle_seconds: float = 3600) -> Admission:
    start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
        "ResearchCoordinator",
        CoordinatorState(cycle_seconds=cycle_seconds),
        id=coordinator_workflow_id(b.task_queue),
        task_queue=b.task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )
    admission: Admission = await b.client.execute_update_with_start_workflow(
        "admit",
        AdmitRequest(team_id=team_id, case_id="RSC-X", cycle_seconds=cycle_seconds),
        start_workflow_operation=start,
        result_type=Admission,
    )
    return admission


async def _request(b: Bench, team_id: str, stage: int) -> None:
    handle = b.client.get_workflow_handle(coordinator_workflow_id(b.task_queue))
    await handle.signal("request_advance", AdvanceRequest(team_id=team_id, stage=stage))


async def _settled_state(b: Bench, done: Any, tries: int = 100) -> CoordinatorView:
    for _ in range(tries):
        state = await coordinator(b)
        if done(state):
            return state
        await asyncio.sleep(0.05)
    raise AssertionError(f"coordinator never settled: {state}")


@within(60)
async def test_within_a_cycle_grants_come_as_requests_do_up_to_five_and_a_late_duplicate_is_ignored(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    fake_queue = f"{task_queue}-fakes"
    teams = [f"RTM-FAKE{n:012d}" for n in range(6)]
    async with (
        bench(temporal_client, task_queue, tmp_path) as b,
        b.worker(),
        Worker(temporal_client, task_queue=fake_queue, workflows=[FakeTeam]),
    ):
        for team_id in teams:
            await temporal_client.start_workflow(FakeTeam.run, id=team_id, task_queue=fake_queue)
            assert (await _admit(b, team_id, cycle_seconds=3600)).admitted
        # A lone team is not held back: stage 1, then stage 2 in the same (hour-long) cycle.
        await _request(b, teams[0], 1)
        await _settled_state(b, lambda s: s.granted_this_cycle == [f"{teams[0]}:1"])
        await _request(b, teams[0], 1)  # a late duplicate of a granted stage
        await _request(b, teams[0], 2)
        state = await _settled_state(b, lambda s: len(s.granted_this_cycle) == 2)
        assert state.granted_this_cycle == [f"{teams[0]}:1", f"{teams[0]}:2"] and state.waiting == []
        # Three more fill the cycle's five; the next ones wait for the next cycle.
        for team_id in teams[1:]:
            await _request(b, team_id, 1)
        state = await _settled_state(b, lambda s: len(s.waiting) == 2)
        assert len(state.granted_this_cycle) == ADVANCES_PER_CYCLE and state.cycle == 1
        assert [w.team_id for w in state.waiting] == teams[4:]
        # A request for a later stage replaces a team's waiting one instead of queueing twice.
        await _request(b, teams[4], 2)
        state = await _settled_state(b, lambda s: [w.stage for w in s.waiting] == [2, 1])
        grants = await temporal_client.get_workflow_handle(teams[0]).query(FakeTeam.granted)
        # The cycle length is the deployment's as the latest admission carried it.
        assert (await _admit(b, teams[0], cycle_seconds=7)).admitted
        assert (await coordinator(b)).cycle_seconds == 7
        for team_id in teams:
            await temporal_client.get_workflow_handle(team_id).terminate("test finished")
    assert grants == [1, 2]


@within(60)
async def test_a_team_cancelled_through_temporal_shows_cancelled_and_frees_its_place(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path, team_cycle_seconds=3600) as b, b.worker():
        case = create_case(b)
        first = await start(b, case.case_id)
        team_id = (await start(b, case.case_id)).team_id
        await until_team(b, team_id, lambda v: v.status is TeamStatus.WAITING_FOR_GRANT)
        handle = temporal_client.get_workflow_handle(team_id)
        await handle.cancel()
        with pytest.raises(WorkflowFailureError):
            await handle.result()
        description = await handle.describe()
        state = await _settled_state(b, lambda s: team_id not in s.active)
    status_key = SearchAttributeKey.for_keyword("TeamStatus")
    assert description.typed_search_attributes.get(status_key) == "cancelled"
    assert state.active == [first.team_id]


@within(150)
async def test_a_team_waiting_on_a_lost_coordinator_asks_again_and_finishes(
    time_skipping_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = time_skipping_env.client
    # Five-minute cycles: long enough that the teams wait on the lost coordinator, short enough that
    # the skipped time holds few two-minute "ask again" rounds.
    async with bench(client, "team-lost-coordinator", tmp_path, team_cycle_seconds=300) as b, b.worker():
        case = create_case(b)
        other = (await start(b, case.case_id)).team_id
        team_id = (await start(b, case.case_id)).team_id
        # Cycle 1 has granted its five; both teams wait for cycle 2, their requests delivered.
        # Both teams run their first stages' jobs first: under CI load that takes more than 5 s.
        await _settled_state(
            b, lambda s: len(s.granted_this_cycle) == ADVANCES_PER_CYCLE and len(s.waiting) == 2, tries=600
        )
        for waiting in (other, team_id):
            await until_team(b, waiting, lambda v: v.status is TeamStatus.WAITING_FOR_GRANT)
            await no_pending_activities(client, waiting)
        # The coordinator is lost (an operator terminated it): nobody will grant the waiting requests.
        await client.get_workflow_handle(coordinator_workflow_id("team-lost-coordinator")).terminate("lost")
        handle = client.get_workflow_handle(team_id, result_type=TeamView)
        # The server skips time while the team waits on timers only; polling its description (not a
        # long-polled result) lets the skipping go on until it closes.
        async with time_skipping_env.time_skipping_unlocked():
            for _ in range(1400):
                if (await handle.describe()).close_time is not None:
                    break
                await asyncio.sleep(0.1)
        view = await handle.result()
    assert view.status is TeamStatus.AWAITING_HUMAN_REVIEW, view.error
    assert [e.data["stage"] for e in view.audit if e.kind == "advance_granted"] == [1, 2, 3, 4, 5, 6]
