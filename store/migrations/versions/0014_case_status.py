"""Research case status (docs/architecture.md "Research team", "Schedules"): ``research_cases.status``
(``open`` for every existing case), with who last moved it and when (NULL until a person does).

Revision ID: 0014
Revises: 0013
Create Date: 2027-03-10
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("research_cases") as batch:
        batch.add_column(sa.Column("status", sa.String(32), nullable=False, server_default="open"))
        batch.add_column(sa.Column("status_changed_by", sa.String(64), nullable=True))
        batch.add_column(sa.Column("status_changed_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    # Not in a batch: on SQLite a batch copies the table, and evidence rows reference research_cases
    # (foreign keys on); SQLite drops a plain column in place (3.35+).
    for column in ("status_changed_at", "status_changed_by", "status"):
        if op.get_bind().dialect.name == "sqlite":
            op.execute(sa.text(f"ALTER TABLE research_cases DROP COLUMN {column}"))
        else:
            op.drop_column("research_cases", column)
