"""The ``ApplicationError`` an activity raises: from an :class:`contracts.errors.OperatorError`
(:func:`refusal`), or with a typed detail (:func:`failure`, read back with
``contracts.failures.failure_detail``)."""

from __future__ import annotations

from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from contracts.errors import OperatorError, ServiceUnavailable
from contracts.failures import FailureDetail


def refusal(error: OperatorError, detail: FailureDetail | None = None) -> ApplicationError:
    """An ``ApplicationError`` whose ``type`` is the operator error's code, with ``detail`` as its one
    detail when given (e.g. :class:`contracts.refusal_detail.RefusalDetail`).

    Non-retryable, except an unreachable service (the database), which Temporal may retry. A
    refusal — bad input, something not found or not allowed — is what the system is for, not a
    fault: it is logged here in one ``activity_refused`` line (its code and message) and marked
    expected, so the worker does not log it again as a warning with a traceback. An unreachable
    service stays a warning.
    """
    unavailable = isinstance(error, ServiceUnavailable)
    if not unavailable:
        _log_refusal(error)
    return failure(
        error.message, detail, error_type=error.code, non_retryable=not unavailable, expected=not unavailable
    )


def _log_refusal(error: OperatorError) -> None:
    import structlog
    from temporalio import activity

    context = {}
    if activity.in_activity():
        info = activity.info()
        context = {
            "activity": info.activity_type,
            "workflow_id": info.workflow_id,
            "attempt": info.attempt,
        }
    structlog.get_logger("specialists").info(
        "activity_refused", code=error.code, message=error.message, **context
    )


def failure(
    message: str,
    detail: FailureDetail | None,
    *,
    error_type: str,
    non_retryable: bool = True,
    expected: bool = False,
) -> ApplicationError:
    """An ``ApplicationError`` of ``error_type`` whose one detail is ``detail`` as JSON (none when
    ``None``).

    ``expected``: an outcome the activity has already logged in one line (a replay miss), not a
    fault. It is marked benign, so the Temporal worker logs its failure at debug level instead of
    as a warning with a traceback; the failure the workflow sees is the same.
    """
    details = [] if detail is None else [detail.model_dump(mode="json")]
    category = ApplicationErrorCategory.BENIGN if expected else ApplicationErrorCategory.UNSPECIFIED
    return ApplicationError(
        message, *details, type=error_type, non_retryable=non_retryable, category=category
    )
