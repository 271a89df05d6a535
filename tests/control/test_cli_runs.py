"""Run commands against a real Temporal dev server and a worker process: create, enqueue, decide,
cancel, show and list, request-id deduplication, refusals, and an unreachable server.

One worker process serves most of the module (its own task queue and state directory, with ``alice``
registered and ``replay:demo`` selected). Creates the run's capture refuses have a deployment and a
worker of their own (automation off, no model, a repository gone); refusals of flags and of an
unregistered creator need no server at all and are made before Temporal is contacted.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contracts.ids import run_id_for_request
from infra.devserver import DevServer, free_port
from tests.control.cli_harness import ISO_UTC, RUN_ID, SHA256_HEX, SLOW_QUERY, Cli, running_worker, wait_until
from tests.store.git_repository import make_working_tree

RUN_KEYS = {
    "run_id",
    "status",
    "tier",
    "automatic",
    "route",
    "contract",
    "contract_sha256",
    "result",
    "review",
    "decision",
    "audit",
}
LIST_KEYS = {"run_id", "status", "tier", "primary", "reviewer", "risk", "created_at"}
ITEM = f"@{SLOW_QUERY}"
UNANCHORED = json.dumps({"title": "Tidy the orders report query", "task_type": "fix"})  # no repo_alias


@pytest.fixture(scope="module")
def cli(temporal_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """The CLI configured for the shared dev server, with a worker running on its own queue."""
    root = tmp_path_factory.mktemp("cli-runs")
    cli = Cli.isolated(
        root,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"cli-runs-{uuid.uuid4().hex}",
    )
    assert cli.call("actors", "register", "alice", "--name", "Alice").exit_code == 0
    assert cli.call("models", "select", "--primary", "replay:demo", "--actor", "alice").exit_code == 0
    with running_worker(cli.env, root / "worker.log"):
        yield cli


def _check_audit(audit: list[dict[str, Any]]) -> None:
    assert audit
    assert [event["seq"] for event in audit] == list(range(1, len(audit) + 1))
    for event in audit:
        assert set(event) == {"seq", "at", "kind", "actor", "data"}
        assert re.fullmatch(ISO_UTC, event["at"])
        assert isinstance(event["kind"], str) and event["kind"]
        assert isinstance(event["data"], dict)


def _listed(cli: Cli, run_id: str, *filters: str) -> dict[str, Any] | None:
    runs = cli.call("list", *filters, "--json").ok()["runs"]
    return next((row for row in runs if row["run_id"] == run_id), None)


def test_recommend_run_is_created_with_route_contract_and_audit(cli: Cli) -> None:
    result = cli.run("create", "--input-json", ITEM, "--tier", "recommend", "--json")

    run = result.ok()
    assert set(run) >= RUN_KEYS
    assert re.fullmatch(RUN_ID, run["run_id"])
    assert run["status"] == "recommended"
    assert run["tier"] == "recommend"
    assert run["automatic"] is False
    assert run["deduplicated"] is False
    assert run["route"]["primary"] == "database-optimizer"
    assert run["route"]["reviewer"] == "backend-architect"
    assert run["contract"] is not None
    assert re.fullmatch(SHA256_HEX, run["contract_sha256"])
    assert (run["result"], run["review"], run["decision"]) == (None, None, None)
    _check_audit(run["audit"])
    assert run["audit"][0]["kind"] == "run_created"


def test_automatic_run_under_the_default_policy_is_a_recommendation(cli: Cli) -> None:
    run = cli.call("create", "--input-json", ITEM, "--automatic", "--actor", "alice", "--json").ok()
    assert (run["status"], run["tier"], run["automatic"]) == ("recommended", "recommend", True)
    assert run["audit"][0]["actor"] == "alice"


def test_read_only_run_is_reviewed_decided_shown_and_listed(cli: Cli) -> None:
    created = cli.run(
        "create",
        "--input-json",
        ITEM,
        "--tier",
        "read_only",
        "--enqueue",
        "--actor",
        "alice",
        "--wait",
        "--json",
    ).ok()
    run_id = created["run_id"]
    assert created["status"] == "awaiting_decision"
    assert created["tier"] == "read_only"
    assert created["result"] is not None and created["review"] is not None

    decided = cli.run("decide", run_id, "--actor", "alice", "--accept", "--note", "ok", "--json").ok()
    assert decided["status"] == "accepted"
    assert decided["decision"]["outcome"] == "accepted"
    assert decided["decision"]["actor"] == "alice"
    assert decided["decision"]["note"] == "ok"

    shown = cli.run("show", run_id, "--json").ok()
    assert set(shown) >= RUN_KEYS
    assert shown["status"] == "accepted"
    for key in ("result", "review", "decision"):
        assert shown[key] == decided[key]
    assert shown["contract_sha256"] == created["contract_sha256"]
    _check_audit(shown["audit"])
    assert shown["audit"][: len(created["audit"])] == created["audit"]
    assert any(event["actor"] == "alice" for event in shown["audit"])
    assert "history" not in shown

    with_history = cli.call("show", run_id, "--history", "--json").ok()
    history = with_history["history"]
    assert [event["event_id"] for event in history] == list(range(1, len(history) + 1))
    assert len(history) > 5
    for event in history:
        assert {"event_id", "event_time", "event_type"} <= set(event)
        assert re.fullmatch(ISO_UTC, event["event_time"])
    assert {key: with_history[key] for key in RUN_KEYS} == {key: shown[key] for key in RUN_KEYS}

    def projected_as_accepted() -> dict[str, Any] | None:
        row = _listed(cli, run_id)
        return row if row is not None and row["status"] == "accepted" else None

    row = wait_until(projected_as_accepted)
    assert set(row) >= LIST_KEYS
    assert (row["tier"], row["primary"], row["reviewer"], row["risk"]) == (
        "read_only",
        "database-optimizer",
        "backend-architect",
        "low",
    )
    assert re.fullmatch(ISO_UTC, row["created_at"])

    accepted = cli.run("list", "--status", "accepted", "--json").ok()["runs"]
    assert run_id in [r["run_id"] for r in accepted]
    assert {r["status"] for r in accepted} == {"accepted"}
    assert _listed(cli, run_id, "--status", "recommended") is None
    assert _listed(cli, run_id, "--tier", "read_only") is not None
    assert _listed(cli, run_id, "--tier", "recommend") is None


def test_list_is_newest_first_and_limited(cli: Cli) -> None:
    first = cli.call("create", "--input-json", ITEM, "--tier", "recommend", "--json").ok()["run_id"]
    created = cli.call(
        "create", "--input-json", ITEM, "--tier", "recommend", "--actor", "alice", "--json"
    ).ok()
    assert created["audit"][0]["kind"] == "run_created"
    assert created["audit"][0]["actor"] == "alice"
    second = created["run_id"]

    def both_listed() -> list[str] | None:
        ids = [r["run_id"] for r in cli.call("list", "--json").ok()["runs"]]
        return ids if {first, second} <= set(ids) else None

    ids = wait_until(both_listed)
    assert ids.index(second) < ids.index(first)
    assert len(cli.call("list", "--limit", "1", "--json").ok()["runs"]) == 1


def test_ready_run_moves_on_when_enqueued(cli: Cli) -> None:
    created = cli.call("create", "--input-json", ITEM, "--tier", "read_only", "--json").ok()
    run_id = created["run_id"]
    assert created["status"] == "ready"
    assert created["result"] is None

    enqueued = cli.run("enqueue", run_id, "--actor", "alice", "--json").ok()
    assert enqueued["run_id"] == run_id
    assert enqueued["status"] != "ready"

    reviewed = wait_until(
        lambda: (view := cli.call("show", run_id, "--json").ok())["status"] == "awaiting_decision" and view
    )
    assert reviewed["result"] is not None
    cli.call("enqueue", run_id, "--actor", "alice", "--json").error(4, "not_ready")

    rejected = cli.call("decide", run_id, "--actor", "alice", "--reject", "--note", "not enough", "--json")
    assert rejected.ok()["status"] == "rejected"
    cli.call("decide", run_id, "--actor", "alice", "--accept", "--json").error(4, "run_finished")


def test_ready_run_is_cancelled_once(cli: Cli) -> None:
    run_id = cli.call("create", "--input-json", ITEM, "--tier", "read_only", "--json").ok()["run_id"]

    cancelled = cli.run("cancel", run_id, "--actor", "alice", "--reason", "duplicate", "--json").ok()
    assert cancelled["status"] == "cancelled"
    assert any(event["actor"] == "alice" for event in cancelled["audit"])

    again = cli.call("cancel", run_id, "--actor", "alice", "--json")
    assert "cancelled" in again.error(4, "run_finished")


def test_request_id_returns_the_same_run_for_the_same_request(cli: Cli) -> None:
    request_id = f"ticket-{uuid.uuid4().hex}"
    expected = "SOR-" + hashlib.sha256(request_id.encode()).hexdigest()[:16].upper()

    first = cli.run(
        "create", "--input-json", ITEM, "--tier", "read_only", "--request-id", request_id, "--json"
    ).ok()
    second = cli.call(
        "create", "--input-json", ITEM, "--tier", "read_only", "--request-id", request_id, "--json"
    ).ok()

    assert first["run_id"] == second["run_id"] == expected
    assert (first["deduplicated"], second["deduplicated"]) == (False, True)
    assert second["contract_sha256"] == first["contract_sha256"]

    different = cli.call(
        "create", "--input-json", ITEM, "--tier", "recommend", "--request-id", request_id, "--json"
    )
    assert request_id in different.error(4, "request_id_conflict")
    assert cli.call("show", expected, "--json").ok()["tier"] == "read_only"


@pytest.mark.parametrize(
    ("args", "exit_code", "code"),
    [
        (["SOR-0000000000000000", "--actor", "alice", "--accept"], 3, "unknown_run"),
        (["SOR-123", "--actor", "alice", "--accept"], 2, "invalid_run_id"),
        (["sor-0000000000000000", "--actor", "alice", "--accept"], 2, "invalid_run_id"),
        (["SOR-0000000000000000", "--actor", "mallory", "--accept"], 3, "unknown_actor"),
        (["SOR-0000000000000000", "--accept"], 2, "actor_required"),
        (["SOR-0000000000000000", "--actor", "alice"], 2, "decision_required"),
        (["SOR-0000000000000000", "--actor", "alice", "--accept", "--reject"], 2, "decision_required"),
        (["SOR-0000000000000000", "--actor", "alice", "--accept", "--note", "ok\x1b[2J"], 2, "invalid_note"),
        (["SOR-0000000000000000", "--actor", "alice", "--accept", "--note", "ok\u202e"], 2, "invalid_note"),
        (["SOR-0000000000000000", "--actor", "alice", "--accept", "--note", "x" * 2001], 2, "note_too_long"),
        (["SOR-0000000000000000", "--actor", "alice", "--accept", "--note", "   "], 2, "invalid_note"),
    ],
)
def test_bad_decide_is_refused(cli: Cli, args: list[str], exit_code: int, code: str) -> None:
    cli.call("decide", *args, "--json").error(exit_code, code)


def test_decide_on_a_recommendation_is_refused(cli: Cli) -> None:
    run_id = cli.call("create", "--input-json", ITEM, "--tier", "recommend", "--json").ok()["run_id"]
    cli.call("decide", run_id, "--actor", "alice", "--accept", "--json").error(4, "run_finished")


def test_show_and_cancel_of_unknown_or_malformed_ids(cli: Cli) -> None:
    cli.call("show", "SOR-0000000000000000", "--json").error(3, "unknown_run")
    cli.call("show", "RUN-1", "--json").error(2, "invalid_run_id")
    cli.call("cancel", "SOR-0000000000000000", "--actor", "alice", "--json").error(3, "unknown_run")
    cli.call("enqueue", "SOR-0000000000000000", "--actor", "alice", "--json").error(3, "unknown_run")
    cli.call("enqueue", "SOR-0000000000000000", "--json").error(2, "actor_required")
    cli.call("cancel", "SOR-0000000000000000", "--json").error(2, "actor_required")
    cli.call("enqueue", "SOR-0000000000000000", "--actor", "mallory", "--json").error(3, "unknown_actor")
    cli.call("list", "--status", "sleeping", "--json").error(2, "unknown_status")


# ------------------------------------------------------------------------ refused before Temporal is asked


@pytest.fixture
def offline(tmp_path: Path) -> Cli:
    """A fresh deployment whose Temporal address is a closed port: only refusals can succeed here."""
    return Cli.isolated(tmp_path, SPECIALISTS_TEMPORAL_ADDRESS=f"127.0.0.1:{free_port()}")


@pytest.mark.parametrize(
    ("args", "exit_code", "code"),
    [
        (["--input-json", ITEM, "--automatic", "--tier", "read_only"], 2, "tier_conflict"),
        (["--input-json", ITEM], 2, "tier_required"),
        (["--input-json", ITEM, "--tier", "sometimes"], 2, "unknown_tier"),
        (["--input-json", "{", "--tier", "recommend"], 2, "invalid_json"),
        (["--input-json", ITEM, "--tier", "recommend", "--request-id", ""], 2, "invalid_request_id"),
        (["--input-json", ITEM, "--tier", "recommend", "--request-id", "a\nb"], 2, "invalid_request_id"),
        (["--input-json", ITEM, "--tier", "recommend", "--request-id", "  "], 2, "invalid_request_id"),
        (["--input-json", ITEM, "--tier", "read_only", "--enqueue"], 2, "actor_required"),
        (["--input-json", ITEM, "--automatic"], 2, "actor_required"),
        (["--input-json", ITEM, "--automatic", "--actor", " "], 2, "actor_required"),
        (["--input-json", ITEM, "--tier", "read_only", "--advisory", "vibes"], 2, "unknown_advisory_topic"),
        (
            ["--input-json", ITEM, "--tier", "recommend", "--advisory", "security"],
            2,
            "advisory_needs_model_passes",
        ),
        (["--input-json", ITEM, "--tier", "recommend", "--enqueue"], 2, "enqueue_not_allowed"),
        (["--input-json", ITEM, "--tier", "worktree", "--enqueue"], 2, "enqueue_not_allowed"),
        (["--input-json", ITEM, "--tier", "recommend", "--review-wave"], 2, "review_wave_needs_analysis"),
    ],
)
def test_create_refusals_that_need_no_server(
    offline: Cli, args: list[str], exit_code: int, code: str
) -> None:
    offline.call("create", *args, "--json").error(exit_code, code)
    assert not offline.state_dir.exists()


def test_unregistered_creator_is_refused_even_before_anything_is_configured(offline: Cli) -> None:
    created = offline.call(
        "create", "--input-json", ITEM, "--tier", "recommend", "--actor", "mallory", "--json"
    )
    assert "mallory" in created.error(3, "unknown_actor")
    assert not offline.state_dir.exists()


def test_an_advisory_pass_without_an_advisory_model_is_refused_at_capture_naming_the_fix(cli: Cli) -> None:
    created = cli.call(
        "create", "--input-json", ITEM, "--tier", "read_only", "--advisory", "security", "--json"
    )
    message = created.error(4, "advisory_model_missing")
    assert "specialists models select" in message and "--advisory provider:name" in message


def test_unregistered_creator_is_refused(cli: Cli) -> None:
    created = cli.call("create", "--input-json", ITEM, "--tier", "recommend", "--actor", "mallory", "--json")
    assert "mallory" in created.error(3, "unknown_actor")


# -------------------------------------------------------------------------- refused by the run's capture


@pytest.fixture(scope="module")
def refusing(temporal_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """A deployment whose capture refuses: automation off, no model selected, ``alice`` registered and
    one allow-listed repository (``gone-service``) whose working tree has since been deleted; its own
    worker and queue."""
    root = tmp_path_factory.mktemp("cli-refusals")
    cli = Cli.isolated(
        root,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"cli-refusals-{uuid.uuid4().hex}",
    )
    assert cli.call("actors", "register", "alice", "--name", "Alice").exit_code == 0
    assert cli.call("policy", "--mode", "off", "--actor", "alice").exit_code == 0
    tree = make_working_tree(root / "gone")
    assert cli.call("repos", "add", "gone-service", str(tree), "--actor", "alice").exit_code == 0
    shutil.rmtree(tree)
    with running_worker(cli.env, root / "worker.log"):
        yield cli


GONE = json.dumps({"title": "Tidy the orders report query", "task_type": "fix", "repo_alias": "gone-service"})
UNKNOWN_PROFILE = ["--override", "no-such-profile", "--override-reason", "a second opinion"]


@pytest.mark.parametrize(
    ("args", "exit_code", "code"),
    [
        (["--input-json", ITEM, "--tier", "worktree"], 3, "unknown_repository"),
        (["--input-json", ITEM, "--tier", "pr_ready"], 3, "unknown_repository"),
        (["--input-json", UNANCHORED, "--tier", "worktree"], 2, "repo_alias_required"),
        (["--input-json", UNANCHORED, "--tier", "pr_ready"], 2, "repo_alias_required"),
        (["--input-json", GONE, "--tier", "worktree"], 4, "repository_unavailable"),
        (["--input-json", ITEM, "--tier", "read_only"], 4, "no_model_selected"),
        (["--input-json", ITEM, "--automatic", "--actor", "alice"], 4, "automation_off"),
        (["--input-json", ITEM, "--tier", "recommend", *UNKNOWN_PROFILE], 3, "unknown_profile"),
    ],
    ids=[
        "worktree-unknown-repository",
        "pr-ready-unknown-repository",
        "worktree-no-alias",
        "pr-ready-no-alias",
        "repository-unavailable",
        "no-model",
        "automation-off",
        "unknown-profile",
    ],
)
def test_a_create_refused_at_capture_exits_with_the_refusal_and_leaves_a_failed_run(
    refusing: Cli, args: list[str], exit_code: int, code: str
) -> None:
    request_id = f"refused-{uuid.uuid4().hex}"
    run_id = run_id_for_request(request_id)

    result, modules = refusing.run_reporting_modules("create", *args, "--request-id", request_id, "--json")

    message = result.error(exit_code, code)
    assert run_id in message
    # The workflow's capture is the only one: the CLI does not even import it.
    assert "catalog.capture" not in modules
    run = refusing.call("show", run_id, "--json").ok()
    assert run["status"] == "failed"
    assert run["error"] == {"type": code, "message": run["error"]["message"], "exit_code": exit_code}
    assert run["error"]["message"] in message
    assert run["contract"] is None and run["contract_sha256"] is None
    failed = [event for event in run["audit"] if event["kind"] == "step_failed"]
    assert [(event["data"]["step"], event["data"]["error_type"]) for event in failed] == [
        ("capture_contract", code)
    ]
    # The same request again meets the same run, and the same refusal.
    again = refusing.call("create", *args, "--request-id", request_id, "--json")
    assert again.error(exit_code, code) == message
    human = refusing.call("create", *args, "--request-id", request_id)
    assert (human.exit_code, human.stdout) == (exit_code, "")
    assert human.stderr == f"error [{code}]: {message}\n"


def test_read_only_without_a_model_says_how_to_select_one(refusing: Cli) -> None:
    result = refusing.call("create", "--input-json", ITEM, "--tier", "read_only", "--json")
    assert "specialists models select" in result.error(4, "no_model_selected")


def test_automatic_run_is_refused_when_automation_is_off(refusing: Cli) -> None:
    refusing.call("create", "--input-json", ITEM, "--automatic", "--actor", "alice", "--json").error(
        4, "automation_off"
    )


def test_a_refused_create_is_listed_as_failed(refusing: Cli) -> None:
    request_id = f"listed-{uuid.uuid4().hex}"
    refusing.call("create", "--input-json", ITEM, "--tier", "read_only", "--request-id", request_id, "--json")
    (row,) = [
        row
        for row in refusing.call("list", "--status", "failed", "--json").ok()["runs"]
        if row["run_id"] == run_id_for_request(request_id)
    ]
    assert row["tier"] == "read_only"


def test_unreachable_temporal_exits_5_and_says_how_to_start_it(offline: Cli) -> None:
    result = offline.run("show", "SOR-0000000000000000", "--json")
    assert "specialists dev" in result.error(5, "temporal_unreachable")

    human = offline.call("show", "SOR-0000000000000000")
    assert human.exit_code == 5
    assert human.stdout == ""
    assert "specialists dev" in human.stderr


def test_show_pack_displays_each_jobs_context_pack_and_plain_show_leaves_them_out(cli: Cli) -> None:
    args = ["create", "--input-json", ITEM, "--tier", "read_only", "--enqueue", "--actor", "alice"]
    created = cli.run(*args, "--wait", "--json").ok()
    run_id = created["run_id"]
    assert "context_packs" not in created
    shown = cli.call("show", run_id, "--pack", "--json").ok()
    packs = shown["context_packs"]
    assert [record["pack"]["job_kind"] for record in packs] == ["analysis", "review"]
    digests = [
        event["data"]["pack_sha256"] for event in shown["audit"] if event["kind"] == "model_job_completed"
    ]
    assert [record["sha256"] for record in packs] == digests
    human = cli.call("show", run_id, "--pack")
    assert human.exit_code == 0, human
    assert "## Stop rule" in human.stdout and packs[0]["sha256"] in human.stdout
