"""The audit trail a ``SpecialistRun`` or a ``ResearchTeam`` keeps in its state (docs/architecture.md
"Temporal conventions"): events numbered in order, stamped with workflow time, of an
:class:`contracts.audit.AuditKind`. The workflow history is the durable record; the trail is what
``show`` presents and what the projection copies.

Deterministic: no I/O; imported by workflow modules.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from contracts.audit import AuditKind
    from contracts.failures import failure_detail
    from contracts.refusal_detail import RefusalDetail
    from contracts.runs import AuditEvent, RunError


class AuditTrail:
    """A workflow's audit events, in the order they happened."""

    def __init__(self) -> None:
        self.events: list[AuditEvent] = []

    def record(
        self, kind: AuditKind, *, actor: str | None = None, data: dict[str, Any] | None = None
    ) -> None:
        """Append one event (``seq`` counts from 1)."""
        self.events.append(
            AuditEvent(seq=len(self.events) + 1, at=workflow.now(), kind=kind, actor=actor, data=data or {})
        )

    def since(self, seq: int) -> list[AuditEvent]:
        """The events after ``seq`` (what the projection has not seen yet)."""
        return [event for event in self.events if event.seq > seq]


def activity_failure(error: ActivityError) -> RunError:
    """The error type and message behind a failed activity: the ``ApplicationError``'s own, else
    ``activity_failed`` (a timeout, a cancellation) with what Temporal said; and, for a refusal that
    says which operator error it is (:class:`RefusalDetail`, e.g. a refused capture), its exit code."""
    cause = error.cause
    error_type = cause.type if isinstance(cause, ApplicationError) and cause.type else "activity_failed"
    message = cause.message if isinstance(cause, ApplicationError) else str(cause or error)
    refused = failure_detail(cause, RefusalDetail) if isinstance(cause, ApplicationError) else None
    exit_code = None if refused is None else refused.exit_code
    return RunError(type=error_type, message=message, exit_code=exit_code)
