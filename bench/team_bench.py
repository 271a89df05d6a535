"""Research teams under the coordinator: N concurrent teams against one team alone; prints JSON.

Everything runs on one fresh dev server started for this bench (in memory, headless, free ports, the
custom search attributes registered), a SQLite store in a temporary directory (a registered operator,
model ``replay:demo``, the demo research case) and one in-process worker from ``worker.build_worker``
with a coordinator cycle of ``--cycle`` seconds.

The baseline, measured in the same run, is one team alone: its wall time from start to
``awaiting_human_review`` (median of ``--baseline-runs``). Then ``--teams`` teams start at once and
the bench measures the wall time until every one has closed, the model jobs per second, the
coordinator's largest grant in one cycle, and the largest team history (events and bytes of its JSON
form). Six stages at five advances per cycle bound N teams from below at ``ceil(6N / 5)`` cycles.

Targets (issue: research coordinator): 20 teams within 60 s with a 1 s cycle; each team history at
most 2,000 events and 1 MB.

Usage: ``python bench/team_bench.py [--teams N] [--cycle S] [--baseline-runs N] [--quick]``
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import math
import secrets
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.report_output import report_on_stdout  # noqa: E402

TOKEN = f"team-bench-{secrets.token_hex(16)}".encode()
ACTOR = "bench"


@functools.cache
def _signer() -> Any:
    """The bench operator with its key (one per bench process)."""
    from contracts.identity import ActorKey, Signer

    return Signer(ACTOR, ActorKey.generate())


def _proof(team_id: str, digest: str) -> Any:
    import datetime as dt

    from contracts.identity import sign_action

    return sign_action(
        _signer(),
        action="team_start",
        target=team_id,
        digest=digest,
        issued_at=dt.datetime.now(dt.UTC),
        nonce=secrets.token_hex(16),
    )


async def _run_team(client: Any, case_id: str, task_queue: str) -> tuple[str, float]:
    """Start one team and wait until its workflow closes; returns its id and wall time (s)."""
    from contracts.research_teams import TeamStatus, TeamView
    from control.research_teams import start_team, team_start_input

    request_id = f"bench-{uuid.uuid4().hex}"
    team = team_start_input(case_id, request_id, ACTOR, _proof)
    team_id = team.team_id
    started = time.perf_counter()
    await start_team(client, team, task_queue=task_queue)
    view: TeamView = await client.get_workflow_handle(team_id, result_type=TeamView).result()
    elapsed = time.perf_counter() - started
    if view.status is not TeamStatus.AWAITING_HUMAN_REVIEW:
        raise RuntimeError(f"team {team_id} ended {view.status.value}: {view.error}")
    return team_id, elapsed


async def _history(client: Any, workflow_id: str) -> tuple[int, int]:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return len(history.events), len(history.to_json().encode("utf-8"))


async def measure(
    server_address: str, state: Path, teams: int, cycle: float, baseline_runs: int
) -> dict[str, Any]:
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter

    from activities.config import ActivityConfig
    from contracts.identity import TrustAnchor
    from contracts.models import ModelSelection
    from contracts.research import CaseInput
    from contracts.research_coordinator import ADVANCES_PER_CYCLE, coordinator_workflow_id
    from control.case_inputs import read_input
    from control.research_teams import get_coordinator
    from store.database import default_database_url, open_store
    from worker import build_worker

    url = default_database_url(state)
    with open_store(url, anchor=TrustAnchor(token=TOKEN)) as store:
        store.bootstrap_actor(ACTOR, "Bench operator", _signer().key, TOKEN)
        store.select_models(ModelSelection(primary="replay:demo"), _signer())
        demo_case = ROOT / "examples" / "research" / "case.json"
        case = read_input(demo_case, CaseInput, what="case input", code="invalid_case_input")
        case_id = store.create_case(case, ACTOR).case_id
    client = await Client.connect(server_address, data_converter=pydantic_data_converter)
    config = ActivityConfig(database_url=url, action_token=TOKEN, team_cycle_seconds=cycle)

    baseline: list[float] = []
    async with build_worker(client, task_queue="team-bench-baseline", config=config):
        await _run_team(client, case_id, "team-bench-baseline")  # warm-up: imports, store, sandbox
        for _ in range(baseline_runs):
            baseline.append((await _run_team(client, case_id, "team-bench-baseline"))[1])

    queue = "team-bench"
    async with build_worker(client, task_queue=queue, config=config):
        started = time.perf_counter()
        results = await asyncio.gather(*(_run_team(client, case_id, queue) for _ in range(teams)))
        wall = time.perf_counter() - started
        coordinator = await get_coordinator(client, queue)
        histories = [await _history(client, team_id) for team_id, _ in results]
        coordinator_history = await _history(client, coordinator_workflow_id(queue))
    assert coordinator is not None
    jobs = 12 * teams
    largest_grant = max((len(cycle_record.granted) for cycle_record in coordinator.recent_cycles), default=0)
    events = max(count for count, _ in histories)
    size = max(size for _, size in histories)
    baseline_s = statistics.median(baseline)
    return {
        "config": {
            "teams": teams,
            "cycle_seconds": cycle,
            "baseline_runs": baseline_runs,
            "model": "replay:demo",
        },
        "baseline": {
            "one_team_wall_s": round(baseline_s, 3),
            "runs_s": [round(value, 3) for value in baseline],
        },
        "teams": {
            "wall_s": round(wall, 3),
            "model_jobs": jobs,
            "model_jobs_per_s": round(jobs / wall, 2),
            "team_wall_s_median": round(statistics.median(elapsed for _, elapsed in results), 3),
            "lower_bound_cycles": math.ceil(6 * teams / ADVANCES_PER_CYCLE),
            "coordinator_cycles": coordinator.cycle,
            "largest_grant_in_a_cycle": largest_grant,
            "coordinator_runs": coordinator.runs,
            "coordinator_history_events": coordinator_history[0],
        },
        "largest_team_history": {"events": events, "bytes": size},
        "ratio_wall_to_one_team": round(wall / baseline_s, 2),
        "targets": {
            "wall_s_max": 60,
            "events_max": 2000,
            "bytes_max": 1_000_000,
            "met": wall <= 60 and events <= 2000 and size <= 1_000_000,
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teams", type=int, default=20)
    parser.add_argument("--cycle", type=float, default=1.0)
    parser.add_argument("--baseline-runs", type=int, default=3)
    parser.add_argument(
        "--quick", action="store_true", help="3 teams, 1 baseline run, 0.2 s cycles (a smoke test)"
    )
    args = parser.parse_args()
    if args.quick:
        args.teams, args.baseline_runs, args.cycle = 3, 1, 0.2

    import logging

    from contracts.search_attributes import SEARCH_ATTRIBUTES
    from infra.devserver import DevServer, free_port
    from runtime.logs import configure_logging

    configure_logging(logging.WARNING)  # the report is the output; the worker's log stays quiet

    with report_on_stdout() as emit, tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        with DevServer(
            state_dir=state,
            db_filename=None,
            port=free_port(),
            headless=True,
            search_attributes=SEARCH_ATTRIBUTES,
        ) as server:
            report = asyncio.run(measure(server.address, state, args.teams, args.cycle, args.baseline_runs))
        emit(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
