"""What the HTTP model providers share: the error classification and the error messages.

:func:`openai_error_type` and :func:`anthropic_error_type` turn an HTTP error response — its status
*and* the provider's error type/code (and, where a provider offers nothing better, its message) — into
an ``ErrorType``; retry and fallback then follow ``contracts.errors`` and nowhere else.

OpenAI-compatible chat completions (first matching row wins):

===============================================================  ==============================
status and error type / code                                     ErrorType
===============================================================  ==============================
429, type or code ``insufficient_quota``                         ``model_quota``
429, anything else (``rate_limit_exceeded``, ``requests``, ...)  ``model_rate_limited``
402 (payment required, e.g. credits used up)                     ``model_quota``
500, 502, 503 (incl. "overloaded"), 504, any other 5xx           ``model_provider_unavailable``
401                                                              ``model_authentication``
403 (permission, region not supported)                           ``model_authentication``
404 (``model_not_found``, wrong base URL)                        ``model_not_configured``
408                                                              ``model_timeout``
4xx, code ``content_policy_violation`` / ``content_filter``      ``model_safety``
4xx, code ``context_length_exceeded``                            ``model_request_invalid``
any other 4xx (400, 409, 413, 422, ...)                          ``model_request_invalid``
anything else                                                    ``model_provider_unavailable``
===============================================================  ==============================

Anthropic Messages (first matching row wins). Anthropic documents no quota-exhausted error type for
429: a spent credit balance arrives as a 400/403 whose message says the credit balance is too low,
or as ``billing_error`` (402); the SDK also names the spend-limit codes
``contract_spend_limit_reached`` and ``enforced_spend_limit_reached`` (429, in
``error.details.error_code``). All of these are ``model_quota``.

===============================================================  ==============================
status and error type / code / message                           ErrorType
===============================================================  ==============================
``billing_error`` (any status); 402                              ``model_quota``
429, ``error_code`` contract/enforced spend limit reached        ``model_quota``
400/403, message mentions credit balance or usage/spend limits   ``model_quota``
529 ``overloaded_error``; 500 ``api_error``; any 5xx             ``model_provider_unavailable``
429 ``rate_limit_error``                                         ``model_rate_limited``
401 ``authentication_error``; 403 ``permission_error``           ``model_authentication``
404 ``not_found_error`` (unknown model)                          ``model_not_configured``
408                                                              ``model_timeout``
400, message mentions a content filtering policy                 ``model_safety``
400 ``invalid_request_error`` (incl. "prompt is too long"); 413  ``model_request_invalid``
any other 4xx                                                    ``model_request_invalid``
anything else                                                    ``model_provider_unavailable``
===============================================================  ==============================

Both providers, without an HTTP error status:

- the client's timeout fires → ``model_timeout``; the connection fails (refused, reset, DNS) →
  ``model_transport``;
- a 200 whose body is not JSON or not the API's response shape → ``model_provider_unavailable``: the
  endpoint is not serving the API (a proxy page, a truncated body), which says nothing about the
  model's answer, so it is treated like a 5xx;
- a well-formed response without usable output (empty content, no structured output, cut off at the
  token limit) → ``model_output_schema``; a refusal or a content-filter stop → ``model_safety``;
- no credentials configured → ``model_not_configured``.

Messages never carry the API key: :func:`redact` removes it (and anything shaped like a key or a
bearer token) from whatever the provider sent back.

Both SDKs (``openai`` and ``anthropic``) raise the same family of exceptions, so
:func:`classify_sdk_error` classifies what either raised (HTTP error, timeout, failed connection,
broken body) and each provider keeps only its own cases; :class:`ProviderFailures` gives both
providers the one way of turning a classification into a :class:`ProviderError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Final, NamedTuple, Protocol

from activities.providers.base import ProviderError
from contracts.errors import ErrorType
from contracts.output import output_json_schema

OUTPUT_NAME: Final = "specialist_output"
OUTPUT_DESCRIPTION: Final = "The job's structured result (the output contract)."
MAX_DETAIL_CHARS: Final = 300


def output_schema() -> dict[str, Any]:
    """The JSON Schema of :class:`SpecialistOutput`, as sent to providers for structured output."""
    return output_json_schema()


@dataclass(frozen=True)
class ErrorFields:
    """The provider's own description of an error: type, code and message (any may be missing)."""

    type: str | None
    code: str | None
    message: str


def error_fields(body: object) -> ErrorFields:
    """Read type, code and message from an error body.

    Accepts the full body (``{"error": {...}}``, as Anthropic's SDK keeps it) or the inner object (as
    OpenAI's SDK keeps it); Anthropic's stable code sits in ``error.details.error_code``.
    """
    if isinstance(body, str):
        return ErrorFields(type=None, code=None, message=body)
    if not isinstance(body, dict):
        return ErrorFields(type=None, code=None, message="")
    inner = body.get("error", body)
    if not isinstance(inner, dict):
        return ErrorFields(type=None, code=None, message=str(inner))
    code = inner.get("code")
    details = inner.get("details")
    if code is None and isinstance(details, dict):
        code = details.get("error_code")
    message = inner.get("message")
    kind = inner.get("type")
    return ErrorFields(
        type=str(kind) if kind is not None else None,
        code=str(code) if code is not None else None,
        message=str(message) if message is not None else "",
    )


_KEY_SHAPED = re.compile(r"\b(?:sk|rk|pk)-[A-Za-z0-9_*\-]{4,}")
_BEARER = re.compile(r"(?i)\bbearer\s+\S+")


def redact(text: str, secret: str | None) -> str:
    """``text`` on one line, at most 300 characters, with the key and anything key-shaped removed."""
    if secret and len(secret) >= 4:
        text = text.replace(secret, "[redacted]")
    text = _BEARER.sub("Bearer [redacted]", text)
    text = _KEY_SHAPED.sub("[redacted]", text)
    text = " ".join(text.split())
    if len(text) > MAX_DETAIL_CHARS:
        text = text[: MAX_DETAIL_CHARS - 3] + "..."
    return text


def _mentions(message: str, markers: tuple[str, ...]) -> bool:
    lowered = message.lower()
    return any(marker in lowered for marker in markers)


_OPENAI_SAFETY_CODES: Final = frozenset({"content_policy_violation", "content_filter"})
_OPENAI_SAFETY_MARKERS: Final = ("content management policy", "content_policy_violation")


def openai_error_type(status: int, fields: ErrorFields) -> str:
    """The ``ErrorType`` of an OpenAI-compatible HTTP error (table in the module docstring)."""
    labels = {fields.type, fields.code}
    if status == 429:
        return ErrorType.MODEL_QUOTA if "insufficient_quota" in labels else ErrorType.MODEL_RATE_LIMITED
    if status == 402:
        return ErrorType.MODEL_QUOTA
    if status >= 500:
        return ErrorType.MODEL_PROVIDER_UNAVAILABLE
    if status in (401, 403):
        return ErrorType.MODEL_AUTHENTICATION
    if status == 404:
        return ErrorType.MODEL_NOT_CONFIGURED
    if status == 408:
        return ErrorType.MODEL_TIMEOUT
    if 400 <= status < 500:
        if labels & _OPENAI_SAFETY_CODES or _mentions(fields.message, _OPENAI_SAFETY_MARKERS):
            return ErrorType.MODEL_SAFETY
        return ErrorType.MODEL_REQUEST_INVALID
    return ErrorType.MODEL_PROVIDER_UNAVAILABLE


_ANTHROPIC_SPEND_LIMIT_CODES: Final = frozenset(
    {"contract_spend_limit_reached", "enforced_spend_limit_reached"}
)
_ANTHROPIC_QUOTA_MARKERS: Final = ("credit balance", "usage limit", "spend limit")
_ANTHROPIC_SAFETY_MARKERS: Final = ("content filtering policy", "usage policy")


def anthropic_error_type(status: int, fields: ErrorFields) -> str:
    """The ``ErrorType`` of an Anthropic Messages HTTP error (table in the module docstring)."""
    if fields.type == "billing_error" or status == 402:
        return ErrorType.MODEL_QUOTA
    if status == 429 and fields.code in _ANTHROPIC_SPEND_LIMIT_CODES:
        return ErrorType.MODEL_QUOTA
    if status in (400, 403) and _mentions(fields.message, _ANTHROPIC_QUOTA_MARKERS):
        return ErrorType.MODEL_QUOTA
    if status >= 500 or fields.type == "overloaded_error":
        return ErrorType.MODEL_PROVIDER_UNAVAILABLE
    if status == 429:
        return ErrorType.MODEL_RATE_LIMITED
    if status in (401, 403):
        return ErrorType.MODEL_AUTHENTICATION
    if status == 404:
        return ErrorType.MODEL_NOT_CONFIGURED
    if status == 408:
        return ErrorType.MODEL_TIMEOUT
    if 400 <= status < 500:
        if _mentions(fields.message, _ANTHROPIC_SAFETY_MARKERS):
            return ErrorType.MODEL_SAFETY
        return ErrorType.MODEL_REQUEST_INVALID
    return ErrorType.MODEL_PROVIDER_UNAVAILABLE


def describe(provider: str, model: str, status: int | None, fields: ErrorFields, secret: str | None) -> str:
    """A one-line, key-free message: provider, model, status, provider type/code and message."""
    parts = [f"{provider} model {model!r}"]
    if status is not None:
        parts.append(f"HTTP {status}")
    # The provider's type and code are echoed from its response too, so they are scrubbed like the
    # message: a server may put anything there, the key included.
    label = redact("/".join(part for part in (fields.type, fields.code) if part), secret)
    if label:
        parts.append(f"({label})")
    head = " ".join(parts)
    detail = redact(fields.message, secret)
    return f"{head}: {detail}" if detail else head


def note(message: str) -> ErrorFields:
    """Error fields for a failure the provider did not describe itself (no HTTP error body)."""
    return ErrorFields(type=None, code=None, message=message)


def connection_detail(error: Exception) -> str:
    """What a failed connection ran into: the underlying exception, not the SDK's generic text."""
    cause: BaseException | None = error.__cause__ or error.__context__
    detail = f"{type(cause).__name__}: {cause}" if cause is not None else str(error)
    return f"connection failed ({detail})"


class _StatusError(Protocol):
    """What an SDK's ``APIStatusError`` carries: the HTTP status and the parsed error body."""

    @property
    def status_code(self) -> int: ...

    @property
    def body(self) -> object: ...


class _SdkError(Protocol):
    """What an SDK's ``APIError`` carries: its message."""

    @property
    def message(self) -> str: ...


class SdkErrors(Protocol):
    """The exception classes of the ``openai`` or ``anthropic`` SDK: pass the module itself.

    Read-only properties (not attributes) so that a module's own, narrower classes match; their names
    are the SDK's, hence the ``noqa``.
    """

    @property
    def APIStatusError(self) -> type[_StatusError]: ...  # noqa: N802

    @property
    def APITimeoutError(self) -> type[Exception]: ...  # noqa: N802

    @property
    def APIConnectionError(self) -> type[Exception]: ...  # noqa: N802

    @property
    def APIError(self) -> type[_SdkError]: ...  # noqa: N802


class Classified(NamedTuple):
    """A classified failure: its ``ErrorType``, the fields for the message, the HTTP status if any."""

    error_type: str
    fields: ErrorFields
    status: int | None


def classify_sdk_error(
    error: Exception,
    sdk: SdkErrors,
    status_error_type: Callable[[int, ErrorFields], str],
    timeout_s: float,
) -> Classified | None:
    """Classify an exception raised by an SDK call (the "without an HTTP error status" list above).

    ``sdk`` is the SDK module, ``status_error_type`` the provider's table for HTTP errors
    (:func:`openai_error_type` or :func:`anthropic_error_type`), ``timeout_s`` the client's timeout
    (named in the message). Returns ``None`` for an exception that is none of these, for the caller
    to handle or re-raise. Raises nothing.
    """
    if isinstance(error, sdk.APIStatusError):
        fields = error_fields(error.body)
        return Classified(status_error_type(error.status_code, fields), fields, error.status_code)
    # Both SDKs' timeout error is a connection error too, so it is tested first.
    if isinstance(error, sdk.APITimeoutError):
        return Classified(ErrorType.MODEL_TIMEOUT, note(f"no response within {timeout_s:g}s"), None)
    if isinstance(error, sdk.APIConnectionError):
        return Classified(ErrorType.MODEL_TRANSPORT, note(connection_detail(error)), None)
    if isinstance(error, sdk.APIError):
        return Classified(
            ErrorType.MODEL_PROVIDER_UNAVAILABLE, note(f"broken response: {error.message}"), None
        )
    if isinstance(error, RecursionError):
        return Classified(
            ErrorType.MODEL_PROVIDER_UNAVAILABLE,
            note("broken response: body nested too deeply to parse"),
            None,
        )
    # A body that is not JSON (or not UTF-8) can escape the SDKs as the decoder's error, not an APIError.
    if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)):
        return Classified(
            ErrorType.MODEL_PROVIDER_UNAVAILABLE,
            note(f"broken response: body is not JSON ({type(error).__name__})"),
            None,
        )
    return None


class ProviderFailures:
    """Mixin for the HTTP providers: :meth:`_fail` builds their :class:`ProviderError`.

    A subclass sets ``_provider`` (its name in messages) and ``_secret`` (the key to redact, if any).
    """

    _provider: ClassVar[str]
    _secret: str | None

    def _fail(
        self, error_type: str, model: str, fields: ErrorFields, status: int | None = None
    ) -> ProviderError:
        """A :class:`ProviderError` of ``error_type`` whose key-free message names provider, model,
        HTTP status (if any) and the provider's description (:func:`describe`)."""
        return ProviderError(error_type, describe(self._provider, model, status, fields, self._secret))


def as_int(value: object) -> int | None:
    """``value`` when it is a non-negative int (token counts), else ``None`` (not reported)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
