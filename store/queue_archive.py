"""The goal queue's archive (docs/architecture.md "Archive"): ended items the queue moved out of its
workflow state, each kept whole; written by the queue's ``archive_queue_items`` activity, read by
``queue show`` and ``queue archived``."""

from __future__ import annotations

import datetime as dt
import functools

from sqlalchemy import Executable, Table, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from contracts.queue_items import QueueItem
from store.schema import QueueArchiveRow

_ARCHIVE: Table = QueueArchiveRow.__table__  # type: ignore[assignment]


def archive_items(session: Session, queue_id: str, items: list[QueueItem], archived_at: dt.datetime) -> None:
    """Write ``items`` whole (idempotent: an item archived again — reopened and ended since — replaces
    its older copy; a copy is never replaced by an older one)."""
    session.execute(
        _upsert(session.get_bind().dialect.name),
        [
            {
                "queue_id": queue_id,
                "key": item.key,
                "status": item.status.value,
                "title": item.title,
                "updated_at": item.updated_at,
                "archived_at": archived_at,
                "item": item.model_dump(mode="json"),
            }
            for item in items
        ],
    )


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
        },
        where=_ARCHIVE.c.updated_at <= statement.excluded.updated_at,
    )


def archived_item(session: Session, queue_id: str, key: str) -> tuple[QueueItem, dt.datetime] | None:
    """The archived item ``key`` of ``queue_id`` and when it was archived, or ``None``."""
    row = session.get(QueueArchiveRow, (queue_id, key))
    if row is None:
        return None
    return QueueItem.model_validate(row.item), row.archived_at


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
