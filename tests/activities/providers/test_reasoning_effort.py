"""Reasoning effort on the wire: OpenAI gets ``reasoning_effort`` and reports ``reasoning_tokens``;
Anthropic gets extended thinking with the effort's budget (on top of ``max_tokens``, the tool no
longer forced) and shows thinking blocks. Without an effort nothing of either is sent."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator

import pytest

from activities.providers.anthropic_messages import DEFAULT_MAX_TOKENS, AnthropicMessagesProvider
from activities.providers.openai_compatible import OpenAICompatibleProvider
from contracts.model_classes import THINKING_BUDGET_TOKENS, ReasoningEffort
from tests.activities.providers.wire_server import (
    Scripted,
    WireServer,
    anthropic_message,
    completion_request,
    openai_completion,
    running,
    valid_output,
)

KEY = "sk-effort-test-key-0123456789"


@pytest.fixture(scope="module")
def wire() -> Iterator[WireServer]:
    with running() as server:
        yield server


@pytest.fixture
def server(wire: WireServer) -> Iterator[WireServer]:
    wire.reset()
    yield wire
    wire.reset()


def test_openai_is_sent_the_effort_and_its_reasoning_tokens_are_reported(server: WireServer) -> None:
    body = openai_completion(json.dumps(valid_output()))
    body["usage"]["completion_tokens_details"] = {"reasoning_tokens": 384}
    server.script(Scripted(200, body))
    provider = OpenAICompatibleProvider(server.base_url, KEY, timeout_s=5.0)
    request = dataclasses.replace(completion_request("o-model"), effort="high")
    completion = provider.complete_with_usage(request)
    assert server.received[0].body["reasoning_effort"] == "high"
    assert (completion.reasoning_tokens, completion.reasoning_seen) == (384, True)


def test_openai_without_an_effort_sends_none_and_observes_nothing(server: WireServer) -> None:
    server.script(Scripted(200, openai_completion(json.dumps(valid_output()))))
    provider = OpenAICompatibleProvider(server.base_url, KEY, timeout_s=5.0)
    completion = provider.complete_with_usage(completion_request("o-model"))
    assert "reasoning_effort" not in server.received[0].body
    assert (completion.reasoning_tokens, completion.reasoning_seen) == (None, None)


@pytest.mark.parametrize("effort", list(ReasoningEffort))
def test_anthropic_thinks_with_the_efforts_budget_and_the_tool_left_to_the_model(
    server: WireServer, effort: ReasoningEffort
) -> None:
    body = anthropic_message(tool_input=valid_output())
    body["content"].insert(
        0, {"type": "thinking", "thinking": "Let me look at the plan.", "signature": "sig"}
    )
    server.script(Scripted(200, body))
    provider = AnthropicMessagesProvider(server.root_url, KEY, timeout_s=5.0)
    completion = provider.complete_with_usage(
        dataclasses.replace(completion_request("c-model"), effort=effort.value)
    )
    sent = server.received[0].body
    budget = THINKING_BUDGET_TOKENS[effort]
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert sent["tool_choice"] == {"type": "auto"}
    assert sent["max_tokens"] == DEFAULT_MAX_TOKENS + budget
    assert completion.reasoning_seen is True
    assert json.loads(completion.text) == valid_output(), "the tool's input is still the answer"


def test_anthropic_thinking_asked_but_not_shown_is_observed_as_not_done(server: WireServer) -> None:
    server.script(Scripted(200, anthropic_message(tool_input=valid_output())))
    provider = AnthropicMessagesProvider(server.root_url, KEY, timeout_s=5.0)
    completion = provider.complete_with_usage(
        dataclasses.replace(completion_request("c-model"), effort="low")
    )
    assert completion.reasoning_seen is False


def test_anthropic_without_an_effort_forces_the_tool_and_sends_no_thinking(server: WireServer) -> None:
    server.script(Scripted(200, anthropic_message(tool_input=valid_output())))
    provider = AnthropicMessagesProvider(server.root_url, KEY, timeout_s=5.0)
    completion = provider.complete_with_usage(completion_request("c-model"))
    sent = server.received[0].body
    assert "thinking" not in sent
    assert sent["tool_choice"] == {"type": "tool", "name": "specialist_output"}
    assert sent["max_tokens"] == DEFAULT_MAX_TOKENS
    assert completion.reasoning_seen is None
