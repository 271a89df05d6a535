"""``specialists schedules`` and the intake scan against a real Temporal dev server: the
``intake-scan`` schedule is listed as available but not created until ``enable intake-scan`` creates
it under the actor's grant, after which ``list`` shows it, who granted it and its interval; pause
needs it to exist first (exit 3 before)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from temporalio.client import Client

from contracts.schedules import ScheduleKind, schedule_id
from infra.devserver import DevServer
from tests.control.cli_harness import Cli


def _entry(listing: dict[str, object], name: str) -> dict[str, object]:
    schedules = listing["schedules"]
    assert isinstance(schedules, list)
    return next(entry for entry in schedules if entry["name"] == name)


def test_enable_intake_scan_creates_the_schedule_that_list_then_shows(
    temporal_dev_server: DevServer, tmp_path: Path
) -> None:
    task_queue = f"cli-schedules-{uuid.uuid4().hex}"
    cli = Cli.isolated(
        tmp_path, SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address, SPECIALISTS_TASK_QUEUE=task_queue
    )
    assert cli.call("actors", "register", "alice", "--name", "Alice").exit_code == 0
    before = _entry(cli.call("schedules", "list", "--json").ok(), "intake-scan")
    assert before["available"] is True and before["exists"] is False
    assert cli.call("schedules", "pause", "intake-scan", "--actor", "alice", "--json").exit_code == 3
    try:
        enabled = cli.call(
            "schedules", "enable", "intake-scan", "--interval", "6h", "--actor", "alice", "--json"
        ).ok()
        assert enabled["action"] == "enabled"
        assert enabled["schedule"]["schedule_id"] == schedule_id(ScheduleKind.INTAKE_SCAN, task_queue)
        after = _entry(cli.call("schedules", "list", "--json").ok(), "intake-scan")
        assert after["exists"] is True and after["paused"] is False
        assert after["granted_by"] == "alice" and after["interval_seconds"] == 6 * 3600
        assert _entry(cli.call("schedules", "list", "--json").ok(), "case-sweep")["exists"] is False
        human = cli.call("schedules", "list")
        assert human.exit_code == 0 and "intake-scan" in human.stdout
        paused = cli.call("schedules", "pause", "intake-scan", "--actor", "alice", "--json").ok()
        assert paused["schedule"]["paused"] is True
    finally:

        async def delete() -> None:
            client = await Client.connect(temporal_dev_server.address)
            await client.get_schedule_handle(schedule_id(ScheduleKind.INTAKE_SCAN, task_queue)).delete()

        asyncio.run(delete())
