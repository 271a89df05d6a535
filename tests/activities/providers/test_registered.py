"""Providers for registered models: which key a call carries and which client serves the model."""

from __future__ import annotations

import datetime as dt

import pytest

from activities.providers.anthropic_messages import AnthropicMessagesProvider
from activities.providers.base import ProviderError
from activities.providers.openai_compatible import OpenAICompatibleProvider
from activities.providers.registered import PLACEHOLDER_KEY, RegisteredProviders, api_key_for, build_provider
from contracts.errors import ErrorType
from contracts.models import ModelRecord


def _record(model_id: str, *, base_url: str | None = None, api_key_env: str | None = None) -> ModelRecord:
    provider, _, name = model_id.partition(":")
    return ModelRecord(
        id=model_id,
        provider=provider,
        name=name,
        base_url=base_url,
        api_key_env=api_key_env,
        timeout_s=30,
        ceiling=5,
        added_by="alice",
        added_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    )


DEFAULT_KEYS = {"OPENAI_API_KEY": "sk-default-openai", "ANTHROPIC_API_KEY": "sk-default-anthropic"}


def test_a_named_key_variable_is_read_from_the_workers_environment() -> None:
    record = _record("openai:gpt", api_key_env="TEAM_API_KEY")
    assert api_key_for(record, {**DEFAULT_KEYS, "TEAM_API_KEY": "sk-team"}) == "sk-team"


@pytest.mark.parametrize("environ", [{}, {"TEAM_API_KEY": ""}], ids=["unset", "empty"])
def test_a_named_key_variable_that_is_unset_or_empty_is_model_not_configured(environ: dict[str, str]) -> None:
    record = _record("anthropic:claude", api_key_env="TEAM_API_KEY")
    with pytest.raises(ProviderError) as raised:
        api_key_for(record, environ)
    assert raised.value.error_type == ErrorType.MODEL_NOT_CONFIGURED
    assert "TEAM_API_KEY" in raised.value.message


@pytest.mark.parametrize("value", ["sk-with space", "sk-trailing-newline\n", "sk-ключ", "sk-\x00nul"])
def test_a_key_value_that_cannot_be_a_header_is_refused_without_showing_it(value: str) -> None:
    record = _record("openai:gpt", api_key_env="TEAM_API_KEY")
    with pytest.raises(ProviderError) as raised:
        api_key_for(record, {"TEAM_API_KEY": value})
    assert raised.value.error_type == ErrorType.MODEL_NOT_CONFIGURED
    assert value.strip() not in raised.value.message


def test_a_rotated_sdk_default_key_gets_a_new_client() -> None:
    environ = {"OPENAI_API_KEY": "sk-old-default"}
    providers = RegisteredProviders(environ)
    record = _record("openai:gpt")
    first = providers.for_model(record)
    environ["OPENAI_API_KEY"] = "sk-new-default"
    assert providers.for_model(record) is not first


@pytest.mark.parametrize("model_id", ["openai:gpt", "anthropic:claude"])
def test_a_default_key_is_never_sent_to_an_operator_named_base_url(model_id: str) -> None:
    record = _record(model_id, base_url="http://127.0.0.1:8000/v1")
    assert api_key_for(record, DEFAULT_KEYS) == PLACEHOLDER_KEY


@pytest.mark.parametrize("model_id", ["openai:gpt", "anthropic:claude"])
def test_without_key_variable_or_base_url_the_sdk_reads_its_own_variable(model_id: str) -> None:
    assert api_key_for(_record(model_id), DEFAULT_KEYS) is None


def test_each_provider_gets_its_own_client() -> None:
    environ = {"K_API_KEY": "sk-test-key"}
    openai = build_provider(
        _record("openai:gpt", base_url="http://127.0.0.1:9/v1", api_key_env="K_API_KEY"), environ
    )
    anthropic = build_provider(
        _record("anthropic:claude", base_url="http://127.0.0.1:9", api_key_env="K_API_KEY"), environ
    )
    assert isinstance(openai, OpenAICompatibleProvider)
    assert isinstance(anthropic, AnthropicMessagesProvider)


def test_providers_are_kept_per_model_and_key_and_rebuilt_when_the_key_changes() -> None:
    environ = {"K_API_KEY": "sk-first-key"}
    providers = RegisteredProviders(environ)
    record = _record("openai:gpt", base_url="http://127.0.0.1:9/v1", api_key_env="K_API_KEY")
    first = providers.for_model(record)
    assert providers.for_model(record) is first
    environ["K_API_KEY"] = "sk-second-key"
    assert providers.for_model(record) is not first
