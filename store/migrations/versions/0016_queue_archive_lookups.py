"""Lookups of the goal queue's archive (docs/architecture.md "Goal queue", "Archive"): the queue keeps
only its newest tombstones in its workflow state and asks the store for older ones, by intake
fingerprint, by the request id of the item's ``queue add`` and by any key the item had (a proposal's
``Q-<n>`` before its approval renamed it). Existing rows are filled from their item's JSON.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _names(item: dict[str, Any]) -> list[str]:
    """The item's key and the keys it had before a rename (its ``renamed`` events' ``from``)."""
    former = [
        event["data"]["from"]
        for event in item.get("events", [])
        if event.get("kind") == "renamed" and isinstance(event.get("data", {}).get("from"), str)
    ]
    return list(dict.fromkeys([item["key"], *former]))


def upgrade() -> None:
    with op.batch_alter_table("queue_archive") as table:
        table.add_column(sa.Column("intake_fingerprint", sa.String(64), nullable=True))
        table.add_column(sa.Column("request_id", sa.String(200), nullable=True))
    op.create_index(
        "ix_queue_archive_queue_id_intake_fingerprint", "queue_archive", ["queue_id", "intake_fingerprint"]
    )
    op.create_index("ix_queue_archive_queue_id_request_id", "queue_archive", ["queue_id", "request_id"])
    names = op.create_table(
        "queue_archive_names",
        sa.Column("queue_id", sa.String(255), nullable=False),
        sa.Column("name", sa.String(32), nullable=False),
        sa.Column("key", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("queue_id", "name", name="pk_queue_archive_names"),
    )
    archive = sa.table(
        "queue_archive",
        sa.column("queue_id", sa.String),
        sa.column("key", sa.String),
        sa.column("item", sa.JSON),
        sa.column("intake_fingerprint", sa.String),
        sa.column("request_id", sa.String),
    )
    connection = op.get_bind()
    rows = connection.execute(sa.select(archive.c.queue_id, archive.c.key, archive.c.item)).all()
    for queue_id, key, item in rows:
        intake = item.get("intake") or {}
        added_by = item.get("added_by") or {}
        connection.execute(
            archive.update()
            .where(archive.c.queue_id == queue_id, archive.c.key == key)
            .values(intake_fingerprint=intake.get("fingerprint"), request_id=added_by.get("request_id"))
        )
        connection.execute(
            names.insert(), [{"queue_id": queue_id, "name": name, "key": key} for name in _names(item)]
        )


def downgrade() -> None:
    op.drop_table("queue_archive_names")
    op.drop_index("ix_queue_archive_queue_id_request_id", table_name="queue_archive")
    op.drop_index("ix_queue_archive_queue_id_intake_fingerprint", table_name="queue_archive")
    with op.batch_alter_table("queue_archive") as table:
        table.drop_column("request_id")
        table.drop_column("intake_fingerprint")
