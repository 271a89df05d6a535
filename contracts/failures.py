"""What a failure carries besides its type and message, one model per kind of failure
(docs/architecture.md "Temporal conventions").

The raiser puts one detail on its ``ApplicationError``: ``ApplicationError(message,
detail.model_dump(mode="json"), type=...)``; the reader takes it back with
``failure_detail(cause, WorktreeFailureDetail)`` — never by position in ``details``.

Failures recorded before these models existed carried their parts positionally (a worktree's
location first, then the agent's report; a job's attempts, then its pack's sha256; a call's usage).
Each model reads that shape too (:meth:`FailureDetail.from_positional`), so a history recorded then
replays to the same state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, Self, TypeGuard, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from contracts.execution import CommandReport, WorktreeLocation
from contracts.model_jobs import CallUsage, ModelAttempt
from contracts.probes import ProbeEvidence


class FailureDetail(BaseModel):
    """One failure's detail. ``extra="forbid"``: a positional part of an older failure is never
    mistaken for a detail."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def from_positional(cls, details: Sequence[Any]) -> Self | None:
        """The detail from the positional ``details`` of a failure raised before this model
        existed; ``None`` when they hold none."""
        return None


class WorktreeFailureDetail(FailureDetail):
    """A failed worktree attempt (``execute_worktree_attempt``) whose worktree was made: where it is
    kept and, once the repository's agent ran, the agent's report."""

    location: WorktreeLocation
    command: CommandReport | None = None

    @classmethod
    def from_positional(cls, details: Sequence[Any]) -> Self | None:
        if not details or not isinstance(details[0], dict):
            return None
        command = details[1] if len(details) > 1 and isinstance(details[1], dict) else None
        return cls.model_validate({"location": details[0], "command": command})


class ModelCallFailureDetail(FailureDetail):
    """A failed ``call_model``: what the call cost before it failed."""

    usage: CallUsage

    @classmethod
    def from_positional(cls, details: Sequence[Any]) -> Self | None:
        if not details or not isinstance(details[0], dict):
            return None
        return cls.model_validate({"usage": details[0]})


class ModelJobFailureDetail(FailureDetail):
    """A failed ``ModelJob``: every attempt it made and, when it built one, its context pack's sha256."""

    attempts: list[ModelAttempt] = []
    pack_sha256: str | None = None

    @classmethod
    def from_positional(cls, details: Sequence[Any]) -> Self | None:
        if not details or not isinstance(details[0], list):
            return None
        extra = details[1] if len(details) > 1 and isinstance(details[1], dict) else {}
        return cls.model_validate({"attempts": details[0], "pack_sha256": extra.get("pack_sha256")})

    def attempts_data(self) -> list[dict[str, Any]]:
        """The attempts as JSON, with the fields they travelled with (an attempt recorded before a
        field existed stays without it)."""
        return [attempt.model_dump(mode="json", exclude_unset=True) for attempt in self.attempts]


class ProbeFailureDetail(FailureDetail):
    """An approved probe that could not run to an exit (``run_probe``): what is known of it — the
    commit, where its worktree is kept and, once the command ran, its report."""

    evidence: ProbeEvidence


class _Failure(Protocol):
    @property
    def details(self) -> Sequence[Any]: ...


Detail = TypeVar("Detail", bound=FailureDetail)


def failure_detail(cause: object, model: type[Detail]) -> Detail | None:
    """``cause``'s detail as ``model`` (``cause``: an ``ApplicationError``, or anything with
    ``details``); ``None`` when it carries none of that kind."""
    details: Sequence[Any] = cause.details if _has_details(cause) else ()
    if not details:
        return None
    if len(details) == 1 and isinstance(details[0], dict):
        try:
            return model.model_validate(details[0])
        except ValidationError:
            pass
    try:
        return model.from_positional(details)
    except ValidationError:
        return None


def _has_details(cause: object) -> TypeGuard[_Failure]:
    return isinstance(getattr(cause, "details", None), Sequence)
