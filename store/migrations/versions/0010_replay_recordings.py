"""Operator-registered replay recordings: ``models.recordings``.

A ``replay:NAME`` model an operator registers carries its recordings file in canonical form
(docs/architecture.md "Model selection"); the model's signature covers the file's sha256. Every
other model has none.

Revision ID: 0010
Revises: 0009
Create Date: 2027-02-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("models", sa.Column("recordings", sa.Text(), nullable=True))


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        # In place (SQLite 3.35+): a batch copy of ``models`` is not needed for one plain column.
        op.execute("ALTER TABLE models DROP COLUMN recordings")
        return
    op.drop_column("models", "recordings")
