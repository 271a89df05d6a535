"""Record the scheduled intake scan's histories into ``tests/histories/intake_sweep/`` (run by hand,
then commit).

    .venv/bin/python -m tests.histories.record_intake_sweep

Starts its own in-memory dev server and, through :func:`tests.workflows.harness.bench`, a store with
``alice`` registered, two repositories of
:func:`tests.activities.intake_repository.make_intake_repository` (``demo``, and ``old``, deactivated)
and an in-process worker. ``alice`` enables the ``intake-scan`` schedule and it is triggered twice:
``sweep.json`` is the first ``IntakeSweep`` (the grant checked, the repositories listed, ``demo``
scanned through the goal queue), ``queue.json`` the ``WorkQueue`` that took both scheduled scans
(patch ``queue-scheduled-intake``). ``tests/workflows/test_replay.py`` replays both.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from contracts.queue_messages import QueueState
from contracts.schedules import ScheduleKind, schedule_id
from control.schedule_setup import enable_intake_scan
from infra.devserver import DevServer
from tests.activities.intake_repository import make_intake_repository
from tests.histories.recording import record_on_a_fresh_server
from tests.identity import signer
from tests.workflows.harness import ACTOR, bench
from tests.workflows.queue_harness import QueueBench
from tests.workflows.test_intake_sweep import trigger_and_wait

HERE = Path(__file__).resolve().parent / "intake_sweep"
TASK_QUEUE = "record-intake-sweep-histories"


async def record(server: DevServer, state: Path) -> None:
    client = await Client.connect(server.address, data_converter=pydantic_data_converter)
    (state / "demo").mkdir()
    (state / "old").mkdir()
    demo = make_intake_repository(state / "demo")
    old = make_intake_repository(state / "old")
    async with bench(client, TASK_QUEUE, state / "bench") as b, b.worker():
        b.add_repository("demo", demo)
        b.add_repository("old", old)
        b.store.deactivate_repository("old", signer(ACTOR))
        q = QueueBench(b)
        await q.start(QueueState(poll_seconds=3600))
        await enable_intake_scan(client, signer(ACTOR), TASK_QUEUE, dt.timedelta(days=1))
        handle = client.get_schedule_handle(schedule_id(ScheduleKind.INTAKE_SCAN, TASK_QUEUE))
        seen, first = await trigger_and_wait(client, handle, [])
        await asyncio.sleep(1.1)
        seen, second = await trigger_and_wait(client, handle, seen)
        await handle.delete()
        assert first.scanned[0].proposed and second.scanned[0].proposed == [], (first, second)
        sweep = await client.get_workflow_handle(seen[0]).fetch_history()
        queue_handle = client.get_workflow_handle(q.workflow_id)
        queue = await queue_handle.fetch_history()
        HERE.mkdir(parents=True, exist_ok=True)
        (HERE / "sweep.json").write_text(sweep.to_json(), encoding="utf-8")
        (HERE / "queue.json").write_text(queue.to_json(), encoding="utf-8")
        ids = {"sweep": seen[0], "queue": q.workflow_id}
        (HERE / "workflow-ids.json").write_text(
            json.dumps(ids, indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )
        print(
            f"recorded sweep ({len(sweep.events)} events) and queue ({len(queue.events)} events)", flush=True
        )
        await queue_handle.terminate("recording finished")


def main() -> None:
    record_on_a_fresh_server(record)


if __name__ == "__main__":
    main()
