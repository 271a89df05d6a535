"""Spent nonces of proofs of the action token (``contracts.proofs``): each is accepted once.

The authorisation activity spends a proof's nonce here after the proof verified. The first Temporal
workflow execution to spend it owns it (``spent_by``: its run id); the same execution may spend it
again (an activity retried after its write committed), any other execution is refused. So a proof
copied out of one workflow's history does not authorise a new execution of the same workflow id.

A proof is valid for :data:`contracts.proofs.PROOF_MAX_AGE` (plus the clock skew), so a row older
than :data:`SPENT_PROOF_RETENTION` can no longer stop anything: rows past it are pruned in the
transaction of every new spend, which keeps the table at about a day's worth of protected actions.
"""

from __future__ import annotations

import datetime as dt
from typing import Final

from sqlalchemy import delete
from sqlalchemy.orm import Session

from store.schema import SpentProofRow

SPENT_PROOF_RETENTION: Final = dt.timedelta(days=1)
"""How long a spent nonce is kept: far longer than a proof stays valid (15 minutes + 2 of skew)."""


def spender_of(session: Session, nonce: str) -> str | None:
    """Who spent ``nonce`` (a workflow run id), or ``None`` when it was never spent (or pruned)."""
    row = session.get(SpentProofRow, nonce)
    return None if row is None else row.spent_by


def spend(
    session: Session,
    nonce: str,
    *,
    action: str,
    run_id: str,
    actor: str,
    spent_by: str,
    at: dt.datetime,
) -> bool:
    """Spend ``nonce`` for ``spent_by``; ``False`` when another execution spent it first.

    A new row is flushed, so a concurrent insert of the same nonce raises ``IntegrityError`` here or
    at commit; the caller re-reads then. A new spend also prunes rows older than the retention.
    """
    owner = spender_of(session, nonce)
    if owner is not None:
        return owner == spent_by
    session.add(
        SpentProofRow(nonce=nonce, action=action, run_id=run_id, actor=actor, spent_by=spent_by, spent_at=at)
    )
    session.flush()
    prune(session, before=at - SPENT_PROOF_RETENTION)
    return True


def prune(session: Session, *, before: dt.datetime) -> int:
    """Delete the nonces spent before ``before``; the number deleted."""
    result = session.execute(
        delete(SpentProofRow)
        .where(SpentProofRow.spent_at < before)
        .execution_options(synchronize_session=False)
    )
    return int(getattr(result, "rowcount", 0) or 0)
