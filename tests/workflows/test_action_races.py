"""Protected run actions that race, on a real worker: an enqueue that loses to a cancel is refused
(exit 4, ``cancelling``) and leaves no ``enqueued`` event; an execute of a run already executing is
refused ``already_executing`` and audited as ``action_refused`` whether it raced the accepted one
through authorisation or arrived after it was accepted.

The enqueue race is made deterministic by holding the enqueue's authorisation (the real
``authorize_action``) until the cancel's has been answered, as happens when the cancel is sent a
moment earlier.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from temporalio import activity
from temporalio.client import Client
from temporalio.worker import Worker

from activities.authorization import AuthorizationActivities
from activities.store_access import SharedStore
from contracts.errors import Refused
from contracts.runs import AuthorizeRequest, AuthorizeResult, RunStatus, RunView
from contracts.temporal_names import ActivityName
from control.runs import get_view
from infra.devserver import DevServer
from tests.control.cli_harness import Cli, isolated_environment
from tests.identity import write_key_file
from tests.workflows.harness import (
    ACTION_TOKEN,
    SLOW_QUERY,
    Bench,
    audit_kinds,
    bench,
    events,
    within,
)
from tests.workflows.test_execution import GOOD_PATCH, approved, executed, execution_bench
from worker import ACTIVITY_THREADS, STICKY_QUEUE_TIMEOUT, WORKFLOWS, activities_for, sandbox_runner


class CancelFirst:
    """The real ``authorize_action``; an enqueue's waits until a cancel's has been answered."""

    def __init__(self, b: Bench) -> None:
        self._real = AuthorizationActivities(b.config, SharedStore(b.database_url, b.config.trust_anchor))
        self.cancel_answered = threading.Event()
        self.enqueue_arrived = threading.Event()

    @activity.defn(name=ActivityName.AUTHORIZE_ACTION)
    def authorize_action(self, request: AuthorizeRequest) -> AuthorizeResult:
        if request.action == "enqueue":
            self.enqueue_arrived.set()
            assert self.cancel_answered.wait(timeout=30), "no cancel was authorised"
            time.sleep(0.5)  # the cancel's answer reaches the run before this one
        result = self._real.authorize_action(request)
        if request.action == "cancel":
            self.cancel_answered.set()
        return result


@asynccontextmanager
async def cancel_first_worker(b: Bench) -> AsyncIterator[CancelFirst]:
    gate = CancelFirst(b)
    others = [fn for fn in activities_for(b.config) if getattr(fn, "__name__", "") != "authorize_action"]
    worker = Worker(
        b.client,
        task_queue=b.task_queue,
        workflows=list(WORKFLOWS),
        activities=[*others, gate.authorize_action],
        activity_executor=concurrent.futures.ThreadPoolExecutor(max_workers=ACTIVITY_THREADS),
        max_concurrent_activities=ACTIVITY_THREADS,
        workflow_runner=sandbox_runner(),
        sticky_queue_schedule_to_start_timeout=STICKY_QUEUE_TIMEOUT,
    )
    async with worker:
        yield gate


@within(90)
async def test_an_enqueue_that_loses_a_race_to_cancel_exits_4_and_records_no_enqueued_event(
    temporal_dev_server: DevServer, temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    env = isolated_environment(
        tmp_path / "state",
        token=ACTION_TOKEN.decode(),
        key_file=write_key_file("alice", tmp_path),
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=task_queue,
    )
    cli = Cli(cwd=tmp_path, env=env)
    async with bench(temporal_client, task_queue, tmp_path) as b, cancel_first_worker(b) as gate:
        view = await b.create(SLOW_QUERY)
        view = await b.wait(view.run_id, RunStatus.READY)
        enqueue_args = ("enqueue", view.run_id, "--actor", "alice", "--json")
        enqueueing = asyncio.create_task(asyncio.to_thread(cli.run, *enqueue_args))
        # The enqueue passed the validator and is being authorised (held until the cancel's answer).
        assert await asyncio.to_thread(gate.enqueue_arrived.wait, 30)
        cancelled = await b.cancel(view.run_id, "stop")
        enqueue = await enqueueing
        final = await b.terminal(view.run_id)
    message = enqueue.error(4, "cancelling")
    assert "cancel came first" in message
    assert cancelled.status is RunStatus.CANCELLED
    assert final.status is RunStatus.CANCELLED
    kinds = audit_kinds(final)
    assert "enqueued" not in kinds
    assert [e["code"] for e in events(final, "action_refused") if e["action"] == "enqueue"] == ["cancelling"]
    assert kinds.count("cancel_requested") == 1


def _refused_executes(view: RunView) -> list[str]:
    return [e["code"] for e in events(view, "action_refused") if e["action"] == "execute"]


@within(90)
async def test_an_execute_of_a_run_already_executing_is_refused_and_audited(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with (
        execution_bench(temporal_client, task_queue, tmp_path, GOOD_PATCH) as (b, _, _),
        b.worker(),
    ):
        run = await approved(b)
        view = await executed(b, run.run_id)
        # Sent straight to the run once the first was accepted (the CLI checks the audit first and
        # would not send it): the validator lets it through, the handler refuses it.
        with pytest.raises(Refused) as refused:
            await b.execute(run.run_id)
        after = await get_view(temporal_client, run.run_id)
    assert refused.value.code == "already_executing"
    assert after.status is view.status is RunStatus.AWAITING_DECISION
    assert audit_kinds(after).count("execute_requested") == 1
    assert _refused_executes(after) == ["already_executing"]


@within(90)
async def test_two_executes_racing_run_once_and_the_refused_one_is_audited(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with (
        execution_bench(temporal_client, task_queue, tmp_path, GOOD_PATCH) as (b, _, _),
        b.worker(),
    ):
        run = await approved(b)
        outcomes = await asyncio.gather(b.execute(run.run_id), b.execute(run.run_id), return_exceptions=True)
        view = await b.wait(run.run_id, lambda v: v.status is RunStatus.AWAITING_DECISION, timeout=60)
    refused = [o for o in outcomes if isinstance(o, Refused)]
    assert len(refused) == 1 and len(outcomes) - len(refused) == 1, outcomes
    assert refused[0].code == "already_executing"
    assert audit_kinds(view).count("execute_requested") == 1
    assert _refused_executes(view) == ["already_executing"]
