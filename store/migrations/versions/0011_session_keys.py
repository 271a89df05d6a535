"""Session keys: ``session_keys``, the delegations that let a Mission Control session key sign
configuration records for its actor (docs/architecture.md "Signed configuration").

Each row is a :class:`contracts.proofs.SessionDelegation` as the actor's own key signed it; it needs
no further signature (the delegation is the signature) and is verified like any record on every
read.

Revision ID: 0011
Revises: 0010
Create Date: 2027-02-08
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "session_keys",
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("actor_id", sa.String(64), nullable=False),
        sa.Column("actor_key", sa.String(64), nullable=False),
        sa.Column("public_key", sa.String(64), nullable=False),
        sa.Column("issued_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("signature", sa.String(128), nullable=False),
        sa.ForeignKeyConstraint(["actor_id"], ["actors.id"], name="fk_session_keys_actor_id_actors"),
        sa.PrimaryKeyConstraint("fingerprint", name="pk_session_keys"),
    )


def downgrade() -> None:
    op.drop_table("session_keys")
