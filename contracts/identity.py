"""Per-person credentials and the canonical forms they sign (docs/architecture.md "Protected actions",
"Configuration").

Every registered actor holds an Ed25519 key pair: the private key is the person's (a PKCS #8 PEM file
or value, never stored), the public key and its fingerprint are in the store. Two things are signed:

* a protected **action** (:func:`canonical_action`): action, target (a run, team, check id or a
  configuration record), actor, contract digest, issue time, one-time nonce and the fingerprint of the
  signing key, so a signature made for one of them proves nothing about any other;
* a **configuration record** (:func:`canonical_record`): its kind, its id, its content and who signed
  it with which key when, so a signature cannot be moved to another row or another kind of row.

Both are sorted-key compact JSON (ASCII) with a domain label of their own, so an action signature is
never a valid record signature or the other way round. The chain of configuration trust is anchored
outside the database (:class:`TrustAnchor`): the bootstrap actor's first key is either the fingerprint
pinned in the deployment's settings or carries an HMAC of the deployment's action token
(:func:`anchor_mac`).

Pure computation: ``cryptography`` for Ed25519, no I/O. Not imported by workflow code.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from contracts.proofs import PROOF_CLOCK_SKEW, PROOF_MAX_AGE, ActionProof, SessionDelegation

ACTION_DOMAIN: Final = "specialists/action/v2"
DELEGATION_DOMAIN: Final = "specialists/session-delegation/v1"
MAX_SESSION: Final = dt.timedelta(hours=12)
"""The longest a session key may act for its actor (a working day)."""
RECORD_DOMAIN: Final = "specialists/configuration-record/v1"
ANCHOR_LABEL: Final = b"specialists/trust-anchor/v1\n"

FINGERPRINT_PATTERN: Final = re.compile(r"[0-9a-f]{64}")
"""A key fingerprint: the sha256 of the raw 32-byte public key, in lower-case hex."""
MAX_PRIVATE_KEY_BYTES: Final = 4096


class KeyMaterialError(ValueError):
    """A key or signature that cannot be read (the message says why; it never holds key material)."""


class RecordKind(StrEnum):
    """The kinds of configuration record that carry a signature."""

    ACTOR = "actor"
    ACTOR_KEY = "actor_key"
    POLICY = "policy"
    MODEL = "model"
    MODEL_SELECTION = "model_selection"
    REPOSITORY = "repository"

    @property
    def label(self) -> str:
        """How messages name a record of this kind."""
        return _LABELS[self]


_LABELS: Final = {
    RecordKind.ACTOR: "actor",
    RecordKind.ACTOR_KEY: "actor key",
    RecordKind.POLICY: "policy write",
    RecordKind.MODEL: "model",
    RecordKind.MODEL_SELECTION: "model selection",
    RecordKind.REPOSITORY: "repository",
}


# ------------------------------------------------------------------------------------------------ keys


def public_key_text(key: Ed25519PublicKey) -> str:
    """The raw 32-byte public key in standard base64 (44 characters): how the store keeps it."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


def load_public_key(text: str) -> Ed25519PublicKey:
    """The public key stored as ``text``. Raises :class:`KeyMaterialError` when it is not one."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
        return Ed25519PublicKey.from_public_bytes(raw)
    except (ValueError, UnicodeEncodeError, binascii.Error, UnsupportedAlgorithm):
        raise KeyMaterialError("not an Ed25519 public key") from None


def fingerprint_of(public_key: str) -> str:
    """The fingerprint of the stored public key ``public_key``: sha256 of its 32 raw bytes, hex."""
    return hashlib.sha256(base64.b64decode(public_key.encode("ascii"), validate=True)).hexdigest()


@dataclass(frozen=True)
class ActorKey:
    """A person's private key (never printed: its ``repr`` shows only the fingerprint)."""

    private_key: Ed25519PrivateKey = field(repr=False)
    public_key: str = field(init=False)
    fingerprint: str = field(init=False)

    def __post_init__(self) -> None:
        public = public_key_text(self.private_key.public_key())
        object.__setattr__(self, "public_key", public)
        object.__setattr__(self, "fingerprint", fingerprint_of(public))

    @classmethod
    def generate(cls) -> ActorKey:
        """A new random key."""
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_pem(cls, data: bytes) -> ActorKey:
        """Read an unencrypted PKCS #8 PEM Ed25519 private key. Raises :class:`KeyMaterialError`."""
        if len(data) > MAX_PRIVATE_KEY_BYTES:
            raise KeyMaterialError("the key is too large to be an Ed25519 private key")
        try:
            key = serialization.load_pem_private_key(data.strip() + b"\n", password=None)
        except (ValueError, TypeError, UnsupportedAlgorithm):
            raise KeyMaterialError("not an unencrypted PEM private key") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise KeyMaterialError("not an Ed25519 private key")
        return cls(key)

    def to_pem(self) -> bytes:
        """The key as unencrypted PKCS #8 PEM (what a key file holds)."""
        return self.private_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    def sign(self, message: bytes) -> str:
        """The Ed25519 signature of ``message``, standard base64 (88 characters)."""
        return base64.b64encode(self.private_key.sign(message)).decode("ascii")


@dataclass(frozen=True)
class Signer:
    """An actor and the private key they act with."""

    actor_id: str
    key: ActorKey

    @property
    def fingerprint(self) -> str:
        return self.key.fingerprint

    def sign(self, message: bytes) -> str:
        return self.key.sign(message)


_VERIFIED: dict[tuple[str, str, bytes], bool] = {}
_VERIFIED_LIMIT: Final = 8192


def verify_signature(public_key: str, signature: str, message: bytes) -> bool:
    """Whether ``signature`` (base64) is the Ed25519 signature of ``message`` by ``public_key``.

    Never raises for a malformed key or signature (it is not valid). Results are remembered for the
    process (a store re-reads the same records on every read; each check costs about 100 µs).
    """
    cache_key = (public_key, signature, message)
    known = _VERIFIED.get(cache_key)
    if known is not None:
        return known
    try:
        raw = base64.b64decode(signature.encode("ascii"), validate=True)
        load_public_key(public_key).verify(raw, message)
        valid = True
    except (InvalidSignature, KeyMaterialError, ValueError, UnicodeEncodeError, binascii.Error):
        valid = False
    if len(_VERIFIED) >= _VERIFIED_LIMIT:
        _VERIFIED.clear()
    _VERIFIED[cache_key] = valid
    return valid


# ----------------------------------------------------------------------------------- canonical forms


def canonical_time(value: dt.datetime) -> str:
    """A timezone-aware time as signed: UTC, microseconds, ``Z``."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"a signed time must be timezone-aware, not {value!r}")
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _canonical_json(payload: Mapping[str, Any]) -> bytes:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def canonical_action(
    *,
    action: str,
    target: str,
    actor: str,
    digest: str,
    issued_at: dt.datetime,
    nonce: str,
    key: str,
) -> bytes:
    """The exact bytes an actor signs for a protected action on ``target`` (a run, team or check id,
    or ``<kind>:<id>`` of a configuration record) with the key whose fingerprint is ``key``."""
    return _canonical_json(
        {
            "action": action,
            "actor": actor,
            "digest": digest,
            "domain": ACTION_DOMAIN,
            "issued_at": canonical_time(issued_at),
            "key": key,
            "nonce": nonce,
            "target": target,
        }
    )


def canonical_record(
    kind: RecordKind,
    record_id: str,
    content: Mapping[str, Any],
    *,
    signed_by: str,
    signed_key: str,
    signed_at: dt.datetime,
) -> bytes:
    """The exact bytes signed for one configuration record: its kind and id (so a signature cannot
    be moved to another row), its content (JSON values; times as :func:`canonical_time`), and who
    signed it with which key when."""
    return _canonical_json(
        {
            "content": dict(content),
            "domain": RECORD_DOMAIN,
            "id": record_id,
            "kind": kind.value,
            "signed_at": canonical_time(signed_at),
            "signed_by": signed_by,
            "signed_key": signed_key,
        }
    )


# -------------------------------------------------------------------------------------------- anchor


@dataclass(frozen=True)
class TrustAnchor:
    """What anchors the chain of configuration trust outside the database.

    ``root_fingerprint`` (``SPECIALISTS_TRUST_ROOT``): the fingerprint of the bootstrap actor's first
    key, public; when set, it alone decides which key is the root. Otherwise ``token`` (the
    deployment's action token): the root key record must carry its HMAC (:func:`anchor_mac`). With
    neither, no signed record can be verified.
    """

    root_fingerprint: str | None = None
    token: bytes | None = field(default=None, repr=False)

    @property
    def configured(self) -> bool:
        return self.root_fingerprint is not None or self.token is not None


def anchor_mac(token: bytes, message: bytes) -> str:
    """The HMAC-SHA256 (hex) of the root key record's canonical bytes under the action token."""
    return hmac.new(token, ANCHOR_LABEL + message, hashlib.sha256).hexdigest()


def anchor_matches(token: bytes, message: bytes, mac: str) -> bool:
    """Whether ``mac`` is :func:`anchor_mac` of ``message`` under ``token`` (constant time)."""
    return hmac.compare_digest(anchor_mac(token, message), mac)


# ------------------------------------------------------------------------------------------- actions


def sign_action(
    signer: Signer,
    *,
    action: str,
    target: str,
    digest: str,
    issued_at: dt.datetime,
    nonce: str,
) -> ActionProof:
    """The signer's :class:`ActionProof` for ``action`` on ``target`` (bound to ``digest``)."""
    message = canonical_action(
        action=action,
        target=target,
        actor=signer.actor_id,
        digest=digest,
        issued_at=issued_at,
        nonce=nonce,
        key=signer.fingerprint,
    )
    return ActionProof(
        issued_at=issued_at, nonce=nonce, key=signer.fingerprint, signature=signer.sign(message)
    )


def action_signature_valid(
    public_key: str, proof: ActionProof, *, action: str, target: str, actor: str, digest: str
) -> bool:
    """Whether ``proof`` is ``public_key``'s signature of exactly this action by ``actor``."""
    if proof.key is None or proof.signature is None:
        return False
    message = canonical_action(
        action=action,
        target=target,
        actor=actor,
        digest=digest,
        issued_at=proof.issued_at,
        nonce=proof.nonce,
        key=proof.key,
    )
    return verify_signature(public_key, proof.signature, message)


# --------------------------------------------------------------------------------------- delegation


def canonical_delegation(
    *, actor: str, actor_key: str, session_key: str, issued_at: dt.datetime, expires_at: dt.datetime
) -> bytes:
    """The exact bytes an actor signs to let ``session_key`` act for them until ``expires_at``."""
    return _canonical_json(
        {
            "actor": actor,
            "actor_key": actor_key,
            "domain": DELEGATION_DOMAIN,
            "expires_at": canonical_time(expires_at),
            "issued_at": canonical_time(issued_at),
            "session_key": session_key,
        }
    )


def sign_delegation(
    signer: Signer, *, session_key: str, issued_at: dt.datetime, expires_at: dt.datetime
) -> SessionDelegation:
    """``signer``'s delegation of their actions to ``session_key`` (a public key, base64) from
    ``issued_at`` to ``expires_at``."""
    message = canonical_delegation(
        actor=signer.actor_id,
        actor_key=signer.fingerprint,
        session_key=session_key,
        issued_at=issued_at,
        expires_at=expires_at,
    )
    return SessionDelegation(
        actor=signer.actor_id,
        actor_key=signer.fingerprint,
        session_key=session_key,
        issued_at=issued_at,
        expires_at=expires_at,
        signature=signer.sign(message),
    )


def delegation_problem(delegation: SessionDelegation, actor_public_key: str) -> str | None:
    """Why ``delegation`` is not a valid one, or ``None``: not the signature of ``actor_public_key``
    (the actor's key in force), or a window reversed or longer than :data:`MAX_SESSION`."""
    message = canonical_delegation(
        actor=delegation.actor,
        actor_key=delegation.actor_key,
        session_key=delegation.session_key,
        issued_at=delegation.issued_at,
        expires_at=delegation.expires_at,
    )
    if not verify_signature(actor_public_key, delegation.signature, message):
        return f"the session was not signed by {delegation.actor}'s key"
    if not delegation.issued_at < delegation.expires_at <= delegation.issued_at + MAX_SESSION:
        return f"a session lasts at most {int(MAX_SESSION.total_seconds() // 3600)} hours"
    return None


def delegation_in_force(delegation: SessionDelegation, now: dt.datetime) -> bool:
    """Whether ``now`` is inside the delegation's window (its start with :data:`PROOF_CLOCK_SKEW`)."""
    return delegation.issued_at - PROOF_CLOCK_SKEW <= now < delegation.expires_at


def sign_delegated_action(
    session: ActorKey,
    delegation: SessionDelegation,
    *,
    action: str,
    target: str,
    digest: str,
    issued_at: dt.datetime,
    nonce: str,
) -> ActionProof:
    """The session key's proof of ``action`` on ``target`` for the delegating actor, carrying the
    delegation. ``session`` must be the key ``delegation`` names."""
    if session.public_key != delegation.session_key:
        raise KeyMaterialError("the session key is not the delegated one")
    proof = sign_action(
        Signer(delegation.actor, session),
        action=action,
        target=target,
        digest=digest,
        issued_at=issued_at,
        nonce=nonce,
    )
    return proof.model_copy(update={"delegation": delegation})


def proof_is_fresh(proof: ActionProof, now: dt.datetime) -> bool:
    """Whether ``proof`` was issued at most :data:`PROOF_MAX_AGE` ago (and not from the future
    beyond :data:`PROOF_CLOCK_SKEW`)."""
    age = now - proof.issued_at
    return -PROOF_CLOCK_SKEW <= age <= PROOF_MAX_AGE
