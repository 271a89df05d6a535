"""The client-side helpers run and team operations share: an RPC failure as an operator error, a
workflow's memo, polling a workflow's view, and whether a worker polls a task queue. The connection
itself is :func:`runtime.temporal.connect`."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from contracts.errors import ServiceUnavailable

V = TypeVar("V")

POLLER_FRESH_SECONDS: Final = 70.0
"""A poller the server saw within this many seconds counts as polling. The server lists a poller
from the start of its latest long poll (a minute at most: an idle worker polls again every 60 s)
and keeps listing a worker that has stopped for minutes after (docs/architecture.md "Operator
contract")."""
DESCRIBE_TIMEOUT: Final = dt.timedelta(seconds=2)
RECHECK_SECONDS: Final = 0.5
"""How long :func:`require_worker` waits before it asks once more (a worker's first poll)."""
START_WORKER_HINT: Final = "start one with `specialists worker` (or `specialists dev`)"


@dataclass(frozen=True)
class Poller:
    """A worker the server lists as polling a task queue's workflow tasks: its identity
    (``pid@host``) and when its latest poll began (UTC)."""

    identity: str
    last_access: dt.datetime

    def seconds_ago(self, now: dt.datetime | None = None) -> float:
        """How long ago its latest poll began (never negative: the server's clock may run ahead)."""
        now = now or dt.datetime.now(dt.UTC)
        return max(0.0, (now - self.last_access).total_seconds())

    @property
    def fresh(self) -> bool:
        """Seen within :data:`POLLER_FRESH_SECONDS`: the worker is polling."""
        return self.seconds_ago() <= POLLER_FRESH_SECONDS


async def task_queue_pollers(client: Client, task_queue: str) -> list[Poller]:
    """Every worker the server lists for ``task_queue``'s workflow tasks (its DescribeTaskQueue
    pollers), fresh or not, most recent first. Raises :class:`ServiceUnavailable`
    (``temporal_error``) when Temporal does not answer within 2 s."""
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=task_queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    )
    try:
        response = await client.workflow_service.describe_task_queue(request, timeout=DESCRIBE_TIMEOUT)
    except RPCError as error:
        raise temporal_error(error) from None
    pollers = [
        Poller(identity=poller.identity, last_access=poller.last_access_time.ToDatetime(tzinfo=dt.UTC))
        for poller in response.pollers
    ]
    return sorted(pollers, key=lambda poller: poller.last_access, reverse=True)


def no_worker_error(client: Client, task_queue: str, pollers: list[Poller]) -> ServiceUnavailable:
    """``no_worker`` (exit 5): nothing polls ``task_queue``, and how to fix it."""
    message = f"no worker is polling task queue {task_queue!r} on namespace {client.namespace!r}: "
    message += START_WORKER_HINT
    if pollers:
        last = pollers[0]
        message += f" (the last one, {last.identity}, polled {last.seconds_ago():.0f} s ago)"
    return ServiceUnavailable("no_worker", message)


async def require_worker(client: Client, task_queue: str) -> list[Poller]:
    """The workers polling ``task_queue`` now; raises :func:`no_worker_error` when there are none,
    before anything that needs a worker to answer is sent."""
    pollers = await task_queue_pollers(client, task_queue)
    polling = [poller for poller in pollers if poller.fresh]
    if not polling:
        # A worker started a moment ago may not have reached the server with its first poll yet.
        await asyncio.sleep(RECHECK_SECONDS)
        pollers = await task_queue_pollers(client, task_queue)
        polling = [poller for poller in pollers if poller.fresh]
    if not polling:
        raise no_worker_error(client, task_queue, pollers)
    return polling


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


def patiently(
    ask: Callable[[], Awaitable[V]],
    *,
    codes: frozenset[str],
    deadline: float | None,
    on_unanswered: Callable[[ServiceUnavailable | None], None] | None = None,
    fallback: Callable[[], V | None] = lambda: None,
    retry_seconds: float = 1.0,
) -> Callable[[], Awaitable[V]]:
    """``ask``, asked again every ``retry_seconds`` while it raises :class:`ServiceUnavailable` with
    one of ``codes`` (nobody answers: a worker or the server is restarting), until ``deadline`` (a
    loop time; ``None``: no limit), where ``fallback()`` is returned or, when it is ``None``, the
    error raised. ``on_unanswered`` hears when answers stop (the error) and when they come back
    (``None``). What ``--wait`` polls with (:func:`poll_view`)."""
    loop = asyncio.get_running_loop()
    unanswered = False

    async def fetch() -> V:
        nonlocal unanswered
        while True:
            try:
                view = await ask()
            except ServiceUnavailable as error:
                if error.code not in codes:
                    raise
                if not unanswered and on_unanswered is not None:
                    on_unanswered(error)
                unanswered = True
                if deadline is not None and loop.time() >= deadline:
                    kept = fallback()
                    if kept is None:
                        raise
                    return kept
                pause = retry_seconds if deadline is None else min(retry_seconds, deadline - loop.time())
                await asyncio.sleep(max(0.0, pause))
                continue
            if unanswered and on_unanswered is not None:
                on_unanswered(None)
            unanswered = False
            return view

    return fetch


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
