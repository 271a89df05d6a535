"""Turning an :class:`contracts.errors.OperatorError` into a non-retryable Temporal error."""

from __future__ import annotations

from temporalio.exceptions import ApplicationError

from contracts.errors import OperatorError, ServiceUnavailable


def refusal(error: OperatorError) -> ApplicationError:
    """An ``ApplicationError`` whose ``type`` is the operator error's code.

    Non-retryable, except an unreachable service (the database), which Temporal may retry.
    """
    return ApplicationError(
        error.message, type=error.code, non_retryable=not isinstance(error, ServiceUnavailable)
    )
