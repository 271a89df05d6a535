"""Operator-facing errors: a stable snake_case code, a message and the CLI exit code.

Exit codes follow DESIGN.md ("Operator contract"): 2 invalid input (nothing written), 3 not found,
4 refused by state, policy or a limit, 5 a required service unreachable, 6 verification failed.
"""

from __future__ import annotations

from typing import ClassVar


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
