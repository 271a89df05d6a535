"""The goal queue's archive in the store (store/queue_archive.py), on SQLite and PostgreSQL: ended
items are kept whole and read back as they were; archiving again is idempotent and never puts an
older copy over a newer one; listing gives the newest first and the total."""

from __future__ import annotations

import datetime as dt

import pytest

from contracts.errors import InvalidInput
from contracts.queue_items import ItemProposal, QueueEventKind, QueueItem, QueueStatus, new_item
from store import Store

QUEUE = "work-queue@orders"
T0 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


def _rejected(key: str, title: str, at: dt.datetime) -> QueueItem:
    item = new_item(ItemProposal(title=title), key=key, at=T0, actor="alice")
    return item.with_event(QueueEventKind.MOVED, at, "alice", {"to": "rejected"}, status=QueueStatus.REJECTED)


def test_an_archived_item_reads_back_whole_with_when_it_was_archived(store: Store) -> None:
    item = _rejected("Q-1", "Slow orders", T0 + dt.timedelta(days=1))
    archived_at = T0 + dt.timedelta(days=40)
    store.archive_queue_items(QUEUE, [item], archived_at)
    assert store.archived_queue_item(QUEUE, "Q-1") == (item, archived_at)
    assert store.archived_queue_item(QUEUE, "Q-2") is None
    assert store.archived_queue_item("work-queue@elsewhere", "Q-1") is None


def test_archiving_again_keeps_the_newest_copy(store: Store) -> None:
    older = _rejected("Q-1", "First words", T0 + dt.timedelta(days=1))
    newer = _rejected("Q-1", "Later words", T0 + dt.timedelta(days=2))
    store.archive_queue_items(QUEUE, [newer], T0 + dt.timedelta(days=50))
    store.archive_queue_items(QUEUE, [older], T0 + dt.timedelta(days=60))  # a late retry of an older write
    assert store.archived_queue_item(QUEUE, "Q-1") == (newer, T0 + dt.timedelta(days=50))
    store.archive_queue_items(QUEUE, [newer], T0 + dt.timedelta(days=70))  # the same write again
    item, _ = store.archived_queue_item(QUEUE, "Q-1") or (None, None)
    assert item == newer


def test_the_archive_lists_the_newest_first_with_the_total(store: Store) -> None:
    for index in range(1, 4):
        item = _rejected(f"Q-{index}", f"Item {index}", T0 + dt.timedelta(days=index))
        store.archive_queue_items(QUEUE, [item], T0 + dt.timedelta(days=40 + index))
    listed, total = store.list_archived_queue_items(QUEUE, limit=2)
    assert total == 3 and [item.key for item, _ in listed] == ["Q-3", "Q-2"]
    assert store.list_archived_queue_items("work-queue@elsewhere") == ([], 0)
    with pytest.raises(InvalidInput):
        store.list_archived_queue_items(QUEUE, limit=0)
