"""The OpenAI-compatible provider against a real loopback server, through the official SDK: the
request carries the instructions, context and output schema; the SDK never retries; every failure
gets the ``ErrorType`` its status and error code call for, and that type is retried or advances the
fallback chain exactly as ``contracts.errors`` says."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from activities.models import parse_output
from activities.providers.base import Completion, ProviderError
from activities.providers.openai_compatible import OpenAICompatibleProvider
from contracts.errors import ErrorType, advances_fallback, is_retryable
from contracts.output import SpecialistOutput
from tests.activities.providers.wire_server import (
    CONTEXT,
    INSTRUCTIONS,
    Scripted,
    WireServer,
    call_request,
    closed_port,
    completion_request,
    openai_completion,
    openai_error,
    running,
    valid_output,
)

KEY = "sk-test-5f1c0ffee0ddba11deadbeef"
MODEL = "model-a"


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
def provider(server: WireServer) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(server.base_url, KEY, timeout_s=5.0)


def _failure(provider: OpenAICompatibleProvider, model: str = MODEL) -> ProviderError:
    with pytest.raises(ProviderError) as raised:
        provider.complete(completion_request(model))
    assert KEY not in raised.value.message and KEY[:12] not in raised.value.message
    return raised.value


# ------------------------------------------------------------------------------------------ success


def test_success_sends_instructions_context_and_schema_once_and_reports_usage(
    server: WireServer, provider: OpenAICompatibleProvider
) -> None:
    answer = json.dumps(valid_output())
    server.script(Scripted(200, openai_completion(answer, prompt_tokens=321, completion_tokens=87)))

    completion = provider.complete_with_usage(completion_request(MODEL))

    assert isinstance(completion, Completion)
    assert completion.text == answer
    assert (completion.input_tokens, completion.output_tokens) == (321, 87)
    assert 0 <= completion.latency_ms < 5_000
    [received] = server.received
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == f"Bearer {KEY}"
    assert received.headers.get("x-stainless-retry-count", "0") == "0"
    body = received.body
    assert body["model"] == MODEL
    assert body["messages"] == [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": CONTEXT},
    ]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "specialist_output",
            "schema": SpecialistOutput.model_json_schema(),
            "strict": False,
        },
    }
    assert "stream" not in body or body["stream"] is False


def test_complete_returns_the_text_and_parse_output_accepts_it(
    server: WireServer, provider: OpenAICompatibleProvider
) -> None:
    server.script(Scripted(200, openai_completion(json.dumps(valid_output()))))

    raw = provider.complete(completion_request(MODEL))

    output = parse_output(raw, call_request(f"openai:{MODEL}"))
    assert output.role == "database-optimizer" and output.findings[0].severity.value == "high"
    assert len(server.received) == 1


def test_text_that_is_not_the_contract_is_left_to_parse_output(
    server: WireServer, provider: OpenAICompatibleProvider
) -> None:
    server.script(Scripted(200, openai_completion("Here is my analysis: all good.")))

    raw = provider.complete(completion_request(MODEL))

    with pytest.raises(ApplicationError) as raised:
        parse_output(raw, call_request(f"openai:{MODEL}"))
    assert raised.value.type == ErrorType.MODEL_OUTPUT_SCHEMA and raised.value.non_retryable


def test_a_server_without_json_schema_output_gets_json_object_once_and_from_then_on(
    server: WireServer, provider: OpenAICompatibleProvider
) -> None:
    refusal = openai_error(
        "response_format of type 'json_schema' is not supported by this model",
        type="invalid_request_error",
        param="response_format",
    )
    answer = json.dumps(valid_output())
    server.script(
        Scripted(400, refusal),
        Scripted(200, openai_completion(answer)),
        Scripted(200, openai_completion(answer)),
    )

    assert provider.complete(completion_request(MODEL)) == answer
    assert provider.complete(completion_request(MODEL)) == answer

    formats = [request.body["response_format"]["type"] for request in server.received]
    assert formats == ["json_schema", "json_object", "json_object"]


def test_an_unrelated_400_is_not_resent(server: WireServer, provider: OpenAICompatibleProvider) -> None:
    server.script(Scripted(400, openai_error("temperature is out of range", type="invalid_request_error")))

    error = _failure(provider)

    assert error.error_type == ErrorType.MODEL_REQUEST_INVALID
    assert len(server.received) == 1


def test_the_json_object_retry_is_classified_like_any_call(
    server: WireServer, provider: OpenAICompatibleProvider
) -> None:
    server.script(
        Scripted(400, openai_error("json_schema is not supported", type="invalid_request_error")),
        Scripted(429, openai_error("Rate limit reached", type="requests", code="rate_limit_exceeded")),
    )

    assert _failure(provider).error_type == ErrorType.MODEL_RATE_LIMITED
    assert len(server.received) == 2


# ------------------------------------------------------------------------------------------- errors

# (status, body, ErrorType, advances the fallback chain, retried on the same model)
HTTP_ERRORS: list[tuple[str, int, Any, str, bool, bool]] = [
    (
        "429 rate limit",
        429,
        openai_error("Rate limit reached for requests", type="requests", code="rate_limit_exceeded"),
        ErrorType.MODEL_RATE_LIMITED,
        False,
        True,
    ),
    (
        "429 quota exhausted",
        429,
        openai_error(
            "You exceeded your current quota, please check your plan and billing details.",
            type="insufficient_quota",
            code="insufficient_quota",
        ),
        ErrorType.MODEL_QUOTA,
        True,
        False,
    ),
    (
        "402 credits used up",
        402,
        openai_error("Insufficient credits", type=None, code="402"),
        ErrorType.MODEL_QUOTA,
        True,
        False,
    ),
    (
        "401 bad key",
        401,
        openai_error(
            f"Incorrect API key provided: {KEY}. You can find your API key at the dashboard.",
            type="invalid_request_error",
            code="invalid_api_key",
        ),
        ErrorType.MODEL_AUTHENTICATION,
        True,
        False,
    ),
    (
        "403 permission",
        403,
        openai_error(
            "Country, region, or territory not supported",
            type="request_forbidden",
            code="unsupported_country_region_territory",
        ),
        ErrorType.MODEL_AUTHENTICATION,
        True,
        False,
    ),
    (
        "500 server error",
        500,
        openai_error("The server had an error while processing your request.", type="server_error"),
        ErrorType.MODEL_PROVIDER_UNAVAILABLE,
        True,
        False,
    ),
    ("502 plain text", 502, "Bad Gateway", ErrorType.MODEL_PROVIDER_UNAVAILABLE, True, False),
    (
        "503 unavailable",
        503,
        openai_error("Service Unavailable", type="server_error"),
        ErrorType.MODEL_PROVIDER_UNAVAILABLE,
        True,
        False,
    ),
    (
        "503 overloaded",
        503,
        openai_error("The engine is currently overloaded, please try again later", type="server_error"),
        ErrorType.MODEL_PROVIDER_UNAVAILABLE,
        True,
        False,
    ),
    (
        "504 gateway timeout",
        504,
        openai_error("Gateway timeout", type="server_error"),
        ErrorType.MODEL_PROVIDER_UNAVAILABLE,
        True,
        False,
    ),
    (
        "400 content policy",
        400,
        openai_error(
            "Your request was rejected as a result of our safety system.",
            type="invalid_request_error",
            code="content_policy_violation",
        ),
        ErrorType.MODEL_SAFETY,
        False,
        False,
    ),
    (
        "400 content filter",
        400,
        openai_error(
            "The response was filtered due to the prompt triggering the content management policy.",
            type=None,
            code="content_filter",
            param="prompt",
        ),
        ErrorType.MODEL_SAFETY,
        False,
        False,
    ),
    (
        "400 context too long",
        400,
        openai_error(
            "This model's maximum context length is 8192 tokens. However, your messages resulted in "
            "9001 tokens.",
            type="invalid_request_error",
            code="context_length_exceeded",
            param="messages",
        ),
        ErrorType.MODEL_REQUEST_INVALID,
        False,
        False,
    ),
    (
        "422 unprocessable",
        422,
        {"detail": [{"loc": ["body", "messages"], "msg": "field required"}]},
        ErrorType.MODEL_REQUEST_INVALID,
        False,
        False,
    ),
    (
        "404 model not found",
        404,
        openai_error(
            "The model `model-a` does not exist or you do not have access to it.",
            type="invalid_request_error",
            code="model_not_found",
        ),
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
def test_http_errors_are_classified_by_status_and_error_code(
    server: WireServer,
    provider: OpenAICompatibleProvider,
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


def test_the_api_key_never_appears_in_a_message(
    server: WireServer, provider: OpenAICompatibleProvider
) -> None:
    server.script(
        Scripted(401, openai_error(f"Incorrect API key provided: {KEY[:8]}***{KEY[-4:]}", type="auth")),
        Scripted(401, openai_error(f"bad header Authorization: Bearer {KEY}", type="auth")),
    )

    first, second = _failure(provider), _failure(provider)

    assert "sk-test" not in first.message and "sk-test" not in second.message
    assert "[redacted]" in first.message and "[redacted]" in second.message


# ------------------------------------------------------------------------------------ broken bodies

BROKEN: list[tuple[str, Scripted]] = [
    (
        "truncated json",
        Scripted(200, b'{"id": "chatcmpl-1", "choices": [tru', {"content-type": "application/json"}),
    ),
    (
        "html page",
        Scripted(200, "<html><body>Welcome to the proxy</body></html>", {"content-type": "text/html"}),
    ),
    ("not a completion", Scripted(200, {"status": "ok"})),
    ("a json list", Scripted(200, [1, 2, 3])),
]


@pytest.mark.parametrize("answer", [case[1] for case in BROKEN], ids=[case[0] for case in BROKEN])
def test_a_malformed_200_body_is_provider_unavailable(
    server: WireServer, provider: OpenAICompatibleProvider, answer: Scripted
) -> None:
    server.script(answer)

    error = _failure(provider)

    assert error.error_type == ErrorType.MODEL_PROVIDER_UNAVAILABLE
    assert advances_fallback(error.error_type) and not is_retryable(error.error_type)
    assert "broken response" in error.message


UNUSABLE: list[tuple[str, dict[str, Any], str]] = [
    ("empty content", openai_completion(""), ErrorType.MODEL_OUTPUT_SCHEMA),
    ("null content", openai_completion(None), ErrorType.MODEL_OUTPUT_SCHEMA),
    (
        "cut off at the token limit",
        openai_completion('{"role": "da', finish_reason="length"),
        ErrorType.MODEL_OUTPUT_SCHEMA,
    ),
    ("content filter stop", openai_completion(None, finish_reason="content_filter"), ErrorType.MODEL_SAFETY),
]


@pytest.mark.parametrize(
    ("body", "error_type"), [case[1:] for case in UNUSABLE], ids=[case[0] for case in UNUSABLE]
)
def test_a_completion_without_usable_output(
    server: WireServer, provider: OpenAICompatibleProvider, body: dict[str, Any], error_type: str
) -> None:
    server.script(Scripted(200, body))

    error = _failure(provider)

    assert error.error_type == error_type
    assert not advances_fallback(error.error_type) and not is_retryable(error.error_type)


def test_a_refusal_is_a_safety_error(server: WireServer, provider: OpenAICompatibleProvider) -> None:
    body = openai_completion(None)
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    server.script(Scripted(200, body))

    assert _failure(provider).error_type == ErrorType.MODEL_SAFETY


# --------------------------------------------------------------------------------- time and network


def test_a_response_slower_than_the_timeout_is_a_timeout(server: WireServer) -> None:
    provider = OpenAICompatibleProvider(server.base_url, KEY, timeout_s=0.5)
    server.script(Scripted(200, openai_completion(json.dumps(valid_output())), delay_s=3.0))

    started = time.monotonic()
    error = _failure(provider)
    elapsed = time.monotonic() - started

    assert error.error_type == ErrorType.MODEL_TIMEOUT
    assert is_retryable(error.error_type) and not advances_fallback(error.error_type)
    assert 0.4 < elapsed < 1.5
    assert len(server.received) == 1, "the SDK must not retry"


def test_a_refused_connection_is_a_transport_error() -> None:
    provider = OpenAICompatibleProvider(f"http://127.0.0.1:{closed_port()}/v1", KEY, timeout_s=2.0)

    started = time.monotonic()
    error = _failure(provider)

    assert error.error_type == ErrorType.MODEL_TRANSPORT
    assert is_retryable(error.error_type) and not advances_fallback(error.error_type)
    assert time.monotonic() - started < 2.0


def test_no_api_key_anywhere_is_not_configured(server: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_ADMIN_KEY", raising=False)
    provider = OpenAICompatibleProvider(server.base_url, None, timeout_s=2.0)

    error = _failure(provider)

    assert error.error_type == ErrorType.MODEL_NOT_CONFIGURED
    assert not advances_fallback(error.error_type) and not is_retryable(error.error_type)
    assert server.received == []


# ---------------------------------------------------------------------------------- error classes


@pytest.mark.parametrize(
    ("error_type", "retried", "advances"),
    [
        (ErrorType.MODEL_TIMEOUT, True, False),
        (ErrorType.MODEL_TRANSPORT, True, False),
        (ErrorType.MODEL_RATE_LIMITED, True, False),
        (ErrorType.MODEL_QUOTA, False, True),
        (ErrorType.MODEL_AUTHENTICATION, False, True),
        (ErrorType.MODEL_PROVIDER_UNAVAILABLE, False, True),
        (ErrorType.MODEL_OUTPUT_SCHEMA, False, False),
        (ErrorType.MODEL_OUTPUT_INVALID, False, False),
        (ErrorType.MODEL_REQUEST_INVALID, False, False),
        (ErrorType.MODEL_SAFETY, False, False),
        (ErrorType.MODEL_TASK, False, False),
        (ErrorType.MODEL_NOT_CONFIGURED, False, False),
    ],
)
def test_model_error_classes(error_type: str, retried: bool, advances: bool) -> None:
    assert is_retryable(error_type) is retried
    assert advances_fallback(error_type) is advances


def test_a_key_echoed_in_the_error_type_or_code_is_redacted(
    server: WireServer, provider: OpenAICompatibleProvider
) -> None:
    server.script(Scripted(401, openai_error("bad key", type=KEY, code=f"key={KEY}")))
    error = _failure(provider)
    assert error.error_type == ErrorType.MODEL_AUTHENTICATION
    assert KEY not in error.message and "[redacted]" in error.message


def test_the_workers_openai_organization_and_project_are_not_sent_to_an_operator_endpoint(
    server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-worker-secret")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-worker-secret")
    provider = OpenAICompatibleProvider(server.base_url, KEY, 5.0)
    server.script(Scripted(200, openai_completion(json.dumps(valid_output()))))
    provider.complete(completion_request("model-a"))
    (request,) = server.received
    assert "openai-organization" not in request.headers and "openai-project" not in request.headers
