"""Record one ``ResearchTeam`` history per team path into ``tests/histories/teams/`` (run by hand,
then commit).

    .venv/bin/python -m tests.histories.record_teams

Starts its own in-memory dev server and an in-process worker holding an action token (every start,
adjudication and cancel carries a proof of it, as the CLI sends them), creates the demo research case,
drives each path and writes ``<path>.json`` (the team's history) plus, for the completed team, the
``ModelJob`` histories of its first stage (``<path>.s1-analysis.json``, ``<path>.s1-review.json``: a
research job stores its output and returns it by reference) and the deployment's
``ResearchCoordinator`` history (``coordinator.json``: admissions, advance requests, grants per
cycle, finished teams). ``tests/workflows/test_replay.py`` replays every file; ``workflow-ids.json``
names the id each one ran under. ``v1/`` holds the team histories recorded before teams were
admitted and advanced by the coordinator (they replay without its patch marker).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import secrets
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from activities.config import DEFAULT_RECORDINGS_DIR, ActivityConfig
from contracts.identity import ActorKey, Signer, TrustAnchor, sign_action
from contracts.models import ModelSelection
from contracts.research_coordinator import coordinator_workflow_id
from contracts.research_teams import (
    AdjudicateRequest,
    AdjudicationOutcome,
    TeamCancelRequest,
    TeamStatus,
    TeamView,
    adjudication_digest,
)
from contracts.search_attributes import SEARCH_ATTRIBUTES
from control.research_teams import (
    adjudicate_team,
    cancel_team,
    start_team,
    team_start_input,
    wait_for_team,
)
from infra.devserver import DevServer, free_port
from store.database import default_database_url, open_store
from store.store import Store
from tests.workflows.research_harness import ScriptedResearch, case_input
from worker import build_worker

HERE = Path(__file__).resolve().parent / "teams"
TOKEN = f"record-team-histories-{secrets.token_hex(16)}".encode()
ALICE = Signer("alice", ActorKey.generate())
"""The recording's actor (the trust root, bootstrapped with TOKEN)."""
QUEUE = "record-team-histories"
WORKFLOW_IDS = HERE / "workflow-ids.json"


def _proof(team_id: str, action: str, digest: str = "") -> object:
    return sign_action(
        ALICE,
        action=action,
        target=team_id,
        digest=digest,
        issued_at=dt.datetime.now(dt.UTC),
        nonce=secrets.token_hex(16),
    )


async def _start(client: Client, case_id: str) -> str:
    request_id = f"record-{uuid.uuid4().hex}"
    team = team_start_input(
        case_id, request_id, "alice", lambda team_id, digest: _proof(team_id, "team_start", digest)
    )
    team_id = team.team_id
    await start_team(client, team, task_queue=QUEUE)
    return team_id


async def _until(client: Client, team_id: str, done: Callable[[TeamView], bool]) -> TeamView:
    view = await wait_for_team(client, team_id, done, timeout=60)
    assert done(view), f"{team_id} is {view.status.value}"
    return view


async def _adjudicate(client: Client, team_id: str, stage: int, outcome: AdjudicationOutcome) -> None:
    proof = _proof(team_id, "adjudicate", adjudication_digest(stage, outcome))
    request = AdjudicateRequest(actor="alice", stage=stage, outcome=outcome, proof=proof)  # type: ignore[arg-type]
    await adjudicate_team(client, team_id, request)


def _final(view: TeamView) -> bool:
    return view.status.final


async def _save(client: Client, name: str, workflow_id: str) -> None:
    handle = client.get_workflow_handle(workflow_id)
    if name != "coordinator":  # a team shows its final status just before its workflow closes
        with contextlib.suppress(Exception):
            await asyncio.wait_for(handle.result(), timeout=30)
    history = await handle.fetch_history()
    (HERE / f"{name}.json").write_text(history.to_json(), encoding="utf-8")
    ids = json.loads(WORKFLOW_IDS.read_text(encoding="utf-8")) if WORKFLOW_IDS.exists() else {}
    ids[name] = workflow_id
    WORKFLOW_IDS.write_text(json.dumps(ids, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"recorded {name} ({workflow_id})", flush=True)


async def record(server: DevServer, state: Path) -> None:
    url = default_database_url(state)
    store: Store = open_store(url, anchor=TrustAnchor(token=TOKEN))
    store.bootstrap_actor("alice", "Alice", ALICE.key, TOKEN)
    store.select_models(ModelSelection(primary="replay:demo"), ALICE)
    case_id = store.create_case(case_input(), "alice").case_id
    client = await Client.connect(server.address, data_converter=pydantic_data_converter)
    disagreeing = ScriptedResearch(verdicts={1: "disagree"}, severities={1: "high"})
    failing = ScriptedResearch(failures={(2, "analysis"): 1})
    slow = ScriptedResearch(delays={(2, "analysis"): 2.0})
    config = ActivityConfig(
        database_url=url,
        recordings_dir=DEFAULT_RECORDINGS_DIR,
        action_token=TOKEN,
        team_cycle_seconds=0.2,
        coordinator_continue_as_new_events=100_000,  # one run: the whole recording in one history
    )
    providers = {"disagreeing": disagreeing, "failing": failing, "slow": slow}

    def select(model: str) -> None:
        store.select_models(ModelSelection(primary=model), ALICE)

    async def completed() -> str:
        select("replay:demo")
        team_id = await _start(client, case_id)
        await _until(client, team_id, _final)
        for kind in ("analysis", "review"):
            await _save(
                client, f"completed.s1-{kind}", f"{team_id}-s1-{kind}-{1 if kind == 'analysis' else 2}"
            )
        return team_id

    async def adjudicated() -> str:
        select("disagreeing:model")
        team_id = await _start(client, case_id)
        await _until(client, team_id, lambda v: v.status is TeamStatus.AWAITING_ADJUDICATION)
        await _adjudicate(client, team_id, 1, AdjudicationOutcome.RECORD_BOTH)
        await _until(client, team_id, _final)
        return team_id

    async def blocked_retried_stopped() -> str:
        select("failing:model")
        team_id = await _start(client, case_id)
        await _until(client, team_id, lambda v: v.status is TeamStatus.BLOCKED)
        await _adjudicate(client, team_id, 2, AdjudicationOutcome.RETRY_STAGE)
        await _until(client, team_id, lambda v: v.status is TeamStatus.BLOCKED and v.current_stage == 6)
        await _adjudicate(client, team_id, 6, AdjudicationOutcome.STOP)
        await _until(client, team_id, _final)
        return team_id

    async def cancelled() -> str:
        select("slow:model")
        team_id = await _start(client, case_id)
        while not slow.for_job(2, "analysis"):
            await asyncio.sleep(0.05)
        proof = _proof(team_id, "team_cancel")
        await cancel_team(client, team_id, TeamCancelRequest(actor="alice", proof=proof))  # type: ignore[arg-type]
        await _until(client, team_id, _final)
        return team_id

    async def invalidated() -> str:
        select("disagreeing:model")
        case = store.create_case(case_input(), "alice")
        team_id = await _start(client, case.case_id)
        await _until(client, team_id, lambda v: v.status is TeamStatus.AWAITING_ADJUDICATION)
        store.deactivate_evidence(case.case_id, case.evidence[-1].evidence_id, "alice")
        await _adjudicate(client, team_id, 1, AdjudicationOutcome.ACCEPT_PRIMARY)
        await _until(client, team_id, _final)
        return team_id

    paths: list[tuple[str, Callable[[], Awaitable[str]]]] = [
        ("completed", completed),
        ("adjudicated", adjudicated),
        ("blocked_retried_stopped", blocked_retried_stopped),
        ("cancelled", cancelled),
        ("invalidated", invalidated),
    ]
    async with build_worker(client, task_queue=QUEUE, config=config, providers=providers):
        for name, path in paths:
            await _save(client, name, await path())
        coordinator = coordinator_workflow_id(QUEUE)
        await _save(client, "coordinator", coordinator)
        await client.get_workflow_handle(coordinator).terminate("recording finished")
    store.close()


def main() -> None:
    HERE.mkdir(exist_ok=True)
    WORKFLOW_IDS.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        with DevServer(
            state_dir=state,
            db_filename=None,
            port=free_port(),
            headless=True,
            search_attributes=SEARCH_ATTRIBUTES,
        ) as server:
            asyncio.run(record(server, state))
    print(json.dumps({"histories": sorted(p.name for p in HERE.glob("*.json"))}, indent=1))


if __name__ == "__main__":
    main()
