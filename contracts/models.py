"""Model identifiers and the operator's model selection (docs/architecture.md "Model selection")."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from contracts.enums import FallbackMode
from contracts.model_classes import ModelClass, ReasoningEffort

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
    primary), the fallback mode, an optional support model for ``support`` profiles, an optional
    advisory model for the advisory passes an operator asks for, and the reasoning effort of each
    model class.

    Raises ``pydantic.ValidationError`` on a malformed id, a repeated model or fallbacks given with
    ``primary_only``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    primary: ModelId
    fallbacks: Annotated[list[ModelId], Field(max_length=_MAX_FALLBACKS)] = []
    fallback_mode: FallbackMode = FallbackMode.PRIMARY_ONLY
    support: ModelId | None = None
    advisory: ModelId | None = None
    """The ``advisory`` class's model: only an advisory pass an operator explicitly asked for runs on
    it (docs/architecture.md "Model selection"); None: no advisory pass can be captured."""
    efforts: dict[ModelClass, ReasoningEffort] = {}
    """The reasoning effort asked of each class's calls (``contracts.model_classes``); a class not
    named gets the provider's default (nothing is sent)."""

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


REPLAY_PROVIDER = "replay"
"""The provider that answers from recordings (docs/architecture.md "Model selection")."""

BUILT_IN_REPLAY_MODELS = ("replay:demo",)
"""Replay models every worker answers from the recordings it ships with
(``examples/recordings/<name>.json``); they need no registration and cannot be registered. Any other
``replay:NAME`` answers from recordings an operator registered (``models add replay:NAME
--recordings FILE``)."""

REGISTRABLE_PROVIDERS = ("openai", "anthropic")
"""Providers an operator may register models for."""

DEFAULT_MODEL_TIMEOUT_S = 60
MAX_MODEL_TIMEOUT_S = 600
DEFAULT_MODEL_CEILING = 5
MAX_MODEL_CEILING = 1000


def is_replay_model(model_id: str) -> bool:
    """Whether ``model_id`` names the replay provider (``replay:*``)."""
    provider, sep, name = model_id.partition(":")
    return bool(sep and name) and provider == REPLAY_PROVIDER


def is_built_in_replay_model(model_id: str) -> bool:
    """Whether ``model_id`` is one of :data:`BUILT_IN_REPLAY_MODELS`."""
    return model_id in BUILT_IN_REPLAY_MODELS


class ModelRegistration(BaseModel):
    """An operator's request to register a model: its id, where to reach it and how much it may take.

    ``api_key_env`` is the *name* of the environment variable the worker reads the key from; keys are
    never stored. The provider, base URL and variable name rules are checked by the store
    (:func:`store.model_registry.check_registration`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: ModelId
    base_url: str | None = None
    api_key_env: str | None = None
    timeout_s: Annotated[int, Field(ge=1, le=MAX_MODEL_TIMEOUT_S)] = DEFAULT_MODEL_TIMEOUT_S
    ceiling: Annotated[int, Field(ge=1, le=MAX_MODEL_CEILING)] = DEFAULT_MODEL_CEILING

    @property
    def provider(self) -> str:
        return split_model_id(self.id)[0]

    @property
    def name(self) -> str:
        return split_model_id(self.id)[1]


class ModelRecord(BaseModel):
    """A registered model with who registered it and when (UTC). ``ceiling`` is the in-flight limit
    across all workers. A deactivated model (``active`` false, with who and when) stays listed; it
    cannot be selected, and no new run may capture it."""

    model_config = ConfigDict(frozen=True)

    id: str
    provider: str
    name: str
    base_url: str | None
    api_key_env: str | None
    timeout_s: int
    ceiling: int
    added_by: str
    added_at: dt.datetime
    active: bool = True
    deactivated_by: str | None = None
    deactivated_at: dt.datetime | None = None
    recordings: int | None = None
    """A registered replay model's number of recordings (``None`` for other providers)."""
    recordings_sha256: str | None = None
    """The sha256 of a registered replay model's recordings file as stored (canonical form)."""
