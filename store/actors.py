"""Registered human actors and their keys (docs/architecture.md "Protected actions", "Configuration").

The first actor is the deployment's **trust root**: it is registered with the action token
(:func:`bootstrap_actor`), and its first key carries the token's HMAC. Every later actor is registered
by an active actor, who signs its row and its first key (:func:`register_actor`). An actor replaces
its own key with one signed by the old one (:func:`rotate_key`); any active actor deactivates another
(:func:`deactivate_actor`), except the last active one. Rows are never deleted: history stays.
"""

from __future__ import annotations

import datetime as dt
import unicodedata
from typing import Any, Final

from pydantic import TypeAdapter, ValidationError
from sqlalchemy import bindparam, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from contracts.config import ActorId, ActorKeyRecord, ActorRecord
from contracts.errors import InvalidInput, NotFound, Refused
from contracts.identity import (
    ActorKey,
    KeyMaterialError,
    RecordKind,
    Signer,
    anchor_mac,
    fingerprint_of,
    load_public_key,
)
from contracts.refusals import RefusalCode
from store.schema import ACTOR_NAME_LENGTH, ActorKeyRow, ActorRow
from store.trust import ActorState, Trust, record_message, sign_row

_ACTOR_ID: Final = TypeAdapter(ActorId)


def check_actor_id(actor_id: str) -> str:
    """Return ``actor_id`` if it is a well-formed actor id, else raise ``invalid_actor_id``."""
    try:
        _ACTOR_ID.validate_python(actor_id, strict=True)
    except ValidationError as exc:
        raise InvalidInput(
            "invalid_actor_id",
            f"actor id {actor_id!r} must be 1..64 lower-case letters, digits or '._@-', starting "
            "with a letter or digit",
        ) from exc
    return actor_id


def check_actor_name(name: str) -> str:
    """Return ``name`` if it is 1..120 characters, not blank, without control characters."""
    if not 1 <= len(name) <= ACTOR_NAME_LENGTH or not name.strip():
        raise InvalidInput(
            "invalid_actor_name", f"actor name must be 1..{ACTOR_NAME_LENGTH} characters, not blank"
        )
    if any(unicodedata.category(c).startswith("C") for c in name):
        raise InvalidInput("invalid_actor_name", "actor name must not contain control characters")
    return name


def check_public_key(public_key: str) -> str:
    """Return ``public_key`` if it is a stored Ed25519 public key, else raise ``invalid_public_key``."""
    try:
        load_public_key(public_key)
    except KeyMaterialError:
        raise InvalidInput("invalid_public_key", "the public key is not an Ed25519 public key") from None
    return public_key


# Built once: research writes ask whether their actor is registered.
_REGISTERED = select(ActorRow.id).where(ActorRow.id == bindparam("actor_id"))


def actor_exists(session: Session, actor_id: str) -> bool:
    """Whether a row for ``actor_id`` exists (verified or not: see :meth:`Trust.actor`)."""
    return session.execute(_REGISTERED, {"actor_id": actor_id}).first() is not None


def require_actor(session: Session, actor_id: str) -> None:
    """Raise ``unknown_actor`` (not found) unless a row for ``actor_id`` exists."""
    if not actor_exists(session, actor_id):
        raise NotFound(
            "unknown_actor",
            f"actor {actor_id!r} is not registered: a registered actor must register it first",
        )


def _new_key_row(session: Session, actor_id: str, public_key: str, at: dt.datetime) -> ActorKeyRow:
    fingerprint = fingerprint_of(public_key)
    if session.get(ActorKeyRow, fingerprint) is not None:
        raise Refused("duplicate_key", f"the key {fingerprint[:16]}… is already registered")
    row = ActorKeyRow(fingerprint=fingerprint, actor_id=actor_id, public_key=public_key, added_at=at)
    session.add(row)
    return row


def _new_actor_row(actor_id: str, name: str, by: str | None, at: dt.datetime) -> ActorRow:
    return ActorRow(
        id=actor_id,
        name=name,
        registered_by=by,
        registered_at=at,
        active=True,
        deactivated_by=None,
        deactivated_at=None,
    )


def _flush(session: Session, actor_id: str) -> None:
    try:
        session.flush()
    except IntegrityError as exc:
        raise Refused("duplicate_actor", f"actor {actor_id!r} is already registered") from exc


def bootstrap_actor(
    session: Session, actor_id: str, name: str, key: ActorKey, token: bytes, at: dt.datetime
) -> None:
    """Register the first actor, the trust root, holding ``key``; its first key carries the HMAC of
    the action ``token``. Raises ``actor_required`` (invalid input) when any actor exists already."""
    check_actor_id(actor_id)
    check_actor_name(name)
    if session.scalar(select(func.count()).select_from(ActorRow)):
        raise InvalidInput(
            "actor_required",
            "only the first actor registers without --actor: give the registered actor who "
            "registers this one",
        )
    signer = Signer(actor_id, key)
    actor = _new_actor_row(actor_id, name, None, at)
    session.add(actor)
    _flush(session, actor_id)
    key_row = _new_key_row(session, actor_id, key.public_key, at)
    sign_row(RecordKind.ACTOR_KEY, key_row, signer, at)
    anchor_key(key_row, token)
    sign_row(RecordKind.ACTOR, actor, signer, at)
    session.flush()


def anchor_key(key_row: ActorKeyRow, token: bytes) -> None:
    """Make the signed, self-signed ``key_row`` the trust root of the deployment holding ``token``."""
    message = record_message(RecordKind.ACTOR_KEY, key_row)
    assert message is not None
    key_row.anchor = anchor_mac(token, message)


def register_actor(
    session: Session, trust: Trust, actor_id: str, name: str, public_key: str, signer: Signer, at: dt.datetime
) -> None:
    """Register ``actor_id`` holding ``public_key``, signed by ``signer`` (an active actor acting with
    its key in force). Raises ``invalid_actor_id``/``invalid_actor_name``/``invalid_public_key``
    (invalid input), the :meth:`Trust.require_signer` refusals, or ``duplicate_actor`` /
    ``duplicate_key`` (refused); nothing is written then."""
    check_actor_id(actor_id)
    check_actor_name(name)
    check_public_key(public_key)
    trust.require_signer(signer)
    if actor_exists(session, actor_id):
        raise Refused("duplicate_actor", f"actor {actor_id!r} is already registered")
    actor = _new_actor_row(actor_id, name, signer.actor_id, at)
    sign_row(RecordKind.ACTOR, actor, signer, at)
    session.add(actor)
    _flush(session, actor_id)
    issue_key(session, actor_id, public_key, signer, at)


def issue_key(session: Session, actor_id: str, public_key: str, signer: Signer, at: dt.datetime) -> None:
    """Add ``public_key`` as the key in force of ``actor_id``, signed by ``signer`` (the registering
    or attesting actor, or ``actor_id`` itself with its previous key)."""
    row = _new_key_row(session, actor_id, check_public_key(public_key), at)
    sign_row(RecordKind.ACTOR_KEY, row, signer, at)
    session.flush()


def rotate_key(session: Session, trust: Trust, signer: Signer, new_public_key: str, at: dt.datetime) -> None:
    """Replace the signer's key with ``new_public_key``, signed by the old key (which is retired from
    now on). Raises the :meth:`Trust.require_signer` refusals or ``duplicate_key``."""
    trust.require_signer(signer)
    issue_key(session, signer.actor_id, new_public_key, signer, at)


def deactivate_actor(session: Session, trust: Trust, actor_id: str, signer: Signer, at: dt.datetime) -> None:
    """Deactivate ``actor_id`` as ``signer``. The row stays (re-signed by ``signer``); from ``at`` on
    the actor's proofs are refused and it signs nothing. Raises ``unknown_actor`` (not found),
    ``actor_deactivated`` (already), ``last_active_actor`` (it is the only active actor) or the
    :meth:`Trust.require_signer` refusals; nothing is written then."""
    trust.require_signer(signer)
    state = trust.actor(actor_id)
    if state is None:
        raise NotFound("unknown_actor", f"actor {actor_id!r} is not registered")
    if not state.active:
        raise Refused(
            RefusalCode.ACTOR_DEACTIVATED,
            f"actor {actor_id!r} was already deactivated by {state.row.deactivated_by}",
        )
    others = [
        other
        for other in trust.actor_rows
        if other != actor_id
        and (other_state := _state_or_none(trust, other)) is not None
        and other_state.active
    ]
    if not others:
        raise Refused(
            "last_active_actor",
            f"actor {actor_id!r} is the only active actor: register another actor before deactivating it "
            "(a deployment without an active actor could change nothing)",
        )
    row = session.get(ActorRow, actor_id)
    assert row is not None
    row.active = False
    row.deactivated_by = signer.actor_id
    row.deactivated_at = at
    sign_row(RecordKind.ACTOR, row, signer, at)
    session.flush()


def _state_or_none(trust: Trust, actor_id: str) -> ActorState | None:
    """The verified state of ``actor_id``, or ``None`` when its row is not verified."""
    from store.trust import ConfigurationUnverified

    try:
        return trust.actor(actor_id)
    except ConfigurationUnverified:
        return None


def list_actors(trust: Trust) -> list[ActorRecord]:
    """Every actor, in order of registration, with its keys. Raises ``configuration_unverified``
    naming every actor or key row that is not verified."""
    rows = sorted(trust.actor_rows.values(), key=lambda row: (row.registered_at, row.id))
    trust.require(RecordKind.ACTOR, rows)
    trust.require(RecordKind.ACTOR_KEY, [key for row in rows for key in trust.keys_of(row.id)])
    return [actor_record(trust, row) for row in rows]


def actor_record(trust: Trust, row: Any) -> ActorRecord:
    """The contract record of a verified actor row, with its verified keys."""
    keys = trust.verified_keys(row.id)
    return ActorRecord(
        id=row.id,
        name=row.name,
        registered_by=row.registered_by,
        registered_at=row.registered_at,
        active=bool(row.active),
        deactivated_by=row.deactivated_by,
        deactivated_at=row.deactivated_at,
        key_fingerprint=keys[-1].fingerprint if keys else None,
        keys=tuple(
            ActorKeyRecord(
                fingerprint=key.fingerprint,
                public_key=key.public_key,
                added_at=key.added_at,
                added_by=key.signed_by,
                retired_at=trust.retired_at(key),
            )
            for key in keys
        ),
    )
