"""The configuration audit log (docs/architecture.md "Configuration"): protected configuration actions
and refusals of unverified records, appended in order and never edited."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.orm import Session

from contracts.config import ConfigurationEvent
from store.schema import ConfigurationEventRow


def record_event(
    session: Session,
    kind: str,
    message: str,
    at: dt.datetime,
    *,
    actor: str | None = None,
    record_kind: str | None = None,
    record_id: str | None = None,
) -> None:
    """Append one event."""
    session.add(
        ConfigurationEventRow(
            at=at,
            kind=kind,
            actor=actor,
            record_kind=record_kind,
            record_id=record_id,
            message=message,
        )
    )
    session.flush()


def list_events(session: Session, limit: int) -> list[ConfigurationEvent]:
    """Up to ``limit`` events, newest first."""
    rows = session.scalars(
        select(ConfigurationEventRow).order_by(ConfigurationEventRow.id.desc()).limit(limit)
    )
    return [
        ConfigurationEvent(
            id=row.id,
            at=row.at,
            kind=row.kind,
            actor=row.actor,
            record_kind=row.record_kind,
            record_id=row.record_id,
            message=row.message,
        )
        for row in rows
    ]
