"""``specialists models test``: start a ``ModelCheck`` workflow and wait for a worker to answer it.

The check runs on a worker because the keys live there. A check no worker picks up within the wait
is terminated and reported as a service problem (exit 5), so nothing is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt

from temporalio.client import Client, WorkflowFailureError
from temporalio.common import WorkflowIDReusePolicy
from temporalio.service import RPCError

from contracts.errors import OperatorError, ServiceUnavailable
from contracts.model_jobs import CHECK_TIMEOUT, ModelCheckRequest, ModelCheckResult
from contracts.temporal_names import WorkflowType

WAIT_MARGIN_SECONDS = 30
"""How much longer than the model's own timeout the CLI waits for a worker to answer."""


async def run_model_check(
    client: Client,
    request: ModelCheckRequest,
    *,
    task_queue: str,
    wait_seconds: float,
    check_worker: bool = True,
) -> ModelCheckResult:
    """Start the check on ``task_queue`` and return its result.

    Raises :class:`ServiceUnavailable` ``no_worker`` before anything is started when no worker polls
    ``task_queue`` (unless ``check_worker`` is false), ``check_not_answered`` when no worker finishes
    it within ``wait_seconds`` (the check is then terminated), or ``temporal_error`` when Temporal
    refuses it; :class:`OperatorError` ``check_failed`` (exit 1) when the check workflow itself failed.
    """
    if check_worker:
        from control.temporal import require_worker

        await require_worker(client, task_queue)
    try:
        handle = await client.start_workflow(
            WorkflowType.MODEL_CHECK,
            request,
            result_type=ModelCheckResult,
            id=request.check_id,
            task_queue=task_queue,
            execution_timeout=CHECK_TIMEOUT + dt.timedelta(minutes=1),
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        )
    except RPCError as error:
        raise ServiceUnavailable("temporal_error", f"Temporal refused the check: {error}") from None
    try:
        return await asyncio.wait_for(handle.result(), timeout=wait_seconds)
    except WorkflowFailureError as error:
        cause = error.cause
        raise OperatorError(
            "check_failed",
            f"check {request.check_id} failed on the worker: {getattr(cause, 'message', cause)}",
        ) from None
    except TimeoutError:
        with contextlib.suppress(RPCError):
            await handle.terminate("no worker answered the model check in time")
        raise ServiceUnavailable(
            "check_not_answered",
            f"no worker answered check {request.check_id} within {wait_seconds:g}s: is "
            f"`specialists worker` running on task queue {task_queue!r}?",
        ) from None
