"""The run projection: upsert a run's summary, append its audit events, list runs with filters."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import Executable, Table, bindparam, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from contracts.enums import RiskLevel, Tier
from contracts.runs import AuditEvent, RunStatus, RunSummary
from store.schema import RunEventRow, RunRow

_RUNS: Table = RunRow.__table__  # type: ignore[assignment]
_RUN_EVENTS: Table = RunEventRow.__table__  # type: ignore[assignment]


def project_run(session: Session, summary: RunSummary, events: list[AuditEvent]) -> None:
    """Upsert ``summary`` and insert the ``events`` not stored yet (keyed by run id and seq).

    Idempotent; an older summary (``updated_at`` before the stored one) never overwrites a newer one.
    Two statements built once, each deciding in the database (``ON CONFLICT``): every status change
    of every run writes here, and the ORM's read, compare and flush cost several times as much.
    """
    upsert_run, insert_events = _statements(session.get_bind().dialect.name)
    session.execute(upsert_run, _summary_row(summary))
    if events:
        session.execute(
            insert_events,
            [
                {
                    "run_id": summary.run_id,
                    "seq": event.seq,
                    "at": event.at,
                    "kind": event.kind,
                    "actor": event.actor,
                    "data": event.data,
                }
                for event in events
            ],
        )


@functools.cache
def _statements(dialect: str) -> tuple[Executable, Executable]:
    """The run upsert (not over a newer summary) and the event insert that skips stored events, in
    the backend's ``INSERT ... ON CONFLICT`` (the store runs on SQLite or PostgreSQL)."""
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    upsert = insert(_RUNS).values({column.name: bindparam(column.name) for column in _RUNS.columns})
    upsert_run = upsert.on_conflict_do_update(
        index_elements=[_RUNS.c.run_id],
        set_={
            column.name: upsert.excluded[column.name]
            for column in _RUNS.columns
            if column.name not in ("run_id", "created_at")
        },
        where=_RUNS.c.updated_at <= upsert.excluded.updated_at,
    )
    insert_events = insert(_RUN_EVENTS).on_conflict_do_nothing(
        index_elements=[_RUN_EVENTS.c.run_id, _RUN_EVENTS.c.seq]
    )
    return upsert_run, insert_events


def _summary_row(summary: RunSummary) -> dict[str, Any]:
    return {
        "run_id": summary.run_id,
        "status": summary.status.value,
        "tier": summary.tier.value if summary.tier else None,
        "automatic": summary.automatic,
        "primary": summary.primary,
        "reviewer": summary.reviewer,
        "risk": summary.risk.value if summary.risk else None,
        "repo_alias": summary.repo_alias,
        "title": summary.title,
        "contract_sha256": summary.contract_sha256,
        "request_id": summary.request_id,
        "created_at": summary.created_at,
        "updated_at": summary.updated_at,
    }


def list_runs(
    session: Session, *, status: str | None = None, tier: Tier | None = None, limit: int = 100
) -> list[RunSummary]:
    """Runs newest first, optionally filtered by status and tier, at most ``limit``."""
    query = select(RunRow).order_by(RunRow.created_at.desc(), RunRow.run_id).limit(limit)
    if status is not None:
        query = query.where(RunRow.status == status)
    if tier is not None:
        query = query.where(RunRow.tier == tier.value)
    return [run_summary(row) for row in session.scalars(query)]


def run_events(session: Session, run_id: str) -> list[AuditEvent]:
    """The projected audit events of ``run_id``, in sequence order."""
    rows = session.scalars(select(RunEventRow).where(RunEventRow.run_id == run_id).order_by(RunEventRow.seq))
    return [
        AuditEvent(seq=row.seq, at=row.at, kind=row.kind, actor=row.actor, data=dict(row.data))
        for row in rows
    ]


def run_summary(row: RunRow) -> RunSummary:
    """A projected run's row as its summary."""
    return RunSummary(
        run_id=row.run_id,
        status=RunStatus(row.status),
        tier=Tier(row.tier) if row.tier else None,
        automatic=row.automatic,
        primary=row.primary,
        reviewer=row.reviewer,
        risk=RiskLevel(row.risk) if row.risk else None,
        repo_alias=row.repo_alias,
        title=row.title,
        contract_sha256=row.contract_sha256,
        request_id=row.request_id,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )
