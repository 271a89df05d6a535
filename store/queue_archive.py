"""The goal queue's archive (docs/architecture.md "Archive"): ended items the queue moved out of its
workflow state, each kept whole; written by the queue's ``archive_queue_items`` activity, read by
``queue show`` and ``queue archived``, and looked up — by any key the item had, by its intake
fingerprint or by its ``queue add`` request id — for the items the queue no longer keeps a tombstone
of (``find_archived_queue_items``, the CLI and the console)."""

from __future__ import annotations

import datetime as dt
import functools

from sqlalchemy import Executable, Table, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from contracts.queue_archive import former_keys
from contracts.queue_items import QueueItem
from store.schema import QueueArchiveNameRow, QueueArchiveRow

_ARCHIVE: Table = QueueArchiveRow.__table__  # type: ignore[assignment]
_NAMES: Table = QueueArchiveNameRow.__table__  # type: ignore[assignment]


def archive_items(session: Session, queue_id: str, items: list[QueueItem], archived_at: dt.datetime) -> None:
    """Write ``items`` whole (idempotent: an item archived again — reopened and ended since — replaces
    its older copy; a copy is never replaced by an older one), with every key each had."""
    dialect = session.get_bind().dialect.name
    session.execute(
        _upsert(dialect),
        [
            {
                "queue_id": queue_id,
                "key": item.key,
                "status": item.status.value,
                "title": item.title,
                "updated_at": item.updated_at,
                "archived_at": archived_at,
                "item": item.model_dump(mode="json"),
                "intake_fingerprint": item.intake.fingerprint if item.intake is not None else None,
                "request_id": item.added_by.request_id if item.added_by is not None else None,
            }
            for item in items
        ],
    )
    session.execute(
        _insert_names(dialect),
        [{"queue_id": queue_id, "name": name, "key": item.key} for item in items for name in names(item)],
    )


def names(item: QueueItem) -> list[str]:
    """Every key ``item`` had: its own, then the ones an approval renamed it from."""
    return list(dict.fromkeys([item.key, *former_keys(item)]))


@functools.cache
def _insert_names(dialect: str) -> Executable:
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    return insert(_NAMES).on_conflict_do_nothing(index_elements=["queue_id", "name"])


@functools.cache
def _upsert(dialect: str) -> Executable:
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(_ARCHIVE)
    return statement.on_conflict_do_update(
        index_elements=["queue_id", "key"],
        set_={
            "status": statement.excluded.status,
            "title": statement.excluded.title,
            "updated_at": statement.excluded.updated_at,
            "archived_at": statement.excluded.archived_at,
            "item": statement.excluded.item,
            "intake_fingerprint": statement.excluded.intake_fingerprint,
            "request_id": statement.excluded.request_id,
        },
        where=_ARCHIVE.c.updated_at <= statement.excluded.updated_at,
    )


def archived_item(session: Session, queue_id: str, key: str) -> tuple[QueueItem, dt.datetime] | None:
    """The archived item ``key`` of ``queue_id`` and when it was archived, or ``None``."""
    row = session.get(QueueArchiveRow, (queue_id, key))
    if row is None:
        return None
    return QueueItem.model_validate(row.item), row.archived_at


def archived_named(session: Session, queue_id: str, name: str) -> tuple[QueueItem, dt.datetime] | None:
    """The archived item of ``queue_id`` that had the key ``name`` (its own, or one it was renamed
    from) and when it was archived, or ``None``."""
    key = session.scalar(
        select(QueueArchiveNameRow.key).where(
            QueueArchiveNameRow.queue_id == queue_id, QueueArchiveNameRow.name == name
        )
    )
    return None if key is None else archived_item(session, queue_id, key)


def archived_matching(
    session: Session, queue_id: str, *, fingerprints: list[str], request_id: str | None
) -> list[tuple[QueueItem, dt.datetime]]:
    """The archived items of ``queue_id`` that hold one of the intake ``fingerprints`` or were added
    with ``request_id``, by key."""
    found: dict[str, QueueArchiveRow] = {}
    for start in range(0, len(fingerprints), _IN_BATCH):
        chunk = fingerprints[start : start + _IN_BATCH]
        for row in session.scalars(
            select(QueueArchiveRow).where(
                QueueArchiveRow.queue_id == queue_id, QueueArchiveRow.intake_fingerprint.in_(chunk)
            )
        ):
            found[row.key] = row
    if request_id is not None:
        for row in session.scalars(
            select(QueueArchiveRow).where(
                QueueArchiveRow.queue_id == queue_id, QueueArchiveRow.request_id == request_id
            )
        ):
            found[row.key] = row
    return [(QueueItem.model_validate(row.item), row.archived_at) for _, row in sorted(found.items())]


_IN_BATCH = 500
"""Fingerprints per ``IN`` list (SQLite allows some thousands of bound parameters)."""


def list_archived(
    session: Session, queue_id: str, *, limit: int
) -> tuple[list[tuple[QueueItem, dt.datetime]], int]:
    """The newest ``limit`` archived items of ``queue_id`` (newest archived first) and how many there are."""
    total = session.scalar(
        select(func.count()).select_from(QueueArchiveRow).where(QueueArchiveRow.queue_id == queue_id)
    )
    rows = session.scalars(
        select(QueueArchiveRow)
        .where(QueueArchiveRow.queue_id == queue_id)
        .order_by(QueueArchiveRow.archived_at.desc(), QueueArchiveRow.key)
        .limit(limit)
    )
    return [(QueueItem.model_validate(row.item), row.archived_at) for row in rows], int(total or 0)
