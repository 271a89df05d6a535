"""What a refusal raised by an activity carries besides its code and message: the class of operator
error it is, as its exit code (docs/architecture.md "Operator contract", "Exit codes").

The run's ``capture_contract`` activity is the only capture of a run's contract, so a create it
refuses (automation off, an unknown override profile, an unknown or unavailable repository, no model
selected, ...) leaves a ``failed`` run. The refusal's ``ApplicationError`` carries a
:class:`RefusalDetail`; the workflow keeps its exit code in the run's :class:`contracts.runs.RunError`,
and the CLI that created the run reports the refusal with that exit code
(:func:`operator_error`), as it would have refused the create itself.
"""

from __future__ import annotations

from typing import Final

from pydantic import Field

from contracts.errors import (
    InvalidInput,
    NotFound,
    OperatorError,
    Refused,
    ServiceUnavailable,
    VerificationFailed,
)
from contracts.failures import FailureDetail

_BY_EXIT_CODE: Final[dict[int, type[OperatorError]]] = {
    error_class.exit_code: error_class
    for error_class in (InvalidInput, NotFound, Refused, ServiceUnavailable, VerificationFailed)
}


class RefusalDetail(FailureDetail):
    """The exit code of the operator error an activity refused with (2 invalid input, 3 not found,
    4 refused, 5 a service unreachable, 6 verification failed; 1 any other)."""

    exit_code: int = Field(ge=1, le=6)

    @classmethod
    def of(cls, error: OperatorError) -> RefusalDetail:
        """The detail of ``error``."""
        return cls(exit_code=error.exit_code)


def operator_error(code: str, message: str, exit_code: int) -> OperatorError:
    """An operator error of the class whose exit code is ``exit_code`` (any other: the base class,
    exit 1), with ``code`` and ``message``."""
    return _BY_EXIT_CODE.get(exit_code, OperatorError)(code, message)
