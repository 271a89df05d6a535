"""``ModelCeiling``: one workflow per registered model that keeps its calls in flight under its ceiling.

Why a workflow: the ceiling must hold across every worker process together and survive any of them
crashing. The lease table lives in this workflow's durable state, so no worker owns a slot: a
``ModelJob`` that loses its worker mid-call keeps its lease (the job itself is durable), learns of the
failed call from its activity timeout and gives the lease back. Only a holder that is terminated
outright cannot release; its lease is reclaimed by a durable timer at its deadline (the call's
activity timeout plus a margin, so a call still running is never reclaimed).

Protocol (``contracts.ceilings``): signal ``acquire`` (:class:`LeaseRequest`, idempotent by lease id)
queues a request; requests are granted first come, first served while fewer than ``ceiling`` leases
are held, each by signal ``lease_granted`` to the holder's workflow; signal ``release``
(:class:`LeaseRelease`) gives a lease back or withdraws a waiting request. A grant whose holder no
longer exists is taken back at once. Query ``state`` answers the table (:class:`CeilingState`).

The workflow never finishes on its own: it continues as new, carrying its table, when its history
grows long.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.ceilings import CeilingState, Lease, LeaseGranted, LeaseRelease, LeaseRequest

LEASE_GRANTED_SIGNAL = "lease_granted"
MAX_HISTORY_EVENTS = 2000
"""Continue as new past this many events: keeps replay of the table cheap."""


@workflow.defn(name="ModelCeiling")
class ModelCeilingWorkflow:
    """Grant at most ``ceiling`` leases on one model at a time."""

    @workflow.init
    def __init__(self, state: CeilingState) -> None:
        self._model_id = state.model_id
        self._ceiling = state.ceiling
        self._held: dict[str, Lease] = {lease.lease_id: lease for lease in state.held}
        self._waiting: dict[str, LeaseRequest] = {request.lease_id: request for request in state.waiting}
        self._granted_total = state.granted_total
        self._reclaimed_total = state.reclaimed_total
        self._max_held = state.max_held
        self._changed = True

    @workflow.signal(name="acquire")
    def acquire(self, request: LeaseRequest) -> None:
        """Queue ``request`` unless its lease is already held or waiting (a retried request)."""
        if request.lease_id in self._held or request.lease_id in self._waiting:
            return
        self._waiting[request.lease_id] = request
        self._changed = True

    @workflow.signal(name="release")
    def release(self, release: LeaseRelease) -> None:
        """Give back a held lease or withdraw a waiting request; an unknown lease id is ignored (it
        was already reclaimed)."""
        if self._held.pop(release.lease_id, None) is not None or self._waiting.pop(release.lease_id, None):
            self._changed = True

    @workflow.query(name="state")
    def state(self) -> CeilingState:
        """The lease table now."""
        return CeilingState(
            model_id=self._model_id,
            ceiling=self._ceiling,
            held=list(self._held.values()),
            waiting=list(self._waiting.values()),
            granted_total=self._granted_total,
            reclaimed_total=self._reclaimed_total,
            max_held=self._max_held,
        )

    @workflow.run
    async def run(self, state: CeilingState) -> None:
        while True:
            self._changed = False
            self._reclaim_expired()
            await self._grant()
            if self._should_continue_as_new():
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(self.state())
            await self._wait_for_change()

    def _reclaim_expired(self) -> None:
        now = workflow.now()
        for lease_id, lease in list(self._held.items()):
            if lease.expires_at <= now:
                del self._held[lease_id]
                self._reclaimed_total += 1
                workflow.logger.warning("lease %s on %s reclaimed at its deadline", lease_id, self._model_id)

    async def _grant(self) -> None:
        """Grant waiting requests in arrival order while slots are free; signal the holders together."""
        granted: list[Lease] = []
        while self._waiting and len(self._held) < self._ceiling:
            lease_id = next(iter(self._waiting))
            request = self._waiting.pop(lease_id)
            lease = Lease(
                lease_id=lease_id,
                holder_workflow_id=request.holder_workflow_id,
                expires_at=workflow.now() + timedelta(seconds=request.lease_seconds),
            )
            self._held[lease_id] = lease
            granted.append(lease)
        if not granted:
            return
        self._granted_total += len(granted)
        self._max_held = max(self._max_held, len(self._held))
        results = await asyncio.gather(*(self._notify(lease) for lease in granted), return_exceptions=True)
        for lease, result in zip(granted, results, strict=True):
            if isinstance(result, BaseException):
                # The holder is gone (finished or terminated): nobody will use or release the slot.
                workflow.logger.info("holder of lease %s is gone; slot freed", lease.lease_id)
                self._held.pop(lease.lease_id, None)
                self._changed = True

    async def _notify(self, lease: Lease) -> None:
        """Signal the holder; raises when the server finds no such running workflow."""
        handle = workflow.get_external_workflow_handle(lease.holder_workflow_id)
        await handle.signal(LEASE_GRANTED_SIGNAL, LeaseGranted(lease_id=lease.lease_id))

    async def _wait_for_change(self) -> None:
        """Sleep until a signal changes the table or the earliest lease deadline passes."""
        if self._held:
            earliest = min(lease.expires_at for lease in self._held.values())
            timeout = max((earliest - workflow.now()).total_seconds(), 0.001)
            with contextlib.suppress(TimeoutError):
                await workflow.wait_condition(lambda: self._changed, timeout=timeout)
        else:
            await workflow.wait_condition(lambda: self._changed)

    def _should_continue_as_new(self) -> bool:
        info = workflow.info()
        return info.is_continue_as_new_suggested() or info.get_current_history_length() > MAX_HISTORY_EVENTS
