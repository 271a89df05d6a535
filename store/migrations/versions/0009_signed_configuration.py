"""Per-person keys and signed configuration: ``actor_keys``, ``configuration_events``, a signature on
every configuration record, and ``active`` (with who and when) on actors, models and repositories.

Rows written before this revision get no signature: they are refused as ``configuration_unverified``
until an actor attests them (``specialists configuration attest``, docs/architecture.md
"Configuration"). Every existing actor, model and repository stays active.

Revision ID: 0009
Revises: 0008
Create Date: 2027-01-10
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SIGNED_TABLES = ("actors", "automation_policy", "model_selections", "models", "repositories")
DEACTIVATABLE_TABLES = ("actors", "models", "repositories")


def _signature_columns() -> list[sa.Column[object]]:
    return [
        sa.Column("signed_by", sa.String(64), nullable=True),
        sa.Column("signed_key", sa.String(64), nullable=True),
        sa.Column("signed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("signature", sa.String(128), nullable=True),
    ]


def upgrade() -> None:
    # Plain ADD COLUMN on every backend (no batch copy on SQLite: copying ``actors`` would drop a
    # table other tables reference).
    for table in SIGNED_TABLES:
        for column in _signature_columns():
            op.add_column(table, column)
    for table in DEACTIVATABLE_TABLES:
        op.add_column(table, sa.Column("active", sa.Boolean(), server_default=sa.true(), nullable=False))
        op.add_column(table, sa.Column("deactivated_by", sa.String(64), nullable=True))
        op.add_column(table, sa.Column("deactivated_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "actor_keys",
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("actor_id", sa.String(64), nullable=False),
        sa.Column("public_key", sa.String(64), nullable=False),
        sa.Column("added_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("anchor", sa.String(64), nullable=True),
        *_signature_columns(),
        sa.ForeignKeyConstraint(["actor_id"], ["actors.id"], name="fk_actor_keys_actor_id_actors"),
        sa.PrimaryKeyConstraint("fingerprint", name="pk_actor_keys"),
    )
    op.create_index("ix_actor_keys_actor_id", "actor_keys", ["actor_id"])
    op.create_table(
        "configuration_events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("actor", sa.String(64), nullable=True),
        sa.Column("record_kind", sa.String(32), nullable=True),
        sa.Column("record_id", sa.String(200), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_configuration_events"),
        sqlite_autoincrement=True,
    )


def _drop_columns(table: str, names: Sequence[str]) -> None:
    if op.get_bind().dialect.name == "sqlite":
        # SQLite (3.35+) drops a plain column in place; a batch copy would drop ``actors``, which
        # other tables reference.
        for name in names:
            op.execute(f"ALTER TABLE {table} DROP COLUMN {name}")
        return
    with op.batch_alter_table(table) as batch:
        for name in names:
            batch.drop_column(name)


def downgrade() -> None:
    op.drop_table("configuration_events")
    op.drop_index("ix_actor_keys_actor_id", table_name="actor_keys")
    op.drop_table("actor_keys")
    for table in DEACTIVATABLE_TABLES:
        _drop_columns(table, ("deactivated_at", "deactivated_by", "active"))
    for table in SIGNED_TABLES:
        _drop_columns(table, ("signature", "signed_at", "signed_key", "signed_by"))
