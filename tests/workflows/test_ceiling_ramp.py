"""The ramp: a model's ceiling is reached gradually. The allowance starts at 2, grows by one with each
call given back as succeeded up to the ceiling, is halved by a call given back as rate limited and
starts again after idle; across two worker processes the provider never sees more calls at once than
the allowance lets through, and ``models --json`` and the metrics show it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.runtime import MetricBuffer, Runtime, TelemetryConfig
from temporalio.worker import Replayer

from contracts.ceilings import RAMP_START, CeilingState, LeaseRelease, LeaseRequest, ceiling_workflow_id
from contracts.metric_names import CEILING_ALLOWANCE
from infra.devserver import DevServer
from tests.activities.providers.wire_server import (
    Received,
    Scripted,
    WireServer,
    openai_completion,
    openai_error,
)
from tests.control.cli_harness import Cli
from tests.workflows.harness import ACTION_TOKEN, bench, until, within, worker_process
from tests.workflows.test_model_ceiling import (
    ANSWER,
    MODEL,
    _ceiling,
    _holder,
    _register,
    _start_burst,
)
from workflows.model_ceiling import PATCH_RAMP, ModelCeilingWorkflow


class Concurrency:
    """A responder that answers each call after ``delay_s`` and records, as each call arrives, how
    many calls the provider is answering (itself included) and how many it has answered."""

    def __init__(self, delay_s: float, rate_limited: int = 0) -> None:
        self._lock = threading.Lock()
        self._delay_s = delay_s
        self._rate_limited = rate_limited
        self.in_flight = 0
        self.answered = 0
        self.arrivals: list[tuple[int, int]] = []
        """(calls being answered, calls answered before) at each arrival."""

    def __call__(self, request: Received) -> Scripted:
        with self._lock:
            self.in_flight += 1
            self.arrivals.append((self.in_flight, self.answered))
            limited = self._rate_limited > 0
            self._rate_limited -= limited
        time.sleep(self._delay_s)
        with self._lock:
            self.in_flight -= 1
            self.answered += 1
        if limited:
            return Scripted(429, openai_error("slow down", type="requests", code="rate_limit_exceeded"))
        return Scripted(200, openai_completion(ANSWER))


async def _start(
    client: Client, task_queue: str, ceiling: int, idle_s: int = 300
) -> WorkflowHandle[Any, None]:
    return await client.start_workflow(
        ModelCeilingWorkflow.run,
        CeilingState(model_id=MODEL, ceiling=ceiling, ramp_idle_seconds=idle_s),
        id=ceiling_workflow_id(task_queue, MODEL),
        task_queue=task_queue,
    )


async def _acquire(ceiling: WorkflowHandle[Any, None], holder: str, lease_id: str) -> str:
    request = LeaseRequest(lease_id=lease_id, holder_workflow_id=holder, lease_seconds=600)
    return (await ceiling.execute_update(ModelCeilingWorkflow.try_acquire, request)).status


async def _release(ceiling: WorkflowHandle[Any, None], lease_id: str, outcome: Any) -> None:
    await ceiling.signal(ModelCeilingWorkflow.release, LeaseRelease(lease_id=lease_id, outcome=outcome))


async def _table(ceiling: WorkflowHandle[Any, None]) -> tuple[int | None, list[str], list[str]]:
    state = await ceiling.query(ModelCeilingWorkflow.state)
    return state.allowance, [lease.lease_id for lease in state.held], [r.lease_id for r in state.waiting]


@within(60)
async def test_the_allowance_starts_at_two_grows_with_successes_halves_on_a_rate_limit_and_replays(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path, model=None) as b, b.worker():
        holder = await _holder(temporal_client, task_queue)
        ceiling = await _start(temporal_client, task_queue, ceiling=5)
        statuses = [await _acquire(ceiling, holder.id, f"L{n}") for n in range(1, 7)]
        assert statuses == ["held", "held", "waiting", "waiting", "waiting", "waiting"]
        assert await _table(ceiling) == (2, ["L1", "L2"], ["L3", "L4", "L5", "L6"])

        await _release(ceiling, "L1", "succeeded")  # 3 allowed: two more granted, first come first
        await _expect(ceiling, (3, ["L2", "L3", "L4"], ["L5", "L6"]))
        await _release(ceiling, "L2", "rate_limited")  # 3 // 2 = 1: nothing granted until one is left
        await _expect(ceiling, (1, ["L3", "L4"], ["L5", "L6"]))
        await _release(ceiling, "L3", "failed")  # neither grows nor shrinks
        await _expect(ceiling, (1, ["L4"], ["L5", "L6"]))
        await _release(ceiling, "L4", None)  # outcome unknown: left as is, the slot is free
        await _expect(ceiling, (1, ["L5"], ["L6"]))
        await _release(ceiling, "L5", "succeeded")  # 2 allowed: L6 granted
        await _expect(ceiling, (2, ["L6"], []))
        await _release(ceiling, "L6", "succeeded")
        await _expect(ceiling, (3, [], []))
        for lease in ("L7", "L8", "L9", "L10"):  # successes beyond the ceiling keep it at the ceiling
            assert await _acquire(ceiling, holder.id, lease) == "held"
            await _release(ceiling, lease, "succeeded")
        await _expect(ceiling, (5, [], []))
        state = await ceiling.query(ModelCeilingWorkflow.state)
        assert (state.succeeded_total, state.rate_limited_total) == (7, 1)
        history = await ceiling.fetch_history()
        for handle in (holder, ceiling):
            await handle.terminate("test finished")
    assert PATCH_RAMP in _patches(history.to_json_dict())
    await Replayer(workflows=[ModelCeilingWorkflow], data_converter=pydantic_data_converter).replay_workflow(
        history
    )


def _patches(history: dict[str, Any]) -> list[str]:
    """The ``workflow.patched()`` ids a history records."""
    return [
        json.loads(base64.b64decode(payload["data"]))["id"]
        for event in history["events"]
        if (marker := event.get("markerRecordedEventAttributes")) and marker["markerName"] == "core_patch"
        for payload in marker["details"]["patch-data"]["payloads"]
    ]


async def _expect(ceiling: WorkflowHandle[Any, None], expected: tuple[int, list[str], list[str]]) -> None:
    """Wait (up to 20 s) for the table to be ``expected``; fails showing the table it last saw."""
    if not await until(lambda: _is(ceiling, expected), timeout=20):
        assert await _table(ceiling) == expected


async def _is(ceiling: WorkflowHandle[Any, None], expected: tuple[int, list[str], list[str]]) -> bool:
    return await _table(ceiling) == expected


@within(60)
async def test_after_idle_the_allowance_starts_again_from_two(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path, model=None) as b, b.worker():
        holder = await _holder(temporal_client, task_queue)
        ceiling = await _start(temporal_client, task_queue, ceiling=5, idle_s=1)
        for lease in ("A", "B", "C"):
            assert await _acquire(ceiling, holder.id, lease) == "held"
            await _release(ceiling, lease, "succeeded")
        await _expect(ceiling, (5, [], []))
        assert (await ceiling.query(ModelCeilingWorkflow.state)).idle_since is not None
        await asyncio.sleep(1.5)
        statuses = [await _acquire(ceiling, holder.id, lease) for lease in ("D", "E", "F")]
        assert statuses == ["held", "held", "waiting"]
        allowance, held, waiting = await _table(ceiling)
        assert (allowance, held, waiting) == (RAMP_START, ["D", "E"], ["F"])
        assert (await ceiling.query(ModelCeilingWorkflow.state)).idle_since is None
        for handle in (holder, ceiling):
            await handle.terminate("test finished")


@within(60)
async def test_a_ceiling_lower_than_the_start_allows_only_the_ceiling(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path, model=None) as b, b.worker():
        holder = await _holder(temporal_client, task_queue)
        ceiling = await _start(temporal_client, task_queue, ceiling=1)
        assert [await _acquire(ceiling, holder.id, lease) for lease in ("A", "B")] == ["held", "waiting"]
        assert await _table(ceiling) == (1, ["A"], ["B"])
        for handle in (holder, ceiling):
            await handle.terminate("test finished")


@within(180)
async def test_two_workers_ramp_up_to_the_ceiling_and_a_rate_limit_halves_the_allowance(
    temporal_client: Client, temporal_dev_server: DevServer, tmp_path: Path, server: WireServer
) -> None:
    task_queue = f"ramp-{uuid.uuid4().hex}"
    cli = Cli.isolated(
        tmp_path,
        token=ACTION_TOKEN.decode(),
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=task_queue,
    )
    state_dir = cli.state_dir
    state_dir.mkdir(parents=True, exist_ok=True)
    _register(f"sqlite:///{state_dir / 'specialists.db'}", server, ceiling=4)
    client = temporal_client
    calls = Concurrency(delay_s=0.6)
    server.responder = calls
    async with (
        worker_process(temporal_dev_server, task_queue, state_dir, log=tmp_path / "w1.log"),
        worker_process(temporal_dev_server, task_queue, state_dir, log=tmp_path / "w2.log"),
    ):
        handles = await _start_burst(client, task_queue, 12)
        await asyncio.gather(*(handle.result() for handle in handles))
        ramped = await _ceiling(client, task_queue)

        limited = Concurrency(delay_s=0.2, rate_limited=1)
        server.responder = limited
        handles = await _start_burst(client, task_queue, 1)
        await asyncio.gather(*(handle.result() for handle in handles))

        async def given_back() -> bool:
            state = await _ceiling(client, task_queue)
            return state.rate_limited_total == 1 and not state.held

        assert await until(given_back, timeout=20)
        after = await _ceiling(client, task_queue)
        shown = cli.run("models", "--json")
    # The provider never answered more calls at once than the allowance let through: 2 to start,
    # one more for each answer already given, never above the ceiling.
    assert calls.arrivals[:2] and all(at <= 2 for at, _ in calls.arrivals[:2])
    assert all(at <= min(4, RAMP_START + answered) for at, answered in calls.arrivals), calls.arrivals
    assert max(at for at, _ in calls.arrivals) == 4, "the ceiling is reached"
    assert (ramped.allowance, ramped.succeeded_total, ramped.max_held) == (4, 12, 4)
    # One rate-limited answer halved the allowance (4 -> 2); the retry's success added one back.
    assert (after.allowance, after.rate_limited_total, after.succeeded_total) == (3, 1, 13)
    assert shown.exit_code == 0, shown
    [live] = json.loads(shown.stdout)["ceilings"]
    assert live["model"] == MODEL and live["live"] == "running"
    assert (live["ceiling"], live["allowance"], live["held"], live["rate_limited_total"]) == (4, 3, 0, 1)


@within(60)
async def test_the_ceiling_exports_its_allowance_as_a_gauge(
    temporal_dev_server: DevServer, task_queue: str, tmp_path: Path, server: WireServer
) -> None:
    buffer = MetricBuffer(10_000)
    client = await Client.connect(
        temporal_dev_server.address,
        data_converter=pydantic_data_converter,
        runtime=Runtime(telemetry=TelemetryConfig(metrics=buffer)),
    )
    server.responder = Concurrency(delay_s=0.2)
    async with bench(client, task_queue, tmp_path, model=None) as b, b.worker():
        _register(b.database_url, server, ceiling=3)
        handles = await _start_burst(client, task_queue, 6)
        await asyncio.gather(*(handle.result() for handle in handles))
        server.responder = Concurrency(delay_s=0.2, rate_limited=1)
        handles = await _start_burst(client, task_queue, 1)
        await asyncio.gather(*(handle.result() for handle in handles))

        async def given_back() -> bool:
            return not (await _ceiling(client, task_queue)).held

        assert await until(given_back)
    allowances = [
        (int(update.value), dict(update.attributes))
        for update in buffer.retrieve_updates()
        if update.metric.name == CEILING_ALLOWANCE and update.attributes["model"] == MODEL
    ]
    values = [value for value, _ in allowances]
    assert values[0] == 2, "the gauge starts at the ramp's start"
    assert values.index(3) < values.index(1), "it reached the ceiling, then the rate limit halved it"
    assert values[-1] == 2, "the retry's success added one back"
    assert all(labels["model"] == MODEL and labels["ceiling"] == "3" for _, labels in allowances)


@within(30)
async def test_models_reports_a_ceiling_not_started_and_an_unreachable_server(
    temporal_dev_server: DevServer, tmp_path: Path, server: WireServer
) -> None:
    cli = Cli.isolated(
        tmp_path,
        token=ACTION_TOKEN.decode(),
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"ramp-{uuid.uuid4().hex}",
    )
    cli.state_dir.mkdir(parents=True, exist_ok=True)
    _register(f"sqlite:///{cli.database}", server, ceiling=4)
    shown = cli.run("models", "--json")
    assert shown.exit_code == 0, shown
    [live] = json.loads(shown.stdout)["ceilings"]
    assert (live["model"], live["live"], live["ceiling"], live["error"]) == (MODEL, "not_started", 4, None)
    pools = json.loads(shown.stdout)["class_pools"]
    assert [(p["model"], p["live"], p["ceiling"]) for p in pools] == [
        ("class:support", "not_started", None),
        ("class:core", "not_started", None),
        ("class:advisory", "not_started", None),
    ]
    human = cli.run("models")
    assert "not_started" in human.stdout and MODEL in human.stdout
    away = cli.with_env(SPECIALISTS_TEMPORAL_ADDRESS="127.0.0.1:1").run("models", "--json")
    assert away.exit_code == 0, away
    [live] = json.loads(away.stdout)["ceilings"]
    assert live["live"] == "unreachable" and live["error"]
    assert json.loads(away.stdout)["registered"][0]["id"] == MODEL, "the store's part is still shown"
