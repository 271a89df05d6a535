"""Which ended items the queue archives and what it keeps of them (contracts.queue_archive)."""

from __future__ import annotations

import datetime as dt

import pytest
from pydantic import ValidationError

from contracts.queue_archive import (
    ARCHIVE_BATCH,
    MAX_ARCHIVED_PER_EXECUTION,
    MAX_LOOKUP_FINGERPRINTS,
    ArchivedItem,
    ArchiveLookup,
    ArchiveRequest,
    archivable,
    batches,
    find_archived,
    keep_newest,
    tombstone,
)
from contracts.queue_items import (
    ItemProposal,
    QueueEventKind,
    QueueItem,
    QueueRefused,
    QueueStatus,
    added_with,
    new_item,
)
from contracts.queue_messages import AddRequest

T0 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
DAY = 24 * 3600


def _ended(key: str, status: QueueStatus, at: dt.datetime, **fields: object) -> QueueItem:
    item = new_item(ItemProposal(title=f"Item {key}"), key="Q-1", at=T0, actor="alice")
    if key != "Q-1":
        item = item.with_event(QueueEventKind.RENAMED, T0, "alice", {"from": "Q-1", "to": key}, key=key)
    changes: dict[str, object] = {"status": status, **fields}
    if status is not QueueStatus.PROPOSAL and status is not QueueStatus.REJECTED:
        changes["repo_alias"] = "orders"
    return item.with_event(QueueEventKind.MOVED, at, "alice", {"to": status.value}, **changes)


def test_only_done_and_rejected_items_unchanged_long_enough_are_due_oldest_first() -> None:
    now = T0 + dt.timedelta(days=60)
    old_done = _ended("ORD-1", QueueStatus.DONE, T0 + dt.timedelta(days=2))
    older_rejected = _ended("Q-1", QueueStatus.REJECTED, T0 + dt.timedelta(days=1))
    recent_done = _ended("ORD-2", QueueStatus.DONE, now - dt.timedelta(days=1))
    approved = _ended("ORD-3", QueueStatus.APPROVED, T0)
    items = [old_done, older_rejected, recent_done, approved]
    due = archivable(items, now=now, after_seconds=30 * DAY)
    assert [item.key for item in due] == ["Q-1", "ORD-1"]
    assert archivable(items, now=now, after_seconds=30 * DAY, busy={"ORD-1"}) == [older_rejected]
    assert [item.key for item in archivable(items, now=now, after_seconds=0)] == ["Q-1", "ORD-1", "ORD-2"]


def test_archiving_is_bounded_per_execution_and_batched() -> None:
    item = _ended("Q-1", QueueStatus.REJECTED, T0)
    many = [
        item.model_copy(update={"key": f"Q-{index}"}) for index in range(1, MAX_ARCHIVED_PER_EXECUTION + 10)
    ]
    due = archivable(many, now=T0 + dt.timedelta(days=31), after_seconds=30 * DAY)
    assert len(due) == MAX_ARCHIVED_PER_EXECUTION
    sizes = [len(batch) for batch in batches(due)]
    assert max(sizes) == ARCHIVE_BATCH and sum(sizes) == len(due)
    with pytest.raises(ValidationError):
        ArchiveRequest(queue_id="q", items=many[: ARCHIVE_BATCH + 1], archived_at=T0)


def test_the_queue_keeps_the_key_old_keys_status_fingerprint_and_request_id() -> None:
    request = AddRequest(actor="alice", proposal=ItemProposal(title="Slow"), request_id="r-1")
    item = _ended("ORD-4", QueueStatus.DONE, T0, added_by=request.added_by())
    kept = tombstone(item, T0 + dt.timedelta(days=40))
    assert (kept.key, kept.status, kept.renamed_from) == ("ORD-4", QueueStatus.DONE, ["Q-1"])
    assert kept.added_by == request.added_by() and kept.intake_fingerprint is None
    assert find_archived([kept], "ORD-4") is kept and find_archived([kept], "Q-1") is kept
    assert find_archived([kept], "ORD-5") is None
    refusal = kept.refusal("Q-1")
    assert refusal.code == "item_archived" and "Q-1 (renamed to ORD-4)" in refusal.message
    assert refusal.extra["key"] == "ORD-4" and refusal.extra["status"] == "done"


def test_a_request_id_of_an_archived_item_is_refused_not_added_again() -> None:
    request = AddRequest(actor="alice", proposal=ItemProposal(title="Slow"), request_id="r-1")
    kept = tombstone(_ended("ORD-4", QueueStatus.DONE, T0, added_by=request.added_by()), T0)
    with pytest.raises(QueueRefused) as archived:
        added_with([], "r-1", request.proposal_digest(), [kept])
    assert archived.value.code == "item_archived"
    other = AddRequest(actor="alice", proposal=ItemProposal(title="Other"), request_id="r-1")
    with pytest.raises(QueueRefused) as conflict:
        added_with([], "r-1", other.proposal_digest(), [kept])
    assert conflict.value.code == "request_id_conflict"
    assert added_with([], "r-2", request.proposal_digest(), [kept]) is None


def test_items_whose_batch_failed_go_back_where_they_were_and_are_no_longer_archived() -> None:
    from types import SimpleNamespace

    from workflows.queue_archive import _put_back

    first, second, third = (_ended(key, QueueStatus.REJECTED, T0) for key in ("Q-1", "ORD-2", "ORD-3"))
    added = _ended("ORD-4", QueueStatus.APPROVED, T0)
    kept = tombstone(second, T0)
    queue = SimpleNamespace(items={"Q-1": first, "ORD-4": added}, archived=[kept])
    queue._items, queue._archived = queue.items, queue.archived  # the names the workflow uses
    _put_back(queue, [second, third], ["Q-1", "ORD-2", "ORD-3"])  # type: ignore[arg-type]
    assert list(queue._items) == ["Q-1", "ORD-2", "ORD-3", "ORD-4"]
    assert queue._items["ORD-2"] == second and queue._archived == []


def test_a_queue_keeps_its_newest_tombstones_in_the_order_it_had_them() -> None:
    def archived(key: str, days: int) -> ArchivedItem:
        return ArchivedItem(key=key, status=QueueStatus.DONE, archived_at=T0 + dt.timedelta(days=days))

    entries = [archived("ORD-1", 3), archived("ORD-2", 1), archived("ORD-3", 3), archived("ORD-4", 2)]
    assert [entry.key for entry in keep_newest(entries, 2)] == ["ORD-1", "ORD-3"]
    assert [entry.key for entry in keep_newest(entries, 3)] == ["ORD-1", "ORD-3", "ORD-4"]
    assert keep_newest(entries, 10) == entries and keep_newest(entries, 10) is not entries


def test_a_lookup_of_the_store_archive_is_bounded_and_checks_what_it_asks_for() -> None:
    with pytest.raises(ValidationError):
        ArchiveLookup(queue_id="q", fingerprints=["a" * 64] * (MAX_LOOKUP_FINGERPRINTS + 1))
    with pytest.raises(ValidationError):
        ArchiveLookup(queue_id="q", fingerprints=["not a digest"])
    assert ArchiveLookup(queue_id="q", request_id="r-1").fingerprints == []
