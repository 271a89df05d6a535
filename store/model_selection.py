"""The operator's model selection: a history of selections; the newest is the one in force."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Row, Table, select
from sqlalchemy.orm import Session

from contracts.enums import FallbackMode
from contracts.errors import OperatorError
from contracts.models import ModelSelection, ModelSelectionRecord
from store.actors import require_actor
from store.schema import ModelSelectionRow

_SELECTIONS: Table = ModelSelectionRow.__table__  # type: ignore[assignment]
# Built once and read as a plain row: every run's contract capture reads the selection in force.
_CURRENT = select(_SELECTIONS).order_by(_SELECTIONS.c.id.desc()).limit(1)


def current_selection(session: Session) -> ModelSelectionRecord | None:
    """The selection in force, or ``None`` when no model was ever selected."""
    row = session.execute(_CURRENT).first()
    return None if row is None else selection_record(row)


def selection_history(session: Session, limit: int) -> list[ModelSelectionRecord]:
    """Up to ``limit`` selections, newest first."""
    rows = session.scalars(select(ModelSelectionRow).order_by(ModelSelectionRow.id.desc()).limit(limit))
    return [selection_record(row) for row in rows]


def record_selection(
    session: Session, selection: ModelSelection, actor: str, at: dt.datetime
) -> ModelSelectionRecord:
    """Record ``selection`` made by ``actor`` at ``at``. Raises ``unknown_actor`` (not found)."""
    require_actor(session, actor)
    row = ModelSelectionRow(
        primary=selection.primary,
        fallbacks=list(selection.fallbacks),
        fallback_mode=selection.fallback_mode.value,
        support=selection.support,
        selected_by=actor,
        selected_at=at,
    )
    session.add(row)
    session.flush()
    return selection_record(row)


def selection_record(row: ModelSelectionRow | Row[Any]) -> ModelSelectionRecord:
    """The contract record of a stored selection; a stored row that is not a valid selection is an
    error, never silently repaired."""
    try:
        selection = ModelSelection(
            primary=row.primary,
            fallbacks=list(row.fallbacks),
            fallback_mode=FallbackMode(row.fallback_mode),
            support=row.support,
        )
    except (ValueError, TypeError, ValidationError) as exc:
        raise OperatorError(
            "stored_model_selection_invalid",
            f"the stored model selection (write {row.id}) is not valid: {exc}; select models again",
        ) from exc
    return ModelSelectionRecord(selection=selection, selected_by=row.selected_by, selected_at=row.selected_at)
