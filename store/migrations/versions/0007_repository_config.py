"""Repository configuration: a JSON ``config`` column on ``repositories``; existing rows get the default.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-27
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The default repository configuration (``contracts.config.RepositoryConfig()``) as this revision
# stores it. Written out here, not imported, so the migration never changes with later code.
DEFAULT_CONFIG: Final[dict[str, Any]] = {
    "executor": "patch",
    "command": None,
    "verify": [],
    "env": [],
    "network": False,
    "command_timeout_seconds": 600,
}


def upgrade() -> None:
    op.add_column("repositories", sa.Column("config", sa.JSON(), nullable=True))
    repositories = sa.table("repositories", sa.column("config", sa.JSON()))
    op.execute(repositories.update().values(config=DEFAULT_CONFIG))
    with op.batch_alter_table("repositories") as batch:
        batch.alter_column("config", existing_type=sa.JSON(), nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("repositories") as batch:
        batch.drop_column("config")
