"""Providers for registered models: built from the model's registration in the store.

A registered ``openai:NAME`` model is called through :class:`OpenAICompatibleProvider`, an
``anthropic:NAME`` model through :class:`AnthropicMessagesProvider`, each with the registration's
base URL and timeout. Which key a call carries (never stored, never logged):

- ``--api-key-env VAR`` given: the worker's ``VAR``; unset or empty fails the call
  ``model_not_configured`` (a worker set up wrongly is fixed, not hidden behind a fallback);
- no ``--api-key-env`` and no ``--base-url``: the SDK's own variable (``OPENAI_API_KEY`` or
  ``ANTHROPIC_API_KEY``), since the call goes to that vendor's API;
- no ``--api-key-env`` but a ``--base-url``: a placeholder key. A default key is never sent to an
  endpoint the operator did not name it for; keyless local servers (vLLM, Ollama, llama.cpp) ignore
  the placeholder, and a server that wants a key answers 401 (``model_authentication``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping

from activities.providers.base import ModelProvider, ProviderError
from contracts.errors import ErrorType
from contracts.models import ModelRecord

PLACEHOLDER_KEY = "no-key-configured"
"""The key sent to a named base URL when the registration names no key variable."""
SDK_KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
"""The variable each SDK reads its key from when it is given none."""


def _valid_key(key: str) -> bool:
    # A key goes into an HTTP header: anything but printable ASCII without spaces would fail there
    # with an error that may quote it, so it is refused here without being shown.
    return key.isascii() and key.isprintable() and not any(c.isspace() for c in key)


def api_key_for(record: ModelRecord, environ: Mapping[str, str]) -> str | None:
    """The key a call to ``record`` carries (``None``: the SDK's default variable), per the rules above.

    Raises :class:`ProviderError` ``model_not_configured`` when the named variable is unset, empty or
    not a key (printable ASCII without spaces).
    """
    if record.api_key_env is not None:
        key = environ.get(record.api_key_env, "")
        if not key:
            raise ProviderError(
                ErrorType.MODEL_NOT_CONFIGURED,
                f"model {record.id}: environment variable {record.api_key_env} is not set on this worker",
            )
        if not _valid_key(key):
            raise ProviderError(
                ErrorType.MODEL_NOT_CONFIGURED,
                f"model {record.id}: the value of {record.api_key_env} on this worker is not a key "
                "(it must be printable ASCII without spaces)",
            )
        return key
    if record.base_url is not None:
        return PLACEHOLDER_KEY
    return None


def build_provider(record: ModelRecord, environ: Mapping[str, str]) -> ModelProvider:
    """A new provider for ``record``. Raises :class:`ProviderError` ``model_not_configured`` for a
    missing key variable or a provider this worker cannot call."""
    return _provider_with_key(record, api_key_for(record, environ))


def _provider_with_key(record: ModelRecord, key: str | None) -> ModelProvider:
    # The SDKs are imported on first use: they cost about a second of worker start-up, which a
    # worker serving only replay models never needs to spend.
    if record.provider == "openai":
        from activities.providers.openai_compatible import OpenAICompatibleProvider

        return OpenAICompatibleProvider(record.base_url, key, float(record.timeout_s))
    if record.provider == "anthropic":
        from activities.providers.anthropic_messages import AnthropicMessagesProvider

        return AnthropicMessagesProvider(record.base_url, key, float(record.timeout_s))
    raise ProviderError(
        ErrorType.MODEL_NOT_CONFIGURED, f"model {record.id}: provider {record.provider!r} has no client"
    )


class RegisteredProviders:
    """Providers for registered models, built on first use and kept (one SDK client per model and key).

    ``environ`` is where keys are read (default: this process's environment, read at each call, so a
    key set or rotated after start-up is used — the SDK's own variable included). Thread-safe: sync
    activities run in a thread pool.
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = environ
        # By model id and the key in use: a registration never changes, a key may be rotated.
        self._providers: dict[tuple[str, str | None], ModelProvider] = {}
        self._lock = threading.Lock()

    def for_model(self, record: ModelRecord) -> ModelProvider:
        """The provider for ``record``. Raises :class:`ProviderError` (see :func:`build_provider`)."""
        environ = os.environ if self._environ is None else self._environ
        key = api_key_for(record, environ)
        if key is None:  # the SDK reads its own variable: a change to it needs a new client too
            default = SDK_KEY_VARIABLES.get(record.provider)
            key_seen = environ.get(default) if default is not None else None
        else:
            key_seen = key
        cache_key = (record.id, key_seen)
        with self._lock:
            provider = self._providers.get(cache_key)
            if provider is None:
                provider = _provider_with_key(record, key)
                self._providers[cache_key] = provider
            return provider
