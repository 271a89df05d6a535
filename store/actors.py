"""Registered human actors: who may change configuration and act on runs."""

from __future__ import annotations

import datetime as dt
import unicodedata
from typing import Final

from pydantic import TypeAdapter, ValidationError
from sqlalchemy import bindparam, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from contracts.config import ActorId, ActorRecord
from contracts.errors import InvalidInput, NotFound, Refused
from store.schema import ACTOR_NAME_LENGTH, ActorRow

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


# Built once: every protected action asks whether its actor is registered.
_REGISTERED = select(ActorRow.id).where(ActorRow.id == bindparam("actor_id"))


def actor_exists(session: Session, actor_id: str) -> bool:
    """Whether ``actor_id`` is registered."""
    return session.execute(_REGISTERED, {"actor_id": actor_id}).first() is not None


def require_actor(session: Session, actor_id: str) -> None:
    """Raise ``unknown_actor`` (not found) unless ``actor_id`` is registered."""
    if not actor_exists(session, actor_id):
        raise NotFound(
            "unknown_actor",
            f"actor {actor_id!r} is not registered: a registered actor must register it first",
        )


def register_actor(
    session: Session, actor_id: str, name: str, by: str | None, at: dt.datetime
) -> ActorRecord:
    """Register ``actor_id``. The first actor needs no ``by``; every later one is registered by a
    registered actor. Raises ``invalid_actor_id``/``invalid_actor_name``/``actor_required`` (invalid
    input), ``unknown_actor`` (not found) or ``duplicate_actor`` (refused); nothing is written then.
    """
    check_actor_id(actor_id)
    check_actor_name(name)
    if by is None:
        if session.scalar(select(func.count()).select_from(ActorRow)):
            raise InvalidInput(
                "actor_required",
                "only the first actor registers without --actor: give the registered actor who "
                "registers this one",
            )
    else:
        require_actor(session, by)
    if actor_exists(session, actor_id):
        raise Refused("duplicate_actor", f"actor {actor_id!r} is already registered")
    row = ActorRow(id=actor_id, name=name, registered_by=by, registered_at=at)
    session.add(row)
    try:
        session.flush()
    except IntegrityError as exc:
        raise Refused("duplicate_actor", f"actor {actor_id!r} is already registered") from exc
    return actor_record(row)


def list_actors(session: Session) -> list[ActorRecord]:
    """All registered actors, in order of registration."""
    rows = session.scalars(select(ActorRow).order_by(ActorRow.registered_at, ActorRow.id))
    return [actor_record(row) for row in rows]


def actor_record(row: ActorRow) -> ActorRecord:
    """The contract record of a stored actor."""
    return ActorRecord(
        id=row.id, name=row.name, registered_by=row.registered_by, registered_at=row.registered_at
    )
