"""The goal queue's autopilot (docs/architecture.md "Goal queue", its autopilot): which items it
dispatches by itself and when, and the dispatch itself.

With autopilot on and a standing grant, the queue's run loop fills free slots: first items a FAIL
round left in ``ai-review`` (re-dispatched with the findings), then failed items whose recovery is due
after the recovery delay, then approved items by priority; never a high-risk item. Each pick is built
by the same contract as a manual dispatch and started as a child run carrying the queue's grant.
Functions over the queue workflow's state (:class:`AutopilotQueue`); no I/O but Temporal's.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.queue_dispatch import dispatch_run_input
    from contracts.queue_items import QueueItem, QueueRefused, QueueStatus, RoundVerdict, RunOutcome
    from contracts.queue_messages import AutopilotGrant, QueueAction, QueueState
    from contracts.queue_priority import (
        autopilot_picks,
        dispatch_sort_key,
        needs_confirmation,
        occupancy,
        record_dispatch,
    )
    from contracts.queue_review import RecoveryAction, RecoveryDecision, recovery_decision, run_cancelled
    from contracts.queue_transitions import Mover
    from contracts.runs import QueueGrant, QueueVerdict, RunInput
    from contracts.temporal_names import RunMessage
    from workflows.queue_following import FollowingQueue, start_run
    from workflows.queue_shipping import guarded_aliases

PATCH_CANCELLED_STAYS = "queue-cancelled-run-not-recovered"
"""Executions since leave a failed item whose run a person cancelled to a person (the autopilot does
not recover it); asked only of such an item, so no recorded history asks it."""


class AutopilotQueue(FollowingQueue, Protocol):
    """What the queue workflow lends its autopilot: besides the runs it follows, its grant, whether
    this execution dispatches and guards base branches, the items it could not build a run for, its
    starting state and its refusal record."""

    _grant: AutopilotGrant | None
    _autopilot: bool
    _guard: bool
    _unbuildable: set[str]
    _state: QueueState

    def _refused(
        self, action: QueueAction, actor: str | None, target: str, code: str, message: str
    ) -> None: ...


def recovery(item: QueueItem, now: datetime, delay_seconds: int) -> RecoveryDecision:
    """Whether the autopilot recovers the failed ``item`` (:func:`contracts.queue_review.recovery_decision`:
    not parked, not at the review cap, not cancelled by a person, at most twice per cycle, after the
    delay); never a high-risk one."""
    if needs_confirmation(item):
        return RecoveryDecision(action=RecoveryAction.NONE, reason=f"{item.key} is high risk")
    # Asked only of an item whose run a person cancelled, so no recorded history asks it.
    cancelled_stays = run_cancelled(item) and workflow.patched(PATCH_CANCELLED_STAYS)
    return recovery_decision(item, now=now, delay_seconds=delay_seconds, cancelled_stays=cancelled_stays)


def redispatch_due(item: QueueItem) -> bool:
    """True for an item left in ``ai-review`` by a FAIL round (not at the cap, not handed to a person)
    whose last run the autopilot started and none is pending: the autopilot re-dispatches it (never a
    high-risk one) with the findings."""
    if item.status is not QueueStatus.AI_REVIEW or needs_confirmation(item):
        return False
    rounds, runs = item.cycle_rounds(), item.cycle_runs()
    if not rounds or rounds[-1].verdict is not RoundVerdict.FAIL or not runs:
        return False
    return runs[-1].autopilot and all(run.outcome is not RunOutcome.PENDING for run in runs)


def picks(queue: AutopilotQueue) -> list[str]:
    """The approved items the autopilot dispatches now, in priority order (none with autopilot
    off, without a grant, or in an execution recorded before the autopilot dispatched)."""
    if not queue._autopilot or queue._grant is None:
        return []
    free = occupancy(queue._items.values(), queue._settings.slots).free
    if free <= 0:  # the same answer, without sorting every item (the wait conditions ask often)
        return []
    pool = [item for item in queue._items.values() if item.key not in queue._unbuildable]
    redo = sorted((item for item in pool if redispatch_due(item)), key=dispatch_sort_key)
    now, delay = workflow.now(), queue._settings.recovery_delay_seconds
    recover = sorted(
        (item for item in pool if recovery(item, now, delay).action is RecoveryAction.RECOVER),
        key=dispatch_sort_key,
    )
    chosen = [*redo, *recover]
    return [*(item.key for item in chosen), *autopilot_picks(pool, queue._settings)][:free]


def next_wake(queue: AutopilotQueue) -> timedelta | None:
    """When the idle wait ends by itself: the next recovery due, and, in an execution that guards
    the base branches while an open item references a repository, the next check of their heads."""
    due = _until_next_recovery(queue)
    if not queue._guard or not guarded_aliases(queue._items):
        return due
    check = timedelta(seconds=queue._state.main_write_check_seconds)
    return check if due is None else min(due, check)


def _until_next_recovery(queue: AutopilotQueue) -> timedelta | None:
    """How long until the earliest recovery waiting for its delay is due (``None`` when none
    waits, or the autopilot may not dispatch): the run loop's durable timer."""
    if not queue._autopilot or queue._grant is None:
        return None
    now, delay = workflow.now(), queue._settings.recovery_delay_seconds
    due = [
        decision.due_at
        for item in queue._items.values()
        if item.key not in queue._unbuildable
        and (decision := recovery(item, now, delay)).action is RecoveryAction.WAIT
        and decision.due_at is not None
    ]
    return max(min(due) - now, timedelta(milliseconds=1)) if due else None


async def fill_slots(queue: AutopilotQueue) -> None:
    """Dispatch the picked items (docs/architecture.md "Goal queue"): each move is made before any
    start is awaited, so no update can take the same slot or item meanwhile; each run is built by
    the same contract as a manual dispatch, created by the granting actor and carrying the queue's
    grant instead of a proof (the run checks it)."""
    grant = queue._grant
    assert grant is not None
    at = workflow.now()
    runs: list[tuple[str, RunInput]] = []
    verdicts: list[tuple[str, QueueVerdict]] = []
    for key in picks(queue):
        item = queue._items[key]
        run_id = "SOR-" + workflow.uuid4().hex[:16].upper()
        queue_grant = QueueGrant(
            queue_workflow_id=workflow.info().workflow_id,
            item_key=key,
            granted_by=grant.granted_by,
            granted_at=grant.granted_at,
        )
        try:
            run = dispatch_run_input(item, run_id=run_id, actor=grant.granted_by, queue_grant=queue_grant)
        except QueueRefused as error:  # its work item does not fit: an operator must act
            queue._unbuildable.add(key)
            queue._refused(QueueAction.DISPATCH, None, key, error.code, error.message)
            continue
        if item.status is QueueStatus.AI_REVIEW:  # after a FAIL: its run is rejected on the verdict
            failed = item.cycle_rounds()[-1]
            verdict = QueueVerdict(
                queue_workflow_id=workflow.info().workflow_id, item_key=key, round=failed.number
            )
            verdicts.append((failed.run_id, verdict))
        queue._items[key] = record_dispatch(
            item, run_id=run_id, mover=Mover.SYSTEM, actor=grant.granted_by, at=at, autopilot=True
        )
        runs.append((key, run))
    for run_id, verdict in verdicts:
        try:  # the run verifies the verdict itself; one that has ended ignores it
            await workflow.get_external_workflow_handle(run_id).signal(RunMessage.QUEUE_VERDICT, verdict)
        except Exception as error:
            workflow.logger.info("could not send the verdict to %s: %s", run_id, error)
    for key, run in runs:
        await start_run(queue, key, run)
