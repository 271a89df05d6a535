"""``ModelCeiling``: one workflow per registered model that keeps its calls in flight under its ceiling.

Why a workflow: the ceiling must hold across every worker process together and survive any of them
crashing. The lease table lives in this workflow's durable state, so no worker owns a slot: a
``ModelJob`` that loses its worker mid-call keeps its lease (the job itself is durable), learns of the
failed call from its activity timeout and gives the lease back. Only a holder that is terminated
outright cannot release; its lease is reclaimed by a durable timer at its deadline (the call's
activity timeout plus a margin, so a call still running is never reclaimed).

Protocol (``contracts.ceilings``): update ``try_acquire`` (:class:`LeaseRequest` →
:class:`LeaseStatus`, idempotent by lease id) queues a request and answers at once whether it is
already ``held``; signal ``acquire`` (:class:`LeaseRequest`) queues one without an answer (it starts
the workflow, and is the fallback when the update is refused). Requests are granted first come,
first served while fewer than the ramp's ``allowance`` leases are held (``contracts.ceilings``: it
starts at 2, grows by one with each call given back as succeeded up to ``ceiling``, is halved by a
call given back as rate limited and starts again after idle; behind ``PATCH_RAMP``); a request
still waiting is told of its grant by signal ``lease_granted`` to the holder's workflow. Signal ``release``
(:class:`LeaseRelease`) gives a lease back or withdraws a waiting request. A signalled grant whose
holder no longer exists is taken back at once. Query ``state`` answers the table
(:class:`CeilingState`).

The workflow never finishes on its own: it continues as new, carrying its table, when its history
grows long.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.ceilings import (
        RAMP_START,
        RAMP_STEP,
        CeilingState,
        Lease,
        LeaseGranted,
        LeaseRelease,
        LeaseRequest,
        LeaseStatus,
    )
    from contracts.metric_names import CEILING_ALLOWANCE, CEILING_LEASES_HELD, CEILING_RATE_LIMITED
    from contracts.temporal_names import CeilingMessage, ModelJobMessage, WorkflowType
    from workflows.versioning import auto_upgrade

PATCH_LEASE_RECORDS = "ceiling-lease-records"
"""``acquire`` for a lease already held signals its holder again (``try_acquire`` grants without a
signal), and ``acquire`` for a lease already given back or reclaimed is ignored."""
PATCH_RAMP = "ceiling-ramp"
"""The ceiling is reached gradually: grants stop at the ramp's allowance, which each release's
outcome moves (``contracts.ceilings``). Without the marker (histories from before) the whole
ceiling is granted and outcomes are ignored."""
MAX_RELEASED_REMEMBERED = 1000
"""How many given-back or reclaimed lease ids the ceiling remembers, so a late request for one (an
abandoned update, a retried signal) cannot take a slot again."""
MAX_HISTORY_EVENTS = 2000
"""Continue as new past this many events: keeps replay of the table cheap."""


@workflow.defn(name=WorkflowType.MODEL_CEILING, versioning_behavior=auto_upgrade())
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
        self._unnotified: list[Lease] = []
        self._released: dict[str, None] = dict.fromkeys(state.released)
        self._allowance = state.allowance
        self._idle_since = state.idle_since
        self._ramp_idle_seconds = state.ramp_idle_seconds
        self._ramps = state.ramp
        self._succeeded_total = state.succeeded_total
        self._rate_limited_total = state.rate_limited_total
        self._ramp: bool | None = None

    @workflow.signal(name=CeilingMessage.ACQUIRE)
    def acquire(self, request: LeaseRequest) -> None:
        """Queue ``request`` unless its lease is already waiting (a retried request). A lease already
        held is signalled to its holder again: it may have been granted by ``try_acquire`` whose
        answer never reached the requester. A lease already given back or reclaimed is ignored."""
        if request.lease_id in self._held:
            if workflow.patched(PATCH_LEASE_RECORDS):
                self._unnotified.append(self._held[request.lease_id])
                self._changed = True
            return
        if request.lease_id in self._released and workflow.patched(PATCH_LEASE_RECORDS):
            return
        if request.lease_id in self._waiting:
            return
        self._waiting[request.lease_id] = request
        self._changed = True

    @workflow.update(name=CeilingMessage.TRY_ACQUIRE)
    def try_acquire(self, request: LeaseRequest) -> LeaseStatus:
        """Queue ``request`` (idempotent by lease id), grant free slots in arrival order and answer
        whether this lease is now ``held``, ``waiting`` or already ``released`` (given back or
        reclaimed: nothing is queued).

        Answered in the workflow task that delivers it, so a free slot costs the requester one round
        trip. A lease this update queued and granted is not signalled (the answer is the grant); a
        lease that was already waiting — queued by ``acquire``, whose sender did not get this answer
        — is signalled as usual, as is one granted later. The handler never waits, so an update is in
        flight for one workflow task only (the server bounds updates in flight per workflow to 10: a
        requester it refuses falls back on ``acquire``).
        """
        lease_id = request.lease_id
        if lease_id in self._released:
            return LeaseStatus(lease_id=lease_id, status="released")
        queued_here = lease_id not in self._held and lease_id not in self._waiting
        if queued_here:
            self._waiting[lease_id] = request
            # Wakes the run loop even when nobody is to be signalled: a lease granted here needs
            # its reclaim timer.
            self._changed = True
        self._reclaim_expired()
        self._assign_free_slots()
        if queued_here:
            self._unnotified = [lease for lease in self._unnotified if lease.lease_id != lease_id]
        return LeaseStatus(lease_id=lease_id, status="held" if lease_id in self._held else "waiting")

    @workflow.signal(name=CeilingMessage.RELEASE)
    def release(self, release: LeaseRelease) -> None:
        """Give back a held lease or withdraw a waiting request. The id is remembered even when
        unknown here — the release may overtake a request still on its way — so a later request
        for it is ignored."""
        self._remember_released(release.lease_id)
        held = self._held.pop(release.lease_id, None)
        if held is not None or self._waiting.pop(release.lease_id, None) is not None:
            self._changed = True
        if held is not None and release.outcome is not None and self._ramp_on():
            self._ramp_after(release.outcome)

    def _ramp_on(self) -> bool:
        """Whether this ceiling ramps (``PATCH_RAMP``); starts the allowance the first time."""
        if self._ramp is None:
            self._ramp = self._ramps and workflow.patched(PATCH_RAMP)
            if self._ramp and self._allowance is None:
                self._allowance = self._ramp_start()
        return self._ramp

    def _ramp_start(self) -> int:
        return min(RAMP_START, self._ceiling)

    def _ramp_after(self, outcome: str) -> None:
        """Move the allowance for a call given back as ``outcome``."""
        assert self._allowance is not None
        before = self._allowance
        if outcome == "succeeded":
            self._succeeded_total += 1
            self._allowance = min(self._ceiling, self._allowance + RAMP_STEP)
        elif outcome == "rate_limited":
            self._rate_limited_total += 1
            self._allowance = max(1, self._allowance // 2)
            workflow.metric_meter().create_counter(
                CEILING_RATE_LIMITED, "calls given back to a model's ceiling as rate limited"
            ).add(1, {"model": self._model_id})
        if self._allowance != before:
            workflow.logger.info(
                "ceiling of %s: allowance %d -> %d (%s)", self._model_id, before, self._allowance, outcome
            )

    def _limit(self) -> int:
        """How many leases may be held now: the ramp's allowance, or the ceiling without the ramp."""
        if self._ramp_on():
            assert self._allowance is not None
            return min(self._allowance, self._ceiling)
        return self._ceiling

    def _note_idle(self) -> None:
        """Start the allowance again when the ceiling has been idle long enough; remember when it
        became idle."""
        if not self._ramp_on():
            return
        now = workflow.now()
        if self._held or self._waiting:
            idle = self._idle_since
            if idle is not None and (now - idle).total_seconds() >= self._ramp_idle_seconds:
                self._allowance = self._ramp_start()
            self._idle_since = None
        elif self._idle_since is None:
            self._idle_since = now

    def _remember_released(self, lease_id: str) -> None:
        self._released[lease_id] = None
        while len(self._released) > MAX_RELEASED_REMEMBERED:
            del self._released[next(iter(self._released))]

    @workflow.query(name=CeilingMessage.STATE)
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
            released=list(self._released),
            allowance=self._allowance,
            idle_since=self._idle_since,
            succeeded_total=self._succeeded_total,
            rate_limited_total=self._rate_limited_total,
            ramp_idle_seconds=self._ramp_idle_seconds,
            ramp=self._ramps,
        )

    @workflow.run
    async def run(self, state: CeilingState) -> None:
        while True:
            self._changed = False
            self._reclaim_expired()
            self._assign_free_slots()
            await self._notify_granted()
            self._record_occupancy()
            if self._should_continue_as_new():
                await workflow.wait_condition(workflow.all_handlers_finished)
                while self._unnotified:  # granted by an update meanwhile: its holder hears of it here
                    await self._notify_granted()
                workflow.continue_as_new(self.state())
            await self._wait_for_change()

    def _record_occupancy(self) -> None:
        meter = workflow.metric_meter()
        labels = {"model": self._model_id, "ceiling": str(self._ceiling)}
        meter.create_gauge(CEILING_LEASES_HELD, "leases a model's ceiling holds").set(len(self._held), labels)
        meter.create_gauge(CEILING_ALLOWANCE, "leases a model's ceiling allows now").set(
            self._limit(), labels
        )

    def _reclaim_expired(self) -> None:
        now = workflow.now()
        for lease_id, lease in list(self._held.items()):
            if lease.expires_at <= now:
                del self._held[lease_id]
                self._remember_released(lease_id)
                self._reclaimed_total += 1
                workflow.logger.warning("lease %s on %s reclaimed at its deadline", lease_id, self._model_id)

    def _assign_free_slots(self) -> None:
        """Grant waiting requests in arrival order while slots are free; the holders are signalled
        by :meth:`_notify_granted` (a workflow task later when this runs in an update handler)."""
        self._note_idle()
        while self._waiting and len(self._held) < self._limit():
            lease_id = next(iter(self._waiting))
            request = self._waiting.pop(lease_id)
            lease = Lease(
                lease_id=lease_id,
                holder_workflow_id=request.holder_workflow_id,
                expires_at=workflow.now() + timedelta(seconds=request.lease_seconds),
            )
            self._held[lease_id] = lease
            self._unnotified.append(lease)
            self._granted_total += 1
            self._max_held = max(self._max_held, len(self._held))

    async def _notify_granted(self) -> None:
        """Signal the holders of every lease granted since the last call, together."""
        granted, self._unnotified = self._unnotified, []
        if not granted:
            return
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
        await handle.signal(ModelJobMessage.LEASE_GRANTED, LeaseGranted(lease_id=lease.lease_id))

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
