"""The goal queue's archive (docs/architecture.md "Goal queue", "Archive"): ended items moved out of
the queue's workflow state, each as its whole JSON, keyed by the queue's workflow id and item key.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "queue_archive",
        sa.Column("queue_id", sa.String(255), nullable=False),
        sa.Column("key", sa.String(32), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("archived_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("item", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("queue_id", "key", name="pk_queue_archive"),
    )
    op.create_index("ix_queue_archive_queue_id_archived_at", "queue_archive", ["queue_id", "archived_at"])


def downgrade() -> None:
    op.drop_index("ix_queue_archive_queue_id_archived_at", table_name="queue_archive")
    op.drop_table("queue_archive")
