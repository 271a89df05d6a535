"""Operator-facing errors: a stable snake_case code, a message and the CLI exit code.

Exit codes follow docs/architecture.md "Exit codes": 2 invalid input (nothing written), 3 not found,
4 refused by state, policy or a limit, 5 a required service unreachable, 6 verification failed,
7 a run waited for ended without success, 8 a wait timed out.
"""

from __future__ import annotations

from typing import ClassVar, Final, Self


class OperatorError(Exception):
    """Base class: ``code`` is a stable snake_case identifier shown in ``{"error": {...}}``."""

    exit_code: ClassVar[int] = 1

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def to_json(self) -> dict[str, dict[str, str]]:
        """The ``--json`` error shape: ``{"error": {"code", "message"}}``."""
        return {"error": {"code": self.code, "message": self.message}}

    def restated(self, message: str) -> Self:
        """The same error — class (so exit code), code and any data a subclass carries — with
        ``message`` in place of its own: what a caller that knows more tells the operator."""
        told = type(self).__new__(type(self))
        told.__dict__.update(self.__dict__)
        told.message = message
        told.args = (message,)
        return told


class InvalidInput(OperatorError):
    """Malformed input or flags; nothing was written (exit 2)."""

    exit_code = 2


class NotFound(OperatorError):
    """A referenced id (run, profile, model, repository alias, case, actor) does not exist (exit 3)."""

    exit_code = 3


class Refused(OperatorError):
    """Refused by state, policy or a limit (exit 4)."""

    exit_code = 4


class ServiceUnavailable(OperatorError):
    """A required service (Temporal, the database) cannot be reached (exit 5)."""

    exit_code = 5


class VerificationFailed(OperatorError):
    """A verification check failed, e.g. a catalog source mismatch (exit 6)."""

    exit_code = 6


RUN_ENDED_WITHOUT_SUCCESS_EXIT_CODE: Final = 7
"""``--wait`` saw the run end ``failed``, ``expired`` or ``cancelled``: the CLI prints its final view
(with its error) as it would any view, and exits 7."""


class WaitTimedOut(OperatorError):
    """``--wait --timeout SECONDS`` passed before the run needed a person or finished; the run is
    left as it is (exit 8)."""

    exit_code = 8


class ErrorType:
    """``ApplicationError.type`` values raised by activities and workflows.

    This is the one place that classifies errors for retry and fallback (docs/architecture.md
    "Temporal conventions", "Model selection"): Temporal retries only :data:`RETRYABLE_ERROR_TYPES` (at most
    two attempts); an ``ordered`` model chain advances only on :data:`FALLBACK_ERROR_TYPES`; everything else
    fails at once.

    Model errors fall in three groups. Retried on the same model: timeout, transport, rate limit.
    Advancing an ``ordered`` chain: quota exhausted, authentication or permission refused, provider
    unavailable (5xx, overloaded). Neither retried nor advancing: output contract or parse failures,
    request validation (e.g. context too long), safety or content policy, task errors, configuration.
    """

    MODEL_QUOTA = "model_quota"
    MODEL_AUTHENTICATION = "model_authentication"
    MODEL_PROVIDER_UNAVAILABLE = "model_provider_unavailable"
    MODEL_TIMEOUT = "model_timeout"
    MODEL_TRANSPORT = "model_transport"
    MODEL_RATE_LIMITED = "model_rate_limited"
    MODEL_OUTPUT_SCHEMA = "model_output_schema"
    MODEL_OUTPUT_INVALID = "model_output_invalid"
    MODEL_SAFETY = "model_safety"
    MODEL_TASK = "model_task"
    MODEL_NOT_CONFIGURED = "model_not_configured"
    # The provider refused the request itself (e.g. context too long, an unknown parameter).
    MODEL_REQUEST_INVALID = "model_request_invalid"
    REPLAY_NO_RECORDING = "replay_no_recording"
    REQUEST_TOO_LARGE = "request_too_large"
    # Credential material in a job's context pack (no call is made) or in a model's output (the output
    # is discarded): docs/architecture.md "Secret scanning".
    SECRET_IN_CONTEXT = "secret_in_context"
    SECRET_IN_OUTPUT = "secret_in_output"
    RESULT_TOO_LARGE = "result_too_large"
    CAPTURE_REFUSED = "capture_refused"
    CATALOG_CHANGED = "catalog_changed"
    PROJECTION_FAILED = "projection_failed"
    RUNTIME_BUDGET_EXHAUSTED = "runtime_budget_exhausted"
    APPROVAL_WINDOW_EXPIRED = "approval_window_expired"
    # Worktree execution fails closed with one of ``contracts.worktree.EXECUTION_FAILURE_TYPES``
    # (head_moved, new_commit, new_ref, diff_check_failed, too_many_files, path_outside_worktree,
    # patch_does_not_apply, patch_invalid, base_commit_unavailable, and for the ``command`` executor
    # and verify commands command_timeout, command_output_too_large, command_failed,
    # confinement_unavailable); these are its other failures.
    REPOSITORY_UNAVAILABLE = "repository_unavailable"
    CHANGE_TOO_LARGE_FOR_REVIEW = "change_too_large_for_review"
    EXECUTION_FAILED = "execution_failed"
    # Research teams: a referenced evidence record or stored result no longer matches its sha256;
    # the team's job budget (12) is spent; the stored output of a job could not be written.
    RESEARCH_INPUT_CHANGED = "research_input_changed"
    JOB_BUDGET_EXHAUSTED = "job_budget_exhausted"
    JOB_OUTPUT_NOT_STORED = "job_output_not_stored"
    # An approved probe (docs/architecture.md "Probe requests") that could not run to an exit fails
    # with one of the command failures above (command_timeout, command_output_too_large,
    # command_failed, confinement_unavailable, base_commit_unavailable) or one of these.
    PROBE_CWD_OUTSIDE_WORKTREE = "probe_cwd_outside_worktree"
    PROBE_CWD_MISSING = "probe_cwd_missing"
    PROBE_TOO_MANY_CHANGES = "probe_too_many_changes"
    PROBE_CANCELLED = "probe_cancelled"


FALLBACK_ERROR_TYPES = frozenset(
    {ErrorType.MODEL_QUOTA, ErrorType.MODEL_AUTHENTICATION, ErrorType.MODEL_PROVIDER_UNAVAILABLE}
)
RETRYABLE_ERROR_TYPES = frozenset(
    {ErrorType.MODEL_TIMEOUT, ErrorType.MODEL_TRANSPORT, ErrorType.MODEL_RATE_LIMITED}
)


def advances_fallback(error_type: str | None) -> bool:
    """True when a model error of ``error_type`` may move an ``ordered`` chain to its next model."""
    return error_type in FALLBACK_ERROR_TYPES


def is_retryable(error_type: str | None) -> bool:
    """True when Temporal may retry an activity that failed with ``error_type``."""
    return error_type in RETRYABLE_ERROR_TYPES
