"""Model classes: every leased call draws on its class's pool as well as its model's ceiling. A
class's ceiling (``SPECIALISTS_CLASS_CEILINGS``) holds across every worker process together, and the
classes' pools are apart: support work is not held back by a full core pool.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

from contracts.ceilings import CeilingState, ceiling_workflow_id
from contracts.model_classes import ModelClass, class_pool_id
from infra.devserver import DevServer
from tests.activities.providers.wire_server import WireServer
from tests.control.cli_harness import Cli
from tests.workflows.harness import ACTION_TOKEN, until, within, worker_process
from tests.workflows.test_ceiling_ramp import Concurrency
from tests.workflows.test_model_ceiling import MODEL, _ceiling, _job, _register
from workflows.model_ceiling import ModelCeilingWorkflow
from workflows.model_job import ModelJobWorkflow


async def _pool(client: Client, task_queue: str, model_class: ModelClass) -> CeilingState:
    handle = client.get_workflow_handle(ceiling_workflow_id(task_queue, class_pool_id(model_class)))
    return await handle.query(ModelCeilingWorkflow.state)


async def _run(client: Client, task_queue: str, classes: list[ModelClass]) -> None:
    jobs = [_job(n).model_copy(update={"model_class": model_class}) for n, model_class in enumerate(classes)]
    handles = [
        await client.start_workflow(ModelJobWorkflow.run, job, id=job.job_id, task_queue=task_queue)
        for job in jobs
    ]
    results = await asyncio.gather(*(handle.result() for handle in handles))
    assert all(result.model_id == MODEL for result in results)


@within(150)
async def test_a_class_ceiling_of_3_holds_across_two_workers_below_the_models_own_ceiling(
    temporal_client: Client, temporal_dev_server: DevServer, tmp_path: Path, server: WireServer
) -> None:
    task_queue = f"classes-{uuid.uuid4().hex}"
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    _register(f"sqlite:///{state_dir / 'specialists.db'}", server, ceiling=20)
    calls = Concurrency(delay_s=0.6)
    server.responder = calls
    environment = {"SPECIALISTS_CLASS_CEILINGS": "core=3"}
    async with (
        worker_process(
            temporal_dev_server, task_queue, state_dir, log=tmp_path / "w1.log", environment=environment
        ),
        worker_process(
            temporal_dev_server, task_queue, state_dir, log=tmp_path / "w2.log", environment=environment
        ),
    ):
        await _run(temporal_client, task_queue, [ModelClass.CORE] * 12)

        async def given_back() -> bool:
            pool = await _pool(temporal_client, task_queue, ModelClass.CORE)
            return not pool.held and not (await _ceiling(temporal_client, task_queue)).held

        assert await until(given_back, timeout=20)
        pool = await _pool(temporal_client, task_queue, ModelClass.CORE)
        cli = Cli.isolated(
            tmp_path,
            token=ACTION_TOKEN.decode(),
            SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
            SPECIALISTS_TASK_QUEUE=task_queue,
            SPECIALISTS_STATE_DIR=str(state_dir),
        )
        shown = cli.run("models", "--json")
    assert shown.exit_code == 0, shown
    pools = {p["model"]: p for p in json.loads(shown.stdout)["class_pools"]}
    core = pools["class:core"]
    assert (core["live"], core["ceiling"], core["allowance"], core["held"], core["granted_total"]) == (
        "running",
        3,
        3,
        0,
        12,
    )
    assert core["ramping"] is False
    assert pools["class:support"]["live"] == "not_started"
    assert len(calls.arrivals) == 12
    assert max(at for at, _ in calls.arrivals) == 3, "the class's ceiling, not the model's 20"
    assert (pool.ceiling, pool.max_held, pool.granted_total, pool.waiting) == (3, 3, 12, [])
    assert pool.allowance is None, "a class's pool does not ramp"


@within(120)
async def test_support_calls_run_beside_a_full_core_pool(
    temporal_client: Client, temporal_dev_server: DevServer, tmp_path: Path, server: WireServer
) -> None:
    task_queue = f"classes-{uuid.uuid4().hex}"
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    _register(f"sqlite:///{state_dir / 'specialists.db'}", server, ceiling=20)
    calls = Concurrency(delay_s=0.6)
    server.responder = calls
    environment = {"SPECIALISTS_CLASS_CEILINGS": "core=1, support=3"}
    async with worker_process(
        temporal_dev_server, task_queue, state_dir, log=tmp_path / "w.log", environment=environment
    ):
        await _run(temporal_client, task_queue, [ModelClass.CORE] * 3 + [ModelClass.SUPPORT] * 3)
        core = await _pool(temporal_client, task_queue, ModelClass.CORE)
        support = await _pool(temporal_client, task_queue, ModelClass.SUPPORT)
    assert (core.ceiling, core.max_held, core.granted_total) == (1, 1, 3)
    assert (support.ceiling, support.granted_total) == (3, 3)
    assert 1 <= support.max_held <= 3
    assert max(at for at, _ in calls.arrivals) >= 2, "support ran while core was full"


@within(60)
async def test_a_worker_refuses_a_malformed_class_ceiling_setting(
    temporal_dev_server: DevServer, tmp_path: Path
) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    log = tmp_path / "w.log"
    with pytest.raises(AssertionError, match="worker exited before polling"):
        async with worker_process(
            temporal_dev_server,
            f"classes-{uuid.uuid4().hex}",
            state_dir,
            log=log,
            environment={"SPECIALISTS_CLASS_CEILINGS": "core=0"},
        ):
            pass
    assert (
        "SPECIALISTS_CLASS_CEILINGS: the ceiling of core must be a whole number from 1 to 1000"
        in log.read_text()
    )
