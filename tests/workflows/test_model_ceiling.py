"""Per-model ceilings: at most ``ceiling`` calls to a registered model are in flight across every
worker together, and no slot is lost when a worker dies, a holder disappears or a job is cancelled.

The model is a loopback wire server that answers every call after a delay and records the most
requests it was answering at once — the concurrency the provider really saw.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import signal
import uuid
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.runtime import MetricBuffer, Runtime, TelemetryConfig
from temporalio.service import RPCError

from catalog.loader import load_catalog
from contracts.ceilings import CeilingState, LeaseRelease, LeaseRequest, ceiling_workflow_id
from contracts.enums import FallbackMode
from contracts.metric_names import CEILING_LEASES_HELD
from contracts.model_classes import ModelClass
from contracts.model_jobs import JobContext, ModelJobInput, ModelJobResult
from contracts.models import ModelRegistration
from contracts.output import JobKind
from contracts.runs import ModelSnapshot
from infra.devserver import DevServer
from store.database import open_store
from tests.activities.providers.wire_server import Scripted, WireServer, openai_completion
from tests.identity import key_of, signer
from tests.workflows.harness import (
    ACTION_TOKEN,
    ACTOR,
    ANCHOR,
    LOOPBACK_KEY_ENV,
    SLOW_QUERY,
    bench,
    example,
    recorded_response,
    until,
    within,
    worker_process,
)
from workflows.model_ceiling import ModelCeilingWorkflow
from workflows.model_job import ModelJobWorkflow

MODEL = "openai:ceiling-model"
KEY_ENV = LOOPBACK_KEY_ENV
ITEM = example(SLOW_QUERY)


ANSWER = json.dumps(recorded_response("analysis", "database-optimizer", ITEM.title))


def _register(database_url: str, server: WireServer, ceiling: int, timeout_s: int = 20) -> None:
    with open_store(database_url, create=True, anchor=ANCHOR) as store:
        if not store.actor_exists(ACTOR):
            store.bootstrap_actor(ACTOR, "Alice", key_of(ACTOR), ACTION_TOKEN)
        registration = ModelRegistration(
            id=MODEL, base_url=server.base_url, api_key_env=KEY_ENV, timeout_s=timeout_s, ceiling=ceiling
        )
        store.register_model(registration, signer(ACTOR))


def _job(n: int) -> ModelJobInput:
    run_id = f"SOR-CEIL{uuid.uuid4().hex[:12].upper()}"
    return ModelJobInput(
        job_id=f"{run_id}-analysis-{n}",
        run_id=run_id,
        kind=JobKind.ANALYSIS,
        profile_id="database-optimizer",
        catalog_sha256=load_catalog().sha256,
        context=JobContext(
            title=ITEM.title, task=f"{ITEM.title}\n\n{ITEM.description}", evidence_refs=ITEM.evidence_refs
        ),
        model=ModelSnapshot(primary=MODEL, fallback_mode=FallbackMode.PRIMARY_ONLY, source="test"),
        # Support calls (a pool of 20): the model's own ceiling is what binds in these tests.
        model_class=ModelClass.SUPPORT,
    )


async def _start_burst(
    client: Client, task_queue: str, count: int
) -> list[WorkflowHandle[Any, ModelJobResult]]:
    jobs = [_job(n) for n in range(count)]
    return [
        await client.start_workflow(
            ModelJobWorkflow.run,
            job,
            id=job.job_id,
            task_queue=task_queue,
            execution_timeout=dt.timedelta(minutes=3),
        )
        for job in jobs
    ]


async def _ceiling(client: Client, task_queue: str) -> CeilingState:
    handle = client.get_workflow_handle(ceiling_workflow_id(task_queue, MODEL))
    return await handle.query(ModelCeilingWorkflow.state)


async def _start_ceiling(client: Client, task_queue: str) -> WorkflowHandle[Any, None]:
    """A fresh ``ModelCeiling`` for :data:`MODEL` with ceiling 1."""
    return await client.start_workflow(
        ModelCeilingWorkflow.run,
        CeilingState(model_id=MODEL, ceiling=1),
        id=ceiling_workflow_id(task_queue, MODEL),
        task_queue=task_queue,
    )


async def _holder(client: Client, task_queue: str) -> WorkflowHandle[Any, None]:
    """Some running workflow to hold leases (any workflow can; this one never releases them)."""
    return await client.start_workflow(
        ModelCeilingWorkflow.run,
        CeilingState(model_id="holder:x", ceiling=1),
        id=f"holder-{uuid.uuid4().hex}",
        task_queue=task_queue,
    )


@within(90)
async def test_a_burst_of_30_jobs_never_exceeds_the_ceiling_of_5_and_leaves_no_lease_behind(
    temporal_client: Client, task_queue: str, tmp_path: Path, server: WireServer
) -> None:
    server.default = Scripted(200, openai_completion(ANSWER), delay_s=0.6)
    async with bench(temporal_client, task_queue, tmp_path, model=None) as b, b.worker():
        _register(b.database_url, server, ceiling=5)
        handles = await _start_burst(temporal_client, task_queue, 30)
        results = await asyncio.gather(*(handle.result() for handle in handles))
        state = await _ceiling(temporal_client, task_queue)
    assert all(result.model_id == MODEL for result in results)
    assert len(server.received) == 30
    assert server.max_in_flight == 5, ("the ceiling is reached and never exceeded", state)
    assert (state.held, state.waiting) == ([], [])
    assert (state.granted_total, state.reclaimed_total, state.max_held) == (30, 0, 5)


@within(150)
async def test_two_worker_processes_share_the_ceiling_and_a_killed_worker_loses_no_slot(
    temporal_client: Client, temporal_dev_server: DevServer, tmp_path: Path, server: WireServer
) -> None:
    task_queue = f"ceiling-{uuid.uuid4().hex}"
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    # A call lost with the killed worker holds its slot until its own deadline (timeout + 30 s):
    # a short model timeout keeps that wait, and this test, short (3 s: answers take 1 s, so calls
    # are in flight when the worker is killed and none of them times out).
    _register(f"sqlite:///{state_dir / 'specialists.db'}", server, ceiling=5, timeout_s=3)
    server.default = Scripted(200, openai_completion(ANSWER), delay_s=1.0)
    async with (
        worker_process(temporal_dev_server, task_queue, state_dir, log=tmp_path / "w1.log") as first,
        worker_process(temporal_dev_server, task_queue, state_dir, log=tmp_path / "w2.log"),
    ):
        handles = await _start_burst(temporal_client, task_queue, 30)

        async def midway() -> bool:
            return len(server.received) >= 10

        assert await until(midway, timeout=60)
        os.kill(first, signal.SIGKILL)
        results = await asyncio.gather(*(handle.result() for handle in handles))
        state = await _ceiling(temporal_client, task_queue)
    assert all(result.model_id == MODEL for result in results)
    assert server.max_in_flight <= 5
    # Calls cut off by the kill were tried again on the surviving worker; every lease came back.
    assert (state.held, state.waiting) == ([], [])
    assert state.reclaimed_total == 0
    # A lease granted to a call the killed worker had taken but not yet sent is given back unused.
    assert state.granted_total >= len(server.received) >= 30
    assert state.max_held == 5


@within(30)
async def test_a_lease_whose_holder_never_gives_it_back_is_reclaimed_at_its_deadline(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path, model=None) as b, b.worker():
        holder = await _holder(temporal_client, task_queue)
        ceiling = await _start_ceiling(temporal_client, task_queue)
        await ceiling.signal(
            ModelCeilingWorkflow.acquire,
            LeaseRequest(lease_id="stuck", holder_workflow_id=holder.id, lease_seconds=1),
        )
        await ceiling.signal(
            ModelCeilingWorkflow.acquire,
            LeaseRequest(lease_id="next", holder_workflow_id=holder.id, lease_seconds=60),
        )

        async def reclaimed() -> bool:
            state = await ceiling.query(ModelCeilingWorkflow.state)
            return state.reclaimed_total == 1 and [lease.lease_id for lease in state.held] == ["next"]

        assert await until(reclaimed, timeout=10)
        for handle in (holder, ceiling):
            await handle.terminate("test finished")


@within(30)
async def test_a_grant_to_a_holder_that_no_longer_exists_frees_the_slot_at_once(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path, model=None) as b, b.worker():
        ceiling = await _start_ceiling(temporal_client, task_queue)
        await ceiling.signal(
            ModelCeilingWorkflow.acquire,
            LeaseRequest(lease_id="ghost", holder_workflow_id="no-such-workflow", lease_seconds=600),
        )

        async def freed() -> bool:
            state = await ceiling.query(ModelCeilingWorkflow.state)
            return state.granted_total == 1 and state.held == [] and state.waiting == []

        assert await until(freed, timeout=10)
        await ceiling.terminate("test finished")


@within(60)
async def test_a_job_cancelled_while_waiting_for_a_lease_withdraws_its_request(
    temporal_client: Client, task_queue: str, tmp_path: Path, server: WireServer
) -> None:
    server.default = Scripted(200, openai_completion(ANSWER), delay_s=3.0)
    async with bench(temporal_client, task_queue, tmp_path, model=None) as b, b.worker():
        _register(b.database_url, server, ceiling=1)
        jobs = {handle.id: handle for handle in await _start_burst(temporal_client, task_queue, 2)}

        async def queued() -> bool:
            try:
                state = await _ceiling(temporal_client, task_queue)
            except RPCError:  # the first lease request has not started the ceiling yet
                return False
            return len(state.held) == 1 and len(state.waiting) == 1

        assert await until(queued, timeout=15)
        state = await _ceiling(temporal_client, task_queue)
        holding = jobs[state.held[0].holder_workflow_id]
        waiting = jobs[state.waiting[0].holder_workflow_id]
        await waiting.cancel()

        async def withdrawn() -> bool:
            state = await _ceiling(temporal_client, task_queue)
            return state.waiting == []

        assert await until(withdrawn, timeout=10)
        await holding.result()
        state = await _ceiling(temporal_client, task_queue)
    assert (state.held, state.waiting, state.granted_total) == ([], [], 1)
    assert len(server.received) == 1


@within(90)
async def test_many_more_requests_than_the_ceiling_all_wait_their_turn(
    temporal_client: Client, task_queue: str, tmp_path: Path, server: WireServer
) -> None:
    # 15 waiting at once: more than the server allows updates in flight (10), so waiting must not be one.
    server.default = Scripted(200, openai_completion(ANSWER), delay_s=0.1)
    async with bench(temporal_client, task_queue, tmp_path, model=None) as b, b.worker():
        _register(b.database_url, server, ceiling=1)
        handles = await _start_burst(temporal_client, task_queue, 16)
        results = await asyncio.gather(*(handle.result() for handle in handles))
        state = await _ceiling(temporal_client, task_queue)
    assert len(results) == 16 and server.max_in_flight == 1
    assert (state.held, state.waiting, state.granted_total, state.max_held) == ([], [], 16, 1)


async def _signals_to(client: Client, workflow_id: str) -> list[tuple[str, str]]:
    """(signal name, lease id) of every signal a workflow received."""
    found = []
    async for event in client.get_workflow_handle(workflow_id).fetch_history_events():
        if event.HasField("workflow_execution_signaled_event_attributes"):
            attributes = event.workflow_execution_signaled_event_attributes
            payload = json.loads(attributes.input.payloads[0].data)
            found.append((attributes.signal_name, payload["lease_id"]))
    return found


@within(30)
async def test_try_acquire_grants_a_free_slot_in_its_answer_without_a_grant_signal(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path, model=None) as b, b.worker():
        holder = await _holder(temporal_client, task_queue)
        ceiling = await _start_ceiling(temporal_client, task_queue)

        def request(lease_id: str) -> LeaseRequest:
            return LeaseRequest(lease_id=lease_id, holder_workflow_id=holder.id, lease_seconds=600)

        first = await ceiling.execute_update(ModelCeilingWorkflow.try_acquire, request("first"))
        second = await ceiling.execute_update(ModelCeilingWorkflow.try_acquire, request("second"))
        retried = await ceiling.execute_update(ModelCeilingWorkflow.try_acquire, request("first"))
        assert (first.status, second.status, retried.status) == ("held", "waiting", "held")
        state = await ceiling.query(ModelCeilingWorkflow.state)
        assert [lease.lease_id for lease in state.held] == ["first"]
        assert [waiting.lease_id for waiting in state.waiting] == ["second"]

        await ceiling.signal(ModelCeilingWorkflow.release, LeaseRelease(lease_id="first"))

        async def second_signalled() -> bool:
            return await _signals_to(temporal_client, holder.id) == [("lease_granted", "second")]

        # The lease granted in an answer is never signalled; the one that waited is, once granted.
        assert await until(second_signalled, timeout=10)
        for handle in (holder, ceiling):
            await handle.terminate("test finished")


@within(30)
async def test_a_lease_granted_in_an_answer_and_never_given_back_is_reclaimed_at_its_deadline(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path, model=None) as b, b.worker():
        ceiling = await _start_ceiling(temporal_client, task_queue)
        await ceiling.query(ModelCeilingWorkflow.state)  # its loop now waits with nothing held
        request = LeaseRequest(lease_id="abandoned", holder_workflow_id="gone", lease_seconds=1)
        assert (await ceiling.execute_update(ModelCeilingWorkflow.try_acquire, request)).status == "held"

        async def reclaimed() -> bool:
            state = await ceiling.query(ModelCeilingWorkflow.state)
            return state.reclaimed_total == 1 and state.held == []

        assert await until(reclaimed, timeout=10)
        await ceiling.terminate("test finished")


@within(30)
async def test_an_acquire_signal_for_a_lease_already_held_signals_the_grant_again(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    # try_acquire may grant a lease whose answer is lost; the requester's fallback signal must not
    # leave it waiting for a grant that was already given.
    async with bench(temporal_client, task_queue, tmp_path, model=None) as b, b.worker():
        holder = await _holder(temporal_client, task_queue)
        ceiling = await _start_ceiling(temporal_client, task_queue)
        request = LeaseRequest(lease_id="lost-answer", holder_workflow_id=holder.id, lease_seconds=600)
        assert (await ceiling.execute_update(ModelCeilingWorkflow.try_acquire, request)).status == "held"
        await ceiling.signal(ModelCeilingWorkflow.acquire, request)

        async def signalled() -> bool:
            return await _signals_to(temporal_client, holder.id) == [("lease_granted", "lost-answer")]

        assert await until(signalled, timeout=10)
        state = await ceiling.query(ModelCeilingWorkflow.state)
        assert ([lease.lease_id for lease in state.held], state.granted_total) == (["lost-answer"], 1)
        for handle in (holder, ceiling):
            await handle.terminate("test finished")


@within(60)
async def test_an_uncontended_job_schedules_its_call_in_its_first_workflow_task(
    temporal_client: Client, task_queue: str, tmp_path: Path, server: WireServer
) -> None:
    server.default = Scripted(200, openai_completion(ANSWER))
    async with bench(temporal_client, task_queue, tmp_path, model=None) as b, b.worker():
        _register(b.database_url, server, ceiling=5)
        # The first job starts the model's ceiling (signal-with-start; its grant comes by signal).
        (first,) = await _start_burst(temporal_client, task_queue, 1)
        await first.result()
        (second,) = await _start_burst(temporal_client, task_queue, 1)
        await second.result()
        events = [event async for event in second.fetch_history_events()]
        state = await _ceiling(temporal_client, task_queue)
    kinds = [event.WhichOneof("attributes") for event in events]
    # Pack and lease are local activities (markers) in the first task, which schedules the call; no
    # grant signal arrives: the ceiling's answer was the grant.
    assert kinds.count("workflow_task_completed_event_attributes") == 2
    assert "workflow_execution_signaled_event_attributes" not in kinds
    call = kinds.index("activity_task_scheduled_event_attributes")
    assert kinds.index("workflow_task_completed_event_attributes") < call
    markers = [
        event.marker_recorded_event_attributes.marker_name
        for event in events[:call]
        if event.HasField("marker_recorded_event_attributes")
    ]
    assert markers.count("core_local_activity") == 2
    scheduled = [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in events
        if event.HasField("activity_task_scheduled_event_attributes")
    ]
    assert scheduled == ["call_model"]
    assert (state.held, state.waiting, state.granted_total) == ([], [], 2)


@within(30)
async def test_a_lease_queued_by_signal_and_granted_in_an_update_answer_is_still_signalled(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    # The requester gave up on the update's answer and sent `acquire`; the ceiling then handles both
    # in one workflow task, signal first. The answer reaches nobody, so the grant must be signalled.
    async with bench(temporal_client, task_queue, tmp_path, model=None) as b:
        holder = await _holder(temporal_client, task_queue)
        ceiling = await _start_ceiling(temporal_client, task_queue)
        request = LeaseRequest(lease_id="answer-lost", holder_workflow_id=holder.id, lease_seconds=600)
        await ceiling.signal(ModelCeilingWorkflow.acquire, request)
        answer = asyncio.ensure_future(ceiling.execute_update(ModelCeilingWorkflow.try_acquire, request))
        await asyncio.sleep(0.5)  # both wait for a worker
        async with b.worker():
            assert (await answer).status == "held"

            async def signalled() -> bool:
                return await _signals_to(temporal_client, holder.id) == [("lease_granted", "answer-lost")]

            assert await until(signalled, timeout=10)
            for handle in (holder, ceiling):
                await handle.terminate("test finished")


@within(30)
async def test_a_late_request_for_a_lease_already_given_back_takes_no_slot(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    # An abandoned update or a retried signal can arrive after its job gave the lease back (or
    # before: a release may overtake the request). Either way the id is remembered and ignored.
    async with bench(temporal_client, task_queue, tmp_path, model=None) as b, b.worker():
        holder = await _holder(temporal_client, task_queue)
        ceiling = await _start_ceiling(temporal_client, task_queue)

        def request(lease_id: str) -> LeaseRequest:
            return LeaseRequest(lease_id=lease_id, holder_workflow_id=holder.id, lease_seconds=600)

        assert (
            await ceiling.execute_update(ModelCeilingWorkflow.try_acquire, request("done"))
        ).status == "held"
        await ceiling.signal(ModelCeilingWorkflow.release, LeaseRelease(lease_id="done"))
        await ceiling.signal(ModelCeilingWorkflow.release, LeaseRelease(lease_id="overtaken"))
        late = await ceiling.execute_update(ModelCeilingWorkflow.try_acquire, request("done"))
        overtaken = await ceiling.execute_update(ModelCeilingWorkflow.try_acquire, request("overtaken"))
        await ceiling.signal(ModelCeilingWorkflow.acquire, request("done"))
        state = await ceiling.query(ModelCeilingWorkflow.state)
        for handle in (holder, ceiling):
            await handle.terminate("test finished")
    assert (late.status, overtaken.status) == ("released", "released")
    assert (state.held, state.waiting, state.granted_total) == ([], [], 1)
    assert state.released == ["done", "overtaken"]


@within(90)
async def test_the_ceiling_reports_the_leases_it_holds_as_a_gauge_for_its_model(
    temporal_dev_server: DevServer, task_queue: str, tmp_path: Path, server: WireServer
) -> None:
    buffer = MetricBuffer(10_000)
    client = await Client.connect(
        temporal_dev_server.address,
        data_converter=pydantic_data_converter,
        runtime=Runtime(telemetry=TelemetryConfig(metrics=buffer)),
    )
    server.default = Scripted(200, openai_completion(ANSWER), delay_s=0.3)
    async with bench(client, task_queue, tmp_path, model=None) as b, b.worker():
        _register(b.database_url, server, ceiling=2)
        handles = await _start_burst(client, task_queue, 6)
        await asyncio.gather(*(handle.result() for handle in handles))

        async def all_given_back() -> bool:
            return not (await _ceiling(client, task_queue)).held

        assert await until(all_given_back)
    held = [
        (update.value, dict(update.attributes))
        for update in buffer.retrieve_updates()
        if update.metric.name == CEILING_LEASES_HELD and update.attributes["model"] == MODEL
    ]
    assert held, "the gauge was recorded"
    assert {value for value, _ in held} <= {0, 1, 2}
    assert max(value for value, _ in held) == 2, "full at the ceiling"
    assert held[-1][0] == 0, "empty once every job gave its lease back"
    assert all(labels["ceiling"] == "2" for _, labels in held)
