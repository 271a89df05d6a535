"""The goal queue's archive on a real dev server, worker and store (docs/architecture.md "Archive"):
when the queue continues as new, its ended items unchanged for ``archive_after_seconds`` are written
whole to the store and leave the queue's state, which keeps what it still needs of them; moving an
archived item is refused ``item_archived``; the execution that archived replays."""

from __future__ import annotations

import datetime as dt
import json
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


@within(150)
async def test_a_queue_forgets_its_oldest_tombstones_and_asks_the_store_for_what_they_told_it(
    temporal_client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from activities.intake_scan import scan_repository_at
    from contracts.errors import NotFound
    from contracts.intake_diff import apply_intake
    from contracts.queue_archive import tombstone
    from contracts.queue_items import ItemProposal, QueueEventKind, QueueItem, new_item
    from contracts.queue_keys import KeyAllocator
    from contracts.queue_messages import AddRequest, ItemAnswer, QueueAction
    from control.commands.queue_messaging import archived_named
    from control.queue import queue_update
    from tests.activities.intake_repository import make_intake_repository
    from tests.workflows.harness import ACTOR, proof
    from tests.workflows.test_queue_intake import scan
    from workflows.queue_archive import PATCH_FORGET_TOMBSTONES

    (tmp_path / "git").mkdir()
    repo = make_intake_repository(tmp_path / "git")
    long_ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=400)
    archived_at = long_ago + dt.timedelta(days=40)

    def rejected(item: QueueItem) -> QueueItem:
        return item.with_event(
            QueueEventKind.MOVED, long_ago, ACTOR, {"to": "rejected"}, status=QueueStatus.REJECTED
        )

    # Archived long ago: a scan's finding, an add with a request id, and a proposal renamed at approval.
    scanned = apply_intake(
        scan_repository_at(repo, "demo", "main"), [], KeyAllocator(), at=long_ago, actor=ACTOR
    )
    found = rejected(scanned.items[0])
    retried = AddRequest(actor=ACTOR, proposal=ItemProposal(title="Added once"), request_id="add-once")
    added = rejected(
        new_item(retried.proposal, key="Q-1", at=long_ago, actor=ACTOR, added_by=retried.added_by())
    )
    renamed = rejected(
        new_item(ItemProposal(title="Renamed"), key="Q-2", at=long_ago, actor=ACTOR).with_event(
            QueueEventKind.RENAMED, long_ago, ACTOR, {"from": "Q-2", "to": "ORD-1"}, key="ORD-1"
        )
    )
    old = [found, added, renamed]
    # Ended a month ago, archived at this continue-as-new: the one tombstone the queue keeps.
    due = rejected(new_item(ItemProposal(title="Due now"), key="Q-3", at=long_ago, actor=ACTOR))
    due = due.model_copy(update={"updated_at": dt.datetime.now(dt.UTC) - dt.timedelta(days=31)})
    allocator = scanned.allocator
    for _ in range(3):
        allocator, _ = allocator.allocate(None)
    allocator, _ = allocator.allocate("orders")

    async with queue_bench(temporal_client, task_queue, tmp_path) as q:
        q.bench.add_repository("demo", repo)
        q.bench.store.archive_queue_items(q.workflow_id, old, archived_at)
        await q.start(
            QueueState(
                items=[due],
                archived=[tombstone(item, archived_at) for item in old],
                allocator=allocator,
                tombstones_kept=1,
                continue_as_new_after_events=20,
                poll_seconds=3600,
            )
        )
        first_run = (await q.client.get_workflow_handle(q.workflow_id).describe()).run_id
        await q.add_until_continued()
        view = await q.view()
        assert (view.archived_count, view.tombstones_forgotten) == (4, 3)

        # A forgotten key: the queue no longer knows it, says where to look, and the store finds it.
        shown = await q.view("Q-2")
        assert shown.items == [] and shown.archived is None and shown.renamed_to is None
        with pytest.raises(NotFound) as unknown:
            await q.move(QueueMessage.REOPEN, "ORD-1", reason="again")
        assert unknown.value.code == "unknown_item" and "`queue show ORD-1`" in unknown.value.message
        monkeypatch.setenv("SPECIALISTS_DATABASE_URL", q.bench.database_url)
        assert archived_named(shown, "Q-2") == (renamed, archived_at)
        with pytest.raises(Refused) as archived:
            await q.move(QueueMessage.REOPEN, "Q-3", reason="again")  # the tombstone kept
        assert archived.value.code == "item_archived"

        # A scan does not propose the finding an archived item held, though the queue forgot it.
        again = await scan(q)
        assert (found.key, QueueStatus.REJECTED) in [(row.key, row.status) for row in again.not_reproposed]
        assert found.intake is not None
        assert found.intake.fingerprint not in {
            item.intake.fingerprint for item in (await q.view()).items if item.intake is not None
        }

        # Nor does a retried add make a second item: the one it added is archived.
        signature = proof(q.workflow_id, QueueAction.ADD, actor=ACTOR, digest=retried.digest())
        with pytest.raises(Refused) as retry:
            await queue_update(
                q.client,
                q.bench.task_queue,
                QueueMessage.ADD,
                retried.model_copy(update={"proof": signature}),
                ItemAnswer,
            )
        assert retry.value.code == "item_archived" and "Q-1" in retry.value.message

        # Every execution replays: the first forgot (its patch recorded), the later ones asked the store.
        replayer = Replayer(
            workflows=list(WORKFLOWS),
            data_converter=pydantic_data_converter,
            workflow_runner=sandbox_runner(),
        )
        await q.client.get_workflow_handle(q.workflow_id).terminate("replayed below")
        histories = []
        run_id: str | None = first_run
        while run_id:
            history = await q.client.get_workflow_handle(q.workflow_id, run_id=run_id).fetch_history()
            replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
            assert replayed.replay_failure is None, replayed.replay_failure
            histories.append(history)
            ended = history.events[-1].workflow_execution_continued_as_new_event_attributes
            run_id = ended.new_execution_run_id
        patches = [
            json.loads(payload.data)["id"]
            for event in histories[0].events
            if event.marker_recorded_event_attributes.marker_name == "core_patch"
            for payload in event.marker_recorded_event_attributes.details["patch-data"].payloads
        ]
        assert PATCH_FORGET_TOMBSTONES in patches
        lookups = [
            event
            for history in histories[1:]
            for event in history.events
            if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            and event.activity_task_scheduled_event_attributes.activity_type.name
            == "find_archived_queue_items"
        ]
        assert len(lookups) == 2  # the scan's and the retried add's
