"""Research cases, their evidence records, and the stored outputs of research model jobs.

Revision ID: 0008
Revises: 0007
Create Date: 2027-01-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "research_cases",
        sa.Column("case_id", sa.String(16), nullable=False),
        sa.Column("subject_kind", sa.String(40), nullable=False),
        sa.Column("subject_identifier", sa.String(200), nullable=False),
        sa.Column("subject_title", sa.String(200), nullable=False),
        sa.Column("created_by", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["created_by"], ["actors.id"], name="fk_research_cases_created_by_actors"),
        sa.PrimaryKeyConstraint("case_id", name="pk_research_cases"),
    )
    op.create_table(
        "research_evidence",
        sa.Column("evidence_id", sa.String(16), nullable=False),
        sa.Column("case_id", sa.String(16), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("source_ref", sa.String(500), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("added_by", sa.String(64), nullable=False),
        sa.Column("added_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deactivated_by", sa.String(64), nullable=True),
        sa.Column("deactivated_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("seq >= 1", name=op.f("ck_research_evidence_seq_positive")),
        sa.ForeignKeyConstraint(
            ["case_id"], ["research_cases.case_id"], name="fk_research_evidence_case_id_research_cases"
        ),
        sa.ForeignKeyConstraint(["added_by"], ["actors.id"], name="fk_research_evidence_added_by_actors"),
        sa.ForeignKeyConstraint(
            ["deactivated_by"], ["actors.id"], name="fk_research_evidence_deactivated_by_actors"
        ),
        sa.PrimaryKeyConstraint("evidence_id", name="pk_research_evidence"),
        sa.UniqueConstraint("case_id", "seq", name="uq_research_evidence_case_id_seq"),
    )
    op.create_index("ix_research_evidence_case_id", "research_evidence", ["case_id"])
    op.create_table(
        "research_job_outputs",
        sa.Column("job_id", sa.String(120), nullable=False),
        sa.Column("team_id", sa.String(20), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("profile_id", sa.String(64), nullable=False),
        sa.Column("model_id", sa.String(200), nullable=False),
        sa.Column("output", sa.JSON(), nullable=False),
        sa.Column("output_sha256", sa.String(64), nullable=False),
        sa.Column("pack", sa.JSON(), nullable=True),
        sa.Column("pack_sha256", sa.String(64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("job_id", name="pk_research_job_outputs"),
    )
    op.create_index("ix_research_job_outputs_team_id", "research_job_outputs", ["team_id"])


def downgrade() -> None:
    op.drop_index("ix_research_job_outputs_team_id", table_name="research_job_outputs")
    op.drop_table("research_job_outputs")
    op.drop_index("ix_research_evidence_case_id", table_name="research_evidence")
    op.drop_table("research_evidence")
    op.drop_table("research_cases")
