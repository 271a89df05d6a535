"""The authorisation step of every protected workflow action (DESIGN.md "Temporal conventions").

Identity and token proof need I/O, so a workflow handling a protected update or signal runs the
``authorize_action`` activity (activities/authorization.py) first. A proof's nonce is accepted once
per workflow: the caller's set of seen nonces is checked and extended here, before the activity.
Deterministic: no I/O of its own; imported by workflow modules.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from contracts.runs import AuthorizeRequest, AuthorizeResult

AUTHORIZE_ACTION_ACTIVITY = "authorize_action"
AUTHORIZE_TIMEOUT = timedelta(seconds=10)
# A few quick retries cover a database hiccup; a refusal is an answer, not an error, and not retried.
AUTHORIZE_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(milliseconds=200))


async def check_action(request: AuthorizeRequest, used_nonces: set[str]) -> AuthorizeResult:
    """May ``request.actor`` take ``request.action``? ``allowed``, or a refusal's code and message.

    Refusals: ``proof_replayed`` when the proof's nonce is in ``used_nonces`` (otherwise the nonce
    is added to it); the activity's own codes (``unknown_actor``, ``proof_invalid``, ...); and
    ``authorization_unavailable`` when the check itself failed through its retries (e.g. the store
    stayed unreachable). Never raises for a refusal, so a signal handler cannot fail its workflow.
    """
    proof = request.proof
    if proof is not None:
        if proof.nonce in used_nonces:
            return AuthorizeResult(
                allowed=False, code="proof_replayed", message="this proof was already used"
            )
        used_nonces.add(proof.nonce)
    try:
        result: AuthorizeResult = await workflow.execute_activity(
            AUTHORIZE_ACTION_ACTIVITY,
            request,
            result_type=AuthorizeResult,
            start_to_close_timeout=AUTHORIZE_TIMEOUT,
            retry_policy=AUTHORIZE_RETRY,
        )
    except ActivityError as error:
        cause = error.cause
        detail = cause.message if isinstance(cause, ApplicationError) else str(cause or error)
        return AuthorizeResult(
            allowed=False,
            code="authorization_unavailable",
            message=f"the authorisation check failed: {detail}",
        )
    return result
