"""The provider interface: one completion request in, raw text out, errors classified.

Providers never retry on their own; Temporal owns retries and the fallback walk owns fallbacks, both
driven by the :class:`ProviderError` ``error_type`` (values from ``contracts.errors.ErrorType``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from contracts.output import JobKind


@dataclass(frozen=True)
class JobIdentity:
    """A job's stable identity: profile, job kind and the work item's title.

    The replay provider keys recordings by it, so recordings survive changes to prompts and context.
    """

    profile_id: str
    kind: JobKind
    title: str


@dataclass(frozen=True)
class CompletionRequest:
    """One model call: the model name (without provider), instructions, the context, the identity."""

    model_name: str
    instructions: str
    context: str
    identity: JobIdentity


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
