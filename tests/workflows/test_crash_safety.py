"""A run survives its worker being killed: ``python worker.py`` runs as a subprocess against the
shared dev server, is killed with SIGKILL while a run awaits a decision, and a fresh worker process
carries the run on to the decision."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from temporalio.client import Client

from contracts.enums import Tier
from contracts.runs import DecisionOutcome, RunStatus
from control.runs import decide_run
from infra.devserver import DevServer
from tests.workflows.harness import ACTOR, SLOW_QUERY, bench, transitions, within

ROOT = Path(__file__).resolve().parents[2]
READY_LINE = "worker polling task queue"


@contextlib.asynccontextmanager
async def worker_process(server: DevServer, task_queue: str, state_dir: Path) -> AsyncIterator[int]:
    """``python worker.py`` with the deployment's environment variables; yields its pid once it
    polls. Killed (SIGKILL) on exit if still running."""
    env = {
        **os.environ,
        "SPECIALISTS_TEMPORAL_ADDRESS": server.address,
        "SPECIALISTS_TASK_QUEUE": task_queue,
        "SPECIALISTS_DATABASE_URL": f"sqlite:///{state_dir / 'specialists.db'}",
        "SPECIALISTS_STATE_DIR": str(state_dir),
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(ROOT / "worker.py"),
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        assert process.stdout is not None
        seen: list[str] = []
        while True:
            line = (await asyncio.wait_for(process.stdout.readline(), timeout=20)).decode()
            if not line:
                raise AssertionError(f"worker exited before polling: {''.join(seen)}")
            seen.append(line)
            if READY_LINE in line:
                break
        # Keep draining its output so a full pipe never blocks the worker.
        drain = asyncio.ensure_future(_drain(process.stdout))
        try:
            yield process.pid
        finally:
            drain.cancel()
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.readline():
        pass


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
            os.kill(pid, signal.SIGKILL)

        async with worker_process(temporal_dev_server, task_queue, state_dir):
            result = await asyncio.wait_for(
                decide_run(temporal_client, view.run_id, ACTOR, DecisionOutcome.ACCEPTED, "after a crash"),
                timeout=40,
            )
            assert result.accepted and result.status is RunStatus.ACCEPTED
            view = await b.terminal(view.run_id, timeout=30)

    assert view.status is RunStatus.ACCEPTED
    assert view.decision is not None and view.decision.note == "after a crash"
    assert transitions(view)[-1] == ("awaiting_decision", "accepted")
    # Nothing ran twice: one analysis and one review.
    assert [e.data["kind"] for e in view.audit if e.kind == "model_job_completed"] == ["analysis", "review"]
    assert b.projected_status(view.run_id) == "accepted"
