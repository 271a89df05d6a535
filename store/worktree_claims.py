"""Worktree claims: the worker running each execution attempt of a run, so no two workers run the same one.

A worker claims (run id, execution attempt) before it creates the attempt's worktree. The claim is the
row's primary key: the insert of a second claim fails on the key (also when two processes insert at
once, whatever the isolation level), and that failure is the refusal. There is no read before the
insert, so no window between a check and a write. Claims are never released or rewritten.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Final

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from contracts.errors import InvalidInput, Refused
from contracts.worktree import WorktreeClaim
from store.schema import WORKER_LENGTH, WorktreeClaimRow

RUN_ID_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A run id a claim accepts (whole string): 1..64 letters, digits, ``_`` or ``-``."""


def check_claim(run_id: str, execution_attempt: int, worker: str, worktree_attempt: int) -> None:
    """Validate a claim's inputs; nothing is read or written.

    Raises :class:`InvalidInput`: ``invalid_run_id`` (not 1..64 letters, digits, ``_`` or ``-``),
    ``invalid_execution_attempt`` or ``invalid_worktree_attempt`` (not an integer >= 1), or
    ``invalid_worker`` (empty, blank, or longer than 200 characters).
    """
    check_run_id(run_id)
    _check_attempt(execution_attempt, "invalid_execution_attempt", "execution attempt")
    _check_attempt(worktree_attempt, "invalid_worktree_attempt", "worktree attempt")
    if not isinstance(worker, str) or not worker.strip():
        raise InvalidInput(
            "invalid_worker", f"the worker identity must be a non-empty string, not {worker!r}"
        )
    if len(worker) > WORKER_LENGTH:
        raise InvalidInput(
            "invalid_worker",
            f"the worker identity has {len(worker)} characters; at most {WORKER_LENGTH} are allowed",
        )


def check_run_id(run_id: str) -> str:
    """Return ``run_id`` if it matches ``^[A-Za-z0-9_-]{1,64}$``, else raise ``invalid_run_id``."""
    if not isinstance(run_id, str) or not RUN_ID_PATTERN.fullmatch(run_id):
        raise InvalidInput("invalid_run_id", f"run id {run_id!r} must be 1..64 letters, digits, '_' or '-'")
    return run_id


def claim_worktree_attempt(
    session: Session,
    run_id: str,
    execution_attempt: int,
    worker: str,
    worktree_attempt: int,
    at: dt.datetime,
) -> WorktreeClaim:
    """Claim ``execution_attempt`` of ``run_id`` for ``worker``, running it in ``worktree_attempt``.

    Inputs are validated first (see :func:`check_claim`); ``at`` (timezone-aware) is the claim time.
    Returns the claim recorded. The insert runs in a savepoint of ``session``, so a refused claim
    leaves the rest of the caller's transaction usable. Raises :class:`InvalidInput` (nothing is
    written) or :class:`Refused` ``attempt_claimed`` naming the run, the execution attempt and the
    worker holding it when the pair is already claimed, by this or any concurrent process.
    """
    check_claim(run_id, execution_attempt, worker, worktree_attempt)
    row = WorktreeClaimRow(
        run_id=run_id,
        execution_attempt=execution_attempt,
        worker=worker,
        worktree_attempt=worktree_attempt,
        claimed_at=at,
    )
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError:
        holder = claim_holder(session, run_id, execution_attempt)
        if holder is None:  # Not the key (inputs are checked): let the database's reason through.
            raise
        raise _claimed(holder) from None
    return claim_record(row)


def claim_holder(session: Session, run_id: str, execution_attempt: int) -> WorktreeClaim | None:
    """The claim on ``execution_attempt`` of ``run_id``, or ``None`` when it is unclaimed."""
    row = session.get(WorktreeClaimRow, (run_id, execution_attempt))
    return None if row is None else claim_record(row)


def list_worktree_claims(session: Session, run_id: str) -> list[WorktreeClaim]:
    """The claims of ``run_id`` by execution attempt (empty when none). Raises ``invalid_run_id``."""
    check_run_id(run_id)
    rows = session.scalars(
        select(WorktreeClaimRow)
        .where(WorktreeClaimRow.run_id == run_id)
        .order_by(WorktreeClaimRow.execution_attempt)
    )
    return [claim_record(row) for row in rows]


def claim_record(row: WorktreeClaimRow) -> WorktreeClaim:
    """The contract record of a stored claim."""
    return WorktreeClaim(
        run_id=row.run_id,
        execution_attempt=row.execution_attempt,
        worker=row.worker,
        worktree_attempt=row.worktree_attempt,
        claimed_at=row.claimed_at,
    )


def _check_attempt(value: int, code: str, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(code, f"the {what} must be an integer of at least 1, not {value!r}")


def _claimed(holder: WorktreeClaim) -> Refused:
    return Refused(
        "attempt_claimed",
        f"execution attempt {holder.execution_attempt} of run {holder.run_id!r} is already claimed by "
        f"worker {holder.worker!r} (worktree attempt {holder.worktree_attempt}, since "
        f"{holder.claimed_at.isoformat()})",
    )
