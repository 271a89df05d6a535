"""Executing approved worktree runs through the CLI: ``execute`` (protected, accepted once, its proof
bound to the approved contract digest), ``execute --wait``, and what ``show`` prints of an execution —
changed files, numstat and digests always, the diff with ``--diff``, the worktree location only with
``--recovery``.

One worker process serves the module (its own task queue and state directory, ``alice`` registered,
``replay:demo`` selected, the test token). The ``replay:demo`` recordings answer the slow-query work
item's change job with a patch written for the demo repository of ``control/demo.py`` (a README.md and
a reports.sql): ``orders-service`` is a git repository with that content, so the patch applies;
``orders-elsewhere`` is one without it, where the patch does not apply.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.devserver import DevServer
from tests.control.cli_harness import SHA256_HEX, SLOW_QUERY, Cli, running_worker
from tests.store.git_repository import git, make_orders_repository, make_working_tree

ALIAS = "orders-service"
ELSEWHERE = "orders-elsewhere"
OTHER_TOKEN = "not-this-deployments-token-4be2"
MIGRATION = "migrations/0001_orders_customer_created_idx.sql"
SETTLED = {"awaiting_decision", "accepted", "rejected", "failed", "cancelled", "expired"}


class Deployment:
    """The module's CLI and repositories."""

    def __init__(self, cli: Cli, repository: Path) -> None:
        self.cli = cli
        self.repository = repository

    def create(self, *, alias: str = ALIAS, tier: str = "worktree") -> dict[str, Any]:
        """A new run of the slow-query work item on ``alias``; its ``create --json`` object."""
        item = {**json.loads(SLOW_QUERY.read_text(encoding="utf-8")), "repo_alias": alias}
        created = self.cli.call("create", "--input-json", json.dumps(item), "--tier", tier, "--json").ok()
        assert created["status"] == "awaiting_approval", created
        return created

    def approved(self, *, alias: str = ALIAS, tier: str = "worktree") -> dict[str, Any]:
        """A new run, approved by alice; its ``approve --json`` object."""
        run = self.create(alias=alias, tier=tier)
        approve = ("approve", run["run_id"], "--actor", "alice", "--contract-sha256", run["contract_sha256"])
        approved = self.cli.call(*approve, "--json").ok()
        assert approved["status"] == "approved", approved
        return approved

    def show(self, run_id: str, *flags: str) -> dict[str, Any]:
        return self.cli.call("show", run_id, *flags, "--json").ok()

    def show_text(self, run_id: str, *flags: str) -> str:
        result = self.cli.call("show", run_id, *flags)
        assert result.exit_code == 0, str(result)
        return result.stdout


@pytest.fixture(scope="module")
def deployment(
    temporal_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    root = tmp_path_factory.mktemp("cli-execute")
    repository = make_orders_repository(root / "orders")
    elsewhere = make_working_tree(root / "elsewhere")
    cli = Cli.isolated(
        root,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"cli-execute-{uuid.uuid4().hex}",
    )
    cli.call("actors", "register", "alice", "--name", "Alice", "--json").ok()
    cli.call("models", "select", "--primary", "replay:demo", "--actor", "alice", "--json").ok()
    cli.call("repos", "add", ALIAS, str(repository), "--actor", "alice", "--json").ok()
    cli.call("repos", "add", ELSEWHERE, str(elsewhere), "--actor", "alice", "--json").ok()
    with running_worker(cli.env, root / "worker.log"):
        yield Deployment(cli, repository)


@pytest.fixture(scope="module")
def executed(deployment: Deployment) -> dict[str, Any]:
    """An approved worktree run executed with ``execute --wait --json`` (a separate process): the
    ``approve --json`` object as ``approved``, the ``execute`` object as ``run``, and the base commit."""
    approved = deployment.approved()
    result = deployment.cli.run("execute", approved["run_id"], "--actor", "alice", "--wait", "--json")
    return {"approved": approved, "run": result.ok(), "base": approved["contract"]["base_commit"]}


def _kinds(view: dict[str, Any]) -> list[str]:
    return [event["kind"] for event in view["audit"]]


# ------------------------------------------------------------------------------------------ refusals


def test_execute_of_a_run_awaiting_approval_is_refused_not_approved_and_changes_nothing(
    deployment: Deployment,
) -> None:
    run = deployment.create()
    execute = ("execute", run["run_id"], "--actor", "alice", "--json")

    message = deployment.cli.call(*execute).error(4, "not_approved")
    assert "awaiting_approval" in message and "approve" in message

    shown = deployment.show(run["run_id"])
    assert (shown["status"], shown["audit"], shown["execution"]) == ("awaiting_approval", run["audit"], None)
    deployment.cli.call("cancel", run["run_id"], "--actor", "alice", "--json").ok()


@pytest.mark.parametrize(
    ("args", "exit_code", "code"),
    [
        (["--actor", "mallory"], 3, "unknown_actor"),
        ([], 2, "actor_required"),
        (["--actor", " "], 2, "actor_required"),
    ],
    ids=["unregistered", "no-actor", "blank-actor"],
)
def test_execute_by_an_unregistered_or_missing_actor_is_refused_before_the_run_is_asked(
    deployment: Deployment, args: list[str], exit_code: int, code: str
) -> None:
    run = deployment.approved()

    deployment.cli.call("execute", run["run_id"], *args, "--json").error(exit_code, code)

    shown = deployment.show(run["run_id"])
    assert (shown["status"], shown["audit"], shown["execution"]) == ("approved", run["audit"], None)
    deployment.cli.call("cancel", run["run_id"], "--actor", "alice", "--json").ok()


def test_execute_with_another_key_or_none_is_refused_and_the_run_stays_approved(
    deployment: Deployment,
) -> None:
    run = deployment.approved()
    execute = ("execute", run["run_id"], "--actor", "alice", "--json")

    deployment.cli.stranger().call(*execute).error(4, "actor_key_mismatch")
    deployment.cli.without_key().call(*execute).error(4, "actor_key_missing")

    shown = deployment.show(run["run_id"])
    assert shown["status"] == "approved" and "execute_requested" not in _kinds(shown)
    assert [e for e in shown["audit"] if e["kind"] == "action_refused"] == []
    deployment.cli.call("cancel", run["run_id"], "--actor", "alice", "--json").ok()


def test_execute_wait_of_an_approved_pr_ready_run_writes_its_patch_file_and_withholds_its_path(
    deployment: Deployment,
) -> None:
    run = deployment.approved(tier="pr_ready")

    result = deployment.cli.run("execute", run["run_id"], "--actor", "alice", "--wait", "--json")

    view = result.ok()
    assert view["status"] == "awaiting_decision", view["error"]
    execution = view["execution"]
    assert execution["verification"] == []  # the repository has no verify commands
    assert re.fullmatch(SHA256_HEX, execution["pr_patch"]["sha256"]) and execution["pr_patch"]["path"] is None


def test_execute_of_unknown_or_malformed_run_ids_is_refused(deployment: Deployment) -> None:
    cli = deployment.cli
    cli.call("execute", "SOR-0000000000000000", "--actor", "alice", "--json").error(3, "unknown_run")
    cli.call("execute", "SOR-1", "--actor", "alice", "--json").error(2, "invalid_run_id")


# ------------------------------------------------------------------------------------- the good path


def test_execute_wait_runs_an_approved_worktree_run_to_awaiting_decision_with_gits_evidence(
    executed: dict[str, Any],
) -> None:
    run, approved = executed["run"], executed["approved"]

    assert run["status"] == "awaiting_decision", run["error"]
    assert run["audit"][: len(approved["audit"])] == approved["audit"]
    (requested,) = [e for e in run["audit"] if e["kind"] == "execute_requested"]
    assert requested["actor"] == "alice"
    assert requested["data"]["contract_sha256"] == approved["contract_sha256"]
    assert "worktree_executed" in _kinds(run) and "action_refused" not in _kinds(run)
    execution = run["execution"]
    assert execution["actor"] == "alice" and execution["failure_type"] is None
    evidence = execution["evidence"]
    assert evidence["base_commit"] == executed["base"] and evidence["files_changed"] == 2
    assert {(f["path"], f["status"]) for f in evidence["files"]} == {
        ("README.md", "modified"),
        (MIGRATION, "added"),
    }
    assert {(n["path"], n["added"], n["deleted"]) for n in evidence["numstat"]} == {
        ("README.md", 2, 0),
        (MIGRATION, 3, 0),
    }
    assert re.fullmatch(SHA256_HEX, evidence["diff_sha256"]) and evidence["diff_bytes"] > 0
    # Neither the diff nor the worktree's location is printed unless asked for.
    assert (evidence["diff"], evidence["diff_path"], execution["location"]) == (None, None, None)
    assert run["review"] is not None and run["review"]["verdict"] is not None


def test_execute_without_wait_prints_the_run_once_it_has_left_approved(deployment: Deployment) -> None:
    run = deployment.approved()

    result = deployment.cli.call("execute", run["run_id"], "--actor", "alice", "--json")

    view = result.ok()
    assert view["status"] in {"queued", "running", "verifying", "reviewing", *SETTLED}
    assert "execute_requested" in _kinds(view)


def test_execute_wait_prints_each_status_on_stderr_and_the_run_on_stdout(deployment: Deployment) -> None:
    run_id = deployment.approved()["run_id"]

    result = deployment.cli.run("execute", run_id, "--actor", "alice", "--wait")

    assert result.exit_code == 0, str(result)
    progress = result.stderr.splitlines()
    assert progress[-1] == f"{run_id}: awaiting_decision", str(result)
    assert all(re.fullmatch(rf"{run_id}: [a-z_]+", line) for line in progress)
    assert "changed files" in result.stdout and "README.md" in result.stdout


def test_a_second_execute_is_refused_already_executing_and_changes_nothing(
    deployment: Deployment, executed: dict[str, Any]
) -> None:
    run_id = executed["run"]["run_id"]
    before = deployment.show(run_id)

    message = deployment.cli.call("execute", run_id, "--actor", "alice", "--json").error(
        4, "already_executing"
    )

    assert "awaiting_decision" in message
    assert deployment.show(run_id)["audit"] == before["audit"]


# ----------------------------------------------------------------------------------------------- show


def _location(deployment: Deployment, run_id: str) -> dict[str, Any]:
    location = deployment.show(run_id, "--recovery")["execution"]["location"]
    assert isinstance(location, dict)
    return location


def test_show_prints_changed_files_numstat_digest_and_review_of_a_worktree_run(
    deployment: Deployment, executed: dict[str, Any]
) -> None:
    run = executed["run"]
    evidence = run["execution"]["evidence"]

    out = deployment.show_text(run["run_id"])

    assert re.search(r"modified\s*│\s*README\.md\s*│\s*\+2\s*│\s*-0", out), out
    assert re.search(rf"added\s*│\s*{re.escape(MIGRATION)}\s*│\s*\+3\s*│\s*-0", out), out
    assert re.search(r"files changed\s*│\s*2\b", out), out
    assert evidence["diff_sha256"] in out and f"{evidence['diff_bytes']} bytes" in out
    assert "executed by" in out and "alice" in out
    assert re.search(r"review: confidence \d\.\d\d", out), out
    assert "failure type" not in out
    assert "CREATE INDEX" not in out, "the diff is printed with --diff only"


def test_show_and_show_json_do_not_contain_the_worktree_location(
    deployment: Deployment, executed: dict[str, Any]
) -> None:
    run_id = executed["run"]["run_id"]
    location = _location(deployment, run_id)

    texts = {
        "show": deployment.show_text(run_id),
        "show --diff": deployment.show_text(run_id, "--diff"),
        "show --json": deployment.cli.call("show", run_id, "--json").stdout,
        "show --json --diff": deployment.cli.call("show", run_id, "--json", "--diff").stdout,
        "execute --wait --json": json.dumps(executed["run"]),
    }

    for name, text in texts.items():
        for path in (location["worktree"], location["evidence_dir"]):
            assert path not in text, name
    assert "show --recovery" in texts["show"]
    assert deployment.show(run_id)["execution"]["location"] is None


def test_show_recovery_prints_the_detached_worktree_location(
    deployment: Deployment, executed: dict[str, Any]
) -> None:
    run_id, base = executed["run"]["run_id"], executed["base"]

    location = _location(deployment, run_id)
    out = deployment.show_text(run_id, "--recovery")

    worktree = Path(location["worktree"])
    assert worktree.parent == deployment.cli.state_dir / "worktrees" / run_id
    assert (location["attempt"], location["base_commit"]) == (1, base)
    assert location["repository"] == str(deployment.repository)
    assert Path(location["evidence_dir"]).is_dir()
    for value in (location["worktree"], location["evidence_dir"], location["repository"], base):
        assert value in out
    assert "detached at the base commit (no branch)" in out
    # What show says is so: the worktree is a detached checkout of the base commit holding the change.
    assert git(worktree, "rev-parse", "HEAD") == base
    assert git(worktree, "branch", "--show-current") == ""
    assert (worktree / MIGRATION).is_file()
    assert git(deployment.repository, "status", "--porcelain") == ""


def test_show_diff_prints_the_full_diff_as_git_computed_it(
    deployment: Deployment, executed: dict[str, Any]
) -> None:
    run_id = executed["run"]["run_id"]
    evidence = deployment.show(run_id, "--diff")["execution"]["evidence"]

    out = deployment.show_text(run_id, "--diff")

    assert evidence["diff"] is not None and evidence["diff_path"] is None
    assert "+CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_customer_created_idx" in evidence["diff"]
    assert f"diff (sha256 {evidence['diff_sha256']}, {evidence['diff_bytes']} bytes):" in out
    assert "+CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_customer_created_idx" in out
    assert f"diff --git a/{MIGRATION} b/{MIGRATION}" in out


# ---------------------------------------------------------------------------------------- fail closed


def test_a_patch_that_does_not_apply_fails_the_run_closed_and_show_names_the_failure(
    deployment: Deployment,
) -> None:
    run_id = deployment.approved(alias=ELSEWHERE)["run_id"]

    result = deployment.cli.run("execute", run_id, "--actor", "alice", "--wait", "--json")

    assert result.exit_code == 7, str(result)  # the run ended without success: its view, then exit 7
    assert f"run {run_id} ended failed: patch_does_not_apply: " in result.stderr, str(result)
    failed = result.json()
    assert failed["status"] == "failed"
    assert failed["error"]["type"] == "patch_does_not_apply"
    assert failed["execution"]["failure_type"] == "patch_does_not_apply"
    assert (failed["execution"]["evidence"], failed["execution"]["location"]) == (None, None)
    assert failed["review"] is None
    out = deployment.show_text(run_id)
    assert re.search(r"failure type\s*│\s*patch_does_not_apply", out), out
    location = _location(deployment, run_id)
    assert location["worktree"] not in out
    assert Path(location["worktree"]).is_dir(), "a failed attempt's worktree is kept"
    assert location["worktree"] in deployment.show_text(run_id, "--recovery")
    deployment.cli.call("execute", run_id, "--actor", "alice", "--json").error(4, "already_executing")
