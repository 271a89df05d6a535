"""Spent proofs: the nonce of every accepted proof of the action token, so none is accepted twice.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-13
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "spent_proofs",
        sa.Column("nonce", sa.String(64), nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("actor", sa.String(64), nullable=False),
        sa.Column("spent_by", sa.String(128), nullable=False),
        sa.Column("spent_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("nonce", name="pk_spent_proofs"),
    )
    op.create_index("ix_spent_proofs_spent_at", "spent_proofs", ["spent_at"])


def downgrade() -> None:
    op.drop_index("ix_spent_proofs_spent_at", table_name="spent_proofs")
    op.drop_table("spent_proofs")
