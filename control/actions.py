"""Protected actions on the operator side: proofs of the action token and configuration checks.

The CLI never sends the token. For a run action it sends a proof (``contracts.proofs``) that the
worker checks; for a configuration change, made by the CLI directly in the store, it checks the
token's fingerprint against the one the deployment adopted (the first protected configuration change
adopts it).
"""

from __future__ import annotations

import datetime as dt
import secrets
from typing import Any

from contracts.proofs import ActionProof, sign_action, token_fingerprint
from store.action_token import require_action_token


def proof_for(*, run_id: str, action: str, actor: str, digest: str = "") -> ActionProof:
    """A fresh proof for ``action`` on ``run_id`` by ``actor`` (bound to ``digest``).

    Raises :class:`contracts.errors.Refused` (``action_token_missing``) without a configured token.
    """
    token = require_action_token()
    return sign_action(
        token,
        run_id=run_id,
        action=action,
        actor=actor,
        digest=digest,
        issued_at=dt.datetime.now(dt.UTC),
        nonce=secrets.token_hex(16),
    )


def require_configuration_token(store: Any) -> None:
    """Refuse a configuration change without the deployment's action token.

    Raises :class:`contracts.errors.Refused` (``action_token_missing``, ``action_token_mismatch``).
    """
    store.adopt_token_fingerprint(token_fingerprint(require_action_token()))
