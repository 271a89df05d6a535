"""How much a client may send the project's HTTP servers (Mission Control and the codec server).

A body over the limit is refused with 413 and never held whole: a declared ``Content-Length`` over
the limit is refused before anything is read, and a body sent without one (chunked) is counted as it
arrives and refused once it passes the limit. A body within the limit is read whole before the
application sees it (these servers read whole bodies anyway). The answer is the JSON every
refusal of these servers has, ``{"error": {"code": "request_too_large", "message": ...}}``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def declared_length(scope: Scope) -> int | None:
    """The request's ``Content-Length`` when it is a number (``None`` when absent or malformed)."""
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


def too_large_message(limit: int) -> str:
    return f"the request body is larger than {limit} bytes, the most this server reads"


class BodyLimit:
    """ASGI middleware: refuse any HTTP request whose body is over ``limit`` bytes with 413."""

    def __init__(self, app: App, *, limit: int, headers: dict[str, str] | None = None) -> None:
        self._app = app
        self._limit = limit
        self._headers = headers or {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        declared = declared_length(scope)
        if declared is not None and declared > self._limit:
            await self._refuse(send)
            return
        chunks: list[bytes] = []
        received = 0
        while True:  # the whole body, up to the limit, before the application sees any of it
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client went away: there is no one to answer
            body = message.get("body", b"")
            received += len(body)
            if received > self._limit:
                await self._refuse(send)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        whole: Message = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        handed = False

        async def replayed() -> Message:
            nonlocal handed
            if not handed:
                handed = True
                return whole
            return await receive()  # after the body: the disconnect, whenever it comes

        await self._app(scope, replayed, send)

    def _extra(self) -> list[tuple[str, str]]:
        return list(self._headers.items())

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(
            {"error": {"code": "request_too_large", "message": too_large_message(self._limit)}}
        ).encode("utf-8")
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode("ascii")),
            (b"connection", b"close"),
            *((name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in self._extra()),
        ]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})
