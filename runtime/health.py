"""A worker's health endpoints for probes (docs/architecture.md "Deployment"), served when
``SPECIALISTS_HEALTH_ADDRESS`` (``host:port``) is set.

``GET /healthz`` (liveness) answers 200 while the worker's event loop is turning: an asyncio task
beats every second, and a beat older than :data:`STALE_AFTER_S` makes it 503 — a wedged loop polls
nothing, so the orchestrator should restart the process. ``GET /readyz`` (readiness) answers 200 once
the worker polls its task queues and its store is open, and 503 before that and from the moment it
starts to drain on a stop signal. Bodies are small JSON objects; nothing else is served (404), no
request is read beyond its first line, and nothing secret is in any answer.

The server is the standard library's ``ThreadingHTTPServer`` on its own daemon thread, so a busy
event loop cannot delay the answer that says it is busy.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

from runtime.settings import parse_address

STALE_AFTER_S: Final = 30.0
BEAT_EVERY_S: Final = 1.0


class Health:
    """What the endpoints report: the loop's last beat and whether the worker is ready."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._beat = clock()
        self._ready = False
        self._lock = threading.Lock()

    def beat(self) -> None:
        with self._lock:
            self._beat = self._clock()

    def set_ready(self, ready: bool) -> None:
        with self._lock:
            self._ready = ready

    def liveness(self) -> tuple[int, dict[str, Any]]:
        with self._lock:
            age = self._clock() - self._beat
        alive = age <= STALE_AFTER_S
        return (200 if alive else 503), {"alive": alive, "loop_beat_age_s": round(age, 3)}

    def readiness(self) -> tuple[int, dict[str, Any]]:
        with self._lock:
            ready = self._ready
        return (200 if ready else 503), {"ready": ready}

    async def keep_beating(self) -> None:
        """Beat every second until cancelled (run it as a task on the worker's loop)."""
        while True:
            self.beat()
            await asyncio.sleep(BEAT_EVERY_S)


def _handler(health: Health) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            routes = {"/healthz": health.liveness, "/readyz": health.readiness}
            answer = routes.get(self.path)
            status, body = answer() if answer else (404, {"error": "not_found"})
            data = json.dumps(body).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Probes come every few seconds: not worth a log line each."""

    return Handler


class HealthServer:
    """The endpoints for ``health`` on ``host``:``port`` (port 0 takes a free one: see :attr:`port`)."""

    def __init__(self, health: Health, host: str, port: int) -> None:
        self._server = ThreadingHTTPServer((host, port), _handler(health))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="health", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def __enter__(self) -> HealthServer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        with contextlib.suppress(Exception):
            self._server.shutdown()
        self._server.server_close()


ENV_HEALTH_ADDRESS: Final = "SPECIALISTS_HEALTH_ADDRESS"


def health_address(environ: Mapping[str, str] | None = None) -> tuple[str, int] | None:
    """``SPECIALISTS_HEALTH_ADDRESS`` as ``(host, port)`` (``None`` when unset: no endpoints);
    a malformed value is an :class:`~contracts.errors.InvalidInput` naming the variable."""
    env = os.environ if environ is None else environ
    text = (env.get(ENV_HEALTH_ADDRESS) or "").strip()
    return parse_address(text, variable=ENV_HEALTH_ADDRESS) if text else None
