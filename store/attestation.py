"""Attesting configuration records that carry no valid signature (docs/architecture.md
"Configuration"): rows written before signed configuration existed, or changed outside specialists.

``specialists configuration attest --actor ID`` shows them (:func:`unverified_records`) and, when
confirmed, signs each as ``ID`` (:func:`attest`). In a deployment whose actors hold no key yet (one
migrated from before per-person keys), the attesting actor first becomes the trust root with the
action token, and every actor without a key is issued one. Actor keys themselves are never attested:
a key row that is not verified stays unused (remove it by hand).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, Final

from sqlalchemy import select
from sqlalchemy.orm import Session

from contracts.config import UnverifiedRecord
from contracts.errors import InvalidInput, NotFound, Refused
from contracts.identity import RecordKind, Signer
from store.actors import anchor_key, issue_key
from store.schema import (
    ActorKeyRow,
    ActorRow,
    AutomationPolicyRow,
    ModelRow,
    ModelSelectionRow,
    RepositoryRow,
)
from store.trust import Trust, record_id, sign_row

_TABLES: Final[tuple[tuple[RecordKind, Any, Any], ...]] = (
    (RecordKind.ACTOR, ActorRow, ActorRow.registered_at),
    (RecordKind.ACTOR_KEY, ActorKeyRow, ActorKeyRow.added_at),
    (RecordKind.POLICY, AutomationPolicyRow, AutomationPolicyRow.id),
    (RecordKind.MODEL_SELECTION, ModelSelectionRow, ModelSelectionRow.id),
    (RecordKind.MODEL, ModelRow, ModelRow.id),
    (RecordKind.REPOSITORY, RepositoryRow, RepositoryRow.alias),
)


def summary(kind: RecordKind, row: Any) -> str:
    """One line of what the record says, for the operator who decides whether to attest it."""
    if kind is RecordKind.ACTOR:
        state = "active" if row.active else f"deactivated by {row.deactivated_by}"
        return f"{row.name!r}, registered by {row.registered_by or '(first actor)'}, {state}"
    if kind is RecordKind.ACTOR_KEY:
        return f"key of {row.actor_id!r} added {row.added_at.isoformat()}"
    if kind is RecordKind.POLICY:
        return f"mode {row.mode}, ceiling {row.maximum_automatic_tier}, set by {row.set_by}"
    if kind is RecordKind.MODEL_SELECTION:
        chain = ", ".join([row.primary, *row.fallbacks])
        return (
            f"{chain} ({row.fallback_mode}), support {row.support or '-'}, "
            f"advisory {row.advisory or '-'}, by {row.selected_by}"
        )
    if kind is RecordKind.MODEL:
        endpoint = row.base_url or "provider default"
        return f"{endpoint}, key variable {row.api_key_env or '-'}, ceiling {row.ceiling}"
    return f"{row.path} (branch {row.default_branch}), executor {row.config.get('executor', '?')}"


def unverified_rows(session: Session, trust: Trust) -> list[tuple[RecordKind, Any, str]]:
    """Every configuration row that is not verified, with why: actors, keys, policy writes, model
    selections, models and repositories, in that order."""
    found = []
    for kind, table, order in _TABLES:
        for row in session.scalars(select(table).order_by(order)):
            problem = trust.problem(kind, row)
            if problem is not None:
                found.append((kind, row, problem.reason))
    return found


def unverified_records(session: Session, trust: Trust) -> list[UnverifiedRecord]:
    """:func:`unverified_rows` as contract records."""
    return [
        UnverifiedRecord(kind=kind.value, id=record_id(kind, row), reason=reason, summary=summary(kind, row))
        for kind, row, reason in unverified_rows(session, trust)
    ]


def needs_bootstrap(session: Session, trust: Trust) -> bool:
    """Whether no actor holds a verified key yet (a deployment migrated from before per-person keys)."""
    return not any(trust.key_problem(key.fingerprint) is None for key in session.scalars(select(ActorKeyRow)))


def attest(
    session: Session,
    make_trust: Any,
    signer: Signer,
    at: dt.datetime,
    *,
    token: bytes | None,
    issue: Mapping[str, str],
) -> list[UnverifiedRecord]:
    """Sign every unverified record (except actor keys) as ``signer``; returns what was signed.

    When no actor holds a verified key (:func:`needs_bootstrap`), ``signer`` becomes the trust root
    first (its key is anchored with ``token``, which is then required). ``issue`` maps actors holding
    no verified key to the public key each is given (signed by ``signer``). Raises ``unknown_actor``
    (not found), ``action_token_missing``, ``issue_keys_mismatch`` (``issue`` is not exactly the
    actors without a key) or the :meth:`Trust.require_signer` refusals; nothing is written then.
    """
    trust: Trust = make_trust()
    shown = {(kind, record_id(kind, row)): reason for kind, row, reason in unverified_rows(session, trust)}
    row = session.get(ActorRow, signer.actor_id)
    if row is None:
        raise NotFound("unknown_actor", f"actor {signer.actor_id!r} is not registered")
    if needs_bootstrap(session, trust):
        if token is None:
            raise Refused(
                "action_token_missing",
                "no actor holds a key yet: the first attestation makes its actor the trust root and "
                "needs the deployment's action token (SPECIALISTS_ACTION_TOKEN[_FILE])",
            )
        if not row.active:
            raise Refused("actor_deactivated", f"actor {signer.actor_id!r} is deactivated")
        key = ActorKeyRow(
            fingerprint=signer.fingerprint,
            actor_id=signer.actor_id,
            public_key=signer.key.public_key,
            added_at=at,
        )
        sign_row(RecordKind.ACTOR_KEY, key, signer, at)
        anchor_key(key, token)
        session.add(key)
        sign_row(RecordKind.ACTOR, row, signer, at)
        session.flush()
        trust = make_trust()
    elif trust.problem(RecordKind.ACTOR, row) is not None:
        raise Refused(
            "configuration_unverified",
            f"actor {signer.actor_id!r} is not verified itself: another actor must attest it",
        )
    trust.require_signer(signer)
    pending = unverified_rows(session, trust)
    for kind, pending_row, _ in pending:
        if kind is not RecordKind.ACTOR_KEY:
            sign_row(kind, pending_row, signer, at)
    session.flush()
    # What was shown before (the attesting actor's own row included, signed first when it became
    # the trust root) and what was still unverified then, except keys.
    for kind, pending_row, reason in pending:
        shown.setdefault((kind, record_id(kind, pending_row)), reason)
    signed = []
    for kind, table, order in _TABLES:
        if kind is RecordKind.ACTOR_KEY:
            continue
        for stored in session.scalars(select(table).order_by(order)):
            shown_reason = shown.get((kind, record_id(kind, stored)))
            if shown_reason is not None:
                signed.append(
                    UnverifiedRecord(
                        kind=kind.value,
                        id=record_id(kind, stored),
                        reason=shown_reason,
                        summary=summary(kind, stored),
                    )
                )
    trust = make_trust()
    keyless = sorted(
        actor_id
        for actor_id in trust.actor_rows
        if not trust.verified_keys(actor_id)
        and trust.problem(RecordKind.ACTOR, trust.actor_rows[actor_id]) is None
    )
    if sorted(issue) != keyless:
        raise InvalidInput(
            "issue_keys_mismatch",
            f"the actors without a key are {', '.join(keyless) or 'none'}; keys were made for "
            f"{', '.join(sorted(issue)) or 'none'}",
        )
    for actor_id in keyless:
        issue_key(session, actor_id, issue[actor_id], signer, at)
    return signed


def keyless_actors(session: Session, trust: Trust) -> list[str]:
    """Actors (by id) that hold no verified key: after an attestation each is issued one."""
    return sorted(actor_id for actor_id in trust.actor_rows if not trust.verified_keys(actor_id))
