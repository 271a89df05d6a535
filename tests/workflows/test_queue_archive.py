"""The goal queue's archive on a real dev server, worker and store (docs/architecture.md "Archive"):
when the queue continues as new, its ended items unchanged for ``archive_after_seconds`` are written
whole to the store and leave the queue's state, which keeps what it still needs of them; moving an
archived item is refused ``item_archived``; the execution that archived replays."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from contracts.errors import Refused
from contracts.queue_items import QueueStatus
from contracts.queue_messages import QueueState
from contracts.temporal_names import QueueMessage
from tests.workflows.harness import within
from tests.workflows.queue_harness import items_in_every_status, queue_bench
from worker import WORKFLOWS, sandbox_runner

pytestmark = pytest.mark.asyncio


@within(120)
async def test_ended_items_are_archived_at_continue_as_new_and_the_queue_keeps_what_it_needs(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    long_ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=40)
    items, allocator = items_in_every_status(long_ago)
    by_status = {item.status: item for item in items}
    done, rejected = by_status[QueueStatus.DONE], by_status[QueueStatus.REJECTED]
    # A done item that changed yesterday stays in the queue.
    recent = done.model_copy(update={"key": "ORD-90", "updated_at": long_ago + dt.timedelta(days=39)})
    async with queue_bench(temporal_client, task_queue, tmp_path) as q:
        await q.start(
            QueueState(
                items=[*items, recent],
                allocator=allocator,
                continue_as_new_after_events=20,
                poll_seconds=3600,
            )
        )
        first_run = (await q.client.get_workflow_handle(q.workflow_id).describe()).run_id
        await q.add_until_continued()
        view = await q.view()
        assert view.archived_count == 2
        held = {item.key for item in view.items}
        assert done.key not in held and rejected.key not in held and recent.key in held
        assert {item.status for item in view.items} == set(QueueStatus) - {QueueStatus.REJECTED}

        # The store holds each archived item whole.
        stored = q.bench.store.archived_queue_item(q.workflow_id, done.key)
        assert stored is not None and stored[0] == done
        stored_rejected = q.bench.store.archived_queue_item(q.workflow_id, rejected.key)
        assert stored_rejected is not None and stored_rejected[0] == rejected

        # The queue names an archived key, and refuses to move it.
        shown = await q.view(done.key)
        assert shown.items == [] and shown.archived is not None
        assert (shown.archived.key, shown.archived.status) == (done.key, QueueStatus.DONE)
        with pytest.raises(Refused) as refused:
            await q.move(QueueMessage.REOPEN, done.key, reason="again")
        assert refused.value.code == "item_archived"
        reopened = await q.move(QueueMessage.REOPEN, recent.key, reason="again")
        assert reopened.item is not None and reopened.item.status is QueueStatus.APPROVED

        # The execution that archived replays on the workflow code as it is.
        history = await q.client.get_workflow_handle(q.workflow_id, run_id=first_run).fetch_history()
        scheduled = [
            event.activity_task_scheduled_event_attributes.activity_type.name
            for event in history.events
            if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        ]
        assert scheduled.count("archive_queue_items") == 1  # both items in one batch
        replayer = Replayer(
            workflows=list(WORKFLOWS),
            data_converter=pydantic_data_converter,
            workflow_runner=sandbox_runner(),
        )
        replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert replayed.replay_failure is None, replayed.replay_failure
