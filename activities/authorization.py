"""Activity ``authorize_action``: may this actor take this action on this target?

Two things are checked (docs/architecture.md "Protected actions"): the actor is a registered human whose
record is verified and who is active, and the request carries that actor's fresh Ed25519 signature of
exactly this action, target and contract digest (``contracts.identity.canonical_action``), made with
the key the store holds in force for it. Identity and key checks need I/O, so they run here and not in
an update validator; a refusal is returned (never raised) so the workflow can audit it.

The worker needs no secret for this: public keys are in the store, and the chain of trust that makes
them believable is anchored by ``SPECIALISTS_TRUST_ROOT`` or, without it, by the action token (the
HMAC on the trust root's key record). A proof of the shared action token (an HMAC, as histories
recorded before per-person keys carry) is refused.

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
from contracts.errors import OperatorError, ServiceUnavailable
from contracts.identity import (
    action_signature_valid,
    delegation_in_force,
    delegation_problem,
    fingerprint_of,
    proof_is_fresh,
)
from contracts.proofs import ActionProof, SessionDelegation
from contracts.refusals import RefusalCode
from contracts.runs import AuthorizeRequest, AuthorizeResult
from contracts.temporal_names import ActivityName
from runtime.logs import run_logger


class AuthorizationActivities:
    """``authorize_action`` bound to the store (which verifies actors and keys)."""

    def __init__(self, config: ActivityConfig, store: SharedStore) -> None:
        self._config = config
        self._store = store

    @activity.defn(name=ActivityName.AUTHORIZE_ACTION)
    def authorize_action(self, request: AuthorizeRequest) -> AuthorizeResult:
        """Allowed when the actor is registered, verified and active and the proof is its valid,
        fresh signature of this action; else a refusal code.

        Refusal codes: ``actor_required``, ``unknown_actor``, ``configuration_unverified`` (the
        actor's record or key carries no valid signature), ``trust_root_not_configured`` (the worker
        can verify nothing), ``actor_deactivated``, ``actor_key_retired`` (an earlier key of the
        actor), ``actor_key_unknown`` (a key no actor holds), ``actor_key_missing``,
        ``proof_missing``, ``proof_invalid`` (another actor's key, another action, target or digest,
        a proof of the shared token, a session delegation that is not the actor's), ``proof_expired``,
        ``proof_replayed`` (the proof's nonce was spent by another workflow execution),
        ``session_expired`` (a Mission Control session's delegation is over). With
        ``standing_grant`` only the actor is checked (registered, verified, active).
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
            return _refused(RefusalCode.ACTOR_REQUIRED, f"{request.action} needs --actor ID")
        proof = request.proof
        store = self._store.get()
        if request.standing_grant:
            if proof is not None and request.grant_target is not None:
                return self._signed_grant_holds(request, proof)
            return self._grant_holds(request.actor)
        delegation = proof.delegation if proof is not None else None
        try:
            if proof is None or proof.key is None:
                store.require_active_actor(request.actor)
            elif delegation is not None:
                # A session key acts for the actor: the actor's own key in force signed the delegation.
                public_key = store.action_key(request.actor, delegation.actor_key)
            else:
                public_key = store.action_key(request.actor, proof.key)
        except ServiceUnavailable:
            raise  # retried; after the retries the workflow refuses as authorization_unavailable
        except OperatorError as error:
            return _refused(error.code, error.message)
        if proof is None:
            return _refused(
                RefusalCode.PROOF_MISSING,
                f"{request.action} needs the actor's signature (send it with the specialists CLI)",
            )
        if proof.key is None:
            return _refused(
                RefusalCode.PROOF_INVALID,
                "a proof of the shared action token is no longer accepted: sign with your actor key "
                "(SPECIALISTS_ACTOR_KEY_FILE)",
            )
        if delegation is not None:
            refusal = _delegation_refusal(delegation, public_key, proof.key, request.actor)
            if refusal is not None:
                return refusal
            public_key = delegation.session_key
        if not action_signature_valid(
            public_key,
            proof,
            action=request.action,
            target=request.run_id,
            actor=request.actor,
            digest=request.digest,
        ):
            return _refused(
                RefusalCode.PROOF_INVALID,
                f"the signature does not match this {request.action} on {request.run_id} by {request.actor}",
            )
        now = dt.datetime.now(dt.UTC)
        if not proof_is_fresh(proof, now):
            return _refused(
                RefusalCode.PROOF_EXPIRED,
                f"the proof was made at {proof.issued_at.isoformat()}: send the action again",
            )
        spent = self._store.get().spend_proof_nonce(
            proof.nonce,
            action=request.action,
            run_id=request.run_id,
            actor=request.actor,
            spent_by=_spender(),
            at=now,
        )
        if not spent:
            return _refused(RefusalCode.PROOF_REPLAYED, "this proof was already used")
        return AuthorizeResult(allowed=True)

    def _signed_grant_holds(self, request: AuthorizeRequest, proof: ActionProof) -> AuthorizeResult:
        """A signed standing grant (a schedule's, docs/architecture.md "Schedules") holds while its
        signature of ``request.action`` on ``request.grant_target`` (bound to ``request.digest``)
        verifies with the actor's key in force and the actor is active. It is a standing signature:
        no freshness limit, no nonce spent; rotating the key or deactivating the actor ends it."""
        assert request.actor is not None and request.grant_target is not None
        if proof.key is None or proof.delegation is not None:
            return _refused(
                RefusalCode.PROOF_INVALID, "a schedule's grant is signed with the actor's own key"
            )
        try:
            public_key = self._store.get().action_key(request.actor, proof.key)
        except ServiceUnavailable:
            raise
        except OperatorError as error:
            return _refused(error.code, error.message)
        if not action_signature_valid(
            public_key,
            proof,
            action=request.action,
            target=request.grant_target,
            actor=request.actor,
            digest=request.digest,
        ):
            return _refused(
                RefusalCode.PROOF_INVALID,
                f"the grant's signature does not match {request.action} on {request.grant_target} "
                f"by {request.actor}",
            )
        return AuthorizeResult(allowed=True)

    def _grant_holds(self, actor: str) -> AuthorizeResult:
        """A standing grant the calling workflow has checked (the goal queue's autopilot,
        docs/architecture.md "Goal queue") holds while its granting actor is registered, verified and
        active: no per-action proof is asked, so no nonce is spent."""
        try:
            self._store.get().require_active_actor(actor)
        except ServiceUnavailable:
            raise
        except OperatorError as error:
            return _refused(error.code, error.message)
        return AuthorizeResult(allowed=True)


def _delegation_refusal(
    delegation: SessionDelegation, actor_public_key: str, proof_key: str, actor: str
) -> AuthorizeResult | None:
    """A refusal unless ``delegation`` is ``actor``'s, signed by their key in force, in its window,
    and names the key that signed the proof (docs/architecture.md "Mission Control")."""
    if delegation.actor != actor:
        return _refused(
            RefusalCode.PROOF_INVALID, f"the session belongs to {delegation.actor}, not to {actor}"
        )
    if fingerprint_of(delegation.session_key) != proof_key:
        return _refused(RefusalCode.PROOF_INVALID, "the proof was not signed by the session's key")
    problem = delegation_problem(delegation, actor_public_key)
    if problem is not None:
        return _refused(RefusalCode.PROOF_INVALID, problem)
    if not delegation_in_force(delegation, dt.datetime.now(dt.UTC)):
        return _refused(
            RefusalCode.SESSION_EXPIRED,
            f"the session runs from {delegation.issued_at.isoformat()} to "
            f"{delegation.expires_at.isoformat()}: sign in again",
        )
    return None


def _refused(code: str, message: str) -> AuthorizeResult:
    return AuthorizeResult(allowed=False, code=code, message=message)


def _spender() -> str:
    """The execution a proof is spent for: the calling workflow's run id (same for every attempt).

    An activity run outside a workflow has none; a standalone activity's own run id stands in, and
    with neither a fresh id does, so the proof is accepted at most once (fail closed).
    """
    info = activity.info()
    return info.workflow_run_id or info.activity_run_id or f"unknown-{uuid.uuid4().hex}"
