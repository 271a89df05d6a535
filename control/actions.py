"""Protected actions on the operator side: the actor's signatures (docs/architecture.md "Protected
actions").

The CLI never sends a key or the action token. For a run, team, check or prune action it sends the
actor's signature of the exact action (``contracts.identity.sign_action``), which the worker verifies
with the public key the store holds for that actor; configuration changes are made by the CLI in the
store, which signs each record with the actor's key and checks first that it is the actor's key in
force (``store.trust``).
"""

from __future__ import annotations

import datetime as dt
import secrets

from contracts.identity import sign_action
from contracts.proofs import ActionProof
from control.keys import require_signer


def proof_for(*, run_id: str, action: str, actor: str, digest: str = "") -> ActionProof:
    """``actor``'s fresh signature of ``action`` on ``run_id`` (bound to ``digest``), made with the
    configured actor key.

    Raises :class:`contracts.errors.Refused` (``actor_key_missing``) without a configured key.
    """
    return sign_action(
        require_signer(actor),
        action=action,
        target=run_id,
        digest=digest,
        issued_at=dt.datetime.now(dt.UTC),
        nonce=secrets.token_hex(16),
    )
