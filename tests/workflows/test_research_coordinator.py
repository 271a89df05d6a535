"""The research coordinator (``ResearchCoordinator``): at most 20 active teams, at most 5 stage
advances per cycle, idempotent starts and cancels, continue-as-new without losing a team, and the
deadline reaching a team whose job is running."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from pathlib import Path

import pytest
from temporalio.client import Client

from contracts.errors import Refused
from contracts.research_coordinator import (
    ADVANCES_PER_CYCLE,
    MAX_ACTIVE_TEAMS,
    CoordinatorView,
    coordinator_workflow_id,
)
from contracts.research_teams import TeamStatus, TeamView
from control.research_teams import get_coordinator, raise_if_start_refused, start_team
from tests.workflows.harness import Bench, bench, within
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
    # A one-hour cycle: the first team's request begins cycle 1 (granted at once); every later one
    # waits for cycle 2, an hour away, so all twenty stay active.
    async with bench(temporal_client, task_queue, tmp_path, team_cycle_seconds=3600) as b, b.worker():
        case = create_case(b)
        teams = [await start(b, case.case_id) for _ in range(MAX_ACTIVE_TEAMS)]
        assert all(view.status is not TeamStatus.FAILED for view in teams)
        state = await coordinator(b)
        while len(state.waiting) < MAX_ACTIVE_TEAMS - 1:
            await asyncio.sleep(0.1)
            state = await coordinator(b)
        assert state.active_count == MAX_ACTIVE_TEAMS == 20
        assert state.cycle == 1 and state.granted_this_cycle == [f"{teams[0].team_id}:1"]

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
            team_cycle_seconds=1,
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
    assert all((later - earlier).total_seconds() >= 1 for earlier, later in itertools.pairwise(starts))
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
