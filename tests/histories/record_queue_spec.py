"""Record the ``WorkQueue`` spec-pass history into ``tests/histories/queue/spec/`` (run by hand, then
commit).

    .venv/bin/python -m tests.histories.record_queue_spec

Starts its own in-memory dev server and, through :func:`tests.workflows.harness.bench`, a store with
``alice`` registered, the repository of :func:`tests.store.git_repository.make_orders_repository`
allow-listed as ``orders``, a provider answering in process and an in-process worker. The queue takes
a proposal with one section written by the operator, a spec pass (that section kept, one section
citing nothing refused, the rest written) and a spec pass with ``replace``. ``queue.json`` is that
execution, with patch ``queue-spec-pass``; ``queue.spec.json`` the first pass's ``ModelJob``;
``tests/workflows/test_replay.py`` replays both.
"""

from __future__ import annotations

import json
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from contracts.queue_messages import QueueState
from infra.devserver import DevServer
from tests.histories.recording import record_on_a_fresh_server
from tests.store.git_repository import make_orders_repository
from tests.workflows.harness import bench
from tests.workflows.queue_harness import QueueBench
from tests.workflows.spec_harness import EVIDENCE, SPEC_MODEL, spec_answer, spec_pass

HERE = Path(__file__).resolve().parent / "queue" / "spec"
TASK_QUEUE = "record-queue-spec-histories"


async def record(server: DevServer, state: Path) -> None:
    client = await Client.connect(server.address, data_converter=pydantic_data_converter)
    repo = make_orders_repository(state / "orders")
    providers = {"spec": spec_answer({"tests": []})}
    async with (
        bench(client, TASK_QUEUE, state / "bench", providers=providers, model=SPEC_MODEL) as b,
        b.worker(),
    ):
        b.add_repository("orders", repo)
        q = QueueBench(b)
        await q.start(QueueState(poll_seconds=3600))
        added = await q.add(
            {
                "title": "Speed up the orders report",
                "repo_alias": "orders",
                "evidence": [EVIDENCE],
                "scope": {"problem": "The operator's problem."},
            }
        )
        assert added.item is not None
        key = added.item.key
        first = await spec_pass(q, key)
        assert first.accepted and first.extra["refused"], first
        second = await spec_pass(q, key, replace=True)
        assert second.accepted, second
        handle = client.get_workflow_handle(q.workflow_id)
        history = await handle.fetch_history()
        job_id = first.extra["job_id"]
        job = await client.get_workflow_handle(job_id).fetch_history()
        HERE.mkdir(parents=True, exist_ok=True)
        (HERE / "queue.json").write_text(history.to_json(), encoding="utf-8")
        (HERE / "queue.spec.json").write_text(job.to_json(), encoding="utf-8")
        ids = {"queue": q.workflow_id, "queue.spec": job_id}
        (HERE / "workflow-ids.json").write_text(
            json.dumps(ids, indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )
        print(f"recorded spec pass ({q.workflow_id}, {len(history.events)} events)", flush=True)
        await handle.terminate("recording finished")


def main() -> None:
    record_on_a_fresh_server(record)


if __name__ == "__main__":
    main()
