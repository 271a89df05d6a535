"""Connecting to Temporal for the CLI and the worker (unreachable → exit 5 with how to start it), and
the client-side helpers run and team operations share: an RPC failure as an operator error, a
workflow's memo, polling a workflow's view."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode

from contracts.errors import ServiceUnavailable
from control.settings import Settings

CONNECT_TIMEOUT_SECONDS = 5.0
V = TypeVar("V")


_connected = False


def connected() -> bool:
    """Whether this process has connected to Temporal (its native runtime threads are running)."""
    return _connected


async def connect(settings: Settings) -> Client:
    """A client for ``settings.temporal_address``/``namespace`` using the pydantic data converter.

    Raises :class:`ServiceUnavailable` (``temporal_unreachable``) when the server does not answer.
    """
    global _connected
    _connected = True  # set before the attempt: a failed connect may have started the runtime too
    try:
        return await asyncio.wait_for(
            Client.connect(
                settings.temporal_address,
                namespace=settings.namespace,
                data_converter=pydantic_data_converter,
            ),
            timeout=CONNECT_TIMEOUT_SECONDS,
        )
    except (RuntimeError, OSError, TimeoutError) as error:
        raise ServiceUnavailable(
            "temporal_unreachable",
            f"cannot reach Temporal at {settings.temporal_address} ({type(error).__name__}): start it "
            "with `specialists dev` (or `make dev`), or set SPECIALISTS_TEMPORAL_ADDRESS",
        ) from None


def temporal_error(error: RPCError) -> ServiceUnavailable:
    """An RPC failure of Temporal as the operator sees it (``temporal_error``, exit 5)."""
    return ServiceUnavailable("temporal_error", f"Temporal answered {error.status.name}: {error.message}")


async def describe_memo(handle: WorkflowHandle[Any, Any]) -> dict[str, Any] | None:
    """The workflow's memo, or ``None`` when no such workflow exists. Raises
    :class:`ServiceUnavailable` for any other failure."""
    try:
        description = await handle.describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return None
        raise temporal_error(error) from None
    return dict(await description.memo())


async def poll_view(
    fetch: Callable[[], Awaitable[V]],
    done: Callable[[V], bool],
    *,
    status: Callable[[V], object],
    timeout: float | None,
    on_change: Callable[[V], None] | None = None,
    every: float = 0.1,
) -> V:
    """``fetch()`` every ``every`` seconds until ``done(view)`` or ``timeout`` seconds have passed
    (``None``: no limit); returns the last view. ``on_change`` sees each view whose ``status(view)``
    differs from the one before."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    last: object = None
    while True:
        view = await fetch()
        current = status(view)
        if on_change is not None and current is not last:
            on_change(view)
        last = current
        if done(view) or (deadline is not None and loop.time() >= deadline):
            return view
        await asyncio.sleep(every)
