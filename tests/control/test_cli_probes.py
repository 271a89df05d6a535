"""Probe requests through the CLI (docs/architecture.md "Probe requests"): ``probes RUN`` lists what a
read_only run's analysis asked to have run; ``approve-probe RUN INDEX --probe-sha256 H --actor A``
approves exactly that probe; the worker runs it confined in a fresh worktree of the repository and
``probes`` and ``show`` print the operator-run evidence apart from the result.

One worker process serves the module (its own task queue and state directory, ``alice`` registered,
``replay:demo`` selected, ``orders-service`` a real git repository with the demo's reports.sql). The
``replay:demo`` analysis of :data:`WORK_ITEM`'s title asks for one probe: ``grep -n created_at
reports.sql``."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from infra.devserver import DevServer
from tests.activities.confined import requires_bubblewrap
from tests.control.cli_harness import Cli, running_worker
from tests.store.git_repository import make_orders_repository

ALIAS = "orders-service"
WORK_ITEM = {
    "title": "Find which statement the orders report runs before adding an index",
    "description": "The nightly orders report is slow. Before adding an index, find the statement the "
    "report runs and the columns it filters orders by.",
    "domain": "database",
    "roles": ["dba"],
    "repo_alias": ALIAS,
    "evidence_refs": ["log:pg-slow-2026-11-27"],
    "task_type": "audit",
}


@pytest.fixture(scope="module")
def cli(temporal_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    root = tmp_path_factory.mktemp("cli-probes")
    repository = make_orders_repository(root / "orders")
    cli = Cli.isolated(
        root,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"cli-probes-{uuid.uuid4().hex}",
    )
    cli.call("actors", "register", "alice", "--name", "Alice", "--json").ok()
    cli.call("models", "select", "--primary", "replay:demo", "--actor", "alice", "--json").ok()
    cli.call("repos", "add", ALIAS, str(repository), "--actor", "alice", "--json").ok()
    with running_worker(cli.env, root / "worker.log"):
        yield cli


def _awaiting(cli: Cli, **changes: Any) -> dict[str, Any]:
    created = cli.call(
        "create",
        "--input-json",
        json.dumps({**WORK_ITEM, **changes}),
        "--tier",
        "read_only",
        "--enqueue",
        "--actor",
        "alice",
        "--wait",
        "--json",
    ).ok()
    assert created["status"] == "awaiting_decision", created
    return created


@requires_bubblewrap
def test_an_operator_lists_approves_and_reads_a_probe_and_refusals_keep_their_exit_codes(cli: Cli) -> None:
    run = _awaiting(cli)
    run_id = run["run_id"]
    listed = cli.call("probes", run_id, "--json").ok()
    (probe,) = listed["probes"]
    assert probe["status"] == "requested" and probe["request"]["argv"] == [
        "grep",
        "-n",
        "created_at",
        "reports.sql",
    ]
    text = cli.call("probes", run_id).stdout
    assert "probe 1: requested" in text and probe["sha256"] in text

    approve = ("approve-probe", run_id)
    cli.call(*approve, "1", "--probe-sha256", "0" * 64, "--actor", "alice", "--json").error(
        4, "stale_probe_digest"
    )
    cli.call(*approve, "2", "--probe-sha256", probe["sha256"], "--actor", "alice", "--json").error(
        3, "unknown_probe"
    )
    cli.call(*approve, "1", "--probe-sha256", probe["sha256"], "--actor", "mallory", "--json").error(
        3, "unknown_actor"
    )
    cli.call(*approve, "9", "--probe-sha256", probe["sha256"], "--actor", "alice", "--json").error(
        2, "invalid_probe_index"
    )
    cli.call(*approve, "1", "--probe-sha256", "abc", "--actor", "alice", "--json").error(
        2, "probe_digest_required"
    )

    approved = cli.call(*approve, "1", "--probe-sha256", probe["sha256"], "--actor", "alice", "--json").ok()
    assert approved["probes"][0]["approved_by"] == "alice"
    deadline = time.monotonic() + 30
    while (shown := cli.call("probes", run_id, "--json").ok())["probes"][0]["status"] == "running":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    done = shown["probes"][0]
    assert done["status"] == "completed", done
    evidence = done["evidence"]
    assert evidence["exit_status"] == 0 and "customer_id" in evidence["stdout"]
    assert evidence["commit"] == run["contract"]["base_commit"] and evidence["changed"] == []
    assert evidence["confined"] is True

    show = cli.call("show", run_id).stdout
    assert "probe 1: completed" in show and "reads reports.sql" in show
    shown_json = cli.call("show", run_id, "--json").ok()
    assert shown_json["probes"][0]["evidence"]["exit_status"] == 0
    assert "evidence" not in shown_json["result"]
    kinds = [event["kind"] for event in shown_json["audit"]]
    assert kinds.count("action_refused") == 2  # the stale digest and the unknown probe reached the run
    assert {"probes_requested", "probe_approved", "probe_started", "probe_completed"} <= set(kinds)
    cli.call("decide", run_id, "--accept", "--actor", "alice", "--json").ok()


def test_a_probe_in_a_repository_not_allow_listed_here_is_refused_before_anything_is_sent(cli: Cli) -> None:
    alias = f"never-registered-{uuid.uuid4().hex[:8]}"
    run = _awaiting(cli, repo_alias=alias)  # a read_only run is analysed without its repository
    (probe,) = cli.call("probes", run["run_id"], "--json").ok()["probes"]

    message = cli.call(
        "approve-probe", run["run_id"], "1", "--probe-sha256", probe["sha256"], "--actor", "alice", "--json"
    ).error(3, "unknown_repository")

    assert alias in message and "not allow-listed" in message
    shown = cli.call("show", run["run_id"], "--json").ok()
    assert shown["probes"][0]["status"] == "requested" and shown["audit"] == run["audit"]
    cli.call("decide", run["run_id"], "--reject", "--actor", "alice", "--json").ok()
