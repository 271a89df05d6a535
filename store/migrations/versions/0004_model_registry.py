"""Model registry: the models an operator registered, with endpoint, key variable name and limits.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "models",
        sa.Column("id", sa.String(200), nullable=False),
        sa.Column("provider", sa.String(64), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("base_url", sa.Text(), nullable=True),
        sa.Column("api_key_env", sa.String(64), nullable=True),
        sa.Column("timeout_s", sa.Integer(), nullable=False),
        sa.Column("ceiling", sa.Integer(), nullable=False),
        sa.Column("added_by", sa.String(64), nullable=False),
        sa.Column("added_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("timeout_s >= 1 AND timeout_s <= 600", name=op.f("ck_models_timeout_s_range")),
        sa.CheckConstraint("ceiling >= 1 AND ceiling <= 1000", name=op.f("ck_models_ceiling_range")),
        sa.ForeignKeyConstraint(["added_by"], ["actors.id"], name="fk_models_added_by_actors"),
        sa.PrimaryKeyConstraint("id", name="pk_models"),
    )


def downgrade() -> None:
    op.drop_table("models")
