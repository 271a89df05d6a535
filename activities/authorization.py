"""Activity ``authorize_action``: may this actor take this action on this run?

Two proofs are needed (DESIGN.md "Temporal conventions"): the actor is a registered human, and the
request carries a valid, fresh proof of the action token (``contracts.proofs``) made for exactly this
run, action, actor and contract digest. Identity and token checks need I/O, so they run here and not
in an update validator; a refusal is returned (never raised) so the workflow can audit it.
"""

from __future__ import annotations

import datetime as dt

from temporalio import activity

from activities.config import ActivityConfig
from activities.logs import run_logger
from activities.store_access import SharedStore
from contracts.proofs import verify_action
from contracts.runs import AuthorizeRequest, AuthorizeResult


class AuthorizationActivities:
    """``authorize_action`` bound to the store and the deployment's action token."""

    def __init__(self, config: ActivityConfig, store: SharedStore) -> None:
        self._config = config
        self._store = store

    @activity.defn(name="authorize_action")
    def authorize_action(self, request: AuthorizeRequest) -> AuthorizeResult:
        """Allowed when the actor is registered and the proof is valid; else a refusal code.

        Refusal codes: ``actor_required``, ``unknown_actor``, ``action_token_not_configured`` (the
        worker has no token), ``proof_missing``, ``proof_invalid``, ``proof_expired``.
        """
        result = self._decide(request)
        run_logger(request.run_id, activity="authorize_action").info(
            "action_authorised" if result.allowed else "action_refused",
            action=request.action,
            actor=request.actor,
            code=result.code,
        )
        return result

    def _decide(self, request: AuthorizeRequest) -> AuthorizeResult:
        if request.actor is None:
            return AuthorizeResult(
                allowed=False, code="actor_required", message=f"{request.action} needs --actor ID"
            )
        if not self._store.get().actor_exists(request.actor):
            return AuthorizeResult(
                allowed=False, code="unknown_actor", message=f"actor {request.actor!r} is not registered"
            )
        token = self._config.action_token
        if token is None:
            return AuthorizeResult(
                allowed=False,
                code="action_token_not_configured",
                message="the worker has no action token (SPECIALISTS_ACTION_TOKEN[_FILE]): "
                "protected actions are refused",
            )
        refusal = verify_action(
            token,
            request.proof,
            run_id=request.run_id,
            action=request.action,
            actor=request.actor,
            digest=request.digest,
            now=dt.datetime.now(dt.UTC),
        )
        if refusal is not None:
            code, message = refusal
            return AuthorizeResult(allowed=False, code=code, message=message)
        return AuthorizeResult(allowed=True)
