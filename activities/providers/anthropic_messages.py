"""The Anthropic Messages provider.

One call is one ``POST {base_url}/v1/messages`` through the official ``anthropic`` SDK, with the
SDK's own retries off (``max_retries=0``): Temporal owns retries and the fallback walk owns fallbacks,
both driven by the ``ErrorType`` this provider raises (see :mod:`activities.providers.classify` for
the full status/type → ``ErrorType`` table, including how an exhausted credit balance is recognised).

The request carries ``system = instructions`` and one user message with the context. Structured
output is forced with a single tool, ``specialist_output``, whose ``input_schema`` is the
``SpecialistOutput`` JSON Schema, and ``tool_choice = {"type": "tool", "name": "specialist_output"}``;
the tool call's input is returned as JSON text. A server that answers with text instead (some
Messages-compatible servers ignore tools) has its text returned as is. Either way the text is
unchecked here: ``call_model`` validates it against the output contract.

With a reasoning effort (``CompletionRequest.effort``) the call enables extended thinking with the
effort's budget (``contracts.model_classes.THINKING_BUDGET_TOKENS``, added to ``max_tokens``); the
tool cannot be forced while thinking, so ``tool_choice`` is ``auto`` and a text answer is taken as
above. Thinking blocks in the answer are reported as ``reasoning_seen``.

A response without usable output (no tool call and no text, or a stop at ``max_tokens``) is
``model_output_schema``; a ``refusal`` stop is ``model_safety``.
"""

from __future__ import annotations

import json
import time

import anthropic
from anthropic.types import (
    Message,
    MessageParam,
    ThinkingConfigEnabledParam,
    ToolChoiceAutoParam,
    ToolChoiceToolParam,
    ToolParam,
)

from activities.providers.base import Completion, CompletionRequest
from activities.providers.classify import (
    OUTPUT_DESCRIPTION,
    OUTPUT_NAME,
    ProviderFailures,
    anthropic_error_type,
    as_int,
    classify_sdk_error,
    note,
    output_schema,
)
from contracts.errors import ErrorType
from contracts.model_classes import THINKING_BUDGET_TOKENS, ReasoningEffort

PROVIDER = "anthropic"
DEFAULT_MAX_TOKENS = 8192


class AnthropicMessagesProvider(ProviderFailures):
    """Messages at ``base_url`` (without ``/v1``; ``None``: the SDK default, i.e.
    ``ANTHROPIC_BASE_URL`` or Anthropic's API).

    ``api_key`` ``None`` lets the SDK find its credentials (``ANTHROPIC_API_KEY``); with none, every
    call fails ``model_not_configured``. ``timeout_s`` bounds each HTTP request; ``max_tokens`` bounds
    the answer (8192 by default; an answer cut off there fails ``model_output_schema``).
    """

    _provider = PROVIDER

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        timeout_s: float,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        self._timeout_s = timeout_s
        self._max_tokens = max_tokens
        self._client = anthropic.Anthropic(
            base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0
        )
        resolved = self._client.api_key
        self._secret = api_key or (resolved if isinstance(resolved, str) else None)

    def complete(self, request: CompletionRequest) -> str:
        """The model's raw text. Raises :class:`ProviderError`."""
        return self.complete_with_usage(request).text

    def complete_with_usage(self, request: CompletionRequest) -> Completion:
        """The model's raw text with token usage and latency. Raises :class:`ProviderError`."""
        started = time.monotonic()
        message = self._call(request)
        text = self._text(request, message)
        usage = getattr(message, "usage", None)
        input_tokens = as_int(getattr(usage, "input_tokens", None))
        if input_tokens is not None:
            # Prompt tokens served from or written to the cache are counted apart; include them.
            input_tokens += (as_int(getattr(usage, "cache_creation_input_tokens", None)) or 0) + (
                as_int(getattr(usage, "cache_read_input_tokens", None)) or 0
            )
        content = getattr(message, "content", None) or []
        thought = any(getattr(block, "type", None) in ("thinking", "redacted_thinking") for block in content)
        return Completion(
            text=text,
            input_tokens=input_tokens,
            output_tokens=as_int(getattr(usage, "output_tokens", None)),
            latency_ms=round((time.monotonic() - started) * 1000),
            reasoning_seen=thought if request.effort is not None else (thought or None),
        )

    # ------------------------------------------------------------------------------------ the call

    def _call(self, request: CompletionRequest) -> object:
        model = request.model_name
        messages: list[MessageParam] = [{"role": "user", "content": request.context}]
        tool: ToolParam = {
            "name": OUTPUT_NAME,
            "description": OUTPUT_DESCRIPTION,
            "input_schema": output_schema(),
        }
        try:
            if request.effort is not None:
                # Extended thinking: a budget for the effort, on top of the answer's own tokens; the
                # tool may not be forced while thinking, so the answer may come as the tool or as text.
                budget = THINKING_BUDGET_TOKENS[ReasoningEffort(request.effort)]
                thinking: ThinkingConfigEnabledParam = {"type": "enabled", "budget_tokens": budget}
                auto: ToolChoiceAutoParam = {"type": "auto"}
                result: object = self._client.messages.create(
                    model=model,
                    max_tokens=self._max_tokens + budget,
                    system=request.instructions,
                    messages=messages,
                    tools=[tool],
                    tool_choice=auto,
                    thinking=thinking,
                )
                return result
            forced: ToolChoiceToolParam = {"type": "tool", "name": OUTPUT_NAME}
            result = self._client.messages.create(
                model=model,
                max_tokens=self._max_tokens,
                system=request.instructions,
                messages=messages,
                tools=[tool],
                tool_choice=forced,
            )
            return result
        except TypeError as error:
            # The SDK raises TypeError when it finds no credentials at all.
            if "authentication" not in str(error).lower():
                raise
            raise self._fail(
                ErrorType.MODEL_NOT_CONFIGURED, model, note("no API key or credentials are configured")
            ) from None
        except Exception as error:
            failure = classify_sdk_error(error, anthropic, anthropic_error_type, self._timeout_s)
            if failure is None:
                raise
            raise self._fail(failure.error_type, model, failure.fields, failure.status) from None

    # ---------------------------------------------------------------------------------- the answer

    def _text(self, request: CompletionRequest, message: object) -> str:
        model = request.model_name
        content = getattr(message, "content", None) if isinstance(message, Message) else None
        if not isinstance(content, list):
            raise self._fail(
                ErrorType.MODEL_PROVIDER_UNAVAILABLE, model, note("broken response: not a Messages response")
            )
        stop_reason = getattr(message, "stop_reason", None)
        if stop_reason == "refusal":
            raise self._fail(ErrorType.MODEL_SAFETY, model, note("the model refused (stop_reason refusal)"))
        if stop_reason == "max_tokens":
            raise self._fail(
                ErrorType.MODEL_OUTPUT_SCHEMA, model, note(f"output cut off at max_tokens={self._max_tokens}")
            )
        for block in content:
            if getattr(block, "type", None) == "tool_use" and getattr(block, "name", None) == OUTPUT_NAME:
                return json.dumps(getattr(block, "input", None), ensure_ascii=False)
        text = "".join(
            str(getattr(block, "text", "")) for block in content if getattr(block, "type", None) == "text"
        )
        if not text.strip():
            raise self._fail(
                ErrorType.MODEL_OUTPUT_SCHEMA,
                model,
                note("the response has no structured output and no text"),
            )
        return text
