"""``specialists schedules`` against a real dev server and worker (docs/architecture.md "Schedules"):
nothing exists until an operator enables it; ``enable`` creates the daily case analysis or the intake
scan under the actor's signed grant; ``pause``, ``resume`` and ``trigger`` act on it and ``list``
shows each state; bad names, intervals and missing actors are refused before anything is sent."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from infra.devserver import DevServer
from tests.control.cli_harness import Cli, running_worker


@pytest.fixture(scope="module")
def cli(temporal_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    root = tmp_path_factory.mktemp("cli-schedules")
    cli = Cli.isolated(
        root,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"cli-schedules-{uuid.uuid4().hex}",
    )
    cli.call("actors", "register", "alice", "--name", "Alice", "--json").ok()
    cli.call("models", "select", "--primary", "replay:demo", "--actor", "alice", "--json").ok()
    with running_worker(cli.env, root / "worker.log"):
        yield cli
    for name in ("case-sweep", "intake-scan"):
        cli.call("schedules", "pause", name, "--actor", "alice", "--json")


def _entry(cli: Cli, name: str) -> dict[str, Any]:
    listed = cli.call("schedules", "list", "--json").ok()["schedules"]
    return next(entry for entry in listed if entry["name"] == name)


def test_the_case_sweep_is_enabled_paused_resumed_and_triggered_and_list_shows_each_state(cli: Cli) -> None:
    before = _entry(cli, "case-sweep")
    assert (before["exists"], before["available"]) == (False, True)
    cli.call("schedules", "pause", "case-sweep", "--actor", "alice", "--json").error(3, "unknown_schedule")

    enabled = cli.call(
        "schedules", "enable", "case-sweep", "--interval", "6h", "--actor", "alice", "--json"
    ).ok()
    assert enabled["action"] == "enabled"
    schedule = enabled["schedule"]
    assert (schedule["exists"], schedule["paused"], schedule["interval_seconds"]) == (True, False, 6 * 3600)
    assert schedule["granted_by"] == "alice"

    assert schedule["next_action_times"]
    paused = cli.call("schedules", "pause", "case-sweep", "--actor", "alice", "--json").ok()
    assert (paused["action"], paused["schedule"]["paused"]) == ("paused", True)
    assert _entry(cli, "case-sweep")["paused"] is True
    # A paused schedule starts nothing: it lists no next time, nor does its row show one.
    assert paused["schedule"]["next_action_times"] == []
    assert "none while paused" in cli.call("schedules", "list").stdout
    again = cli.call("schedules", "enable", "case-sweep", "--interval", "6h", "--actor", "alice")
    assert again.exit_code == 0 and "still paused: `specialists schedules resume case-sweep`" in again.stdout
    assert _entry(cli, "case-sweep")["paused"] is True
    resumed = cli.call("schedules", "resume", "case-sweep", "--actor", "alice", "--json").ok()
    assert (resumed["action"], resumed["schedule"]["paused"]) == ("resumed", False)

    cli.call("schedules", "trigger", "case-sweep", "--actor", "alice", "--json").ok()
    deadline = time.monotonic() + 30
    while not _entry(cli, "case-sweep")["recent_actions"]:
        assert time.monotonic() < deadline, "the triggered sweep never showed among the recent actions"
        time.sleep(0.5)
    human = cli.call("schedules", "list")
    assert human.exit_code == 0 and "case-sweep" in human.stdout


@pytest.mark.parametrize(
    ("args", "exit_code", "code"),
    [
        (["enable", "nightly-everything", "--actor", "alice"], 2, "unknown_schedule_name"),
        (["enable", "case-sweep", "--interval", "often", "--actor", "alice"], 2, "invalid_interval"),
        (["enable", "case-sweep", "--interval", "5s", "--actor", "alice"], 2, "invalid_interval"),
        (["enable", "case-sweep"], 2, "actor_required"),
        (["trigger", "case-sweep"], 2, "actor_required"),
        (["enable", "case-sweep", "--actor", "mallory"], 3, "unknown_actor"),
    ],
)
def test_bad_names_intervals_and_actors_are_refused_before_anything_is_sent(
    cli: Cli, args: list[str], exit_code: int, code: str
) -> None:
    cli.call("schedules", *args, "--json").error(exit_code, code)


def test_enable_intake_scan_creates_the_schedule_that_list_then_shows(cli: Cli) -> None:
    before = _entry(cli, "intake-scan")
    assert before["available"] is True and before["exists"] is False
    cli.call("schedules", "pause", "intake-scan", "--actor", "alice", "--json").error(3, "unknown_schedule")
    enabled = cli.call(
        "schedules", "enable", "intake-scan", "--interval", "6h", "--actor", "alice", "--json"
    ).ok()
    assert enabled["action"] == "enabled"
    after = _entry(cli, "intake-scan")
    assert after["exists"] is True and after["paused"] is False
    assert after["granted_by"] == "alice" and after["interval_seconds"] == 6 * 3600
    human = cli.call("schedules", "list")
    assert human.exit_code == 0 and "intake-scan" in human.stdout
    assert enabled["replaced_grant_of"] is None  # nobody's grant before
    # Another person enabling it replaces alice's standing grant: said, never silent.
    cli.call("actors", "register", "bob", "--name", "Bob", "--actor", "alice", "--json").ok()
    enable = ("schedules", "enable", "intake-scan", "--interval", "6h")
    by_bob = cli.as_actor("bob").call(*enable, "--actor", "bob", "--json").ok()
    assert by_bob["replaced_grant_of"] == "alice" and by_bob["schedule"]["granted_by"] == "bob"
    by_alice = cli.call(*enable, "--actor", "alice")
    assert by_alice.exit_code == 0
    assert "it replaces bob's grant: its runs are now created by alice" in by_alice.stdout
    assert cli.call(*enable, "--actor", "alice", "--json").ok()["replaced_grant_of"] is None
    paused = cli.call("schedules", "pause", "intake-scan", "--actor", "alice", "--json").ok()
    assert paused["schedule"]["paused"] is True


def test_list_names_a_schedule_whose_input_does_not_read_as_its_kind(
    cli: Cli, temporal_dev_server: DevServer
) -> None:
    """A schedule under the intake scan's id whose action carries no grant (written by hand, or by
    another version) is listed with the problem named, not with a guessed or empty grantor."""
    import asyncio
    import datetime as dt

    from temporalio.client import (
        Client,
        Schedule,
        ScheduleActionStartWorkflow,
        ScheduleIntervalSpec,
        ScheduleSpec,
        ScheduleState,
    )

    from contracts.schedules import ScheduleKind, schedule_id

    queue = f"cli-schedules-by-hand-{uuid.uuid4().hex}"
    sid = schedule_id(ScheduleKind.INTAKE_SCAN, queue)

    async def create() -> None:
        client = await Client.connect(temporal_dev_server.address)
        await client.create_schedule(
            sid,
            Schedule(
                action=ScheduleActionStartWorkflow(
                    "IntakeSweep", {"grant": "nobody's"}, id=sid, task_queue=queue
                ),
                spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=dt.timedelta(days=1))]),
                state=ScheduleState(paused=True),
            ),
        )

    asyncio.run(create())
    listed = cli.with_env(SPECIALISTS_TASK_QUEUE=queue).call("schedules", "list", "--json").ok()
    entry = next(entry for entry in listed["schedules"] if entry["name"] == "intake-scan")
    assert entry["exists"] is True and entry["granted_by"] is None
    assert entry["input_problem"] == (
        "the schedule's input does not read as IntakeSweepInput: grant: Input should be an object; "
        "task_queue: Field required"
    )
    human = cli.with_env(SPECIALISTS_TASK_QUEUE=queue).call("schedules", "list")
    assert human.exit_code == 0 and "intake-scan: the schedule's input does not read as" in human.stdout
    sweep = next(entry for entry in listed["schedules"] if entry["name"] == "case-sweep")
    assert sweep["exists"] is False and sweep["input_problem"] is None


def test_the_case_sweep_says_while_the_policy_gives_its_runs_no_read_only_analysis(cli: Cli) -> None:
    # The deployment's default policy (recommend, ceiling recommend) lets the sweep run nothing:
    # enabling, triggering and listing say so, and still do what was asked.
    problem = _entry(cli, "case-sweep")["policy_problem"]
    assert problem is not None and "gives automatic runs no read_only analysis" in problem
    assert "every case is skipped" in problem
    assert _entry(cli, "intake-scan")["policy_problem"] is None
    enabled = cli.call("schedules", "enable", "case-sweep", "--actor", "alice")
    assert enabled.exit_code == 0
    assert f"warning: {problem}" in enabled.stdout
    triggered = cli.call("schedules", "trigger", "case-sweep", "--actor", "alice", "--json").ok()
    assert triggered["schedule"]["policy_problem"] == problem
    assert f"case-sweep: {problem}" in cli.call("schedules", "list").stdout

    cli.call(
        "policy", "--mode", "guarded", "--maximum-automatic-tier", "read_only", "--actor", "alice", "--json"
    ).ok()
    assert _entry(cli, "case-sweep")["policy_problem"] is None
    quiet = cli.call("schedules", "trigger", "case-sweep", "--actor", "alice")
    assert quiet.exit_code == 0 and "warning" not in quiet.stdout
