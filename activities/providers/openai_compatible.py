"""The OpenAI-compatible chat completions provider (OpenAI and servers that speak its wire format).

One call is one ``POST {base_url}/chat/completions`` through the official ``openai`` SDK, with the
SDK's own retries off (``max_retries=0``): Temporal owns retries and the fallback walk owns fallbacks,
both driven by the ``ErrorType`` this provider raises (see :mod:`activities.providers.classify` for
the full status/type → ``ErrorType`` table).

The request is ``[system: instructions, user: context]`` and asks for structured output with
``response_format = {"type": "json_schema", "json_schema": {"name": "specialist_output", "schema":
<SpecialistOutput schema>, "strict": false}}`` (not strict: the contract has optional fields, which
strict mode does not allow; ``call_model`` validates the text anyway).

Servers without JSON-schema output: when the server answers 400/422 naming ``response_format`` or
``json_schema``, the same call is sent once more with ``{"type": "json_object"}`` (the instructions
already carry the schema), and later calls for that model on this provider go straight to
``json_object``. Any error of that second request is classified as usual.

The returned text is the first choice's message content, unchecked: ``call_model`` validates it
against the output contract. Empty content or a stop at the token limit is ``model_output_schema``;
a refusal or a ``content_filter`` stop is ``model_safety``.

With a reasoning effort (``CompletionRequest.effort``) the request carries ``reasoning_effort``; the
``reasoning_tokens`` the answer reports are passed on (``reasoning_seen``: more than 0).
"""

from __future__ import annotations

import threading
import time
from typing import cast

import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from openai.types.chat.completion_create_params import ResponseFormat
from openai.types.shared_params import ReasoningEffort as ReasoningEffortParam

from activities.providers.base import Completion, CompletionRequest, ProviderError
from activities.providers.classify import (
    OUTPUT_NAME,
    ProviderFailures,
    as_int,
    classify_sdk_error,
    error_fields,
    note,
    openai_error_type,
    output_schema,
    redact,
)
from contracts.errors import ErrorType

PROVIDER = "openai-compatible"


def _json_schema_format() -> ResponseFormat:
    return cast(
        ResponseFormat,
        {
            "type": "json_schema",
            "json_schema": {"name": OUTPUT_NAME, "schema": output_schema(), "strict": False},
        },
    )


_JSON_OBJECT_FORMAT = cast(ResponseFormat, {"type": "json_object"})


def _rejects_json_schema(error: openai.APIStatusError) -> bool:
    """True when a 400/422 says the server does not take a ``json_schema`` response format."""
    if error.status_code not in (400, 422):
        return False
    fields = error_fields(error.body)
    message = fields.message.lower()
    return error.param == "response_format" or "response_format" in message or "json_schema" in message


class OpenAICompatibleProvider(ProviderFailures):
    """Chat completions at ``base_url`` (``None``: the SDK default, i.e. ``OPENAI_BASE_URL`` or OpenAI).

    ``api_key`` ``None`` lets the SDK read ``OPENAI_API_KEY``; with neither, every call fails
    ``model_not_configured``. ``timeout_s`` bounds each HTTP request.
    """

    _provider = PROVIDER

    def __init__(self, base_url: str | None, api_key: str | None, timeout_s: float) -> None:
        self._api_key = api_key
        self._timeout_s = timeout_s
        self._client: openai.OpenAI | None = None
        self._setup_error = ""
        try:
            self._client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0)
            if base_url is not None:
                # The SDK reads OPENAI_ORG_ID / OPENAI_PROJECT_ID from the worker's environment and
                # sends them as headers; they belong to OpenAI's own API, not to an operator's endpoint.
                self._client.organization = None
                self._client.project = None
        except openai.OpenAIError as error:
            self._setup_error = redact(str(error), api_key)
        resolved = self._client.api_key if self._client is not None else None
        self._secret = api_key or (resolved if isinstance(resolved, str) else None)
        self._json_object_models: set[str] = set()
        self._lock = threading.Lock()

    def complete(self, request: CompletionRequest) -> str:
        """The model's raw text. Raises :class:`ProviderError`."""
        return self.complete_with_usage(request).text

    def complete_with_usage(self, request: CompletionRequest) -> Completion:
        """The model's raw text with token usage and latency. Raises :class:`ProviderError`."""
        if self._client is None:
            raise ProviderError(
                ErrorType.MODEL_NOT_CONFIGURED,
                f"{PROVIDER} model {request.model_name!r} has no client: {self._setup_error}",
            )
        started = time.monotonic()
        response = self._call(self._client, request)
        text, usage = self._text(request, response)
        latency_ms = round((time.monotonic() - started) * 1000)
        details = getattr(getattr(response, "usage", None), "completion_tokens_details", None)
        reasoning = as_int(getattr(details, "reasoning_tokens", None))
        return Completion(
            text=text,
            input_tokens=usage[0],
            output_tokens=usage[1],
            latency_ms=latency_ms,
            reasoning_tokens=reasoning,
            reasoning_seen=None if reasoning is None else reasoning > 0,
        )

    # ------------------------------------------------------------------------------------ the call

    def _create(
        self, client: openai.OpenAI, request: CompletionRequest, response_format: ResponseFormat
    ) -> object:
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": request.instructions},
            {"role": "user", "content": request.context},
        ]
        if request.effort is not None:
            result: object = client.chat.completions.create(
                model=request.model_name,
                messages=messages,
                response_format=response_format,
                reasoning_effort=cast(ReasoningEffortParam, request.effort),
            )
        else:
            result = client.chat.completions.create(
                model=request.model_name, messages=messages, response_format=response_format
            )
        return result

    def _call(self, client: openai.OpenAI, request: CompletionRequest) -> object:
        model = request.model_name
        with self._lock:
            schema_first = model not in self._json_object_models
        try:
            if not schema_first:
                return self._create(client, request, _JSON_OBJECT_FORMAT)
            try:
                return self._create(client, request, _json_schema_format())
            except openai.APIStatusError as error:
                if not _rejects_json_schema(error):
                    raise
            with self._lock:
                self._json_object_models.add(model)
            return self._create(client, request, _JSON_OBJECT_FORMAT)
        except Exception as error:
            failure = classify_sdk_error(error, openai, openai_error_type, self._timeout_s)
            if failure is None:
                raise
            raise self._fail(failure.error_type, model, failure.fields, failure.status) from None

    # ---------------------------------------------------------------------------------- the answer

    def _text(
        self, request: CompletionRequest, response: object
    ) -> tuple[str, tuple[int | None, int | None]]:
        model = request.model_name
        choices = getattr(response, "choices", None) if isinstance(response, ChatCompletion) else None
        if not choices:
            raise self._fail(
                ErrorType.MODEL_PROVIDER_UNAVAILABLE,
                model,
                note("broken response: not a chat completion with choices"),
            )
        choice = choices[0]
        message = getattr(choice, "message", None)
        finish_reason = getattr(choice, "finish_reason", None)
        if message is None:
            raise self._fail(
                ErrorType.MODEL_PROVIDER_UNAVAILABLE, model, note("broken response: choice without message")
            )
        if finish_reason == "content_filter":
            raise self._fail(ErrorType.MODEL_SAFETY, model, note("output stopped by the content filter"))
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise self._fail(ErrorType.MODEL_SAFETY, model, note(f"the model refused: {refusal}"))
        if finish_reason == "length":
            raise self._fail(ErrorType.MODEL_OUTPUT_SCHEMA, model, note("output cut off at the token limit"))
        content = getattr(message, "content", None)
        if not isinstance(content, str) or not content.strip():
            raise self._fail(ErrorType.MODEL_OUTPUT_SCHEMA, model, note("the response has no content"))
        usage = getattr(response, "usage", None)
        return content, (
            as_int(getattr(usage, "prompt_tokens", None)),
            as_int(getattr(usage, "completion_tokens", None)),
        )
