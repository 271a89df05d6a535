"""``specialists worktrees`` (read-only listing) and ``specialists worktrees prune RUN --actor A``
(protected, through a worker) as an operator runs them.

One worker process serves the module (its own task queue and state directory, ``alice`` registered,
``replay:demo`` selected, the test token); ``orders-service`` is a git repository the ``replay:demo``
change patch applies to. Runs other than the executed one exist only in the projection (written here)
with worktrees made by hand, as a crash or an earlier attempt leaves them.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from activities.worktree_lifecycle import create_attempt_worktree
from contracts.enums import Tier
from contracts.ids import new_run_id
from contracts.runs import RunStatus, RunSummary
from contracts.worktree import WorktreeAttempt
from infra.devserver import DevServer
from store.database import open_store
from tests.control.cli_harness import SLOW_QUERY, Cli, running_worker
from tests.store.git_repository import git

ALIAS = "orders-service"
OTHER_TOKEN = "not-this-deployments-token-9c1d"
README = "# orders-service\n\nReport queries live in reports.sql.\n"
REPORTS_SQL = "SELECT * FROM orders WHERE customer_id = $1 AND created_at >= $2 ORDER BY created_at;\n"
ROW_KEYS = {
    "run_id",
    "probe",
    "attempt",
    "path",
    "exists",
    "evidence_dir",
    "evidence_exists",
    "repository",
    "git_known",
    "locked",
    "lock_reason",
    "run_status",
    "status_source",
}


class Deployment:
    def __init__(self, cli: Cli, repository: Path) -> None:
        self.cli = cli
        self.repository = repository

    def project(self, status: RunStatus) -> str:
        """A new run only the projection knows, in ``status``; its id."""
        run_id = new_run_id()
        now = dt.datetime.now(dt.UTC)
        summary = RunSummary(
            run_id=run_id,
            status=status,
            tier=Tier.WORKTREE,
            automatic=False,
            primary=None,
            reviewer=None,
            risk=None,
            repo_alias=ALIAS,
            title="a worktree run",
            contract_sha256=None,
            request_id=None,
            created_at=now,
            updated_at=now,
        )
        with open_store(f"sqlite:///{self.cli.database}", create=False) as store:
            store.project_run(summary, [])
        return run_id

    def worktree(self, run_id: str) -> WorktreeAttempt:
        """A new attempt of ``run_id``, made as the worker makes one (locked, detached)."""
        head = git(self.repository, "rev-parse", "HEAD")
        return create_attempt_worktree(self.repository, head, self.cli.state_dir, run_id)

    def listed(self, run_id: str) -> list[dict[str, Any]]:
        rows = self.cli.call("worktrees", "--json").ok()["worktrees"]
        assert all(set(row) == ROW_KEYS and row["probe"] is None for row in rows)
        return [row for row in rows if row["run_id"] == run_id]

    def git_lists(self) -> list[str]:
        lines = git(self.repository, "worktree", "list", "--porcelain").splitlines()
        paths = [line.removeprefix("worktree ") for line in lines if line.startswith("worktree ")]
        return [path for path in paths if Path(path) != self.repository.resolve()]


@pytest.fixture(scope="module")
def deployment(
    temporal_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    root = tmp_path_factory.mktemp("cli-worktrees")
    repository = root / "orders"
    repository.mkdir()
    git(repository, "init", "--quiet", "--initial-branch=main")
    (repository / "README.md").write_text(README)
    (repository / "reports.sql").write_text(REPORTS_SQL)
    git(repository, "add", ".")
    git(repository, "commit", "--quiet", "--no-gpg-sign", "-m", "orders report")
    cli = Cli.isolated(
        root,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"cli-worktrees-{uuid.uuid4().hex}",
    )
    cli.call("actors", "register", "alice", "--name", "Alice", "--json").ok()
    cli.call("models", "select", "--primary", "replay:demo", "--actor", "alice", "--json").ok()
    cli.call("repos", "add", ALIAS, str(repository), "--actor", "alice", "--json").ok()
    with running_worker(cli.env, root / "worker.log"):
        yield Deployment(cli, repository)


def prune(deployment: Deployment, run_id: str, cli: Cli | None = None) -> Any:
    return (cli or deployment.cli).call("worktrees", "prune", run_id, "--actor", "alice", "--json")


# ------------------------------------------------------------------------------------ the executed run


def test_an_executed_run_is_listed_with_its_state_and_pruned_only_once_decided(
    deployment: Deployment,
) -> None:
    cli = deployment.cli
    item = {**json.loads(SLOW_QUERY.read_text(encoding="utf-8")), "repo_alias": ALIAS}
    run = cli.call("create", "--input-json", json.dumps(item), "--tier", "worktree", "--json").ok()
    run_id = run["run_id"]
    approve = ("approve", run_id, "--actor", "alice", "--contract-sha256", run["contract_sha256"])
    cli.call(*approve, "--json").ok()
    executed = cli.run("execute", run_id, "--actor", "alice", "--wait", "--json").ok()
    assert executed["status"] == "awaiting_decision", executed

    (row,) = deployment.listed(run_id)
    worktree = cli.state_dir.resolve() / "worktrees" / run_id / "attempt-1"
    assert row == {
        "run_id": run_id,
        "probe": None,
        "attempt": 1,
        "path": str(worktree),
        "exists": True,
        "evidence_dir": f"{worktree}.evidence",
        "evidence_exists": True,
        "repository": str(deployment.repository.resolve()),
        "git_known": True,
        "locked": True,
        "lock_reason": f"specialist run {run_id} attempt 1",
        "run_status": "awaiting_decision",
        "status_source": "temporal",
    }

    prune(deployment, run_id).error(4, "run_not_finished")
    assert worktree.is_dir() and deployment.git_lists() == [str(worktree)]

    cli.call("decide", run_id, "--actor", "alice", "--accept", "--json").ok()
    pruned = prune(deployment, run_id).ok()
    assert pruned["run_id"] == run_id and pruned["run_status"] == "accepted"
    assert pruned["unreachable_hosts"] == [] and len(pruned["hosts"]) == 1
    (attempt,) = pruned["pruned"]
    assert (attempt["attempt"], attempt["was_locked"], attempt["removed_worktree"]) == (1, True, True)
    assert (attempt["removed_from_git"], attempt["removed_evidence"]) == (True, True)
    assert not worktree.exists() and not Path(f"{worktree}.evidence").exists()
    assert deployment.git_lists() == []
    assert deployment.listed(run_id) == []


# ------------------------------------------------------------------------------------------- listing


def test_the_run_state_comes_from_the_projection_or_is_unknown(deployment: Deployment) -> None:
    finished = deployment.project(RunStatus.FAILED)
    deployment.worktree(finished)
    nowhere = new_run_id()
    deployment.worktree(nowhere)
    (projected,) = deployment.listed(finished)
    (unknown,) = deployment.listed(nowhere)
    assert (projected["run_status"], projected["status_source"]) == ("failed", "projection")
    assert (unknown["run_status"], unknown["status_source"]) == ("unknown", "none")


def test_listing_needs_no_token_nor_temporal(deployment: Deployment) -> None:
    run_id = deployment.project(RunStatus.CANCELLED)
    deployment.worktree(run_id)
    offline = deployment.cli.without_token().with_env(SPECIALISTS_TEMPORAL_ADDRESS="127.0.0.1:1")
    rows = offline.call("worktrees", "--json").ok()["worktrees"]
    (row,) = [row for row in rows if row["run_id"] == run_id]
    assert (row["run_status"], row["status_source"], row["locked"]) == ("cancelled", "projection", True)


def test_the_human_listing_is_a_table_of_the_attempts(deployment: Deployment) -> None:
    run_id = deployment.project(RunStatus.REJECTED)
    deployment.worktree(run_id)
    result = deployment.cli.call("worktrees")
    assert result.exit_code == 0, str(result)
    line = next(line for line in result.stdout.splitlines() if run_id in line)
    assert "rejected" in line and "preserved worktrees" in result.stdout


def test_an_empty_state_directory_lists_no_worktrees(tmp_path: Path) -> None:
    assert Cli.isolated(tmp_path).call("worktrees", "--json").ok() == {"worktrees": []}


# ------------------------------------------------------------------------------------------- leftovers


def test_deleted_and_locked_leftovers_are_listed_never_block_a_new_attempt_and_are_pruned(
    deployment: Deployment,
) -> None:
    run_id = deployment.project(RunStatus.FAILED)
    deleted = deployment.worktree(run_id)
    locked = deployment.worktree(run_id)
    shutil.rmtree(deleted.worktree)
    rows = deployment.listed(run_id)
    assert [(r["attempt"], r["exists"], r["git_known"], r["locked"]) for r in rows] == [
        (1, False, True, True),
        (2, True, True, True),
    ]
    fresh = deployment.worktree(run_id)
    other = deployment.worktree(deployment.project(RunStatus.FAILED))
    assert (fresh.attempt, other.attempt) == (3, 1)

    pruned = prune(deployment, run_id).ok()["pruned"]
    assert [(p["attempt"], p["existed"], p["removed_from_git"]) for p in pruned] == [
        (1, False, True),
        (2, True, True),
        (3, True, True),
    ]
    assert deployment.listed(run_id) == []
    assert not locked.worktree.exists()
    assert str(other.worktree) in deployment.git_lists()
    assert not any(run_id in path for path in deployment.git_lists())


# -------------------------------------------------------------------------------------------- refusals


def test_prune_of_a_run_that_has_not_finished_is_refused_and_removes_nothing(deployment: Deployment) -> None:
    run_id = deployment.project(RunStatus.RUNNING)
    made = deployment.worktree(run_id)
    message = prune(deployment, run_id).error(4, "run_not_finished")
    assert "running" in message
    assert made.worktree.is_dir() and made.evidence_dir.is_dir()
    (row,) = deployment.listed(run_id)
    assert row["git_known"] and row["locked"]


def test_prune_without_a_valid_proof_is_refused_and_removes_nothing(deployment: Deployment) -> None:
    run_id = deployment.project(RunStatus.FAILED)
    made = deployment.worktree(run_id)
    prune(deployment, run_id, deployment.cli.without_key()).error(4, "actor_key_missing")
    prune(deployment, run_id, deployment.cli.stranger()).error(4, "actor_key_mismatch")
    assert made.worktree.is_dir() and made.evidence_dir.is_dir()
    assert str(made.worktree) in deployment.git_lists()


@pytest.mark.parametrize(
    ("args", "exit_code", "code"),
    [
        (["not-a-run", "--actor", "alice"], 2, "invalid_run_id"),
        ([None], 2, "actor_required"),
        ([None, "--actor", "mallory"], 3, "unknown_actor"),
    ],
    ids=["bad-run-id", "no-actor", "unregistered"],
)
def test_prune_checks_its_input_before_anything_is_started(
    deployment: Deployment, args: list[str | None], exit_code: int, code: str
) -> None:
    run_id = new_run_id()
    argv = [run_id if arg is None else arg for arg in args]
    deployment.cli.call("worktrees", "prune", *argv, "--json").error(exit_code, code)
