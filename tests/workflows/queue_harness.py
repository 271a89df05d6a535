"""The goal queue on the shared dev server: a :func:`tests.workflows.harness.bench` with the queue's
updates sent as the CLI sends them (:mod:`control.queue`, each with the actor's signature of the
action on its target, bound to the request's digest), items built in every status with the pure
contract, and the queue terminated when the test ends."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError

from activities.providers.base import CompletionRequest
from contracts.ids import new_run_id
from contracts.policy import AutomationPolicy
from contracts.proofs import ActionProof
from contracts.queue_approval import approve
from contracts.queue_items import ItemProposal, QueueBlocker, QueueItem, QueueStatus, new_item
from contracts.queue_keys import KeyAllocator
from contracts.queue_messages import (
    AddRequest,
    AutopilotRequest,
    CapacityRequest,
    EscalationModelRequest,
    ItemAnswer,
    MoveRequest,
    QueueAction,
    QueueState,
    QueueView,
    RecoveryDelayRequest,
    SettingsAnswer,
    UpdateItemRequest,
    queue_workflow_id,
)
from contracts.queue_priority import record_dispatch
from contracts.queue_transitions import Mover, QueueMove, apply_move
from contracts.temporal_names import QueueMessage, WorkflowType
from control.queue import (
    accept_and_complete,
    dispatch_item,
    dispatch_request,
    queue_update,
    queue_view,
    reject_item,
)
from tests.workflows.harness import ACTOR, Bench, bench, proof, replay_demo, until

COMPLETE: dict[str, Any] = {
    "title": "Orders API times out under load",
    "repo_alias": "orders",
    "tier": "read_only",
    "scope": {
        "problem": "p95 latency of GET /orders exceeds 2 s at 200 rps",
        "evidence": "load test of 2026-11-30, slow query log",
        "change": "find the cause; propose the smallest fix",
        "judgment_calls": "which index, if any",
        "tests": "the load test stays under 500 ms p95",
        "constraints": "no schema change without a migration",
    },
    "evidence": ["issue:123"],
    "value": "H",
    "urgency": "M",
    "risk": "low",
}
QUEUE_TIMEOUT = dt.timedelta(minutes=3)


@dataclass
class QueueBench:
    """A bench and the queue of its task queue."""

    bench: Bench

    @property
    def client(self) -> Client:
        return self.bench.client

    @property
    def workflow_id(self) -> str:
        return queue_workflow_id(self.bench.task_queue)

    async def start(self, state: QueueState | None = None) -> None:
        """Start the queue with ``state`` (an execution timeout bounds a broken workflow)."""
        await self.client.start_workflow(
            WorkflowType.WORK_QUEUE,
            state or QueueState(),
            id=self.workflow_id,
            task_queue=self.bench.task_queue,
            execution_timeout=QUEUE_TIMEOUT,
        )

    async def add(self, data: dict[str, Any], *, actor: str = ACTOR) -> ItemAnswer:
        request = AddRequest(actor=actor, proposal=ItemProposal.model_validate(data))
        signature = proof(self.workflow_id, QueueAction.ADD, actor=actor, digest=request.digest())
        return await self._send(QueueMessage.ADD, request.model_copy(update={"proof": signature}))

    async def update(self, key: str, fields: dict[str, Any], *, actor: str = ACTOR) -> ItemAnswer:
        request = UpdateItemRequest(actor=actor, key=key, fields=fields)
        signature = proof(key, QueueAction.UPDATE, actor=actor, digest=request.digest())
        return await self._send(QueueMessage.UPDATE, request.model_copy(update={"proof": signature}))

    async def move(
        self, message: QueueMessage, key: str, *, actor: str = ACTOR, reason: str = "", signed: bool = True
    ) -> ItemAnswer:
        action = QueueAction(f"queue_{message.value}")
        request = MoveRequest(actor=actor, key=key, reason=reason)
        if signed:
            signature = proof(key, action, actor=actor, digest=request.digest())
            request = request.model_copy(update={"proof": signature})
        return await self._send(message, request)

    async def dispatch(
        self,
        key: str,
        *,
        actor: str = ACTOR,
        confirm_high_risk: bool = False,
        override_capacity: bool = False,
    ) -> ItemAnswer:
        """Dispatch ``key`` as ``specialists queue dispatch`` does (the run built from the item)."""
        item = await self.item(key)
        run_id = new_run_id()
        self.bench.started.append(run_id)  # terminated when the bench closes, should it still run

        def sign(target: str, action: str, digest: str) -> ActionProof:
            return proof(target, action, actor=actor, digest=digest)

        request = dispatch_request(
            item,
            actor,
            sign,
            run_id=run_id,
            confirm_high_risk=confirm_high_risk,
            override_capacity=override_capacity,
        )
        return await dispatch_item(self.client, self.bench.task_queue, item, request, actor, sign)

    async def route_next(self, policy: AutomationPolicy, *, actor: str = ACTOR) -> ItemAnswer:
        """``specialists queue route-next`` under ``policy``: the next approved item routed with the
        shipped catalog and the policy's decision sent with its run, if any."""
        from control.queue import plan_route_next

        def sign(target: str, action: str, digest: str) -> ActionProof:
            return proof(target, action, actor=actor, digest=digest)

        items = (await self.view()).items
        request = plan_route_next(items, policy, actor, sign, run_id=new_run_id())
        if request.run is not None:
            self.bench.started.append(request.run.run_id)
        return await self._send(QueueMessage.ROUTE_NEXT, request)

    async def reject(
        self,
        key: str,
        *,
        actor: str = ACTOR,
        reason: str = "",
        run_sign: Callable[[str, str, str], ActionProof] | None = None,
    ) -> ItemAnswer:
        """``specialists queue reject``: the queue's reject, then a reviewed item's run, still
        awaiting its decision, is rejected too (signed by ``run_sign``, by default ``actor``'s key)."""

        def sign(target: str, action: str, digest: str) -> ActionProof:
            if run_sign is not None:
                return run_sign(target, action, digest)
            return proof(target, action, actor=actor, digest=digest)

        item = await self.item(key)
        request = MoveRequest(actor=actor, key=key, reason=reason)
        signature = proof(key, QueueAction.REJECT, actor=actor, digest=request.digest())
        signed = request.model_copy(update={"proof": signature})
        return await reject_item(self.client, self.bench.task_queue, item, signed, actor, sign)

    async def done(self, key: str, *, actor: str = ACTOR, note: str = "") -> ItemAnswer:
        """``specialists queue done``: accept the reviewed run, then the queue's done."""

        def sign(target: str, action: str, digest: str) -> ActionProof:
            return proof(target, action, actor=actor, digest=digest)

        item = await self.item(key)
        answer, _ = await accept_and_complete(self.client, self.bench.task_queue, item, actor, note, sign)
        return answer

    async def until_status(self, key: str, status: QueueStatus, *, timeout: float = 30.0) -> QueueItem:
        """Poll the item until it is in ``status``; fails on timeout."""

        async def reached() -> bool:
            return (await self.item(key)).status is status

        assert await until(reached, timeout=timeout, every=0.2), await self.item(key)
        return await self.item(key)

    async def capacity(self, slots: int, *, actor: str = ACTOR) -> SettingsAnswer:
        request = CapacityRequest(actor=actor, slots=slots)
        signature = proof(self.workflow_id, QueueAction.CAPACITY, actor=actor, digest=request.digest())
        return await self._settings(QueueMessage.CAPACITY, request.model_copy(update={"proof": signature}))

    async def autopilot(self, on: bool, *, actor: str = ACTOR) -> SettingsAnswer:
        request = AutopilotRequest(actor=actor, on=on)
        signature = proof(self.workflow_id, QueueAction.AUTOPILOT, actor=actor, digest=request.digest())
        return await self._settings(QueueMessage.AUTOPILOT, request.model_copy(update={"proof": signature}))

    async def recovery_delay(self, seconds: int, *, actor: str = ACTOR) -> SettingsAnswer:
        request = RecoveryDelayRequest(actor=actor, seconds=seconds)
        signature = proof(self.workflow_id, QueueAction.RECOVERY_DELAY, actor=actor, digest=request.digest())
        return await self._settings(
            QueueMessage.RECOVERY_DELAY, request.model_copy(update={"proof": signature})
        )

    async def escalation_model(self, model: str | None, *, actor: str = ACTOR) -> SettingsAnswer:
        request = EscalationModelRequest(actor=actor, model=model)
        signature = proof(
            self.workflow_id, QueueAction.ESCALATION_MODEL, actor=actor, digest=request.digest()
        )
        return await self._settings(
            QueueMessage.ESCALATION_MODEL, request.model_copy(update={"proof": signature})
        )

    async def _send(self, message: QueueMessage, request: Any) -> ItemAnswer:
        return await queue_update(self.client, self.bench.task_queue, message, request, ItemAnswer)

    async def _settings(self, message: QueueMessage, request: Any) -> SettingsAnswer:
        return await queue_update(self.client, self.bench.task_queue, message, request, SettingsAnswer)

    async def add_until_continued(self) -> int:
        """Add thin proposals until the queue continues as new (its ``continue_as_new_after_events``
        set low) and its next execution answers; how many were added."""
        added = 0
        while (await self.view()).runs == 1:
            await self.add({"title": f"filler {added}"})
            added += 1
            assert added < 20, "the queue never continued as new"

        async def carried() -> bool:
            return (await self.view()).runs >= 2

        assert await until(carried, timeout=10)
        return added

    async def view(self, key: str | None = None) -> QueueView:
        return await queue_view(self.client, self.bench.task_queue, key)

    async def item(self, key: str) -> QueueItem:
        view = await self.view(key)
        assert len(view.items) == 1, view
        return view.items[0]

    async def history_kinds(self) -> list[int]:
        """The event types of the queue's current execution, in order."""
        history = await self.client.get_workflow_handle(self.workflow_id).fetch_history()
        return [event.event_type for event in history.events]

    async def accepted_updates(self) -> int:
        """How many updates the queue's current execution has accepted (they are in its history)."""
        accepted = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
        return sum(1 for kind in await self.history_kinds() if kind == accepted)


@contextlib.asynccontextmanager
async def queue_bench(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    *,
    poll_seconds: float | None = None,
    providers: dict[str, Any] | None = None,
    model: str = "replay:demo",
) -> AsyncIterator[QueueBench]:
    """A bench with a worker running and the queue terminated afterwards (started at once, reading
    its runs every ``poll_seconds``, when given); ``providers`` and ``model`` as the bench takes them."""
    async with bench(client, task_queue, tmp_path, providers=providers, model=model) as b:
        q = QueueBench(b)
        try:
            async with b.worker():
                if poll_seconds is not None:
                    await q.start(QueueState(poll_seconds=poll_seconds))
                yield q
        finally:
            handle = client.get_workflow_handle(q.workflow_id)
            with contextlib.suppress(RPCError):
                if (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
                    await handle.terminate("test finished")


def items_in_every_status(at: dt.datetime) -> tuple[list[QueueItem], KeyAllocator]:
    """One item in each status, made with the pure contract as the queue makes them (a dispatched run
    for those that have been active), and the allocator that issued their keys."""
    allocator = KeyAllocator()
    made: dict[QueueStatus, QueueItem] = {}

    def fresh(title: str, complete: bool = True) -> QueueItem:
        nonlocal allocator
        data = {**COMPLETE, "title": title} if complete else {"title": title}
        proposal = ItemProposal.model_validate(data)
        allocator, key = allocator.allocate(proposal.repo_alias)
        return new_item(proposal, key=key, at=at, actor=ACTOR)

    def approved(title: str) -> QueueItem:
        nonlocal allocator
        item, allocator = approve(fresh(title), allocator, actor=ACTOR, at=at)
        return item

    def active(title: str) -> QueueItem:
        return record_dispatch(approved(title), run_id=new_run_id(), mover=Mover.OPERATOR, actor=ACTOR, at=at)

    def system(item: QueueItem, move: QueueMove) -> QueueItem:
        return apply_move(item, move, Mover.SYSTEM, at=at, actor=None)

    def operator(item: QueueItem, move: QueueMove, **kwargs: Any) -> QueueItem:
        return apply_move(item, move, Mover.OPERATOR, at=at, actor=ACTOR, **kwargs)

    made[QueueStatus.PROPOSAL] = fresh("a thin proposal", complete=False)
    made[QueueStatus.APPROVED] = approved("an approved item")
    made[QueueStatus.ACTIVE] = active("an active item")
    made[QueueStatus.AI_REVIEW] = system(active("an item in AI review"), QueueMove.REVIEW)
    in_human_review = system(system(active("an item in human review"), QueueMove.REVIEW), QueueMove.PASS)
    made[QueueStatus.HUMAN_REVIEW] = in_human_review
    done = system(system(active("a done item"), QueueMove.REVIEW), QueueMove.PASS)
    made[QueueStatus.DONE] = operator(done, QueueMove.DONE)
    made[QueueStatus.REJECTED] = operator(fresh("a rejected proposal", complete=False), QueueMove.REJECT)
    made[QueueStatus.FAILED] = system(active("a failed item"), QueueMove.FAIL)
    parked = system(active("a parked item"), QueueMove.FAIL)
    made[QueueStatus.BLOCKED] = operator(parked, QueueMove.PARK, blocker=QueueBlocker.PARKED)
    assert set(made) == set(QueueStatus)
    return list(made.values()), allocator


SLOW_QUERY_ITEM: dict[str, Any] = {
    # Routed like examples/work-items/03-slow-query.json, whose title replay:demo has recorded
    # (analysis by database-optimizer, review by backend-architect): its run reaches a decision.
    "title": "Audit the slow query on the orders report and a possible missing index",
    "repo_alias": "orders-service",
    "scope": {
        "problem": "The nightly orders report now takes 14 minutes instead of 40 seconds.",
        "evidence": "The query plan shows a sequential scan over 90 million rows of the orders table.",
        "change": "Check whether an index is missing or unused on the orders query.",
        "judgment_calls": "Which index, and the cost of adding one on write throughput.",
        "tests": "The report query plan uses an index scan.",
        "constraints": "No schema change without a migration.",
    },
    "evidence": ["log:pg-slow-2026-11-27", "plan:orders-report-explain"],
    "value": "H",
    "urgency": "H",
    "risk": "low",
}


class DisagreeingReviewer:
    """Answers every job from the ``replay:demo`` recordings, except that every review disagrees and
    adds a high finding: each round FAILs with a score of 2. Records the requests it answered."""

    def __init__(self) -> None:
        self.requests: list[CompletionRequest] = []

    def complete(self, request: CompletionRequest) -> str:
        self.requests.append(request)
        answer = json.loads(replay_demo(request))
        if request.identity.kind == "review":
            answer["verdict"] = "disagree"
            finding = dict(answer["findings"][0])
            finding.update({"severity": "high", "title": "The index would double write latency"})
            answer["findings"] = [*answer["findings"], finding]
        return json.dumps(answer)
