"""The goal queue's ``ship`` update and its main-write guard (docs/architecture.md "Goal queue",
"Shipping").

``ship``: a person ships a done item once — the validator checks the item is done, not shipped nor
being shipped, has a repository and names the run it was accepted with; the handler authorises the
actor's proof (bound to the key, the run and the patch's sha256), runs ``ship_item`` on a worker and
records ``shipped`` (with ``shipped_at`` on the item) or ``ship_failed``. The guard: the base-branch
head of every repository an open item (neither done nor rejected) references, read by the local
activity ``read_base_heads`` on the queue's own cadence; a head that moved is a ``main_write`` event,
except the move a ship's own merge made (its new head is recorded with the ship).

Deterministic: no I/O of its own; imported by :mod:`workflows.work_queue`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Protocol

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from contracts.queue_archive import ArchivedItem
    from contracts.queue_items import QueueEventKind, QueueItem, QueueStatus
    from contracts.queue_messages import ItemAnswer, QueueAction
    from contracts.shipping import (
        MAIN_WRITES_KEPT,
        BaseHead,
        BaseHeads,
        BaseHeadsRequest,
        MainWrite,
        ShipCode,
        ShipOutcome,
        ShipRecord,
        ShipRequest,
        ShipWork,
    )
    from contracts.shipping_patch import accepted_run
    from contracts.temporal_names import ActivityName
    from workflows.queue_archive import not_held

PATCH_MAIN_WRITE_GUARD = "queue-main-write-guard"
"""Executions begun since the guard read their repositories' base-branch heads on a timer of their
own; histories recorded before replay without it."""
SHIP_TIMEOUT = timedelta(minutes=5)
HEADS_TIMEOUT = timedelta(seconds=30)
ONCE = RetryPolicy(maximum_attempts=1)
HEADS_RETRY = RetryPolicy(maximum_attempts=2, initial_interval=timedelta(milliseconds=500))
UNGUARDED = frozenset({QueueStatus.DONE, QueueStatus.REJECTED})


class ShippingQueue(Protocol):
    """What the queue workflow lends the ship: its items, its authorisation and refusal records."""

    _items: dict[str, QueueItem]
    _archived: list[ArchivedItem]
    _shipping: set[str]
    _base_heads: dict[str, BaseHead]
    _main_writes: list[MainWrite]

    async def _authorize(
        self, action: QueueAction, target: str, actor: str | None, proof: Any, digest: str
    ) -> tuple[str, str] | None: ...

    def _refused(
        self, action: QueueAction, actor: str | None, target: str, code: str, message: str
    ) -> None: ...

    def _accepted(self, item: QueueItem, previous_key: str | None = None) -> ItemAnswer: ...


def ship_problem(queue: ShippingQueue, request: ShipRequest) -> tuple[str, str] | None:
    """Why ``request`` cannot be shipped now (code, message), or ``None``."""
    item = queue._items.get(request.key)
    if item is None:
        return not_held(queue._archived, request.key)
    if item.shipped is not None:
        shipped = item.shipped
        return ShipCode.ALREADY_SHIPPED, (
            f"{item.key} was shipped at {shipped.shipped_at.isoformat()} by {shipped.shipped_by} "
            f"(branch {shipped.branch}, commit {shipped.commit}): an item is shipped once"
        )
    if request.key in queue._shipping:
        return ShipCode.SHIP_IN_PROGRESS, f"{item.key} is being shipped"
    if item.status is not QueueStatus.DONE:
        return ShipCode.NOT_SHIPPABLE, f"{item.key} is {item.status.value}: only a done item is shipped"
    if item.repo_alias is None:
        return ShipCode.NOT_SHIPPABLE, f"{item.key} names no repository"
    run_id = accepted_run(item)
    if run_id != request.run_id:
        return ShipCode.RUN_MISMATCH, f"{item.key} was accepted with run {run_id}, not {request.run_id}"
    return None


def validate_ship(queue: ShippingQueue, request: ShipRequest) -> None:
    """The validator's check: a refusal raised here never enters history."""
    problem = ship_problem(queue, request)
    if problem is not None:
        raise ApplicationError(problem[1], type=problem[0], non_retryable=True)


async def ship(queue: ShippingQueue, request: ShipRequest) -> ItemAnswer:
    """Authorise, check again, ship on a worker and record what happened on the item."""
    refusal = await queue._authorize(
        QueueAction.SHIP, request.key, request.actor, request.proof, request.digest()
    )
    if refusal is not None:
        return ItemAnswer(accepted=False, code=refusal[0], message=refusal[1])
    problem = ship_problem(queue, request)
    if problem is not None:
        queue._refused(QueueAction.SHIP, request.actor, request.key, problem[0], problem[1])
        return ItemAnswer(accepted=False, code=problem[0], message=problem[1])
    item = queue._items[request.key]
    assert request.actor is not None and item.repo_alias is not None
    work = ShipWork(
        key=item.key,
        repo_alias=item.repo_alias,
        run_id=request.run_id,
        patch_sha256=request.patch_sha256,
        actor=request.actor,
    )
    queue._shipping.add(item.key)
    try:
        outcome: ShipOutcome = await workflow.execute_activity(
            ActivityName.SHIP_ITEM,
            work,
            result_type=ShipOutcome,
            start_to_close_timeout=SHIP_TIMEOUT,
            retry_policy=ONCE,
        )
    except ActivityError as error:
        cause = error.cause
        code = cause.type if isinstance(cause, ApplicationError) and cause.type else "ship_failed"
        outcome = ShipOutcome(shipped=False, code=code, message=str(cause or error))
    finally:
        queue._shipping.discard(item.key)
    now = workflow.now()
    item = queue._items[request.key]
    _after_ship(queue, item, outcome, now)
    if not outcome.shipped:
        data = outcome.data()
        queue._items[item.key] = item.with_event(QueueEventKind.SHIP_FAILED, now, request.actor, data)
        queue._refused(
            QueueAction.SHIP, request.actor, item.key, outcome.code or "ship_failed", outcome.message or ""
        )
        return ItemAnswer(
            accepted=False,
            code=outcome.code,
            message=outcome.message,
            item=queue._items[item.key],
            extra=data,
        )
    assert outcome.flow is not None and outcome.branch is not None and outcome.commit is not None
    record = ShipRecord(
        shipped_at=now,
        shipped_by=request.actor,
        run_id=request.run_id,
        patch_sha256=request.patch_sha256,
        flow=outcome.flow,
        branch=outcome.branch,
        commit=outcome.commit,
        merged=outcome.merged,
        merge_commit=outcome.merge_commit,
        fast_forward=outcome.fast_forward,
        base_branch=outcome.base_branch,
    )
    shipped = item.with_event(QueueEventKind.SHIPPED, now, request.actor, outcome.data(), shipped=record)
    queue._items[item.key] = shipped
    return queue._accepted(shipped).model_copy(update={"extra": outcome.data()})


def _after_ship(queue: ShippingQueue, item: QueueItem, outcome: ShipOutcome, now: datetime) -> None:
    """A write to the base branch before the ship is a main write; the ship's own merge is not: the
    head after it is recorded."""
    alias = item.repo_alias
    if alias is None or outcome.guarded_branch is None or outcome.guarded_head is None:
        return
    held = queue._base_heads.get(alias)
    if held is not None and outcome.guarded_before is not None and held.commit != outcome.guarded_before:
        _main_write(queue, held, outcome.guarded_before, now)
    if alias in queue._base_heads:
        queue._base_heads[alias] = BaseHead(
            repo_alias=alias, branch=outcome.guarded_branch, commit=outcome.guarded_head
        )


def guarded_aliases(items: dict[str, QueueItem]) -> list[str]:
    """The repositories an open item (neither done nor rejected) references, sorted."""
    return sorted({i.repo_alias for i in items.values() if i.repo_alias and i.status not in UNGUARDED})


async def check_base_heads(queue: ShippingQueue) -> None:
    """Read the guarded repositories' heads (a local activity) and record each move as a
    ``main_write``; repositories no open item references any more are dropped."""
    aliases = guarded_aliases(queue._items)
    for alias in list(queue._base_heads):
        if alias not in aliases:
            del queue._base_heads[alias]
    if not aliases:
        return
    try:
        heads: BaseHeads = await workflow.execute_local_activity(
            ActivityName.READ_BASE_HEADS,
            BaseHeadsRequest(aliases=aliases),
            result_type=BaseHeads,
            start_to_close_timeout=HEADS_TIMEOUT,
            retry_policy=HEADS_RETRY,
        )
    except ActivityError as error:
        workflow.logger.info("could not read the guarded base branches: %s", error)
        return
    now = workflow.now()
    for head in heads.heads:
        held = queue._base_heads.get(head.repo_alias)
        if held is not None and held.branch == head.branch and held.commit != head.commit:
            _main_write(queue, held, head.commit, now)
        queue._base_heads[head.repo_alias] = head


def _main_write(queue: ShippingQueue, held: BaseHead, after: str, now: datetime) -> None:
    open_items = sorted(
        key
        for key, item in queue._items.items()
        if item.repo_alias == held.repo_alias and item.status not in UNGUARDED
    )
    event = MainWrite(
        at=now,
        repo_alias=held.repo_alias,
        branch=held.branch,
        before=held.commit,
        after=after,
        items=open_items,
    )
    queue._main_writes = [*queue._main_writes, event][-MAIN_WRITES_KEPT:]
