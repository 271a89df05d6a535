"""Record the ``WorkQueue`` intake history into ``tests/histories/queue/intake/`` (run by hand, then
commit).

    .venv/bin/python -m tests.histories.record_queue_intake

Starts its own in-memory dev server and, through :func:`tests.workflows.harness.bench`, a store with
``alice`` registered, the repository of :func:`tests.activities.intake_repository.make_intake_repository`
allow-listed as ``demo`` and an in-process worker. The queue takes a scan (every finding proposed),
the rejection of one proposal, a change of a quoted TODO committed, a second scan (one proposal
updated, the rejected finding not proposed again, the rest already queued) and an unsigned scan
refused by the authorisation (recorded). ``intake.json`` is that execution, with patch
``queue-intake-scan``; ``tests/workflows/test_replay.py`` replays it.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from contracts.errors import Refused
from contracts.queue_messages import QueueState
from contracts.temporal_names import QueueMessage
from infra.devserver import DevServer
from tests.activities.intake_repository import make_intake_repository
from tests.histories.recording import record_on_a_fresh_server
from tests.store.git_repository import git
from tests.workflows.harness import bench
from tests.workflows.queue_harness import QueueBench
from tests.workflows.test_queue_intake import scan

HERE = Path(__file__).resolve().parent / "queue" / "intake"
TASK_QUEUE = "record-queue-intake-histories"


async def record(server: DevServer, state: Path) -> None:
    client = await Client.connect(server.address, data_converter=pydantic_data_converter)
    (state / "git").mkdir()
    repo = make_intake_repository(state / "git")
    async with bench(client, TASK_QUEUE, state / "bench") as b, b.worker():
        b.add_repository("demo", repo)
        q = QueueBench(b)
        await q.start(QueueState(poll_seconds=3600))
        first = await scan(q)
        rejected = first.proposed[-1].key
        assert rejected is not None
        await q.move(QueueMessage.REJECT, rejected, reason="recorded")
        app = repo / "src" / "app.py"
        app.write_text(app.read_text().replace("the empty order list", "an empty order list"))
        git(repo, "add", "src/app.py")
        git(repo, "commit", "--quiet", "--no-gpg-sign", "-m", "reword")
        second = await scan(q)
        assert second.updated and second.not_reproposed, second
        with contextlib.suppress(Refused):
            await scan(q, signed=False)
        handle = client.get_workflow_handle(q.workflow_id)
        history = await handle.fetch_history()
        HERE.mkdir(parents=True, exist_ok=True)
        (HERE / "intake.json").write_text(history.to_json(), encoding="utf-8")
        ids = {"intake": q.workflow_id}
        (HERE / "workflow-ids.json").write_text(
            json.dumps(ids, indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )
        print(f"recorded intake ({q.workflow_id}, {len(history.events)} events)", flush=True)
        await handle.terminate("recording finished")


def main() -> None:
    record_on_a_fresh_server(record)


if __name__ == "__main__":
    main()
