"""The provider interface: one completion request in, raw text out, errors classified.

Providers never retry on their own; Temporal owns retries and the fallback walk owns fallbacks, both
driven by the :class:`ProviderError` ``error_type`` (values from ``contracts.errors.ErrorType``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from contracts.output import JobKind


@dataclass(frozen=True)
class JobIdentity:
    """A job's stable identity: profile, job kind and the work item's title, and whether it is a
    worktree run's change job (``expects_patch``: its result carries a unified diff); with the job's
    task (the work item's title and description), which a recording may require to contain a text.

    The replay provider keys recordings by it, so recordings survive changes to prompts and context.
    """

    profile_id: str
    kind: JobKind
    title: str
    expects_patch: bool = False
    task: str = ""

    @property
    def recording_kind(self) -> str:
        """The job kind a recording is filed under: ``change`` for a change job, else the kind."""
        return "change" if self.expects_patch else self.kind.value


@dataclass(frozen=True)
class CompletionRequest:
    """One model call: the model name (without provider), instructions, the context, the identity
    and the reasoning effort asked."""

    model_name: str
    instructions: str
    context: str
    identity: JobIdentity
    effort: str | None = None
    """The reasoning effort asked (``low | medium | high``; None: the provider's default), sent by
    providers that support it."""


@dataclass(frozen=True)
class Completion:
    """One successful call: the raw (untrusted) text, token usage when reported, and latency in ms."""

    text: str
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: int
    reasoning_tokens: int | None = None
    """Tokens the provider reports spent on reasoning (OpenAI ``reasoning_tokens``), if reported."""
    reasoning_seen: bool | None = None
    """Whether the answer shows reasoning was done (thinking blocks; reasoning tokens above 0);
    None where the provider shows neither way."""


class ProviderError(Exception):
    """A classified provider failure; ``error_type`` drives retry and fallback."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message


class ModelProvider(Protocol):
    """Anything that can complete a :class:`CompletionRequest` into raw text (untrusted)."""

    def complete(self, request: CompletionRequest) -> str:
        """Return the model's raw text. Raises :class:`ProviderError`."""
        ...


@runtime_checkable
class UsageReportingProvider(ModelProvider, Protocol):
    """A provider that also reports token usage (the HTTP providers do; replay does not)."""

    def complete_with_usage(self, request: CompletionRequest) -> Completion:
        """The model's raw text with token usage and latency. Raises :class:`ProviderError`."""
        ...


def complete_measured(provider: ModelProvider, request: CompletionRequest) -> Completion:
    """Call ``provider`` once: its usage when it reports any (else ``None`` tokens) and the latency.

    Raises what the provider raises (:class:`ProviderError`).
    """
    if isinstance(provider, UsageReportingProvider):
        return provider.complete_with_usage(request)
    started = time.monotonic()
    text = provider.complete(request)
    return Completion(
        text=text,
        input_tokens=None,
        output_tokens=None,
        latency_ms=round((time.monotonic() - started) * 1000),
    )
