"""Session keys in the store (docs/architecture.md "Signed configuration"): the delegation a person's
own key signed for a Mission Control session, recorded so that configuration records the session key
signs verify back to the person (:meth:`store.trust.Trust.session_problem`)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy.orm import Session

from contracts.errors import NotFound, Refused
from contracts.identity import delegation_in_force, delegation_problem, fingerprint_of
from contracts.proofs import SessionDelegation
from contracts.refusals import RefusalCode
from store.schema import SessionKeyRow
from store.trust import Trust


def record_session(session: Session, trust: Trust, delegation: SessionDelegation, at: dt.datetime) -> None:
    """Record ``delegation`` (once; recording the same one again changes nothing). Raises
    ``unknown_actor``, ``actor_deactivated``, ``configuration_unverified``, ``actor_key_retired`` /
    ``actor_key_mismatch`` (not the actor's key in force), ``proof_invalid`` (the delegation does not
    verify, or another one holds the session key) or ``session_expired``; nothing is written then."""
    state = trust.actor(delegation.actor)
    if state is None:
        raise NotFound(RefusalCode.UNKNOWN_ACTOR, f"actor {delegation.actor!r} is not registered")
    if not state.active:
        raise Refused(RefusalCode.ACTOR_DEACTIVATED, f"actor {delegation.actor!r} was deactivated")
    mismatch = trust.key_mismatch(state, delegation.actor_key)
    if mismatch is not None:
        raise Refused(*mismatch)
    assert state.current_key is not None  # no mismatch: the actor has a key in force, and it is that one
    problem = delegation_problem(delegation, state.current_key.public_key)
    if problem is not None:
        raise Refused(RefusalCode.PROOF_INVALID, problem)
    if not delegation_in_force(delegation, at):
        raise Refused(RefusalCode.SESSION_EXPIRED, "the session's window is over: sign in again")
    fingerprint = fingerprint_of(delegation.session_key)
    existing = session.get(SessionKeyRow, fingerprint)
    if existing is not None:
        if existing.signature != delegation.signature or existing.actor_id != delegation.actor:
            raise Refused(RefusalCode.PROOF_INVALID, "another delegation already holds this session key")
        return
    session.add(
        SessionKeyRow(
            fingerprint=fingerprint,
            actor_id=delegation.actor,
            actor_key=delegation.actor_key,
            public_key=delegation.session_key,
            issued_at=delegation.issued_at,
            expires_at=delegation.expires_at,
            signature=delegation.signature,
        )
    )
    session.flush()
