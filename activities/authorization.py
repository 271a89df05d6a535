"""Activity ``authorize_action``: may this actor take this action on this run?

Two proofs are needed (docs/architecture.md "Temporal conventions"): the actor is a registered human, and the
request carries a valid, fresh proof of the action token (``contracts.proofs``) made for exactly this
run, action, actor and contract digest. Identity and token checks need I/O, so they run here and not
in an update validator; a refusal is returned (never raised) so the workflow can audit it.

A verified proof's nonce is then spent in the store (``Store.spend_proof_nonce``) for the workflow
execution that asked (its run id): a workflow remembers the nonces it saw, but a new execution of the
same workflow id (a ``ModelCheck`` started again after the first closed) does not, so only the store
can refuse a proof copied out of another execution's history (``proof_replayed``). A retry of this
activity in the same execution finds its own spend and is allowed again.
"""

from __future__ import annotations

import datetime as dt
import uuid

from temporalio import activity

from activities.config import ActivityConfig
from activities.store_access import SharedStore
from contracts.proofs import verify_action
from contracts.refusals import RefusalCode
from contracts.runs import AuthorizeRequest, AuthorizeResult
from contracts.temporal_names import ActivityName
from runtime.logs import run_logger


class AuthorizationActivities:
    """``authorize_action`` bound to the store and the deployment's action token."""

    def __init__(self, config: ActivityConfig, store: SharedStore) -> None:
        self._config = config
        self._store = store

    @activity.defn(name=ActivityName.AUTHORIZE_ACTION)
    def authorize_action(self, request: AuthorizeRequest) -> AuthorizeResult:
        """Allowed when the actor is registered and the proof is valid; else a refusal code.

        Refusal codes: ``actor_required``, ``unknown_actor``, ``action_token_not_configured`` (the
        worker has no token), ``proof_missing``, ``proof_invalid``, ``proof_expired``,
        ``proof_replayed`` (the proof's nonce was spent by another workflow execution).
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
                allowed=False, code=RefusalCode.ACTOR_REQUIRED, message=f"{request.action} needs --actor ID"
            )
        if not self._store.get().actor_exists(request.actor):
            return AuthorizeResult(
                allowed=False,
                code=RefusalCode.UNKNOWN_ACTOR,
                message=f"actor {request.actor!r} is not registered",
            )
        token = self._config.action_token
        if token is None:
            return AuthorizeResult(
                allowed=False,
                code=RefusalCode.ACTION_TOKEN_NOT_CONFIGURED,
                message="the worker has no action token (SPECIALISTS_ACTION_TOKEN[_FILE]): "
                "protected actions are refused",
            )
        now = dt.datetime.now(dt.UTC)
        refusal = verify_action(
            token,
            request.proof,
            run_id=request.run_id,
            action=request.action,
            actor=request.actor,
            digest=request.digest,
            now=now,
        )
        if refusal is not None:
            code, message = refusal
            return AuthorizeResult(allowed=False, code=code, message=message)
        # verify_action refuses a missing proof, so there is one here.
        assert request.proof is not None
        spent = self._store.get().spend_proof_nonce(
            request.proof.nonce,
            action=request.action,
            run_id=request.run_id,
            actor=request.actor,
            spent_by=_spender(),
            at=now,
        )
        if not spent:
            return AuthorizeResult(
                allowed=False, code=RefusalCode.PROOF_REPLAYED, message="this proof was already used"
            )
        return AuthorizeResult(allowed=True)


def _spender() -> str:
    """The execution a proof is spent for: the calling workflow's run id (same for every attempt).

    An activity run outside a workflow has none; a standalone activity's own run id stands in, and
    with neither a fresh id does, so the proof is accepted at most once (fail closed).
    """
    info = activity.info()
    return info.workflow_run_id or info.activity_run_id or f"unknown-{uuid.uuid4().hex}"
