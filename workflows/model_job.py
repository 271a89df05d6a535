"""``ModelJob``: one model job — a primary analysis or a review — behind one child-workflow boundary.

The job walks the captured model chain: each model is one ``call_model`` activity (Temporal retries it
at most ``max_attempts`` times, only for timeout, transport and rate-limit errors). With fallback mode
``ordered`` only quota, authentication and provider-availability errors move on to the next model
(``contracts.errors.advances_fallback``); any other error ends the job. Every attempt is returned (or,
on failure, carried in the error's details) so the parent run can audit it.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError

with workflow.unsafe.imports_passed_through():
    from contracts.errors import ErrorType, advances_fallback
    from contracts.model_jobs import (
        ModelAttempt,
        ModelCallRequest,
        ModelCallResult,
        ModelJobInput,
        ModelJobResult,
    )

CALL_MODEL_ACTIVITY = "call_model"
MODEL_CALL_TIMEOUT = timedelta(minutes=10)
MODEL_CALL_HEARTBEAT = timedelta(seconds=30)


def _error_type(error: ActivityError) -> tuple[str, str]:
    """The error type and message behind a failed activity (timeouts count as ``model_timeout``)."""
    cause = error.cause
    if isinstance(cause, ApplicationError):
        return cause.type or ErrorType.MODEL_TASK, cause.message
    if isinstance(cause, TimeoutError):
        return ErrorType.MODEL_TIMEOUT, str(cause)
    return ErrorType.MODEL_TASK, str(cause or error)


@workflow.defn(name="ModelJob")
class ModelJobWorkflow:
    """Run one model job over the captured chain and return a validated result."""

    @workflow.init
    def __init__(self, job: ModelJobInput) -> None:
        self._attempts: list[ModelAttempt] = []

    @workflow.run
    async def run(self, job: ModelJobInput) -> ModelJobResult:
        chain = job.model.chain
        for index, model_id in enumerate(chain):
            request = ModelCallRequest(
                job_id=job.job_id,
                kind=job.kind,
                profile_id=job.profile_id,
                catalog_sha256=job.catalog_sha256,
                context=job.context,
                model_id=model_id,
                run_id=job.run_id,
            )
            try:
                result = await workflow.execute_activity(
                    CALL_MODEL_ACTIVITY,
                    request,
                    result_type=ModelCallResult,
                    start_to_close_timeout=MODEL_CALL_TIMEOUT,
                    heartbeat_timeout=MODEL_CALL_HEARTBEAT,
                    retry_policy=RetryPolicy(
                        maximum_attempts=job.max_attempts,
                        initial_interval=timedelta(seconds=1),
                        backoff_coefficient=2.0,
                    ),
                )
            except ActivityError as error:
                error_type, message = _error_type(error)
                fallback = advances_fallback(error_type) and index + 1 < len(chain)
                self._attempts.append(
                    ModelAttempt(
                        model_id=model_id,
                        outcome="failed",
                        error_type=error_type,
                        message=message,
                        fallback=fallback,
                    )
                )
                if fallback:
                    workflow.logger.info("model %s failed with %s; falling back", model_id, error_type)
                    continue
                raise ApplicationError(
                    f"model job {job.job_id} failed on {model_id}: {message}",
                    [attempt.model_dump(mode="json") for attempt in self._attempts],
                    type=error_type,
                    non_retryable=True,
                ) from error
            self._attempts.append(ModelAttempt(model_id=model_id, outcome="ok"))
            return ModelJobResult(output=result.output, model_id=model_id, attempts=self._attempts)
        raise ApplicationError(
            f"model job {job.job_id} has an empty model chain",
            type=ErrorType.MODEL_NOT_CONFIGURED,
            non_retryable=True,
        )
