"""The client-side helpers run and team operations share: an RPC failure as an operator error, a
workflow's memo, polling a workflow's view. The connection itself is :func:`runtime.temporal.connect`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from temporalio.client import WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from contracts.errors import ServiceUnavailable

V = TypeVar("V")


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
