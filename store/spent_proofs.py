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
import functools
from typing import Final

from sqlalchemy import Executable, Table, bindparam, delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from store.schema import SpentProofRow

SPENT_PROOF_RETENTION: Final = dt.timedelta(days=1)
"""How long a spent nonce is kept: far longer than a proof stays valid (15 minutes + 2 of skew)."""

_SPENT: Table = SpentProofRow.__table__  # type: ignore[assignment]
# Built once: every protected action spends a nonce, and building a statement costs more than
# running it.
_SPENDER = select(_SPENT.c.spent_by).where(_SPENT.c.nonce == bindparam("nonce"))
_PRUNE = delete(_SPENT).where(_SPENT.c.spent_at < bindparam("before"))


def spender_of(session: Session, nonce: str) -> str | None:
    """Who spent ``nonce`` (a workflow run id), or ``None`` when it was never spent (or pruned)."""
    spender: str | None = session.execute(_SPENDER, {"nonce": nonce}).scalar_one_or_none()
    return spender


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

    The insert skips a nonce stored meanwhile (``ON CONFLICT DO NOTHING``: a concurrent insert of
    the same nonce waits for the other transaction), and the row that is there decides. A new spend
    also prunes rows older than the retention.
    """
    owner = spender_of(session, nonce)
    if owner is not None:
        return owner == spent_by
    row = {
        "nonce": nonce,
        "action": action,
        "run_id": run_id,
        "actor": actor,
        "spent_by": spent_by,
        "spent_at": at,
    }
    session.execute(_insert(session.get_bind().dialect.name), row)
    if spender_of(session, nonce) != spent_by:
        return False
    prune(session, before=at - SPENT_PROOF_RETENTION)
    return True


def prune(session: Session, *, before: dt.datetime) -> int:
    """Delete the nonces spent before ``before``; the number deleted."""
    result = session.execute(_PRUNE, {"before": before}, execution_options={"synchronize_session": False})
    return int(getattr(result, "rowcount", 0) or 0)


@functools.cache
def _insert(dialect: str) -> Executable:
    """The backend's ``INSERT ... ON CONFLICT (nonce) DO NOTHING`` (SQLite or PostgreSQL)."""
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    return insert(_SPENT).on_conflict_do_nothing(index_elements=[_SPENT.c.nonce])
