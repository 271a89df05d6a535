"""The operator's model selection: a history of selections; the newest is the one in force."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Row, Table, select
from sqlalchemy.orm import Session

from contracts.enums import FallbackMode
from contracts.errors import OperatorError
from contracts.identity import RecordKind, Signer
from contracts.models import ModelSelection, ModelSelectionRecord
from store.schema import ModelSelectionRow
from store.trust import Trust, sign_row

_SELECTIONS: Table = ModelSelectionRow.__table__  # type: ignore[assignment]
# Built once and read as a plain row: every run's contract capture reads the selection in force.
_CURRENT = select(_SELECTIONS).order_by(_SELECTIONS.c.id.desc()).limit(1)


def current_selection(session: Session, trust: Trust) -> ModelSelectionRecord | None:
    """The selection in force, or ``None`` when no model was ever selected. Raises
    ``configuration_unverified`` when the newest selection is not verified."""
    row = session.execute(_CURRENT).first()
    if row is None:
        return None
    trust.require(RecordKind.MODEL_SELECTION, [row])
    return selection_record(row)


def selection_history(session: Session, trust: Trust, limit: int) -> list[ModelSelectionRecord]:
    """Up to ``limit`` selections, newest first (all verified, else ``configuration_unverified``)."""
    rows = list(session.scalars(select(ModelSelectionRow).order_by(ModelSelectionRow.id.desc()).limit(limit)))
    trust.require(RecordKind.MODEL_SELECTION, rows)
    return [selection_record(row) for row in rows]


def record_selection(
    session: Session, trust: Trust, selection: ModelSelection, signer: Signer, at: dt.datetime
) -> ModelSelectionRecord:
    """Record ``selection`` made and signed by ``signer`` at ``at``. Raises the
    :meth:`Trust.require_signer` refusals."""
    trust.require_signer(signer)
    row = ModelSelectionRow(
        primary=selection.primary,
        fallbacks=list(selection.fallbacks),
        fallback_mode=selection.fallback_mode.value,
        support=selection.support,
        advisory=selection.advisory,
        efforts={str(c): str(e) for c, e in selection.efforts.items()} or None,
        selected_by=signer.actor_id,
        selected_at=at,
    )
    session.add(row)
    session.flush()
    sign_row(RecordKind.MODEL_SELECTION, row, signer, at)
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
            advisory=row.advisory,
            efforts=dict(row.efforts or {}),
        )
    except (ValueError, TypeError, ValidationError) as exc:
        raise OperatorError(
            "stored_model_selection_invalid",
            f"the stored model selection (write {row.id}) is not valid: {exc}; select models again",
        ) from exc
    return ModelSelectionRecord(selection=selection, selected_by=row.selected_by, selected_at=row.selected_at)
