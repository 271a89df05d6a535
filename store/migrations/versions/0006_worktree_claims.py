"""Worktree claims: which worker runs each execution attempt of a run, so no two workers run the same one.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-20
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "worktree_claims",
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("execution_attempt", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("worker", sa.String(200), nullable=False),
        sa.Column("worktree_attempt", sa.Integer(), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "execution_attempt >= 1", name=op.f("ck_worktree_claims_execution_attempt_positive")
        ),
        sa.CheckConstraint(
            "worktree_attempt >= 1", name=op.f("ck_worktree_claims_worktree_attempt_positive")
        ),
        sa.PrimaryKeyConstraint("run_id", "execution_attempt", name="pk_worktree_claims"),
    )


def downgrade() -> None:
    op.drop_table("worktree_claims")
