"""The operator's path when workers come and go: commands that need a worker say so at once when
none polls (naming the queue and the fix) and change nothing; ``show`` falls back to the run's last
projected state; ``--wait`` outlasts a worker restart, gives up at ``--timeout`` (exit 8, the run left
as it is) and exits 7 when the run ends failed, cancelled or expired.

Real components: CLI invocations, worker processes started and stopped mid-run, the shared dev
server, SQLite, and a scripted model server on loopback whose answers the tests delay to hold a run
in ``running`` (the ``openai:slow`` model; its analysis and review answers are the ``replay:demo``
recordings of the slow-query work item).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from activities.config import DEFAULT_RECORDINGS_DIR
from contracts.enums import Tier
from contracts.ids import new_run_id, run_id_for_request
from contracts.runs import AuditEvent, RunInput, RunStatus, RunSummary
from contracts.temporal_names import WorkflowType
from contracts.work_item import WorkItem
from control.runs import request_digest
from infra.devserver import DevServer
from store.database import open_store
from tests.activities.providers.wire_server import Scripted, WireServer, openai_completion
from tests.control.cli_harness import ISO_UTC, SLOW_QUERY, WORK_ITEMS, Cli, CliResult, running_worker

ITEM = f"@{SLOW_QUERY}"
UNRECORDED = f"@{WORK_ITEMS / '05-responsive-dashboard.json'}"  # no replay:demo recording
SLOW_MODEL = "openai:slow"
KEY_ENV = "WIRE_TEST_SLOW_API_KEY"
FAST = 2.0  # "within 2 s"


def _recorded(kind: str, profile: str) -> dict[str, Any]:
    title = json.loads(SLOW_QUERY.read_text(encoding="utf-8"))["title"]
    data = json.loads((DEFAULT_RECORDINGS_DIR / "demo.json").read_text(encoding="utf-8"))
    for entry in data["recordings"]:
        if (entry["kind"], entry["profile"], entry["title"]) == (kind, profile, title):
            return dict(entry["response"])
    raise AssertionError(f"no recording of {profile} {kind}")


ANALYSIS = _recorded("analysis", "database-optimizer")
REVIEW = _recorded("review", "backend-architect")


def _answer(output: dict[str, Any], delay_s: float = 0.0) -> Scripted:
    return Scripted(200, openai_completion(json.dumps(output)), delay_s=delay_s)


class Deployment:
    """The module's CLI (its own task queue and state), the scripted model server behind
    ``openai:slow``, and worker processes on demand."""

    def __init__(self, cli: Cli, wire: WireServer, root: Path, address: str) -> None:
        self.cli = cli
        self.wire = wire
        self.root = root
        self.address = address
        self._logs = 0

    def worker(self, **env: str) -> Any:
        """A worker process for the module's queue (stopped with SIGTERM when the block ends)."""
        self._logs += 1
        return running_worker({**self.cli.env, **env}, self.root / f"worker-{self._logs}.log")

    def select(self, model: str) -> None:
        self.cli.call("models", "select", "--primary", model, "--actor", "alice", "--json").ok()

    def background(self, *args: str) -> subprocess.Popen[str]:
        """``specialists ARGS`` as a process that runs while the test goes on."""
        return subprocess.Popen(
            [sys.executable, "-m", "control.cli", *args],
            cwd=self.cli.cwd,
            env=self.cli.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def requests(self, count: int, *, timeout: float = 30.0) -> None:
        """Wait until the model server has received ``count`` requests."""
        deadline = time.monotonic() + timeout
        while len(self.wire.received) < count:
            assert time.monotonic() < deadline, f"model server got {len(self.wire.received)} requests"
            time.sleep(0.05)


def _finished(process: subprocess.Popen[str], args: tuple[str, ...], timeout: float = 90.0) -> CliResult:
    stdout, stderr = process.communicate(timeout=timeout)
    return CliResult(args, process.returncode, stdout, stderr)


@pytest.fixture(scope="module")
def deployment(
    temporal_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    root = tmp_path_factory.mktemp("cli-waiting")
    wire = WireServer()
    wire.start()
    cli = Cli.isolated(
        root,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"cli-waiting-{uuid.uuid4().hex}",
        **{KEY_ENV: "slow-model-key-0123456789"},
    )
    cli.call("actors", "register", "alice", "--name", "Alice", "--json").ok()
    add = ("models", "add", SLOW_MODEL, "--base-url", wire.base_url, "--api-key-env", KEY_ENV)
    cli.call(*add, "--timeout-s", "60", "--actor", "alice", "--json").ok()
    try:
        yield Deployment(cli, wire, root, temporal_dev_server.address)
    finally:
        wire.stop()


@pytest.fixture
def wire(deployment: Deployment) -> Iterator[WireServer]:
    deployment.wire.reset()
    yield deployment.wire
    deployment.wire.reset()


def _timed(cli: Cli, *args: str) -> tuple[CliResult, float]:
    started = time.monotonic()
    result = cli.call(*args)
    return result, time.monotonic() - started


# ------------------------------------------------------------------------------------- no worker at all


def _start_unpolled_run(address: str, queue: str) -> str:
    """A run's workflow started on ``queue``, which no worker polls: it stays as it started."""
    item = WorkItem.model_validate_json(SLOW_QUERY.read_text(encoding="utf-8"))
    draft = RunInput(
        run_id=new_run_id(),
        work_item=item,
        requested_tier=Tier.READ_ONLY,
        automatic=False,
        enqueue=False,
        request_digest="",
        created_by=None,
    )
    run_input = draft.model_copy(update={"request_digest": request_digest(draft)})

    async def start() -> None:
        client = await Client.connect(address, data_converter=pydantic_data_converter)
        await client.start_workflow(
            WorkflowType.SPECIALIST_RUN,
            run_input,
            id=run_input.run_id,
            task_queue=queue,
            execution_timeout=dt.timedelta(minutes=10),
        )

    asyncio.run(start())
    return run_input.run_id


def _history_event_types(address: str, run_id: str) -> list[str]:
    from temporalio.api.enums.v1 import EventType

    async def fetch() -> list[str]:
        client = await Client.connect(address)
        history = await client.get_workflow_handle(run_id).fetch_history()
        return [EventType.Name(event.event_type) for event in history.events]

    return asyncio.run(fetch())


def _no_worker(result: CliResult, elapsed: float, queue: str) -> None:
    message = result.error(5, "no_worker")
    assert elapsed < FAST, (elapsed, str(result))
    assert f"task queue {queue!r}" in message and "namespace 'default'" in message, message
    assert "specialists worker" in message, message


def test_with_no_worker_polling_every_command_that_needs_one_says_so_at_once_and_changes_nothing(
    deployment: Deployment,
) -> None:
    queue = f"never-polled-{uuid.uuid4().hex}"
    cli = deployment.cli.with_env(SPECIALISTS_TASK_QUEUE=queue)
    deployment.select("replay:demo")

    create = ("create", "--input-json", ITEM, "--tier", "read_only", "--request-id", "nobody-home", "--json")
    _no_worker(*_timed(cli, *create), queue)
    enqueued = (
        "create",
        "--input-json",
        ITEM,
        "--tier",
        "read_only",
        "--enqueue",
        "--actor",
        "alice",
        "--json",
    )
    _no_worker(*_timed(cli, *enqueued), queue)
    # Nothing was started: the request id's run does not exist.
    cli.call("show", run_id_for_request("nobody-home"), "--json").error(3, "unknown_run")

    run_id = _start_unpolled_run(deployment.address, queue)
    before = _history_event_types(deployment.address, run_id)
    digest = "0" * 64
    for args in (
        ("enqueue", run_id, "--actor", "alice"),
        ("approve", run_id, "--actor", "alice", "--contract-sha256", digest),
        ("execute", run_id, "--actor", "alice"),
        ("decide", run_id, "--actor", "alice", "--accept"),
        ("cancel", run_id, "--actor", "alice"),
        ("worktrees", "prune", run_id, "--actor", "alice"),
        ("show", run_id),  # the projection does not know the run either
    ):
        _no_worker(*_timed(cli, *args, "--json"), queue)
        human = cli.call(*args)
        assert human.exit_code == 5 and "no worker is polling task queue" in human.stderr, str(human)
    # No signal, update or anything else reached the run.
    assert _history_event_types(deployment.address, run_id) == before


def test_show_falls_back_at_once_to_the_last_projected_state_when_no_worker_polls(
    deployment: Deployment,
) -> None:
    queue = f"never-polled-{uuid.uuid4().hex}"
    cli = deployment.cli.with_env(SPECIALISTS_TASK_QUEUE=queue)
    run_id = _start_unpolled_run(deployment.address, queue)
    projected_at = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
    summary = RunSummary(
        run_id=run_id,
        status=RunStatus.READY,
        tier=Tier.READ_ONLY,
        automatic=False,
        primary="database-optimizer",
        reviewer="backend-architect",
        risk=None,
        repo_alias=None,
        title="Audit the slow query",
        contract_sha256="a" * 64,
        request_id=None,
        created_at=projected_at,
        updated_at=projected_at,
    )
    event = AuditEvent(seq=1, at=projected_at, kind="run_created", actor=None, data={})
    with open_store(f"sqlite:///{cli.database}") as store:
        store.project_run(summary, [event])

    result, elapsed = _timed(cli, "show", run_id, "--json")

    assert elapsed < FAST, elapsed
    shown = result.ok()
    assert (shown["run_id"], shown["status"], shown["source"]) == (run_id, "ready", "projection")
    assert shown["projected_at"] == "2026-03-01T12:00:00Z"
    assert shown["unanswered"]["code"] == "no_worker" and queue in shown["unanswered"]["message"]
    assert shown["contract_sha256"] == "a" * 64 and [e["kind"] for e in shown["audit"]] == ["run_created"]
    for key in ("route", "contract", "result", "review", "decision"):
        assert shown[key] is None
    assert "showing its last projected state" in result.stderr
    human = cli.call("show", run_id)
    assert human.exit_code == 0, str(human)
    assert "LAST PROJECTED STATE, written at 2026-03-01T12:00:00Z" in human.stdout
    assert "no worker is polling task queue" in human.stdout


# ----------------------------------------------------------------------------- workers that come and go


def test_show_of_a_run_whose_worker_stopped_shows_the_projection_and_the_workflow_once_one_returns(
    deployment: Deployment,
) -> None:
    deployment.select("replay:demo")
    with deployment.worker():
        created = deployment.cli.call("create", "--input-json", ITEM, "--tier", "read_only", "--json").ok()
        assert created["status"] == "ready"
        assert deployment.cli.call("show", created["run_id"], "--json").ok()["source"] == "workflow"
    run_id = created["run_id"]

    result, elapsed = _timed(deployment.cli, "show", run_id, "--json")

    # The stopped worker's last poll is still listed for up to a minute: show asks, no worker
    # answers within 5 s, and it shows the projection, labelled.
    assert elapsed < 5.0 + FAST, elapsed
    shown = result.ok()
    assert (shown["source"], shown["status"]) == ("projection", "ready")
    assert re.fullmatch(ISO_UTC, shown["projected_at"])
    assert shown["unanswered"]["code"] == "no_worker"
    with deployment.worker():
        assert deployment.cli.call("show", run_id, "--json").ok()["source"] == "workflow"


def test_wait_outlasts_a_worker_that_stops_and_starts_again_mid_run(
    deployment: Deployment, wire: WireServer
) -> None:
    deployment.select(SLOW_MODEL)
    wire.script(_answer(ANALYSIS, delay_s=2.0), _answer(REVIEW))
    args = ("create", "--input-json", ITEM, "--tier", "read_only", "--enqueue", "--actor", "alice")
    args += ("--wait", "--timeout", "120", "--json")

    with deployment.worker():
        waiting = deployment.background(*args)
        deployment.requests(1)  # the analysis call is in flight on this worker
    # The worker stopped (gracefully: the call in flight finished first); nothing polls now. The
    # wait keeps asking for longer than any single query waits.
    time.sleep(12)
    assert waiting.poll() is None, waiting.communicate()
    with deployment.worker():
        result = _finished(waiting, args)

    run = result.ok()
    assert run["status"] == "awaiting_decision", run
    assert run["result"] is not None and run["review"] is not None
    assert len(wire.received) == 2
    assert "still waiting, nobody answers" in result.stderr, result.stderr
    assert "answering again" in result.stderr, result.stderr


def test_wait_timeout_gives_up_with_exit_8_and_leaves_the_run_as_it_is(
    deployment: Deployment, wire: WireServer
) -> None:
    deployment.select(SLOW_MODEL)
    wire.script(_answer(ANALYSIS, delay_s=6.0), _answer(REVIEW))
    with deployment.worker():
        started = time.monotonic()
        result = deployment.cli.call(
            "create", "--input-json", ITEM, "--tier", "read_only", "--enqueue", "--actor", "alice",
            "--request-id", f"timeout-{uuid.uuid4().hex}", "--wait", "--timeout", "2", "--json",
        )  # fmt: skip
        elapsed = time.monotonic() - started
        message = result.error(8, "wait_timeout")
        assert elapsed < 2 + FAST, elapsed
        assert "is still running after --timeout 2 s" in message and "left as it is" in message
        run_id = re.search(r"run (SOR-[0-9A-Z]{16})", message).group(1)  # type: ignore[union-attr]
        # Left as it is: it goes on to await a decision.
        done = deployment.cli.call("show", run_id, "--json").ok()
        assert done["status"] in ("running", "reviewing", "awaiting_decision")
        deadline = time.monotonic() + 30
        while done["status"] != "awaiting_decision":
            assert time.monotonic() < deadline, done["status"]
            time.sleep(0.2)
            done = deployment.cli.call("show", run_id, "--json").ok()
    assert "cancel_requested" not in [event["kind"] for event in done["audit"]]


def test_timeout_without_wait_is_invalid_input(deployment: Deployment) -> None:
    for args in (
        ("create", "--input-json", ITEM, "--tier", "read_only", "--timeout", "5", "--json"),
        ("execute", "SOR-0000000000000000", "--actor", "alice", "--timeout", "5", "--json"),
    ):
        assert "--wait" in deployment.cli.call(*args).error(2, "timeout_needs_wait")
    bad = deployment.cli.call(
        "create", "--input-json", ITEM, "--tier", "read_only", "--wait", "--timeout", "0"
    )
    assert bad.exit_code == 2, str(bad)


# ------------------------------------------------------------------------------- runs that end badly


def _ended_without_success(result: CliResult, status: str) -> dict[str, Any]:
    assert result.exit_code == 7, str(result)
    view = result.json()  # the final view, as exit 0 prints it
    assert view["status"] == status, view
    assert f"run {view['run_id']} ended {status}" in result.stderr, result.stderr
    return view


def test_wait_exits_7_with_the_final_view_when_the_run_fails(deployment: Deployment) -> None:
    deployment.select("replay:demo")
    args = ("create", "--input-json", UNRECORDED, "--tier", "read_only", "--enqueue", "--actor", "alice")
    with deployment.worker():
        result = deployment.cli.run(*args, "--wait", "--json")
        human = deployment.cli.run(*args, "--wait")

    view = _ended_without_success(result, "failed")
    assert view["error"]["type"] == "replay_no_recording"
    assert f"ended failed: replay_no_recording: {view['error']['message']}" in result.stderr
    assert human.exit_code == 7 and "replay_no_recording" in human.stdout, str(human)


def test_wait_exits_7_when_the_run_is_cancelled_while_it_waits(
    deployment: Deployment, wire: WireServer
) -> None:
    deployment.select(SLOW_MODEL)
    wire.script(_answer(ANALYSIS, delay_s=3.0))
    request_id = f"cancelled-{uuid.uuid4().hex}"
    args = ("create", "--input-json", ITEM, "--tier", "read_only", "--enqueue", "--actor", "alice")
    args += ("--request-id", request_id, "--wait", "--json")
    with deployment.worker():
        waiting = deployment.background(*args)
        deployment.requests(1)
        deployment.cli.call("cancel", run_id_for_request(request_id), "--actor", "alice", "--json").ok()
        result = _finished(waiting, args)

    view = _ended_without_success(result, "cancelled")
    assert "cancel_requested" in [event["kind"] for event in view["audit"]]


def test_wait_exits_7_when_the_run_expires(deployment: Deployment, wire: WireServer) -> None:
    deployment.select(SLOW_MODEL)
    wire.script(_answer(ANALYSIS, delay_s=4.0))
    args = ("create", "--input-json", ITEM, "--tier", "read_only", "--enqueue", "--actor", "alice")
    with deployment.worker(SPECIALISTS_READ_ONLY_BUDGET_SECONDS="1"):
        result = deployment.cli.run(*args, "--wait", "--json")

    view = _ended_without_success(result, "expired")
    assert view["error"]["type"] == "runtime_budget_exhausted"
