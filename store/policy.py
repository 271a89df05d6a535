"""The automation policy: a history of signed writes; the newest write is the policy in force (and it
must be verified: a forged newest row is refused, never skipped for an older one)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Row, Table, select
from sqlalchemy.orm import Session

from contracts.config import PolicyRecord
from contracts.enums import AutomationMode, Tier
from contracts.errors import OperatorError
from contracts.identity import RecordKind, Signer
from contracts.policy import AutomationPolicy
from store.schema import AutomationPolicyRow
from store.trust import Trust, sign_row

_POLICIES: Table = AutomationPolicyRow.__table__  # type: ignore[assignment]
# Built once and read as a plain row: every run's contract capture reads the policy in force.
_CURRENT = select(_POLICIES).order_by(_POLICIES.c.id.desc()).limit(1)


def current_policy(session: Session, trust: Trust) -> PolicyRecord:
    """The policy in force; the built-in default ``AutomationPolicy()`` when none was ever set.
    Raises ``configuration_unverified`` when the newest write is not verified."""
    row = session.execute(_CURRENT).first()
    if row is None:
        return PolicyRecord(policy=AutomationPolicy())
    trust.require(RecordKind.POLICY, [row])
    return policy_record(row)


def policy_history(session: Session, trust: Trust, limit: int) -> list[PolicyRecord]:
    """Up to ``limit`` policy writes, newest first (all verified, else ``configuration_unverified``)."""
    rows = list(
        session.scalars(select(AutomationPolicyRow).order_by(AutomationPolicyRow.id.desc()).limit(limit))
    )
    trust.require(RecordKind.POLICY, rows)
    return [policy_record(row) for row in rows]


def record_policy(
    session: Session, trust: Trust, policy: AutomationPolicy, signer: Signer, at: dt.datetime
) -> PolicyRecord:
    """Record ``policy`` as set and signed by ``signer`` at ``at``. Raises the
    :meth:`Trust.require_signer` refusals."""
    trust.require_signer(signer)
    row = AutomationPolicyRow(
        mode=policy.mode.value,
        maximum_automatic_tier=policy.maximum_automatic_tier.value,
        set_by=signer.actor_id,
        set_at=at,
    )
    session.add(row)
    session.flush()
    sign_row(RecordKind.POLICY, row, signer, at)
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
