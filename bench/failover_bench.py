"""Failover: how long a run awaiting a decision takes to finish once its worker is killed while
another worker already polls, against the same decision on a live worker; prints JSON.

One fresh in-memory dev server started for this bench (headless, free ports, the custom search
attributes registered), a SQLite store in a temporary directory (a registered operator, model
``replay:demo``) and two ``python -m worker`` processes on one task queue, each with a state directory
of its own.

Each repetition drives two ``read_only`` runs to ``awaiting_decision`` and waits until each is idle (no
pending activity, child or workflow task). The worker that ran a run's last workflow task holds it in
its cache and its sticky queue (the history's ``WorkflowTaskStarted`` identity names it):

* **failover**: that worker is killed with SIGKILL (and reaped); ``decide`` is sent at once; the other
  worker, polling all along, takes the run over once the server gives up on the dead worker's sticky
  queue (``worker.registration.STICKY_QUEUE_TIMEOUT``), replays its history and finishes it. Then a
  new worker process is started in place of the dead one (not timed) for the next repetition.
* **baseline**: the same ``decide`` with no kill: the live worker that holds the run finishes it.

The figure is the time from sending ``decide`` (right after the kill, for failover) to the run's
workflow closing as ``accepted``; the time until ``decide`` returned is reported too. The two kinds
alternate (failover first in even repetitions, baseline first in odd ones) so load hits both sides.

Usage: ``python bench/failover_bench.py [--repetitions N] [--quick]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from temporalio.client import Client, WorkflowHandle

    from bench.run_bench import ProjectDriver, WorkerProcess
    from infra.devserver import DevServer

TARGET_MEDIAN_S = 1.5
QUEUE = "bench-failover"
AWAITING = "awaiting_decision"
RUN_TIMEOUT_S = 120.0


async def _awaiting(driver: ProjectDriver, index: int) -> WorkflowHandle[Any, Any]:
    """A new read_only run, once it awaits its decision and nothing of it is pending."""
    from bench.run_bench import _idle

    handle = await driver.start_input(driver.run_input("read_only", index), QUEUE)
    deadline = time.perf_counter() + RUN_TIMEOUT_S
    while await driver.status(handle) != AWAITING:
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{handle.id} did not reach {AWAITING}{await driver.failure(handle)}")
        await asyncio.sleep(0.05)
    await _idle(handle)
    return handle


async def _holder_pid(client: Client, run_id: str) -> int:
    """The pid of the worker that ran the run's last workflow task (identity ``pid@host``)."""
    from temporalio.api.enums.v1 import EventType

    identities = [
        event.workflow_task_started_event_attributes.identity
        async for event in client.get_workflow_handle(run_id).fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED
    ]
    return int(identities[-1].partition("@")[0])


async def _decide_and_close(driver: ProjectDriver, handle: WorkflowHandle[Any, Any]) -> dict[str, float]:
    """Send ``decide`` now; seconds until it returned and until the run's workflow closed."""
    sent = time.perf_counter()
    await asyncio.wait_for(driver.decide(handle), timeout=RUN_TIMEOUT_S)
    decided = time.perf_counter()
    view = await asyncio.wait_for(handle.result(), timeout=RUN_TIMEOUT_S)
    closed = time.perf_counter()
    driver.check_result("read_only", view)
    return {"decide_returned_s": round(decided - sent, 3), "decide_to_closed_s": round(closed - sent, 3)}


class Workers:
    """The two worker processes; a killed one is replaced by a new process with its state directory."""

    def __init__(self, env: dict[str, str], state: Path) -> None:
        self._env = env
        self._state = state
        self.running: dict[int, tuple[WorkerProcess, str]] = {}
        self._spawned = 0
        self._stopped: list[WorkerProcess] = []

    async def start(self, name: str) -> None:
        from bench.run_bench import _spawn_worker

        state_dir = self._state / name
        state_dir.mkdir(exist_ok=True)
        self._spawned += 1
        log = self._state / f"{name}-{self._spawned}.log"
        process = await _spawn_worker({**self._env, "SPECIALISTS_STATE_DIR": str(state_dir)}, log)
        await process.wait_polling()
        self.running[process.process.pid] = (process, name)

    async def kill(self, pid: int) -> str:
        """SIGKILL worker ``pid`` and reap it; its name."""
        process, name = self.running.pop(pid)
        os.kill(pid, signal.SIGKILL)
        await process.process.wait()
        self._stopped.append(process)
        return name

    async def stop_all(self) -> None:
        for process, _ in self.running.values():
            await process.stop(signal.SIGTERM)
        for process in self._stopped:
            await process.stop(signal.SIGKILL)
        self.running.clear()


async def _bench(args: argparse.Namespace, server: DevServer, state: Path) -> dict[str, Any]:
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter

    from bench.run_bench import ProjectDriver, _percentile, _prepare_store
    from store.database import default_database_url
    from worker import STICKY_QUEUE_TIMEOUT

    database_url = default_database_url(state)
    token = secrets.token_urlsafe(32)
    token_file = state / "action-token"
    fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as token_out:
        token_out.write(token + "\n")
    _prepare_store(database_url, token.encode("utf-8"))
    env = {name: value for name, value in os.environ.items() if not name.startswith("SPECIALISTS_")}
    env.update(
        SPECIALISTS_TEMPORAL_ADDRESS=server.address,
        SPECIALISTS_TASK_QUEUE=QUEUE,
        SPECIALISTS_DATABASE_URL=database_url,
        SPECIALISTS_ACTION_TOKEN_FILE=str(token_file),
    )
    client = await Client.connect(server.address, data_converter=pydantic_data_converter)
    driver = ProjectDriver(client, 0.05, token.encode("utf-8"))
    workers = Workers(env, state)
    failover: list[dict[str, float]] = []
    baseline: list[dict[str, float]] = []
    taken_over_by_other = 0
    try:
        await asyncio.gather(workers.start("worker-a"), workers.start("worker-b"))
        # Warm-up: each worker's sandbox and store in use once (not measured).
        for index in range(2):
            await _decide_and_close(driver, await _awaiting(driver, index))
        index = 2
        for repetition in range(args.repetitions):
            for kind in ("failover", "baseline") if repetition % 2 == 0 else ("baseline", "failover"):
                handle = await _awaiting(driver, index)
                index += 1
                if kind == "baseline":
                    baseline.append(await _decide_and_close(driver, handle))
                    continue
                holder = await _holder_pid(client, handle.id)
                name = await workers.kill(holder)
                sample = await _decide_and_close(driver, handle)
                taken_over_by_other += (await _holder_pid(client, handle.id)) in workers.running
                failover.append(sample)
                await workers.start(name)
    finally:
        await workers.stop_all()

    def summary(samples: list[dict[str, float]]) -> dict[str, Any]:
        closed = [sample["decide_to_closed_s"] for sample in samples]
        returned = [sample["decide_returned_s"] for sample in samples]
        return {
            "samples": len(samples),
            "decide_to_closed_s_median": round(statistics.median(closed), 3),
            "decide_to_closed_s_p90": round(_percentile(closed, 0.9), 3),
            "decide_returned_s_median": round(statistics.median(returned), 3),
            "decide_to_closed_s": closed,
        }

    failed_over, live = summary(failover), summary(baseline)
    median = failed_over["decide_to_closed_s_median"]
    return {
        "failover": {**failed_over, "taken_over_by_the_other_worker": taken_over_by_other},
        "baseline": live,
        "ratio_median": round(median / live["decide_to_closed_s_median"], 2),
        "sticky_queue_timeout_s": STICKY_QUEUE_TIMEOUT.total_seconds(),
        "target_median_s": TARGET_MEDIAN_S,
        "target_met": median <= TARGET_MEDIAN_S,
    }


def _measure(args: argparse.Namespace) -> dict[str, Any]:
    from contracts.search_attributes import SEARCH_ATTRIBUTES
    from infra.devserver import DevServer, free_port

    with (
        tempfile.TemporaryDirectory(prefix="failover-bench-") as tmp,
        DevServer(
            state_dir=Path(tmp),
            db_filename=None,
            port=free_port(),
            headless=True,
            search_attributes=SEARCH_ATTRIBUTES,
        ) as server,
    ):
        result: dict[str, Any] = asyncio.run(_bench(args, server, Path(tmp)))
    return result


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repetitions", type=int, default=10, help="failover and baseline samples each")
    parser.add_argument("--quick", action="store_true", help="one repetition (smoke test)")
    args = parser.parse_args()
    if args.quick:
        args.repetitions = 1
    if args.repetitions < 1:
        parser.error("--repetitions must be at least 1")

    from bench.report_output import report_on_stdout

    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    with report_on_stdout() as emit:
        report = _measure(args)
        output = {
            "config": {
                "repetitions": args.repetitions,
                "workers": 2,
                "cpu_count": os.cpu_count(),
                "load_average_1m": {"start": round(load_before, 2), "end": round(os.getloadavg()[0], 2)},
                "server": "fresh in-memory dev server, headless, free ports, custom search attributes",
                "store": "SQLite file in a temporary directory, shared by both worker processes",
                "measured": "from sending decide (right after the SIGKILL, for failover) to the run's "
                "workflow closing as accepted",
            },
            **report,
            "wall_s": round(time.perf_counter() - started, 1),
        }
        emit(json.dumps(output, indent=2))


if __name__ == "__main__":
    main()
