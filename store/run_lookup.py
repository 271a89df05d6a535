"""Reading the run projection by id (the statuses worktree housekeeping needs, the last projected
state ``show`` falls back to) and counting the runs it shows active (``specialists status``)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from contracts.runs import TERMINAL_STATUSES, AuditEvent, RunSummary
from store.engine import database_errors
from store.runs import run_events, run_summary
from store.schema import RunRow
from store.store import Store


def projected_statuses(store: Store, run_ids: Iterable[str]) -> dict[str, str]:
    """The projected status of each of ``run_ids`` the projection knows (others are left out).

    Raises :class:`contracts.errors.ServiceUnavailable` when the database cannot be reached.
    """
    wanted = sorted(set(run_ids))
    if not wanted:
        return {}
    with database_errors(store.engine.url), Session(store.engine) as session:
        rows = session.execute(select(RunRow.run_id, RunRow.status).where(RunRow.run_id.in_(wanted)))
        return {run_id: status for run_id, status in rows}


def projected_status(store: Store, run_id: str) -> str | None:
    """The projected status of ``run_id``, or ``None`` when the projection does not know it."""
    return projected_statuses(store, [run_id]).get(run_id)


def active_run_count(store: Store) -> int:
    """How many runs the projection shows in a status that is not final (``TERMINAL_STATUSES``).

    Raises :class:`contracts.errors.ServiceUnavailable` when the database cannot be reached.
    """
    final = sorted(status.value for status in TERMINAL_STATUSES)
    with database_errors(store.engine.url), Session(store.engine) as session:
        count = session.scalar(select(func.count()).select_from(RunRow).where(RunRow.status.not_in(final)))
        return int(count or 0)


def projected_run(store: Store, run_id: str) -> tuple[RunSummary, list[AuditEvent]] | None:
    """The run's last projected summary and the audit events projected with it, or ``None`` when
    the projection does not know the run. Raises :class:`contracts.errors.ServiceUnavailable` when
    the database cannot be reached."""
    with database_errors(store.engine.url), Session(store.engine) as session:
        row = session.get(RunRow, run_id)
        if row is None:
            return None
        return run_summary(row), run_events(session, run_id)
