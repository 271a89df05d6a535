"""The goal queue's archive in the store (store/queue_archive.py), on SQLite and PostgreSQL: ended
items are kept whole and read back as they were; archiving again is idempotent and never puts an
older copy over a newer one; listing gives the newest first and the total."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

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


def _intake_item(tmp_path: Path) -> QueueItem:
    """A rejected proposal an intake scan of a real repository made (it holds a fingerprint)."""
    from activities.intake_scan import scan_repository_at
    from contracts.intake_diff import apply_intake
    from contracts.queue_keys import KeyAllocator
    from tests.activities.intake_repository import make_intake_repository

    scanned = scan_repository_at(make_intake_repository(tmp_path), "demo", "main")
    item = apply_intake(scanned, [], KeyAllocator(), at=T0, actor="alice").items[0]
    return item.with_event(QueueEventKind.MOVED, T0, "alice", {"to": "rejected"}, status=QueueStatus.REJECTED)


def test_an_archived_item_is_found_by_every_key_it_had(store: Store) -> None:
    proposal = _rejected("Q-7", "Slow orders", T0)
    renamed = proposal.with_event(
        QueueEventKind.RENAMED, T0, "alice", {"from": "Q-7", "to": "ORD-3"}, key="ORD-3"
    )
    archived_at = T0 + dt.timedelta(days=40)
    store.archive_queue_items(QUEUE, [renamed], archived_at)
    assert store.archived_queue_item_named(QUEUE, "ORD-3") == (renamed, archived_at)
    assert store.archived_queue_item_named(QUEUE, "Q-7") == (renamed, archived_at)
    assert store.archived_queue_item_named(QUEUE, "Q-8") is None
    assert store.archived_queue_item_named("work-queue@elsewhere", "Q-7") is None
    store.archive_queue_items(QUEUE, [renamed], archived_at)  # again: the names are kept once
    assert store.archived_queue_item_named(QUEUE, "Q-7") == (renamed, archived_at)


def test_archived_items_are_found_by_intake_fingerprint_and_by_request_id(
    store: Store, tmp_path: Path
) -> None:
    from contracts.queue_requests import AddedBy

    scanned = _intake_item(tmp_path)
    assert scanned.intake is not None
    added = new_item(
        ItemProposal(title="Added twice"),
        key="Q-9",
        at=T0,
        actor="alice",
        added_by=AddedBy(request_id="retry-me", proposal_sha256="a" * 64),
    ).with_event(QueueEventKind.MOVED, T0, "alice", {"to": "rejected"}, status=QueueStatus.REJECTED)
    archived_at = T0 + dt.timedelta(days=40)
    store.archive_queue_items(QUEUE, [scanned, added], archived_at)
    fingerprint = scanned.intake.fingerprint
    assert store.archived_queue_items_matching(QUEUE, fingerprints=[fingerprint, "b" * 64]) == [
        (scanned, archived_at)
    ]
    assert store.archived_queue_items_matching(QUEUE, fingerprints=[], request_id="retry-me") == [
        (added, archived_at)
    ]
    both = store.archived_queue_items_matching(QUEUE, fingerprints=[fingerprint], request_id="retry-me")
    assert sorted(item.key for item, _ in both) == sorted([scanned.key, "Q-9"])
    assert store.archived_queue_items_matching("work-queue@elsewhere", fingerprints=[fingerprint]) == []
    many = [f"{index:064x}" for index in range(1200)] + [fingerprint]  # more than one IN list
    assert store.archived_queue_items_matching(QUEUE, fingerprints=many) == [(scanned, archived_at)]


def test_migration_0016_fills_the_lookups_of_items_archived_before_it(
    database_url: str, tmp_path: Path
) -> None:
    import sqlalchemy as sa
    from alembic import command

    from store.database import open_store, parse_database_url
    from store.engine import create_store_engine, writing
    from store.migrate import alembic_config
    from tests.identity import STORE_ANCHOR

    scanned = _intake_item(tmp_path)
    renamed = _rejected("Q-4", "Renamed", T0).with_event(
        QueueEventKind.RENAMED, T0, "alice", {"from": "Q-4", "to": "ORD-2"}, key="ORD-2"
    )
    archived_at = T0 + dt.timedelta(days=40)
    parsed = parse_database_url(database_url)
    if parsed.get_backend_name() == "sqlite":
        assert parsed.database is not None
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_store_engine(parsed, create=True)
    config = alembic_config()
    archive = sa.table(
        "queue_archive",
        *(sa.column(name) for name in ("queue_id", "key", "status", "title", "updated_at", "archived_at")),
        sa.column("item", sa.JSON),
    )
    try:
        with writing(engine).begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "0015")
            connection.execute(
                archive.insert(),
                [
                    {
                        "queue_id": QUEUE, "key": item.key, "status": item.status.value, "title": item.title,
                        "updated_at": item.updated_at, "archived_at": archived_at,
                        "item": item.model_dump(mode="json"),
                    }
                    for item in (scanned, renamed)
                ],
            )  # fmt: skip
    finally:
        engine.dispose()

    assert scanned.intake is not None
    with open_store(database_url, anchor=STORE_ANCHOR) as upgraded:
        assert upgraded.archived_queue_item_named(QUEUE, "Q-4") == (renamed, archived_at)
        assert upgraded.archived_queue_item_named(QUEUE, scanned.key) == (scanned, archived_at)
        found = upgraded.archived_queue_items_matching(QUEUE, fingerprints=[scanned.intake.fingerprint])
        assert found == [(scanned, archived_at)]
        with writing(upgraded.engine).begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0015")
        with upgraded.engine.connect() as connection:
            assert "queue_archive_names" not in sa.inspect(connection).get_table_names()
            assert connection.scalar(sa.text("SELECT count(*) FROM queue_archive")) == 2
