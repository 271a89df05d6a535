"""Proofs of the action token: an HMAC over the exact action, so the token never travels.

The CLI signs ``{run_id, action, actor, digest, issued_at, nonce}`` with the deployment's action token
(HMAC-SHA256, RFC 2104); the worker's authorisation activity recomputes it with its own copy of the
token. A signal or update sent straight to Temporal without the token carries no valid proof and is
refused; a proof made for one run, action, actor or contract digest fails for any other; a proof
older than :data:`PROOF_MAX_AGE` is stale; a nonce is accepted once (the workflow remembers the
nonces it saw, and the authorisation activity spends each one durably in the store, so another
execution of the same workflow id cannot reuse it). Pure: no I/O.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, StringConstraints

from contracts.refusals import RefusalCode

PROOF_MAX_AGE: Final = dt.timedelta(minutes=15)
# A little tolerance for clocks that disagree between the operator's machine and the worker's.
PROOF_CLOCK_SKEW: Final = dt.timedelta(minutes=2)
_FINGERPRINT_LABEL: Final = b"specialists/action-token-fingerprint/v1"

Nonce = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{32}$")]
Mac = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class ActionProof(BaseModel):
    """What a protected request carries instead of the token: when, a one-time nonce, the HMAC."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    issued_at: dt.datetime
    nonce: Nonce
    mac: Mac


def canonical_action(
    *, run_id: str, action: str, actor: str, digest: str, issued_at: dt.datetime, nonce: str
) -> bytes:
    """The exact bytes that are signed: sorted-key compact JSON of the action's fields (UTC time)."""
    payload = {
        "action": action,
        "actor": actor,
        "digest": digest,
        "issued_at": issued_at.astimezone(dt.UTC).isoformat(),
        "nonce": nonce,
        "run_id": run_id,
    }
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def sign_action(
    token: bytes, *, run_id: str, action: str, actor: str, digest: str, issued_at: dt.datetime, nonce: str
) -> ActionProof:
    """An :class:`ActionProof` for the action. ``issued_at`` must be timezone-aware."""
    message = canonical_action(
        run_id=run_id, action=action, actor=actor, digest=digest, issued_at=issued_at, nonce=nonce
    )
    mac = hmac.new(token, message, hashlib.sha256).hexdigest()
    return ActionProof(issued_at=issued_at, nonce=nonce, mac=mac)


def verify_action(
    token: bytes,
    proof: ActionProof | None,
    *,
    run_id: str,
    action: str,
    actor: str,
    digest: str,
    now: dt.datetime,
) -> tuple[RefusalCode, str] | None:
    """``None`` when ``proof`` is a valid, fresh proof of exactly this action; else ``(code, message)``.

    Codes: ``proof_missing``, ``proof_invalid`` (wrong token, or made for another run, action, actor or
    digest), ``proof_expired`` (older than 15 minutes, or from the future beyond the clock skew).
    """
    if proof is None:
        return (
            RefusalCode.PROOF_MISSING,
            f"{action} needs a proof of the action token (send it with the specialists CLI)",
        )
    expected = sign_action(
        token,
        run_id=run_id,
        action=action,
        actor=actor,
        digest=digest,
        issued_at=proof.issued_at,
        nonce=proof.nonce,
    )
    if not hmac.compare_digest(expected.mac, proof.mac):
        return (
            RefusalCode.PROOF_INVALID,
            f"the proof does not match this {action} on {run_id} by {actor} with this token",
        )
    age = now - proof.issued_at
    if age > PROOF_MAX_AGE or age < -PROOF_CLOCK_SKEW:
        return (
            RefusalCode.PROOF_EXPIRED,
            f"the proof was made at {proof.issued_at.isoformat()}: send the action again",
        )
    return None


def token_fingerprint(token: bytes) -> str:
    """A stable, non-reversible fingerprint of a token (HMAC of a fixed label), safe to store."""
    return hmac.new(token, _FINGERPRINT_LABEL, hashlib.sha256).hexdigest()
