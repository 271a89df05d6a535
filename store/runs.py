"""The run projection: upsert a run's summary, append its audit events, list runs with filters."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from contracts.enums import RiskLevel, Tier
from contracts.runs import AuditEvent, RunStatus, RunSummary
from store.schema import RunEventRow, RunRow


def project_run(session: Session, summary: RunSummary, events: list[AuditEvent]) -> None:
    """Upsert ``summary`` and insert the ``events`` not stored yet (keyed by run id and seq).

    Idempotent; an older summary (``updated_at`` before the stored one) never overwrites a newer one.
    """
    row = session.get(RunRow, summary.run_id)
    if row is None:
        row = RunRow(run_id=summary.run_id, created_at=summary.created_at, updated_at=summary.updated_at)
        session.add(row)
    elif summary.updated_at < row.updated_at:
        return _append_events(session, summary.run_id, events)
    row.status = summary.status.value
    row.tier = summary.tier.value if summary.tier else None
    row.automatic = summary.automatic
    row.primary = summary.primary
    row.reviewer = summary.reviewer
    row.risk = summary.risk.value if summary.risk else None
    row.repo_alias = summary.repo_alias
    row.title = summary.title
    row.contract_sha256 = summary.contract_sha256
    row.request_id = summary.request_id
    row.updated_at = summary.updated_at
    session.flush()
    _append_events(session, summary.run_id, events)


def _append_events(session: Session, run_id: str, events: list[AuditEvent]) -> None:
    if not events:
        return
    stored = set(
        session.scalars(
            select(RunEventRow.seq).where(
                RunEventRow.run_id == run_id, RunEventRow.seq.in_([e.seq for e in events])
            )
        )
    )
    for event in events:
        if event.seq in stored:
            continue
        session.add(
            RunEventRow(
                run_id=run_id,
                seq=event.seq,
                at=event.at,
                kind=event.kind,
                actor=event.actor,
                data=event.data,
            )
        )
    session.flush()


def list_runs(
    session: Session, *, status: str | None = None, tier: Tier | None = None, limit: int = 100
) -> list[RunSummary]:
    """Runs newest first, optionally filtered by status and tier, at most ``limit``."""
    query = select(RunRow).order_by(RunRow.created_at.desc(), RunRow.run_id).limit(limit)
    if status is not None:
        query = query.where(RunRow.status == status)
    if tier is not None:
        query = query.where(RunRow.tier == tier.value)
    return [_summary(row) for row in session.scalars(query)]


def run_events(session: Session, run_id: str) -> list[AuditEvent]:
    """The projected audit events of ``run_id``, in sequence order."""
    rows = session.scalars(select(RunEventRow).where(RunEventRow.run_id == run_id).order_by(RunEventRow.seq))
    return [
        AuditEvent(seq=row.seq, at=row.at, kind=row.kind, actor=row.actor, data=dict(row.data))
        for row in rows
    ]


def _summary(row: RunRow) -> RunSummary:
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
