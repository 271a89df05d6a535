"""Model identifiers and the operator's model selection (DESIGN.md "Run lifecycle", model selection)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from contracts.enums import FallbackMode

_MAX_MODEL_ID_CHARS = 200
_MAX_FALLBACKS = 8


def _check_model_id(value: str) -> str:
    provider, sep, name = value.partition(":")
    if not sep or not provider or not name:
        raise ValueError(f"model id {value!r} must be 'provider:name'")
    if len(value) > _MAX_MODEL_ID_CHARS:
        raise ValueError(f"model id is longer than {_MAX_MODEL_ID_CHARS} characters")
    if not (provider[0].isascii() and provider[0].isalpha()) or not all(
        c.isascii() and (c.isalnum() or c in "_-") for c in provider
    ):
        raise ValueError(f"model provider {provider!r} must be ASCII letters, digits, '_' or '-'")
    if any(c.isspace() or not c.isprintable() for c in name):
        raise ValueError(f"model name {name!r} must not contain whitespace or control characters")
    return value


ModelId = Annotated[str, AfterValidator(_check_model_id)]
"""``provider:name``, split at the first colon (``openai:llama3:8b`` → ``openai`` + ``llama3:8b``)."""


def split_model_id(model_id: str) -> tuple[str, str]:
    """Split a model id into ``(provider, name)`` at the first colon. Raises ``ValueError`` if bad."""
    _check_model_id(model_id)
    provider, _, name = model_id.partition(":")
    return provider, name


class ModelSelection(BaseModel):
    """The operator's model choice: a primary, an ordered fallback list (<= 8, no repeats, not the
    primary), the fallback mode and an optional support model for ``support`` profiles.

    Raises ``pydantic.ValidationError`` on a malformed id, a repeated model or fallbacks given with
    ``primary_only``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    primary: ModelId
    fallbacks: Annotated[list[ModelId], Field(max_length=_MAX_FALLBACKS)] = []
    fallback_mode: FallbackMode = FallbackMode.PRIMARY_ONLY
    support: ModelId | None = None

    @model_validator(mode="after")
    def _fallbacks_consistent(self) -> ModelSelection:
        chain = [self.primary, *self.fallbacks]
        if len(set(chain)) != len(chain):
            raise ValueError("the primary and fallback models must all differ")
        if self.fallbacks and self.fallback_mode is FallbackMode.PRIMARY_ONLY:
            raise ValueError("fallbacks were given but fallback mode is primary_only: use ordered")
        if self.fallback_mode is FallbackMode.ORDERED and not self.fallbacks:
            raise ValueError("fallback mode ordered needs at least one --fallback model")
        return self


class ModelSelectionRecord(BaseModel):
    """A stored model selection with who made it and when (UTC)."""

    model_config = ConfigDict(frozen=True)

    selection: ModelSelection
    selected_by: str
    selected_at: dt.datetime
