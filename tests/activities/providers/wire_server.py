"""A scripted model server on 127.0.0.1 that speaks two wire formats over real HTTP.

``POST /v1/chat/completions`` (OpenAI-compatible chat completions) and ``POST /v1/messages``
(Anthropic Messages) both answer from one queue of :class:`Scripted` responses (status, headers,
body, optional delay) and log every request they receive (:class:`Received`: path, headers, JSON
body). An empty queue answers ``default`` when one is set, else 599 with a body saying so, which no
provider maps to success. ``max_in_flight`` is the most requests it was answering at once.

The ``openai_*`` and ``anthropic_*`` helpers build the bodies those APIs return; the job fixtures at
the end are the request and a valid result the provider tests share.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from activities.providers.base import CompletionRequest, JobIdentity
from contracts.model_jobs import JobContext, ModelCallRequest
from contracts.output import JobKind

PATHS = frozenset({"/v1/chat/completions", "/v1/messages"})


@dataclass(frozen=True)
class Scripted:
    """One scripted answer. ``body`` is sent as JSON unless it is ``str``/``bytes`` (sent as is)."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass(frozen=True)
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class WireServer:
    """A running server: ``base_url`` (ends in ``/v1``), ``script(...)`` and ``received``."""

    def __init__(self) -> None:
        self._queue: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self.received: list[Received] = []
        self.default: Scripted | None = None
        self.responder: Callable[[Received], Scripted] | None = None
        """Answers each request not scripted in the queue, from what it asked (before ``default``)."""
        self._in_flight = 0
        self.max_in_flight = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (``http://127.0.0.1:<port>/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root_url(self) -> str:
        """The Anthropic-style base URL (``http://127.0.0.1:<port>``; the SDK adds ``/v1``)."""
        return f"http://127.0.0.1:{self.port}"

    def script(self, *responses: Scripted) -> None:
        """Queue ``responses``; each request takes the next one."""
        with self._lock:
            self._queue.extend(responses)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.received.clear()
            self.default = None
            self.responder = None
            self.max_in_flight = 0

    def answering(self, count: int) -> None:
        """Note a request entering (``+1``) or leaving (``-1``) its answer; keeps the highest number
        of requests being answered at once in ``max_in_flight``."""
        with self._lock:
            self._in_flight += count
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self, request: Received) -> Scripted:
        with self._lock:
            self.received.append(request)
            if self._queue:
                return self._queue.popleft()
            responder, default = self.responder, self.default
        if responder is not None:  # outside the lock: it may take its time
            return responder(request)
        if default is not None:
            return default
        return Scripted(status=599, body={"error": {"type": "unscripted", "message": "no response queued"}})


def _handler_for(server: WireServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return  # quiet

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            path = self.path.split("?", 1)[0]
            request = Received(
                method="POST",
                path=path,
                headers={key.lower(): value for key, value in self.headers.items()},
                body=body,
            )
            answer = (
                server._next(request)
                if path in PATHS
                else Scripted(status=404, body={"error": {"type": "not_found", "message": path}})
            )
            server.answering(+1)
            try:
                self._answer(answer)
            finally:
                server.answering(-1)

        def _answer(self, answer: Scripted) -> None:
            if answer.delay_s:
                time.sleep(answer.delay_s)
            if isinstance(answer.body, bytes):
                payload, content_type = answer.body, "application/octet-stream"
            elif isinstance(answer.body, str):
                payload, content_type = answer.body.encode("utf-8"), "text/plain"
            else:
                payload, content_type = json.dumps(answer.body).encode("utf-8"), "application/json"
            headers = {"content-type": content_type, **answer.headers}
            try:
                self.send_response(answer.status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                return  # the client gave up (e.g. its timeout fired)

    return Handler


@contextmanager
def running() -> Iterator[WireServer]:
    """A started :class:`WireServer`, stopped afterwards."""
    server = WireServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ------------------------------------------------------------------------------------- wire bodies


def openai_completion(
    content: str | None,
    *,
    finish_reason: str = "stop",
    prompt_tokens: int = 120,
    completion_tokens: int = 45,
    model: str = "model-a",
) -> dict[str, Any]:
    """A chat completion with one choice whose message content is ``content``."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "finish_reason": finish_reason,
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def openai_error(message: str, *, type: str | None, code: str | None = None, param: str | None = None) -> Any:
    """An OpenAI error body: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def anthropic_message(
    *,
    tool_input: dict[str, Any] | None = None,
    text: str | None = None,
    stop_reason: str | None = None,
    input_tokens: int = 150,
    output_tokens: int = 60,
    model: str = "model-b",
) -> dict[str, Any]:
    """A Messages API response carrying a ``specialist_output`` tool call and/or a text block."""
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"type": "text", "text": text})
    if tool_input is not None:
        content.append(
            {"type": "tool_use", "id": "toolu_01", "name": "specialist_output", "input": tool_input}
        )
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason or ("tool_use" if tool_input is not None else "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


def anthropic_error(type: str, message: str, *, error_code: str | None = None) -> dict[str, Any]:
    """An Anthropic error body: ``{"type": "error", "error": {"type", "message"[, "details"]}}``."""
    error: dict[str, Any] = {"type": type, "message": message}
    if error_code is not None:
        error["details"] = {"error_code": error_code}
    return {"type": "error", "error": error, "request_id": "req_01"}


# ---------------------------------------------------------------------------------- job fixtures

PROFILE = "database-optimizer"
EVIDENCE = ["ev-query-plan", "ev-slow-log"]
INSTRUCTIONS = "You are the primary specialist. Answer with one JSON object matching the schema."
CONTEXT = "## Task\n\nFind why the report query is slow.\n\n## Evidence ids\n\n- ev-query-plan\n- ev-slow-log"


def valid_output() -> dict[str, Any]:
    """A ``SpecialistOutput`` for an analysis job of :data:`PROFILE` citing :data:`EVIDENCE`."""
    return {
        "role": PROFILE,
        "axis": "query performance",
        "inspected_evidence": list(EVIDENCE),
        "findings": [
            {
                "severity": "high",
                "title": "Sequential scan on orders",
                "evidence_refs": ["ev-query-plan"],
                "detail": "The plan scans orders without an index on created_at.",
            }
        ],
        "confidence": 0.8,
        "confidence_band": "high",
        "gaps": [],
        "closure": "closed",
        "recommended_next_action": "Add an index on orders.created_at",
    }


def completion_request(model_name: str) -> CompletionRequest:
    """The provider-level request of an analysis job for :data:`PROFILE`."""
    return CompletionRequest(
        model_name=model_name,
        instructions=INSTRUCTIONS,
        context=CONTEXT,
        identity=JobIdentity(profile_id=PROFILE, kind=JobKind.ANALYSIS, title="Slow report query"),
    )


def call_request(model_id: str) -> ModelCallRequest:
    """The ``call_model`` request the provider-level request stands for (for ``parse_output``)."""
    return ModelCallRequest(
        job_id="SOR-0123456789ABCDEF-analysis",
        kind=JobKind.ANALYSIS,
        profile_id=PROFILE,
        catalog_sha256="0" * 64,
        context=JobContext(title="Slow report query", task=CONTEXT, evidence_refs=list(EVIDENCE)),
        model_id=model_id,
    )
