"""The Anthropic Messages provider against a real loopback server, through the official SDK: the
request carries the system instructions, the context and the output schema as a forced tool; the
SDK never retries; every failure gets the ``ErrorType`` its status, error type and code call for,
and that type is retried or advances the fallback chain exactly as ``contracts.errors`` says."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from activities.models import parse_output
from activities.providers.anthropic_messages import DEFAULT_MAX_TOKENS, AnthropicMessagesProvider
from activities.providers.base import Completion, ProviderError
from contracts.errors import ErrorType, advances_fallback, is_retryable
from contracts.output import SpecialistOutput
from tests.activities.providers.wire_server import (
    CONTEXT,
    INSTRUCTIONS,
    Scripted,
    WireServer,
    anthropic_error,
    anthropic_message,
    call_request,
    closed_port,
    completion_request,
    running,
    valid_output,
)

KEY = "sk-ant-test-0b5e55ed0ddc0ffee42"
MODEL = "model-b"


@pytest.fixture(scope="module")
def wire() -> Iterator[WireServer]:
    with running() as server:
        yield server


@pytest.fixture
def server(wire: WireServer) -> Iterator[WireServer]:
    wire.reset()
    yield wire
    wire.reset()


@pytest.fixture
def provider(server: WireServer) -> AnthropicMessagesProvider:
    return AnthropicMessagesProvider(server.root_url, KEY, timeout_s=5.0)


def _failure(provider: AnthropicMessagesProvider, model: str = MODEL) -> ProviderError:
    with pytest.raises(ProviderError) as raised:
        provider.complete(completion_request(model))
    assert KEY not in raised.value.message and KEY[:12] not in raised.value.message
    return raised.value


def _key_header(headers: dict[str, str]) -> str:
    return headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")


# ------------------------------------------------------------------------------------------ success


def test_success_forces_the_output_tool_once_and_reports_usage(
    server: WireServer, provider: AnthropicMessagesProvider
) -> None:
    body = anthropic_message(tool_input=valid_output(), input_tokens=400, output_tokens=90)
    body["usage"]["cache_read_input_tokens"] = 100
    server.script(Scripted(200, body))

    completion = provider.complete_with_usage(completion_request(MODEL))

    assert isinstance(completion, Completion)
    assert json.loads(completion.text) == valid_output()
    assert (completion.input_tokens, completion.output_tokens) == (500, 90)
    assert 0 <= completion.latency_ms < 5_000
    [received] = server.received
    assert received.path == "/v1/messages"
    assert _key_header(received.headers) == KEY
    assert received.headers.get("x-stainless-retry-count", "0") == "0"
    sent = received.body
    assert sent["model"] == MODEL
    assert sent["max_tokens"] == DEFAULT_MAX_TOKENS
    assert sent["system"] == INSTRUCTIONS
    assert sent["messages"] == [{"role": "user", "content": CONTEXT}]
    [tool] = sent["tools"]
    assert tool["name"] == "specialist_output"
    assert tool["input_schema"] == SpecialistOutput.model_json_schema()
    assert sent["tool_choice"] == {"type": "tool", "name": "specialist_output"}


def test_complete_returns_the_text_and_parse_output_accepts_it(
    server: WireServer, provider: AnthropicMessagesProvider
) -> None:
    server.script(Scripted(200, anthropic_message(tool_input=valid_output())))

    raw = provider.complete(completion_request(MODEL))

    output = parse_output(raw, call_request(f"anthropic:{MODEL}"))
    assert output.role == "database-optimizer" and output.confidence == 0.8
    assert len(server.received) == 1


def test_a_text_answer_is_returned_as_is(server: WireServer, provider: AnthropicMessagesProvider) -> None:
    text = json.dumps(valid_output())
    server.script(Scripted(200, anthropic_message(text=text)))

    raw = provider.complete(completion_request(MODEL))

    assert raw == text
    assert parse_output(raw, call_request(f"anthropic:{MODEL}")).closure.value == "closed"


# ------------------------------------------------------------------------------------------- errors

CREDIT = (
    "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to "
    "upgrade or purchase credits."
)

# (status, body, ErrorType, advances the fallback chain, retried on the same model)
HTTP_ERRORS: list[tuple[str, int, Any, str, bool, bool]] = [
    (
        "429 rate limit",
        429,
        anthropic_error(
            "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"
        ),
        ErrorType.MODEL_RATE_LIMITED,
        False,
        True,
    ),
    (
        "429 spend limit reached",
        429,
        anthropic_error(
            "rate_limit_error",
            "Your organization has reached its monthly spend limit.",
            error_code="enforced_spend_limit_reached",
        ),
        ErrorType.MODEL_QUOTA,
        True,
        False,
    ),
    (
        "400 credit balance too low",
        400,
        anthropic_error("invalid_request_error", CREDIT),
        ErrorType.MODEL_QUOTA,
        True,
        False,
    ),
    (
        "403 credit balance too low",
        403,
        anthropic_error("permission_error", CREDIT),
        ErrorType.MODEL_QUOTA,
        True,
        False,
    ),
    (
        "402 billing error",
        402,
        anthropic_error("billing_error", "Your account has a billing issue."),
        ErrorType.MODEL_QUOTA,
        True,
        False,
    ),
    (
        "401 bad key",
        401,
        anthropic_error("authentication_error", f"invalid x-api-key {KEY}"),
        ErrorType.MODEL_AUTHENTICATION,
        True,
        False,
    ),
    (
        "403 permission",
        403,
        anthropic_error(
            "permission_error", "Your API key does not have permission to use the specified resource."
        ),
        ErrorType.MODEL_AUTHENTICATION,
        True,
        False,
    ),
    (
        "500 api error",
        500,
        anthropic_error("api_error", "Internal server error"),
        ErrorType.MODEL_PROVIDER_UNAVAILABLE,
        True,
        False,
    ),
    ("503 plain text", 503, "Service Unavailable", ErrorType.MODEL_PROVIDER_UNAVAILABLE, True, False),
    (
        "529 overloaded",
        529,
        anthropic_error("overloaded_error", "Overloaded"),
        ErrorType.MODEL_PROVIDER_UNAVAILABLE,
        True,
        False,
    ),
    (
        "400 prompt too long",
        400,
        anthropic_error("invalid_request_error", "prompt is too long: 212345 tokens > 200000 maximum"),
        ErrorType.MODEL_REQUEST_INVALID,
        False,
        False,
    ),
    (
        "413 request too large",
        413,
        anthropic_error("request_too_large", "Request exceeds the maximum allowed number of bytes."),
        ErrorType.MODEL_REQUEST_INVALID,
        False,
        False,
    ),
    (
        "400 content policy",
        400,
        anthropic_error("invalid_request_error", "Output blocked by content filtering policy"),
        ErrorType.MODEL_SAFETY,
        False,
        False,
    ),
    (
        "404 unknown model",
        404,
        anthropic_error("not_found_error", "model: model-b"),
        ErrorType.MODEL_NOT_CONFIGURED,
        False,
        False,
    ),
]


@pytest.mark.parametrize(
    ("status", "body", "error_type", "advances", "retryable"),
    [case[1:] for case in HTTP_ERRORS],
    ids=[case[0] for case in HTTP_ERRORS],
)
def test_http_errors_are_classified_by_status_and_error_type(
    server: WireServer,
    provider: AnthropicMessagesProvider,
    status: int,
    body: Any,
    error_type: str,
    advances: bool,
    retryable: bool,
) -> None:
    server.script(Scripted(status, body))

    error = _failure(provider)

    assert error.error_type == error_type
    assert advances_fallback(error.error_type) is advances
    assert is_retryable(error.error_type) is retryable
    assert f"HTTP {status}" in error.message and MODEL in error.message
    assert len(server.received) == 1, "the SDK must not retry"


# ------------------------------------------------------------------------------------ broken bodies

BROKEN: list[tuple[str, Scripted]] = [
    (
        "truncated json",
        Scripted(200, b'{"id": "msg_01", "content": [tru', {"content-type": "application/json"}),
    ),
    (
        "html page",
        Scripted(200, "<html><body>Welcome to the proxy</body></html>", {"content-type": "text/html"}),
    ),
    ("not a message", Scripted(200, {"status": "ok"})),
]


@pytest.mark.parametrize("answer", [case[1] for case in BROKEN], ids=[case[0] for case in BROKEN])
def test_a_malformed_200_body_is_provider_unavailable(
    server: WireServer, provider: AnthropicMessagesProvider, answer: Scripted
) -> None:
    server.script(answer)

    error = _failure(provider)

    assert error.error_type == ErrorType.MODEL_PROVIDER_UNAVAILABLE
    assert advances_fallback(error.error_type) and not is_retryable(error.error_type)
    assert "broken response" in error.message


UNUSABLE: list[tuple[str, dict[str, Any], str]] = [
    ("no content blocks", anthropic_message(), ErrorType.MODEL_OUTPUT_SCHEMA),
    ("blank text", anthropic_message(text="  "), ErrorType.MODEL_OUTPUT_SCHEMA),
    (
        "cut off at max_tokens",
        anthropic_message(tool_input={"role": "database-optimizer"}, stop_reason="max_tokens"),
        ErrorType.MODEL_OUTPUT_SCHEMA,
    ),
    (
        "refusal",
        anthropic_message(text="I can't help with that.", stop_reason="refusal"),
        ErrorType.MODEL_SAFETY,
    ),
]


@pytest.mark.parametrize(
    ("body", "error_type"), [case[1:] for case in UNUSABLE], ids=[case[0] for case in UNUSABLE]
)
def test_a_message_without_usable_output(
    server: WireServer, provider: AnthropicMessagesProvider, body: dict[str, Any], error_type: str
) -> None:
    server.script(Scripted(200, body))

    error = _failure(provider)

    assert error.error_type == error_type
    assert not advances_fallback(error.error_type) and not is_retryable(error.error_type)


# --------------------------------------------------------------------------------- time and network


def test_a_response_slower_than_the_timeout_is_a_timeout(server: WireServer) -> None:
    provider = AnthropicMessagesProvider(server.root_url, KEY, timeout_s=0.5)
    server.script(Scripted(200, anthropic_message(tool_input=valid_output()), delay_s=3.0))

    started = time.monotonic()
    error = _failure(provider)
    elapsed = time.monotonic() - started

    assert error.error_type == ErrorType.MODEL_TIMEOUT
    assert is_retryable(error.error_type) and not advances_fallback(error.error_type)
    assert 0.4 < elapsed < 1.5
    assert len(server.received) == 1, "the SDK must not retry"


def test_a_refused_connection_is_a_transport_error() -> None:
    provider = AnthropicMessagesProvider(f"http://127.0.0.1:{closed_port()}", KEY, timeout_s=2.0)

    started = time.monotonic()
    error = _failure(provider)

    assert error.error_type == ErrorType.MODEL_TRANSPORT
    assert is_retryable(error.error_type) and not advances_fallback(error.error_type)
    assert time.monotonic() - started < 2.0


def test_no_credentials_anywhere_is_not_configured(
    server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    provider = AnthropicMessagesProvider(server.root_url, None, timeout_s=2.0)

    error = _failure(provider)

    assert error.error_type == ErrorType.MODEL_NOT_CONFIGURED
    assert not advances_fallback(error.error_type) and not is_retryable(error.error_type)
    assert server.received == []
