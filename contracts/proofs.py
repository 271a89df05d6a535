"""Proofs of protected actions (docs/architecture.md "Protected actions").

A protected request carries an :class:`ActionProof`: when it was made, a one-time nonce, the
fingerprint of the actor's key and the actor's Ed25519 signature over the exact action
(:func:`contracts.identity.canonical_action`: action, target, actor, contract digest, time, nonce and
key). The worker's authorisation activity verifies it with the public key the store holds for that
actor: a signature made with another actor's key, for another target, action or digest, or older than
:data:`PROOF_MAX_AGE` proves nothing, and a nonce is accepted once (the workflow remembers the nonces
it saw, and the activity spends each one durably in the store).

Histories recorded before per-person keys carry the earlier shape, an HMAC of the deployment's action
token (``mac``): it still decodes, so those histories replay, but the worker no longer accepts it.

This module only defines the payload (workflow code imports it); signing and verifying live in
:mod:`contracts.identity`, which workflows never import.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, StringConstraints, model_validator

PROOF_MAX_AGE: Final = dt.timedelta(minutes=15)
# A little tolerance for clocks that disagree between the operator's machine and the worker's.
PROOF_CLOCK_SKEW: Final = dt.timedelta(minutes=2)
_FINGERPRINT_LABEL: Final = b"specialists/action-token-fingerprint/v1"

Nonce = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{32}$")]
Mac = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
KeyFingerprint = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
Signature = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9+/]{86}==$")]


PublicKeyText = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9+/]{43}=$")]
"""A raw 32-byte Ed25519 public key, standard base64 (44 characters)."""


class SessionDelegation(BaseModel):
    """An actor's signed statement that the session key ``session_key`` may sign protected actions
    in their name from ``issued_at`` until ``expires_at`` (a Mission Control sign-in,
    docs/architecture.md "Mission Control"). ``actor_key`` is the fingerprint of the actor's own key
    that made ``signature`` (:func:`contracts.identity.canonical_delegation`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    actor: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    actor_key: KeyFingerprint
    session_key: PublicKeyText
    issued_at: dt.datetime
    expires_at: dt.datetime
    signature: Signature


class ActionProof(BaseModel):
    """What a protected request carries: when, a one-time nonce, and either the actor's signature
    (``key`` + ``signature``, the only form accepted) or, in histories recorded before per-person
    keys, an HMAC of the action token (``mac``). With ``delegation`` the signature is made by the
    delegated session key (``key`` is its fingerprint) and the delegation carries the actor's own."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    issued_at: dt.datetime
    nonce: Nonce
    mac: Mac | None = None
    key: KeyFingerprint | None = None
    signature: Signature | None = None
    delegation: SessionDelegation | None = None

    @model_validator(mode="after")
    def _one_form(self) -> ActionProof:
        signed = self.key is not None and self.signature is not None
        if (self.key is None) != (self.signature is None):
            raise ValueError("a signed proof carries both its key fingerprint and its signature")
        if signed == (self.mac is not None):
            raise ValueError("a proof carries either a signature (key + signature) or a mac, not both")
        if self.delegation is not None and not signed:
            raise ValueError("a delegated proof is signed by the session key")
        return self

    @property
    def signed(self) -> bool:
        """Whether this is an actor's signature (not a proof of the shared token)."""
        return self.signature is not None


def token_fingerprint(token: bytes) -> str:
    """A stable, non-reversible fingerprint of a token (HMAC of a fixed label), safe to store."""
    return hmac.new(token, _FINGERPRINT_LABEL, hashlib.sha256).hexdigest()
