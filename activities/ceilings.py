"""Activity ``request_model_lease``: get a lease from a registered model's ``ModelCeiling`` workflow.

The activity sends update ``acquire`` with update-with-start (``contracts.ceilings``), so the first
call to a model starts its ceiling workflow on this task queue and later calls find it running, and
returns once the lease is granted — heartbeating while it waits for a slot. Models without a
registration — ``replay:*`` and providers a worker was given directly — have no ceiling, and no
lease is asked for.
"""

from __future__ import annotations

import asyncio

from temporalio import activity
from temporalio.client import Client, WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError

from activities.logs import run_logger
from activities.store_access import SharedStore
from contracts.ceilings import (
    CALL_TIMEOUT_MARGIN_SECONDS,
    LEASE_MARGIN_SECONDS,
    CeilingState,
    LeaseCall,
    LeaseGrant,
    LeaseRelease,
    LeaseRequest,
    LeaseTerms,
    ceiling_workflow_id,
)
from contracts.errors import NotFound
from contracts.models import ModelRecord, is_replay_model

CEILING_WORKFLOW = "ModelCeiling"
RELEASE_TIMEOUT_SECONDS = 10.0
HEARTBEAT_EVERY_SECONDS = 5.0
"""How often a request still waiting for a slot heartbeats."""


class CeilingActivities:
    """``request_model_lease`` bound to the store (where registrations and their ceilings live)."""

    def __init__(self, store: SharedStore) -> None:
        self._store = store

    @activity.defn(name="request_model_lease")
    async def request_model_lease(self, call: LeaseCall) -> LeaseTerms:
        """Get lease ``call.lease_id`` for one call to ``call.model_id``; returns the model's terms once
        it is granted.

        Returns ``limited=False`` (nothing asked) for a model with no registration. Raises
        ``ApplicationError`` ``lease_withdrawn`` when the request was withdrawn before a grant, and
        what the store or Temporal raise (retried by the job's retry policy: update-with-start and
        ``acquire`` are idempotent by lease id, so a retry finds the lease it already has).
        """
        if is_replay_model(call.model_id):
            return LeaseTerms(limited=False)
        record = await asyncio.to_thread(self._registration, call.model_id)
        if record is None:
            return LeaseTerms(limited=False)
        request = LeaseRequest(
            lease_id=call.lease_id,
            holder_workflow_id=call.holder_workflow_id,
            lease_seconds=record.timeout_s + CALL_TIMEOUT_MARGIN_SECONDS + LEASE_MARGIN_SECONDS,
        )
        task_queue = activity.info().task_queue
        start = WithStartWorkflowOperation(
            CEILING_WORKFLOW,
            CeilingState(model_id=record.id, ceiling=record.ceiling),
            id=ceiling_workflow_id(task_queue, record.id),
            task_queue=task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        update = asyncio.ensure_future(
            activity.client().execute_update_with_start_workflow(
                "acquire", request, start_workflow_operation=start, result_type=LeaseGrant
            )
        )
        while True:
            done, _ = await asyncio.wait({update}, timeout=HEARTBEAT_EVERY_SECONDS)
            if done:
                break
            activity.heartbeat({"model": record.id, "lease": call.lease_id, "waiting": True})
        grant = update.result()
        if not grant.granted:
            raise ApplicationError(
                f"lease {call.lease_id} was withdrawn before a slot came free",
                type="lease_withdrawn",
                non_retryable=True,
            )
        run_logger(call.holder_workflow_id, activity="request_model_lease").info(
            "model_lease_granted", model=record.id, lease=call.lease_id, ceiling=record.ceiling
        )
        return LeaseTerms(limited=True, ceiling=record.ceiling, call_timeout_s=record.timeout_s)

    def _registration(self, model_id: str) -> ModelRecord | None:
        try:
            return self._store.get().get_model(model_id)
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

    def release(self, task_queue: str, model_id: str, lease_id: str) -> bool:
        """Signal ``release`` for ``lease_id``; True once delivered, False on any failure (logged)."""
        handle = self._client.get_workflow_handle(ceiling_workflow_id(task_queue, model_id))
        future = asyncio.run_coroutine_threadsafe(
            handle.signal("release", LeaseRelease(lease_id=lease_id)), self._loop
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
