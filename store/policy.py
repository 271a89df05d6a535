"""The automation policy: a history of writes; the newest write is the policy in force."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Row, Table, select
from sqlalchemy.orm import Session

from contracts.config import PolicyRecord
from contracts.enums import AutomationMode, Tier
from contracts.errors import OperatorError
from contracts.policy import AutomationPolicy
from store.actors import require_actor
from store.schema import AutomationPolicyRow

_POLICIES: Table = AutomationPolicyRow.__table__  # type: ignore[assignment]
# Built once and read as a plain row: every run's contract capture reads the policy in force.
_CURRENT = select(_POLICIES).order_by(_POLICIES.c.id.desc()).limit(1)


def current_policy(session: Session) -> PolicyRecord:
    """The policy in force; the built-in default ``AutomationPolicy()`` when none was ever set."""
    row = session.execute(_CURRENT).first()
    return PolicyRecord(policy=AutomationPolicy()) if row is None else policy_record(row)


def policy_history(session: Session, limit: int) -> list[PolicyRecord]:
    """Up to ``limit`` policy writes, newest first."""
    rows = session.scalars(select(AutomationPolicyRow).order_by(AutomationPolicyRow.id.desc()).limit(limit))
    return [policy_record(row) for row in rows]


def record_policy(session: Session, policy: AutomationPolicy, actor: str, at: dt.datetime) -> PolicyRecord:
    """Record ``policy`` as set by ``actor`` at ``at``. Raises ``unknown_actor`` (not found)."""
    require_actor(session, actor)
    row = AutomationPolicyRow(
        mode=policy.mode.value,
        maximum_automatic_tier=policy.maximum_automatic_tier.value,
        set_by=actor,
        set_at=at,
    )
    session.add(row)
    session.flush()
    return policy_record(row)


def policy_record(row: AutomationPolicyRow | Row[Any]) -> PolicyRecord:
    """The contract record of a stored policy write.

    A stored row the policy rules refuse (edited by hand, say) is an error, never read as some
    other policy.
    """
    try:
        policy = AutomationPolicy(
            mode=AutomationMode(row.mode), maximum_automatic_tier=Tier(row.maximum_automatic_tier)
        )
    except (ValueError, ValidationError) as exc:
        raise OperatorError(
            "stored_policy_invalid",
            f"the stored automation policy (write {row.id}) is not a valid policy: {exc}; set the "
            "policy again",
        ) from exc
    return PolicyRecord(policy=policy, set_by=row.set_by, set_at=row.set_at)
