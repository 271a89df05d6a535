"""Session keys in the store (SQLite and PostgreSQL): a configuration record signed by a Mission Control
session key verifies back to the person whose own key delegated it, only inside the session's window
and while that key is in force; a session that was never recorded, an edited session row or another
actor's delegation verifies nothing."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import text

from contracts.enums import Tier
from contracts.errors import OperatorError, Refused
from contracts.identity import ActorKey, Signer, sign_delegation
from contracts.policy import AutomationMode, AutomationPolicy
from contracts.proofs import SessionDelegation
from store import Store
from store.engine import writing
from tests.identity import key_of, register

GUARDED = AutomationPolicy(mode=AutomationMode.GUARDED, maximum_automatic_tier=Tier.READ_ONLY)


def _session(
    actor: Signer, *, start: dt.datetime | None = None, hours: int = 8
) -> tuple[Signer, SessionDelegation]:
    key = ActorKey.generate()
    issued = start or dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)
    delegation = sign_delegation(
        actor, session_key=key.public_key, issued_at=issued, expires_at=issued + dt.timedelta(hours=hours)
    )
    return Signer(actor.actor_id, key), delegation


def test_a_policy_signed_by_a_recorded_session_key_is_in_force_as_the_actors(
    store: Store, signer: Signer
) -> None:
    session, delegation = _session(signer)
    store.record_session(delegation)
    store.record_session(delegation)  # once: recording it again changes nothing
    written = store.set_policy(GUARDED, session)
    assert written.policy == GUARDED and written.set_by == signer.actor_id
    assert store.get_policy() == written


def test_a_session_key_that_was_never_recorded_signs_nothing(store: Store, signer: Signer) -> None:
    session, _ = _session(signer)
    with pytest.raises(Refused) as refused:
        store.set_policy(GUARDED, session)
    assert refused.value.code == "actor_key_mismatch"


def test_another_actors_key_cannot_delegate_for_an_actor(store: Store, signer: Signer) -> None:
    register(store, "bob", signer)
    key = ActorKey.generate()
    issued = dt.datetime.now(dt.UTC)
    forged = sign_delegation(
        Signer(signer.actor_id, key_of("bob")),
        session_key=key.public_key,
        issued_at=issued,
        expires_at=issued + dt.timedelta(hours=1),
    )
    with pytest.raises(Refused) as refused:
        store.record_session(forged)
    assert refused.value.code == "actor_key_mismatch"


def test_an_ended_session_is_not_recorded(store: Store, signer: Signer) -> None:
    _, ended = _session(signer, start=dt.datetime.now(dt.UTC) - dt.timedelta(hours=9))
    with pytest.raises(Refused) as refused:
        store.record_session(ended)
    assert refused.value.code == "session_expired"


def test_an_edited_session_row_makes_what_it_signed_unverified(store: Store, signer: Signer) -> None:
    session, delegation = _session(signer, hours=1)
    store.record_session(delegation)
    store.set_policy(GUARDED, session)
    with writing(store.engine).begin() as connection:
        connection.execute(text("UPDATE session_keys SET expires_at = issued_at + interval '1 day'")) if (
            connection.dialect.name == "postgresql"
        ) else connection.execute(text("UPDATE session_keys SET expires_at = '2999-01-01 00:00:00.000000'"))
    with pytest.raises(OperatorError) as unverified:
        store.get_policy()
    assert unverified.value.code == "configuration_unverified"
    assert "session key" in unverified.value.message


def test_rotating_the_actors_key_ends_its_sessions_and_keeps_what_they_signed(
    store: Store, signer: Signer
) -> None:
    session, delegation = _session(signer)
    store.record_session(delegation)
    written = store.set_policy(GUARDED, session)
    store.rotate_actor_key(signer, ActorKey.generate())
    assert store.get_policy() == written  # signed while the delegating key was in force
    with pytest.raises(Refused) as refused:
        store.set_policy(AutomationPolicy(), session)
    assert refused.value.code in ("actor_key_mismatch", "actor_key_retired")
