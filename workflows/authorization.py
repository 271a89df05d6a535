"""The authorisation step of every protected workflow action (docs/architecture.md "Temporal
conventions").

Identity and token proof need I/O, so a workflow handling a protected update or signal runs the
``authorize_action`` activity (activities/authorization.py) first: :func:`authorize_action` runs it
once. A run or a team takes actions while it runs, so it uses :class:`ProtectedActions`: a proof's
nonce is accepted once per workflow (its set of seen nonces is checked and extended before the
activity), every refusal is recorded in its audit trail, and the story can wait until the actions
being authorised have taken effect or been refused.

Deterministic: no I/O of its own; imported by workflow modules.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, Generic, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from contracts.audit import AuditKind
    from contracts.proofs import ActionProof
    from contracts.refusals import RefusalCode
    from contracts.runs import AuthorizeRequest, AuthorizeResult
    from contracts.schedules import SCHEDULE_ENABLE_ACTION, ScheduleGrant
    from contracts.temporal_names import ActivityName
    from workflows.audit import AuditTrail

AUTHORIZE_TIMEOUT = timedelta(seconds=10)
# A few quick retries cover a database hiccup; a refusal is an answer, not an error, and not retried.
AUTHORIZE_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(milliseconds=200))

Answer = TypeVar("Answer")


async def authorize_action(
    request: AuthorizeRequest, *, timeout: timedelta = AUTHORIZE_TIMEOUT
) -> AuthorizeResult:
    """The ``authorize_action`` activity's answer. Raises ``ActivityError`` when the check itself
    failed through its retries."""
    result: AuthorizeResult = await workflow.execute_activity(
        ActivityName.AUTHORIZE_ACTION,
        request,
        result_type=AuthorizeResult,
        start_to_close_timeout=timeout,
        retry_policy=AUTHORIZE_RETRY,
    )
    return result


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
                allowed=False, code=RefusalCode.PROOF_REPLAYED, message="this proof was already used"
            )
        used_nonces.add(proof.nonce)
    try:
        return await authorize_action(request)
    except ActivityError as error:
        cause = error.cause
        detail = cause.message if isinstance(cause, ApplicationError) else str(cause or error)
        return AuthorizeResult(
            allowed=False,
            code=RefusalCode.AUTHORIZATION_UNAVAILABLE,
            message=f"the authorisation check failed: {detail}",
        )


class ProtectedActions(Generic[Answer]):
    """The protected actions of one run or team: authorised one by one, refusals audited.

    ``refused(code, message)`` makes the workflow's answer to a refused action (its status now);
    with ``name_requests`` every refusal of an authorisation names the request it answers (its
    proof's nonce), so a caller racing others finds its own.
    """

    def __init__(
        self,
        subject_id: str,
        trail: AuditTrail,
        refused: Callable[[str, str], Answer],
        *,
        name_requests: bool = False,
    ) -> None:
        self._subject_id = subject_id
        self._trail = trail
        self._refused = refused
        self._name_requests = name_requests
        self._used_nonces: set[str] = set()
        self._in_flight = 0

    async def authorize(
        self,
        action: str,
        actor: str | None,
        *,
        proof: ActionProof | None = None,
        digest: str = "",
        standing_grant: bool = False,
        grant_target: str | None = None,
    ) -> Answer | None:
        """Run the authorisation step (:func:`check_action`); ``None`` when allowed, else the
        recorded refusal. A proof's nonce is spent on first use, so a captured proof cannot be sent
        again. ``standing_grant``: the caller has checked a standing grant; only ``actor`` being
        registered and active is checked."""
        request = AuthorizeRequest(
            run_id=self._subject_id,
            action=action,
            actor=actor,
            digest=digest,
            proof=proof,
            standing_grant=standing_grant,
            grant_target=grant_target,
        )
        self._in_flight += 1
        try:
            result = await check_action(request, self._used_nonces)
        finally:
            self._in_flight -= 1
        if result.allowed:
            return None
        nonce = proof.nonce if proof is not None and self._name_requests else None
        return self.refuse(
            action, actor, result.code or RefusalCode.FORBIDDEN, result.message or "refused", request=nonce
        )

    def refuse(
        self, action: str, actor: str | None, code: str, message: str, *, request: str | None = None
    ) -> Answer:
        """Record an ``action_refused`` event (naming ``request`` when given) and answer it."""
        data: dict[str, Any] = {"action": action, "code": code, "message": message}
        if request is not None:
            data["request"] = request
        self._trail.record(AuditKind.ACTION_REFUSED, actor=actor, data=data)
        return self._refused(code, message)

    async def settled(self) -> None:
        """Wait until the actions being authorised have taken effect or been refused."""
        await workflow.wait_condition(lambda: self._in_flight == 0)


def schedule_grant_request(grant: ScheduleGrant, subject_id: str) -> AuthorizeRequest:
    """The authorisation a sweep asks for itself under its schedule's standing grant: the granting
    actor's signature of ``schedule_enable`` on the schedule, bound to the grant's digest
    (docs/architecture.md "Schedules")."""
    return AuthorizeRequest(
        run_id=subject_id,
        action=SCHEDULE_ENABLE_ACTION,
        actor=grant.granted_by,
        digest=grant.digest,
        proof=grant.proof,
        standing_grant=True,
        grant_target=grant.schedule_id,
    )
