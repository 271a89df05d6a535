"""A run survives its worker being killed: ``python -m worker`` runs as a subprocess against the
shared dev server (with the deployment's action token in its environment), is killed with SIGKILL
while a run awaits a decision, and a fresh worker process carries the run on to the decision."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from temporalio.client import Client

from contracts.enums import Tier
from contracts.runs import DecisionOutcome, RunStatus
from infra.devserver import DevServer
from tests.workflows.harness import (
    SLOW_QUERY,
    bench,
    no_pending_activities,
    transitions,
    within,
    worker_process,
)


@within(90)
async def test_a_run_awaiting_a_decision_survives_a_killed_worker_and_a_new_worker_completes_it(
    temporal_client: Client, temporal_dev_server: DevServer, task_queue: str, tmp_path: Path
) -> None:
    state_dir = tmp_path / "state"
    async with bench(temporal_client, task_queue, tmp_path) as b:
        async with worker_process(temporal_dev_server, task_queue, state_dir) as pid:
            view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY, enqueue=True)
            view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION, timeout=30)
            assert view.result is not None and view.review is not None
            await no_pending_activities(temporal_client, view.run_id)
            os.kill(pid, signal.SIGKILL)

        async with worker_process(temporal_dev_server, task_queue, state_dir):
            result = await asyncio.wait_for(
                b.decide(view.run_id, DecisionOutcome.ACCEPTED, "after a crash"), timeout=40
            )
            assert result.accepted and result.status is RunStatus.ACCEPTED
            view = await b.terminal(view.run_id, timeout=30)

    assert view.status is RunStatus.ACCEPTED
    assert view.decision is not None and view.decision.note == "after a crash"
    assert transitions(view)[-1] == ("awaiting_decision", "accepted")
    # Nothing ran twice: one analysis and one review.
    assert [e.data["kind"] for e in view.audit if e.kind == "model_job_completed"] == ["analysis", "review"]
    assert await b.projected(view.run_id, "accepted")
