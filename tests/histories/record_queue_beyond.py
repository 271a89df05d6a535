"""Record the ``WorkQueue`` beyond-source pass history into ``tests/histories/queue/beyond/`` (run by
hand, then commit).

    .venv/bin/python -m tests.histories.record_queue_beyond

Starts its own in-memory dev server and, through :func:`tests.workflows.harness.bench`, a store with
``alice`` registered, the repository of :func:`tests.activities.intake_repository.make_intake_repository`
allow-listed as ``demo``, an in-process worker and a provider answering in process. The queue takes a
beyond scan whose model answers one proposal quoting the README truly and one with a fabricated quote
(the first proposed as ``beyond``, the second dropped), then a second beyond scan (nothing proposed
twice). ``queue.json`` is the queue's execution, with patch ``queue-intake-beyond``; ``job.json`` the
first pass's ``ModelJob``. ``tests/workflows/test_replay.py`` replays both.
"""

from __future__ import annotations

import json
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from contracts.queue_messages import QueueState
from infra.devserver import DevServer
from tests.activities.intake_repository import make_intake_repository
from tests.histories.recording import record_on_a_fresh_server
from tests.workflows.harness import bench
from tests.workflows.queue_harness import QueueBench
from tests.workflows.test_queue_intake_beyond import FABRICATED, TRUE_QUOTE, beyond_answer, beyond_scan

HERE = Path(__file__).resolve().parent / "queue" / "beyond"
TASK_QUEUE = "record-queue-beyond-histories"


async def record(server: DevServer, state: Path) -> None:
    client = await Client.connect(server.address, data_converter=pydantic_data_converter)
    (state / "git").mkdir()
    repo = make_intake_repository(state / "git")
    provider = beyond_answer(
        [
            {"title": "README promises caching the code lacks", "quotes": [TRUE_QUOTE]},
            {"title": "README claims speed", "quotes": [FABRICATED]},
        ]
    )
    async with (
        bench(client, TASK_QUEUE, state / "bench", providers={"fake": provider}, model="fake:demo") as b,
        b.worker(),
    ):
        b.add_repository("demo", repo)
        q = QueueBench(b)
        await q.start(QueueState(poll_seconds=3600))
        first = await beyond_scan(q)
        assert first.accepted and len(first.dropped) == 1, first
        second = await beyond_scan(q)
        assert second.proposed == [], second
        handle = client.get_workflow_handle(q.workflow_id)
        history = await handle.fetch_history()
        jobs = [
            event.child_workflow_execution_started_event_attributes.workflow_execution.workflow_id
            for event in history.events
            if event.HasField("child_workflow_execution_started_event_attributes")
        ]
        job = await client.get_workflow_handle(jobs[0]).fetch_history()
        HERE.mkdir(parents=True, exist_ok=True)
        (HERE / "queue.json").write_text(history.to_json(), encoding="utf-8")
        (HERE / "job.json").write_text(job.to_json(), encoding="utf-8")
        ids = {"queue": q.workflow_id, "job": jobs[0]}
        (HERE / "workflow-ids.json").write_text(
            json.dumps(ids, indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )
        print(f"recorded beyond ({q.workflow_id}, {len(history.events)} events; job {jobs[0]})", flush=True)
        await handle.terminate("recording finished")


def main() -> None:
    record_on_a_fresh_server(record)


if __name__ == "__main__":
    main()
