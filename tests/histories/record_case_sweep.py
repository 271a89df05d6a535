"""Record the daily case analysis's histories into ``tests/histories/schedules/`` (run by hand, then
commit).

    .venv/bin/python -m tests.histories.record_case_sweep

Starts its own in-memory dev server and, through :func:`tests.workflows.harness.bench`, a store with
``alice`` registered, the policy guarded up to read_only, a case in ``validation`` and an in-process
worker whose model answers from the demo's recordings. ``alice`` enables the case sweep; it is
triggered twice. ``case_sweep.json`` is the first sweep (the case routed, its run started and its two
summaries attached), ``case_sweep_again.json`` the second (the run found, nothing attached), and
``case_sweep_run.json`` the run the first sweep started (patch ``case-sweep-grant``);
``tests/workflows/test_replay.py`` replays all three.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from contracts.enums import AutomationMode, Tier
from contracts.research import CaseStatus
from contracts.runs import RunStatus
from contracts.schedules import CaseSweepResult, ScheduleKind, schedule_id
from control.schedule_setup import enable_case_sweep
from infra.devserver import DevServer
from tests.histories.recording import record_on_a_fresh_server, write_histories
from tests.identity import signer
from tests.workflows.harness import ACTOR, TextProvider, bench
from tests.workflows.test_case_sweep import _answer, _case

HERE = Path(__file__).resolve().parent / "schedules"
TASK_QUEUE = "record-case-sweep-histories"


async def _sweep(client: Client, handle: object, seen: int) -> str:
    """Trigger the schedule and return the id of the sweep it started (after ``seen`` earlier ones)."""
    await handle.trigger()  # type: ignore[attr-defined]
    for _ in range(120):
        described = await handle.describe()  # type: ignore[attr-defined]
        ids = [action.action.workflow_id for action in described.info.recent_actions]
        if len(ids) > seen:
            await client.get_workflow_handle(ids[-1], result_type=CaseSweepResult).result()
            return str(ids[-1])
        await asyncio.sleep(0.5)
    raise AssertionError("the triggered sweep never started")


async def record(server: DevServer, state: Path) -> None:
    client = await Client.connect(server.address, data_converter=pydantic_data_converter)
    providers = {"fake": TextProvider(_answer)}
    async with bench(client, TASK_QUEUE, state / "bench", providers=providers, model="fake:demo") as b:
        b.set_policy(AutomationMode.GUARDED, Tier.READ_ONLY)
        case = b.store.create_case(_case("recorded"), ACTOR)
        b.store.set_case_status(case.case_id, CaseStatus.VALIDATION, ACTOR)
        async with b.worker():
            await enable_case_sweep(client, signer(ACTOR), TASK_QUEUE, dt.timedelta(days=1))
            handle = client.get_schedule_handle(schedule_id(ScheduleKind.CASE_SWEEP, TASK_QUEUE))
            try:
                first = await _sweep(client, handle, 0)
                await asyncio.sleep(1.1)  # each sweep's id names the second it was scheduled
                second = await _sweep(client, handle, 1)
            finally:
                await handle.delete()
            result = await client.get_workflow_handle(first, result_type=CaseSweepResult).result()
            run_id = result.routed[0].run_id
            b.started.append(run_id)
            await b.wait(run_id, RunStatus.AWAITING_DECISION)
            ids = {"case_sweep": first, "case_sweep_again": second, "case_sweep_run": run_id}
            for name, events in (await write_histories(client, HERE, ids)).items():
                print(f"recorded {name} ({ids[name]}, {events} events)", flush=True)
            await client.get_workflow_handle(run_id).terminate("recording finished")


def main() -> None:
    record_on_a_fresh_server(record)


if __name__ == "__main__":
    main()
