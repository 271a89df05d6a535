"""``ModelCheck``: ``specialists models test`` — one tiny call to one model, made by a worker.

Keys live on the workers, not on the operator's machine, so the check runs where runs run. It is a
protected action (it spends the model's quota): the actor must be registered and the request must
carry a proof of the action token bound to the check id, the action ``test_model`` and the model id.
The check id is the workflow id; the proof's nonce is spent in the store on first use, so a proof
cannot be sent twice, not even to a new execution with the same id.

Result: :class:`ModelCheckResult` — ``ok``; or ``refused`` with the authorisation's refusal code; or
the model's error class (``contracts.errors.ErrorType``). The call is made once: a check reports what
the endpoint answers now, it does not retry or fall back.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from contracts.model_jobs import (
        CHECK_TIMEOUT,
        TEST_MODEL_ACTION,
        ModelCheckCall,
        ModelCheckRequest,
        ModelCheckResult,
    )
    from contracts.runs import AuthorizeRequest
    from contracts.temporal_names import ActivityName, WorkflowType
    from workflows.authorization import authorize_action
    from workflows.versioning import pinned

CHECK_HEARTBEAT = timedelta(seconds=30)


@workflow.defn(name=WorkflowType.MODEL_CHECK, versioning_behavior=pinned())
class ModelCheckWorkflow:
    """Authorise the check, then call the model once and report how it ended."""

    @workflow.run
    async def run(self, request: ModelCheckRequest) -> ModelCheckResult:
        # The proof's nonce is spent in the store (a check is one action, so the workflow keeps no
        # nonces of its own); an authorisation that cannot be made fails the check.
        authorised = await authorize_action(
            AuthorizeRequest(
                run_id=request.check_id,
                action=TEST_MODEL_ACTION,
                actor=request.actor,
                digest=request.model_id,
                proof=request.proof,
            )
        )
        if not authorised.allowed:
            return ModelCheckResult(
                check_id=request.check_id,
                model_id=request.model_id,
                ok=False,
                refused=True,
                error_type=authorised.code,
                message=authorised.message,
            )
        result: ModelCheckResult = await workflow.execute_activity(
            ActivityName.CHECK_MODEL,
            ModelCheckCall(check_id=request.check_id, model_id=request.model_id),
            result_type=ModelCheckResult,
            start_to_close_timeout=CHECK_TIMEOUT,
            heartbeat_timeout=CHECK_HEARTBEAT,
            retry_policy=RetryPolicy(maximum_attempts=1),
        )
        return result
