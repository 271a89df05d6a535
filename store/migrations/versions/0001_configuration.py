"""Operator configuration: actors, automation policy, model selections, repositories.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "actors",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("name", sa.String(120), nullable=False),
        sa.Column("registered_by", sa.String(64), nullable=True),
        sa.Column("registered_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["registered_by"], ["actors.id"], name="fk_actors_registered_by_actors"),
        sa.PrimaryKeyConstraint("id", name="pk_actors"),
    )
    op.create_table(
        "automation_policy",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("mode", sa.String(32), nullable=False),
        sa.Column("maximum_automatic_tier", sa.String(32), nullable=False),
        sa.Column("set_by", sa.String(64), nullable=False),
        sa.Column("set_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["set_by"], ["actors.id"], name="fk_automation_policy_set_by_actors"),
        sa.PrimaryKeyConstraint("id", name="pk_automation_policy"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "model_selections",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("primary", sa.String(200), nullable=False),
        sa.Column("fallbacks", sa.JSON(), nullable=False),
        sa.Column("fallback_mode", sa.String(32), nullable=False),
        sa.Column("support", sa.String(200), nullable=True),
        sa.Column("selected_by", sa.String(64), nullable=False),
        sa.Column("selected_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["selected_by"], ["actors.id"], name="fk_model_selections_selected_by_actors"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_model_selections"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "repositories",
        sa.Column("alias", sa.String(64), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("default_branch", sa.String(255), nullable=False),
        sa.Column("added_by", sa.String(64), nullable=False),
        sa.Column("added_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["added_by"], ["actors.id"], name="fk_repositories_added_by_actors"),
        sa.PrimaryKeyConstraint("alias", name="pk_repositories"),
    )


def downgrade() -> None:
    op.drop_table("repositories")
    op.drop_table("model_selections")
    op.drop_table("automation_policy")
    op.drop_table("actors")
