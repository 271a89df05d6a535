"""How the goal queue follows its items' runs (docs/architecture.md "Goal queue"): it starts each
run as a child it abandons on continue-as-new, tells a run its item's status when that changes, and
reads the tracked runs' progress (after a run signals it progressed, or at each poll) to move their
items on. Functions over the queue workflow's state (:class:`FollowingQueue`); no I/O but Temporal's.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Protocol

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey, SearchAttributePair, TypedSearchAttributes
from temporalio.exceptions import ActivityError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from contracts.queue_dispatch import apply_run_state, tracked_run
    from contracts.queue_items import QueueItem, QueueSettings, QueueStatus, RunOutcome
    from contracts.queue_messages import RunIds, RunStates
    from contracts.runs import QueueItemStatusUpdate, RunInput, RunStatus
    from contracts.search_attributes import SearchAttribute
    from contracts.temporal_names import ActivityName, RunMessage, WorkflowType
    from contracts.ui_summaries import run_summary

PATCH_LOCAL_READS = "queue-reads-runs-locally"
"""Executions begun since read their runs' progress in a local activity (asked at the first read);
histories recorded before replay with the ordinary activity."""
READ_TIMEOUT = timedelta(seconds=30)
READ_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(milliseconds=500))
_STATUS_KEY = SearchAttributeKey.for_keyword(SearchAttribute.SPECIALIST_STATUS)
_ITEM_STATUS_KEY = SearchAttributeKey.for_keyword(SearchAttribute.QUEUE_ITEM_STATUS)
_CLOSED_WITH_ITEM = frozenset({QueueStatus.DONE, QueueStatus.REJECTED})
"""Item statuses whose run a person closed before the queue's move: nothing is told to it."""


class FollowingQueue(Protocol):
    """What the queue workflow lends the following of its runs: its items and settings, whether this
    execution tells runs their item's status and what it told them, the runs' last statuses read, and
    whether this execution reads them in a local activity (``None`` until its first read)."""

    _items: dict[str, QueueItem]
    _settings: QueueSettings
    _item_status: bool
    _told: dict[str, QueueStatus]
    _run_status: dict[str, RunStatus]
    _reads_locally: bool | None


def _status_notices(queue: FollowingQueue) -> list[tuple[str, QueueItemStatusUpdate]]:
    """The latest runs whose item's status changed since they were last told (none in executions
    recorded before runs showed it): not a run that failed, nor one a person closed with the item
    (done, rejected)."""
    return [
        (item.runs[-1].run_id, QueueItemStatusUpdate(item_key=item.key, status=item.status))
        for item in items_to_tell(queue)
    ]


def items_to_tell(queue: FollowingQueue) -> list[QueueItem]:
    """The items of :func:`_status_notices` (cheap: what the run loop's wait conditions ask)."""
    if not queue._item_status:
        return []
    told = queue._told
    return [
        item
        for item in queue._items.values()
        if item.runs
        and item.status not in _CLOSED_WITH_ITEM
        and item.runs[-1].outcome is not RunOutcome.FAILED
        and told.get(item.runs[-1].run_id) is not item.status
    ]


async def tell_item_statuses(queue: FollowingQueue) -> None:
    """Signal each run of :func:`_status_notices` its item's status (all at once); a run that has
    closed meanwhile cannot be told and is not asked again."""
    notices = _status_notices(queue)
    for run_id, notice in notices:
        queue._told[run_id] = notice.status
    results = await asyncio.gather(
        *(
            workflow.get_external_workflow_handle(run_id).signal(RunMessage.QUEUE_ITEM_STATUS, notice)
            for run_id, notice in notices
        ),
        return_exceptions=True,
    )
    for (run_id, _), result in zip(notices, results, strict=True):
        if isinstance(result, BaseException):
            workflow.logger.info("could not tell %s its item's status: %s", run_id, result)


async def start_run(queue: FollowingQueue, key: str, run: RunInput) -> None:
    """Start ``run`` as a child workflow the queue abandons on continue-as-new (it lives on its
    own), showing its item's status from the start (``active``) where this execution does."""
    attributes = [SearchAttributePair(_STATUS_KEY, RunStatus.ROUTING.value)]
    if queue._item_status:
        attributes.append(SearchAttributePair(_ITEM_STATUS_KEY, QueueStatus.ACTIVE.value))
        queue._told[run.run_id] = QueueStatus.ACTIVE
    summary = None
    if queue._item_status:  # what the Temporal UI lists the run as
        tier = run.requested_tier.value if run.requested_tier else None
        summary = run_summary(run.work_item.title, tier, key)
    await workflow.start_child_workflow(
        WorkflowType.SPECIALIST_RUN,
        run,
        id=run.run_id,
        static_summary=summary,
        task_queue=workflow.info().task_queue,
        parent_close_policy=ParentClosePolicy.ABANDON,
        memo={"request_digest": run.request_digest, "title": run.work_item.title},
        search_attributes=TypedSearchAttributes(attributes),
    )


def tracked_runs(queue: FollowingQueue) -> list[str]:
    return [run_id for item in queue._items.values() if (run_id := tracked_run(item)) is not None]


async def read_progress(queue: FollowingQueue) -> None:
    """Read the status of every tracked run and move its item on (docs/architecture.md "Goal
    queue"); a read that fails through its retries is tried again at the next poll."""
    run_ids = tracked_runs(queue)
    if not run_ids:
        return
    if queue._reads_locally is None:
        queue._reads_locally = workflow.patched(PATCH_LOCAL_READS)
    # A local activity: no round trip through the server to schedule, start and complete it.
    execute = workflow.execute_local_activity if queue._reads_locally else workflow.execute_activity
    try:
        states: RunStates = await execute(
            ActivityName.READ_RUN_PROGRESS,
            RunIds(run_ids=run_ids),
            result_type=RunStates,
            start_to_close_timeout=READ_TIMEOUT,
            retry_policy=READ_RETRY,
        )
    except ActivityError as error:
        workflow.logger.info("could not read the queue's runs: %s", error)
        return
    at = workflow.now()
    for state in states.states:
        if state.status is not None:
            queue._run_status[state.run_id] = state.status
        for key, item in list(queue._items.items()):
            moved = apply_run_state(item, state, at, queue._settings.escalation_model)
            if moved is not None:
                queue._items[key] = moved


def latest_told(queue: FollowingQueue) -> dict[str, QueueStatus]:
    """What the items' latest runs were told: all that is worth carrying across continue-as-new."""
    latest = {item.runs[-1].run_id for item in queue._items.values() if item.runs}
    return {run_id: status for run_id, status in queue._told.items() if run_id in latest}


def live_run_status(queue: FollowingQueue) -> dict[str, RunStatus]:
    """The last status read of every run still tracked (the others are history)."""
    tracked = set(tracked_runs(queue))
    return {run_id: status for run_id, status in queue._run_status.items() if run_id in tracked}
