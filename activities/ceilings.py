"""Activity ``request_model_lease``: ask a registered model's ``ModelCeiling`` workflow for a lease.

The activity sends the model's ceiling workflow (``contracts.ceilings``) update ``try_acquire``,
answered in one workflow task: a free slot is granted in the answer, and the job calls at once.
Otherwise the request waits in the ceiling and the grant arrives at the calling ``ModelJob`` as a
signal; the activity never waits for a slot (a request waiting for one holds no worker resources).
Where there is no answer — the first call to a model, whose ceiling is not running yet, or an update
the server refused — it signals-with-start ``acquire`` instead, which starts the ceiling on this
task queue. Models without a registration — ``replay:*`` and providers a worker was given directly
— have no ceiling, and no lease is asked for. A call of a model class (``contracts.model_classes``)
asks its class's pool first — the same workflow type with the class's ceiling and no ramp — and the
model's ceiling only once the class granted its lease.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from temporalio import activity
from temporalio.client import Client
from temporalio.exceptions import ApplicationError

from activities.store_access import SharedStore
from contracts.ceilings import (
    CALL_TIMEOUT_MARGIN_SECONDS,
    LEASE_MARGIN_SECONDS,
    CeilingState,
    LeaseCall,
    LeaseOutcome,
    LeaseRelease,
    LeaseRequest,
    LeaseStatus,
    LeaseTerms,
    ceiling_workflow_id,
    class_lease_id,
)
from contracts.errors import NotFound
from contracts.model_classes import DEFAULT_CLASS_CEILINGS, ModelClass, class_pool_id
from contracts.models import ModelRecord, is_replay_model
from contracts.temporal_names import ActivityName, CeilingMessage, WorkflowType
from runtime.logs import run_logger

CEILING_WORKFLOW = WorkflowType.MODEL_CEILING
RELEASE_TIMEOUT_SECONDS = 10.0
TRY_ACQUIRE_WAIT_SECONDS = 3.0
"""How long a lease request waits for the ceiling's answer before it falls back on the signal (the
activity's own timeout is 10 s)."""


def _consume(future: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned call's outcome, so asyncio does not report it as never retrieved."""
    if not future.cancelled():
        future.exception()


class CeilingActivities:
    """``request_model_lease`` bound to the store (where registrations and their ceilings live)."""

    def __init__(
        self, store: SharedStore, class_ceilings: Mapping[ModelClass, int] = DEFAULT_CLASS_CEILINGS
    ) -> None:
        self._store = store
        self._class_ceilings = dict(class_ceilings)

    @activity.defn(name=ActivityName.REQUEST_MODEL_LEASE)
    async def request_model_lease(self, call: LeaseCall) -> LeaseTerms:
        """Queue a lease request for one call to ``call.model_id``; returns the model's terms.

        Returns ``limited=False`` (nothing queued) for a model with no registration, else
        ``granted`` true when the slot was free at once. Raises what the store or Temporal raise
        (retried by the workflow's retry policy; ``try_acquire`` and ``acquire`` are idempotent by
        lease id).
        """
        if is_replay_model(call.model_id):
            return LeaseTerms(limited=False)
        record = await asyncio.to_thread(self._registration, call.model_id)
        if record is None:
            return LeaseTerms(limited=False)
        lease_seconds = record.timeout_s + CALL_TIMEOUT_MARGIN_SECONDS + LEASE_MARGIN_SECONDS
        terms = LeaseTerms(limited=True, ceiling=record.ceiling, call_timeout_s=record.timeout_s)
        log = run_logger(call.holder_workflow_id, activity="request_model_lease")
        if call.model_class is not None and not call.class_granted:
            # The class's pool first: a call waiting for its class holds no slot of its model.
            pool = CeilingState(
                model_id=class_pool_id(call.model_class),
                ceiling=self._class_ceilings[call.model_class],
                ramp=False,
            )
            lease = LeaseRequest(
                lease_id=class_lease_id(call.lease_id),
                holder_workflow_id=call.holder_workflow_id,
                lease_seconds=lease_seconds,
            )
            if not await self._acquire(pool, lease):
                log.info(
                    "class_lease_requested",
                    model_class=call.model_class.value,
                    lease=lease.lease_id,
                    ceiling=pool.ceiling,
                    granted=False,
                )
                return terms.model_copy(update={"class_waiting": True})
        request = LeaseRequest(
            lease_id=call.lease_id, holder_workflow_id=call.holder_workflow_id, lease_seconds=lease_seconds
        )
        granted = await self._acquire(CeilingState(model_id=record.id, ceiling=record.ceiling), request)
        log.info(
            "model_lease_requested",
            model=record.id,
            model_class=call.model_class.value if call.model_class is not None else None,
            lease=call.lease_id,
            ceiling=record.ceiling,
            granted=granted,
        )
        return terms.model_copy(update={"granted": granted})

    async def _acquire(self, ceiling: CeilingState, request: LeaseRequest) -> bool:
        """Queue ``request`` with ``ceiling``'s workflow (started with that state if not running);
        True when it was granted in the answer. Raises a non-retryable ``lease_released`` when the
        lease was already given back or reclaimed."""
        ceiling_id = ceiling_workflow_id(activity.info().task_queue, ceiling.model_id)
        status = await self._try_acquire(ceiling_id, request)
        if status is not None and status.status == "released":
            raise ApplicationError(
                f"lease {request.lease_id} was already given back or reclaimed; it cannot be taken again",
                type="lease_released",
                non_retryable=True,
            )
        if status is None:
            # No answer: the ceiling is not running yet, or refused or lost the update. The signal
            # queues the request (or, if the update did grant it, has the grant signalled again).
            await activity.client().start_workflow(
                CEILING_WORKFLOW,
                ceiling,
                id=ceiling_id,
                task_queue=activity.info().task_queue,
                start_signal=CeilingMessage.ACQUIRE,
                start_signal_args=[request],
            )
        return status is not None and status.status == "held"

    @staticmethod
    async def _try_acquire(ceiling_id: str, request: LeaseRequest) -> LeaseStatus | None:
        """The ceiling's answer to update ``try_acquire``, or None when there is none within
        ``TRY_ACQUIRE_WAIT_SECONDS``: the workflow does not exist, the server refused the update (its
        bound on updates in flight, which the client retries) or its workflow task is slow.

        The update id is derived from the lease id, so a retried request is the same update to the
        server, never a second one. Raises only when the activity itself is cancelled.
        """
        handle = activity.client().get_workflow_handle(ceiling_id)
        update = asyncio.ensure_future(
            handle.execute_update(
                CeilingMessage.TRY_ACQUIRE,
                request,
                id=f"{CeilingMessage.TRY_ACQUIRE}/{request.lease_id}",
                result_type=LeaseStatus,
            )
        )
        # Waited on, not wrapped in a timeout: the client turns a cancellation inside the call into
        # its own error, which would hide this activity's own cancellation.
        done, _ = await asyncio.wait({update}, timeout=TRY_ACQUIRE_WAIT_SECONDS)
        if activity.is_cancelled():
            update.cancel()
            raise asyncio.CancelledError()
        if not done:
            update.cancel()
            update.add_done_callback(_consume)
            run_logger(request.holder_workflow_id, activity="request_model_lease").info(
                "model_lease_try_acquire_unanswered", lease=request.lease_id, error="no answer in time"
            )
            return None
        try:
            status: LeaseStatus = update.result()
        except Exception as error:  # falls back on the acquire signal
            run_logger(request.holder_workflow_id, activity="request_model_lease").info(
                "model_lease_try_acquire_unanswered", lease=request.lease_id, error=type(error).__name__
            )
            return None
        return status

    def _registration(self, model_id: str) -> ModelRecord | None:
        try:
            return self._store.registered_model(model_id)
        except NotFound:
            return None


class LeaseReleaser:
    """Gives a lease back from a sync activity's thread, through the worker's client and event loop.

    ``call_model`` releases its lease as it ends, so the job needs no extra step on success; when
    this fails (or the activity never ends), the job releases the lease itself (``release`` is
    idempotent).
    """

    def __init__(self, client: Client, loop: asyncio.AbstractEventLoop) -> None:
        self._client = client
        self._loop = loop

    def release(
        self, task_queue: str, model_id: str, lease_id: str, outcome: LeaseOutcome | None = None
    ) -> bool:
        """Signal ``release`` for ``lease_id`` with how its call ended (for the ramp); True once
        delivered, False on any failure (logged)."""
        handle = self._client.get_workflow_handle(ceiling_workflow_id(task_queue, model_id))
        future = asyncio.run_coroutine_threadsafe(
            handle.signal(CeilingMessage.RELEASE, LeaseRelease(lease_id=lease_id, outcome=outcome)),
            self._loop,
        )
        try:
            future.result(timeout=RELEASE_TIMEOUT_SECONDS)
        except Exception as error:  # the job releases it instead
            future.cancel()
            run_logger(lease_id, activity="call_model").warning(
                "model_lease_release_failed", lease=lease_id, error=type(error).__name__
            )
            return False
        return True
