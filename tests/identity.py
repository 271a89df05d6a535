"""Test credentials: one Ed25519 key per actor id for the whole test session, and helpers that
bootstrap and register actors in a store the way the operator surface does."""

from __future__ import annotations

import datetime as dt
import functools
from pathlib import Path
from typing import Any

from sqlalchemy import text

from contracts.identity import ActorKey, Signer, TrustAnchor
from store.store import Store

STORE_TOKEN = b"store-test-action-token-5d1e"
"""The action token of store-level test deployments (bootstrap and trust anchor)."""
STORE_ANCHOR = TrustAnchor(token=STORE_TOKEN)


@functools.cache
def key_of(actor_id: str) -> ActorKey:
    """The test key of ``actor_id`` (the same for the whole session)."""
    return ActorKey.generate()


def signer(actor_id: str) -> Signer:
    """``actor_id`` acting with its test key."""
    return Signer(actor_id, key_of(actor_id))


def bootstrap(
    store: Store, actor_id: str = "alice", name: str = "Alice Operator", *, token: bytes = STORE_TOKEN
) -> Signer:
    """Register ``actor_id`` as the store's first actor (the trust root) with its test key."""
    store.bootstrap_actor(actor_id, name, key_of(actor_id), token)
    return signer(actor_id)


def register(store: Store, actor_id: str, by: Signer, name: str | None = None) -> Signer:
    """Register ``actor_id`` with its test key, signed by ``by``."""
    store.register_actor(actor_id, name or actor_id.title(), key_of(actor_id).public_key, by)
    return signer(actor_id)


def insert_legacy_actor(connection: Any, actor_id: str = "alice", name: str = "Alice") -> None:
    """Insert an actor row as a store before signed configuration (revision 0008 or earlier) wrote
    it: no key, no signature (naive UTC on SQLite, as those revisions stored times)."""
    at = dt.datetime(2026, 12, 1, 8, 0, tzinfo=dt.UTC)
    if connection.dialect.name == "sqlite":
        at = at.replace(tzinfo=None)
    connection.execute(
        text("INSERT INTO actors (id, name, registered_by, registered_at) VALUES (:id, :name, NULL, :at)"),
        {"id": actor_id, "name": name, "at": at},
    )


def attest_legacy(store: Store, actor_id: str = "alice", *, token: bytes = STORE_TOKEN) -> Signer:
    """Attest a store migrated from before signed configuration as ``actor_id`` (who becomes the trust
    root with its test key); every other actor without a key is issued its test key."""
    attester = signer(actor_id)
    others = {other: key_of(other).public_key for other in store.keyless_actors() if other != actor_id}
    store.attest(attester, token=token, issue=others)
    return attester


def write_key_file(actor_id: str, directory: Path) -> Path:
    """``actor_id``'s test key as a key file ``directory/<id>.key`` (mode 0600), for a CLI acting as it."""
    path = directory / f"{actor_id}.key"
    if not path.exists():
        path.write_bytes(key_of(actor_id).to_pem())
        path.chmod(0o600)
    return path
