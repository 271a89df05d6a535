"""``ModelCeiling``: one workflow per registered model that keeps its calls in flight under its ceiling.

Why a workflow: the ceiling must hold across every worker process together and survive any of them
crashing. The lease table lives in this workflow's durable state, so no worker owns a slot: a
``ModelJob`` that loses its worker mid-call keeps its lease (the job itself is durable), learns of the
failed call from its activity timeout and gives the lease back. Only a holder that is terminated
outright cannot release; its lease is reclaimed by a durable timer at its deadline (the call's
activity timeout plus a margin, so a call still running is never reclaimed).

Protocol (``contracts.ceilings``): update ``acquire`` (:class:`LeaseRequest`, idempotent by lease id)
queues a request and returns once it is granted — first come, first served while fewer than
``ceiling`` leases are held — or withdrawn; signal ``release`` (:class:`LeaseRelease`) gives a lease
back or withdraws a waiting request. Query ``state`` answers the table (:class:`CeilingState`).

The workflow never finishes on its own: it continues as new, carrying its table, when its history
grows long and no request is waiting (a waiting request is an update in flight).
"""

from __future__ import annotations

import contextlib
from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.ceilings import CeilingState, Lease, LeaseGrant, LeaseRelease, LeaseRequest

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

    @workflow.update(name="acquire")
    async def acquire(self, request: LeaseRequest) -> LeaseGrant:
        """Queue ``request`` (unless its lease is already held or waiting: a retried request) and
        return once it is granted, or withdrawn by ``release`` first."""
        lease_id = request.lease_id
        if lease_id not in self._held and lease_id not in self._waiting:
            self._waiting[lease_id] = request
            self._changed = True
        await workflow.wait_condition(lambda: lease_id in self._held or lease_id not in self._waiting)
        return LeaseGrant(lease_id=lease_id, granted=lease_id in self._held)

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
            self._grant()
            if self._should_continue_as_new() and not self._waiting:
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

    def _grant(self) -> None:
        """Grant waiting requests in arrival order while slots are free (their updates then return)."""
        while self._waiting and len(self._held) < self._ceiling:
            lease_id = next(iter(self._waiting))
            request = self._waiting.pop(lease_id)
            self._held[lease_id] = Lease(
                lease_id=lease_id,
                holder_workflow_id=request.holder_workflow_id,
                expires_at=workflow.now() + timedelta(seconds=request.lease_seconds),
            )
            self._granted_total += 1
            self._max_held = max(self._max_held, len(self._held))

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
