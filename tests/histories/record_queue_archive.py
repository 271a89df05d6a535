"""Record a ``WorkQueue`` execution that archives its ended items into
``tests/histories/queue/archive/`` (run by hand, then commit).

    .venv/bin/python -m tests.histories.record_queue_archive

Starts its own in-memory dev server and, through :func:`tests.workflows.harness.bench`, a store with
``alice`` registered and an in-process worker. The queue starts with an item in every status, ended
40 days before the recording, and continues as new after 20 events: adds fill its history until it
does, and before continuing it archives its done and rejected items (patch ``queue-archive-ended``).
``queue.json`` is that first execution; ``tests/workflows/test_replay.py`` replays it.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from contracts.queue_messages import QueueState
from infra.devserver import DevServer
from tests.histories.recording import record_on_a_fresh_server
from tests.workflows.harness import bench, until
from tests.workflows.queue_harness import QueueBench, items_in_every_status

HERE = Path(__file__).resolve().parent / "queue" / "archive"
TASK_QUEUE = "record-queue-archive-histories"


async def record(server: DevServer, state: Path) -> None:
    client = await Client.connect(server.address, data_converter=pydantic_data_converter)
    items, allocator = items_in_every_status(dt.datetime.now(dt.UTC) - dt.timedelta(days=40))
    async with bench(client, TASK_QUEUE, state / "bench") as b, b.worker():
        q = QueueBench(b)
        await q.start(
            QueueState(items=items, allocator=allocator, continue_as_new_after_events=20, poll_seconds=3600)
        )
        first_run = (await client.get_workflow_handle(q.workflow_id).describe()).run_id
        await q.add_until_continued()

        async def archived() -> bool:
            return (await q.view()).archived_count == 2

        assert await until(archived, timeout=10)
        history = await client.get_workflow_handle(q.workflow_id, run_id=first_run).fetch_history()
        HERE.mkdir(parents=True, exist_ok=True)
        (HERE / "queue.json").write_text(history.to_json(), encoding="utf-8")
        ids = {"queue": q.workflow_id}
        (HERE / "workflow-ids.json").write_text(
            json.dumps(ids, indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )
        print(f"recorded queue ({q.workflow_id}, {len(history.events)} events)", flush=True)
        await client.get_workflow_handle(q.workflow_id).terminate("recording finished")


def main() -> None:
    record_on_a_fresh_server(record)


if __name__ == "__main__":
    main()
