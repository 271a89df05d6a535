"""Record the ``WorkQueue`` histories into ``tests/histories/queue/`` (run by hand, then commit).

    .venv/bin/python -m tests.histories.record_queue

Starts its own in-memory dev server and, through :func:`tests.workflows.harness.bench`, a store with
``alice`` registered and an in-process worker. The queue starts with an item in every status (made
with the pure contract) and a low continue-as-new threshold, and takes the operator's moves as the
CLI sends them: a thin proposal added, an approval refused by its validator (not in history), the
proposal updated and approved (renamed into its repository's series), another added and rejected,
an unsigned approval refused by the authorisation (recorded) and then approved, capacity and
autopilot turned on and off while the seeded active item fills the one slot (so it starts nothing) —
until it continues as new. ``first.json`` is that first execution (it ends in
continue-as-new), ``continued.json`` the next one after a further add and approval, the failed
item parked, the blocked one released and the done one re-opened (the runs of
their seeded items were never started, so the queue reads no run progress there).
``dispatched.json`` is another queue's: an item added, approved (a ``done`` then refused by its
validator is not in it), dispatched as a read_only run (replay:demo), which the queue follows to
``awaiting_decision``, judges (PASS) and moves to ``human-review``, and made done by a person.
``autopilot.json`` is a third queue's: one slot, three items approved (the highest priority, a lower
one, a high-risk one), autopilot turned on — the queue dispatches the first by itself under the grant,
follows it to a PASS, then fills the freed slot with the second (never the high-risk one) — autopilot
off, and the first made done by a person. ``redispatched.json`` a fourth's: autopilot on, one item
whose every review disagrees with a high finding (:class:`DisagreeingReviewer`), so each round FAILs:
the queue sends each FAILed run its verdict and re-dispatches the item with the findings until the
escalation hands it to a person.
``tests/workflows/test_replay.py`` replays them; ``workflow-ids.json`` names the id each ran under.
``v1/`` holds the first two as recorded before the queue dispatched runs (no patch marker), ``v3/``
all five as recorded before runs showed their item's status (no ``queue-item-status-on-runs``), ``v2/``
the first three as recorded before the autopilot dispatched (patch ``queue-tracks-runs`` only).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import tempfile
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError

from contracts.errors import Refused
from contracts.queue_items import QueueRefused, QueueStatus
from contracts.queue_messages import QueueState
from contracts.search_attributes import SEARCH_ATTRIBUTES
from contracts.temporal_names import QueueMessage
from infra.devserver import DevServer, free_port
from tests.workflows.harness import bench
from tests.workflows.queue_harness import (
    COMPLETE,
    SLOW_QUERY_ITEM,
    DisagreeingReviewer,
    QueueBench,
    items_in_every_status,
)

HERE = Path(__file__).resolve().parent / "queue"
WORKFLOW_IDS = HERE / "workflow-ids.json"
TASK_QUEUE = "record-queue-histories"
DISPATCH_TASK_QUEUE = "record-queue-dispatch-histories"
AUTOPILOT_TASK_QUEUE = "record-queue-autopilot-histories"
REDISPATCH_TASK_QUEUE = "record-queue-redispatch-histories"
CONTINUE_AS_NEW_AFTER_EVENTS = 150


async def _save(client: Client, name: str, workflow_id: str, run_id: str) -> None:
    history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
    (HERE / f"{name}.json").write_text(history.to_json(), encoding="utf-8")
    ids = json.loads(WORKFLOW_IDS.read_text(encoding="utf-8")) if WORKFLOW_IDS.exists() else {}
    ids[name] = workflow_id
    WORKFLOW_IDS.write_text(json.dumps(ids, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"recorded {name} ({workflow_id}, {len(history.events)} events)", flush=True)


async def record(server: DevServer, state: Path) -> None:
    client = await Client.connect(server.address, data_converter=pydantic_data_converter)
    items, allocator = items_in_every_status(dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC))
    async with bench(client, TASK_QUEUE, state) as b, b.worker():
        q = QueueBench(b)
        await q.start(
            QueueState(
                items=items,
                allocator=allocator,
                continue_as_new_after_events=CONTINUE_AS_NEW_AFTER_EVENTS,
                poll_seconds=3600,
            )
        )
        first_run = (await client.get_workflow_handle(q.workflow_id).describe()).run_id
        thin = await q.add({"title": "Orders are slow"})
        assert thin.item is not None
        with contextlib.suppress(QueueRefused):
            await q.move(QueueMessage.APPROVE, thin.item.key)  # refused by the validator: not in history
        await q.update(thin.item.key, {name: value for name, value in COMPLETE.items() if name != "title"})
        await q.move(QueueMessage.APPROVE, thin.item.key)
        unwanted = await q.add({"title": "Not wanted"})
        assert unwanted.item is not None
        await q.move(QueueMessage.REJECT, unwanted.item.key, reason="a duplicate")
        unsigned = await q.add({**COMPLETE, "title": "Approved on the second try"})
        assert unsigned.item is not None
        try:
            await q.move(QueueMessage.APPROVE, unsigned.item.key, signed=False)
        except Refused as error:  # refused by the authorisation, and recorded
            assert error.code == "proof_missing", error
        await q.move(QueueMessage.APPROVE, unsigned.item.key)
        await q.capacity(1)  # the seeded active item fills it: autopilot on starts nothing here
        await q.autopilot(True)
        await q.autopilot(False)
        await q.capacity(4)
        filler = 0
        while (await q.view()).runs == 1:
            await q.add({"title": f"filler {filler}"})
            filler += 1
        second_run = (await client.get_workflow_handle(q.workflow_id).describe()).run_id
        added = await q.add({**COMPLETE, "title": "After continue-as-new"})
        assert added.item is not None
        await q.move(QueueMessage.APPROVE, added.item.key)
        by_status = {item.status: item.key for item in (await q.view()).items}
        await q.move(QueueMessage.PARK, by_status[QueueStatus.FAILED], reason="recorded")
        await q.move(QueueMessage.RELEASE, by_status[QueueStatus.BLOCKED])
        await q.move(QueueMessage.REOPEN, by_status[QueueStatus.DONE])
        await _save(client, "first", q.workflow_id, first_run)
        await _save(client, "continued", q.workflow_id, second_run)
        await client.get_workflow_handle(q.workflow_id).terminate("recording finished")
    async with bench(client, DISPATCH_TASK_QUEUE, state / "dispatch") as b, b.worker():
        q = QueueBench(b)
        await q.start(QueueState(poll_seconds=0.2))
        added = await q.add(SLOW_QUERY_ITEM)
        assert added.item is not None
        key = added.item.key
        await q.move(QueueMessage.APPROVE, key)
        with contextlib.suppress(QueueRefused):
            await q.done(key)  # not in human-review: refused by the validator
        dispatched = await q.dispatch(key)
        assert dispatched.item is not None
        run_id = dispatched.item.runs[0].run_id
        await q.until_status(key, QueueStatus.HUMAN_REVIEW)
        await q.done(key, note="recorded")
        handle = client.get_workflow_handle(q.workflow_id)
        await _save(client, "dispatched", q.workflow_id, (await handle.describe()).run_id)
        await handle.terminate("recording finished")
        with contextlib.suppress(RPCError):  # accepted by the done: it has closed already
            await client.get_workflow_handle(run_id).terminate("recording finished")
    async with bench(client, AUTOPILOT_TASK_QUEUE, state / "autopilot") as b, b.worker():
        q = QueueBench(b)
        await q.start(QueueState(poll_seconds=0.2))
        await q.capacity(1)
        first = await q.add(SLOW_QUERY_ITEM)
        second = await q.add({**SLOW_QUERY_ITEM, "value": "M"})
        risky = await q.add({**SLOW_QUERY_ITEM, "risk": "high"})
        keys = [answer.item.key for answer in (first, second, risky) if answer.item is not None]
        for key in keys:
            await q.move(QueueMessage.APPROVE, key)
        await q.autopilot(True)
        await q.until_status(keys[0], QueueStatus.HUMAN_REVIEW, timeout=60)
        await q.until_status(keys[1], QueueStatus.HUMAN_REVIEW, timeout=60)
        await q.autopilot(False)
        await q.done(keys[0], note="recorded")
        view = await q.view()
        handle = client.get_workflow_handle(q.workflow_id)
        await _save(client, "autopilot", q.workflow_id, (await handle.describe()).run_id)
        await handle.terminate("recording finished")
        for item in view.items:
            for run in item.runs:
                with contextlib.suppress(RPCError):
                    await client.get_workflow_handle(run.run_id).terminate("recording finished")
    reviewer = DisagreeingReviewer()
    async with (
        bench(client, REDISPATCH_TASK_QUEUE, state / "redispatch", providers={"replay": reviewer}) as b,
        b.worker(),
    ):
        q = QueueBench(b)
        await q.start(QueueState(poll_seconds=0.2))
        await q.autopilot(True)
        added = await q.add(SLOW_QUERY_ITEM)
        assert added.item is not None
        key = added.item.key
        await q.move(QueueMessage.APPROVE, key)
        for _ in range(600):
            item = await q.item(key)
            if item.status in (QueueStatus.BLOCKED, QueueStatus.FAILED):
                break
            await asyncio.sleep(0.2)
        assert len(item.runs) >= 2, item
        handle = client.get_workflow_handle(q.workflow_id)
        await _save(client, "redispatched", q.workflow_id, (await handle.describe()).run_id)
        await handle.terminate("recording finished")
        for run in item.runs:
            with contextlib.suppress(RPCError):
                await client.get_workflow_handle(run.run_id).terminate("recording finished")


def main() -> None:
    HERE.mkdir(exist_ok=True)
    WORKFLOW_IDS.unlink(missing_ok=True)
    for old in HERE.glob("*.json"):
        old.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        with DevServer(
            state_dir=state / "temporal",
            db_filename=None,
            port=free_port(),
            headless=True,
            search_attributes=SEARCH_ATTRIBUTES,
        ) as server:
            asyncio.run(record(server, state))
    print(json.dumps({"histories": sorted(path.name for path in HERE.glob("*.json"))}, indent=1))


if __name__ == "__main__":
    main()
