"""Record the probe-request histories into ``tests/histories/probes/`` (run by hand, then commit).

    .venv/bin/python -m tests.histories.record_probes

Starts its own in-memory dev server and an in-process worker (``replay:demo``, an action token, a git
repository with the demo's reports.sql allow-listed as ``orders-service``; bubblewrap must be
installed) and drives one path: ``probe_approved_and_run`` — a read_only run whose ``replay:demo``
analysis asks for one probe; a refused approval (another digest) and an accepted one; the probe run by
``run_probe``; the run accepted. Writes the ``SpecialistRun`` history and its ``ModelJob`` children,
and ``workflow-ids.json``. ``tests/workflows/test_replay.py`` replays them on every test run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from activities.config import ActivityConfig
from contracts.enums import Tier
from contracts.errors import Refused
from contracts.identity import ActorKey
from contracts.models import ModelSelection
from contracts.probes import ApproveProbeRequest
from contracts.runs import DecisionOutcome, RunStatus
from contracts.search_attributes import SEARCH_ATTRIBUTES
from contracts.temporal_names import RunMessage
from contracts.work_item import WorkItem
from control.runs import _update, decide_run, wait_for_view
from infra.devserver import DevServer, free_port
from store.database import default_database_url, open_store
from tests.histories.record import ANCHOR, KEYS, TOKEN, _alice, _input, _proof, _start, _status
from tests.store.git_repository import make_orders_repository
from worker import build_worker

HERE = Path(__file__).resolve().parent / "probes"
WORKFLOW_IDS = HERE / "workflow-ids.json"
PROBE_ITEM = WorkItem(
    title="Find which statement the orders report runs before adding an index",
    description="The nightly orders report is slow. Before adding an index, find the statement the report "
    "runs and the columns it filters orders by.",
    domain="database",
    roles=["dba"],
    repo_alias="orders-service",
    evidence_refs=["log:pg-slow-2026-11-27"],
    task_type="audit",
)


async def _save(client: Client, name: str, run_id: str) -> None:
    ids: dict[str, str] = {}
    for suffix, workflow_id in (
        ("", run_id),
        (".analysis", f"{run_id}-analysis"),
        (".review", f"{run_id}-review"),
    ):
        history = await client.get_workflow_handle(workflow_id).fetch_history()
        (HERE / f"{name}{suffix}.json").write_text(history.to_json(), encoding="utf-8")
        ids[f"{name}{suffix}"] = workflow_id
    WORKFLOW_IDS.write_text(json.dumps(ids, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"recorded {name} ({run_id})", flush=True)


async def record(server: DevServer, state: Path) -> None:
    url = default_database_url(state)
    repository = make_orders_repository(state / "orders-service")
    with open_store(url, anchor=ANCHOR) as store:
        store.bootstrap_actor("alice", "Alice", KEYS.setdefault("alice", ActorKey.generate()), TOKEN)
        store.select_models(ModelSelection(primary="replay:demo"), _alice())
        store.add_repository("orders-service", repository, "main", _alice())
    client = await Client.connect(server.address, data_converter=pydantic_data_converter)
    queue = "record-probe-histories"
    config = ActivityConfig(database_url=url, action_token=TOKEN, state_dir=state)

    async def approve(run_id: str, digest: str) -> None:
        request = ApproveProbeRequest(
            actor="alice", index=1, probe_sha256=digest, proof=_proof(run_id, "approve_probe", digest=digest)
        )
        await _update(client, run_id, RunMessage.APPROVE_PROBE, request)

    async with build_worker(client, task_queue=queue, config=config):
        run_id = await _start(client, _input(PROBE_ITEM, Tier.READ_ONLY, enqueue=True), queue)
        view = await wait_for_view(client, run_id, _status(RunStatus.AWAITING_DECISION, RunStatus.FAILED))
        assert view.status is RunStatus.AWAITING_DECISION, view.error
        (probe,) = view.probes
        with contextlib.suppress(Refused):  # the refusal is the point: it is recorded in history
            await approve(run_id, "0" * 64)
        await approve(run_id, probe.sha256)
        view = await wait_for_view(
            client, run_id, lambda v: v.probes[0].status.value in ("completed", "failed"), timeout=60
        )
        assert view.probes[0].status.value == "completed", view.probes[0]
        await decide_run(
            client, run_id, "alice", DecisionOutcome.ACCEPTED, "probe ran", _proof(run_id, "decide")
        )
        await wait_for_view(client, run_id, _status(RunStatus.ACCEPTED))
        await client.get_workflow_handle(run_id).result()
        await _save(client, "probe_approved_and_run", run_id)


def main() -> None:
    HERE.mkdir(exist_ok=True)
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


if __name__ == "__main__":
    main()
