"""The advisory model in the model selection: ``model_selections.advisory``, the model an advisory
pass runs on (docs/architecture.md "Model selection"). NULL for every earlier row; a row's signature
covers it only when set, so earlier signatures still verify.

Revision ID: 0013
Revises: 0012
Create Date: 2027-03-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("model_selections") as batch:
        batch.add_column(sa.Column("advisory", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("model_selections") as batch:
        batch.drop_column("advisory")
