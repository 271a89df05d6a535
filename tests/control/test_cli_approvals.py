"""Worktree runs through the CLI: a contract frozen at the repository's base commit waits for an
approval of its exact digest; ``approve``, ``execute`` refused before approval and ``cancel``; the
approval window; and the action token nowhere in output, history, logs or the store. Executing an
approved run, and what ``show`` prints of it, is test_cli_execute.py's.

One worker process serves the module (its own task queue and state directory, ``alice`` and ``bob``
registered, ``replay:demo`` selected, a real git repository allow-listed as ``orders-service``, the
test token). The approval-window test starts a second worker with a 2-second window on another queue.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.devserver import DevServer
from tests.control.cli_harness import (
    ACTION_TOKEN,
    RUN_ID,
    SHA256_HEX,
    Cli,
    raw_history,
    running_worker,
    token_leaks,
    transcript_texts,
    wait_until,
)
from tests.store.git_repository import git, make_working_tree

ALIAS = "orders-service"
OTHER_TOKEN = "not-this-deployments-token-93d1"
WORK_ITEM = {
    "title": "Add the missing index for the orders report",
    "description": "The nightly orders report scans 90 million rows: index merchant and created_at.",
    "domain": "database",
    "roles": ["dba"],
    "repo_alias": ALIAS,
    "evidence_refs": ["plan:orders-report-explain"],
    "task_type": "fix",
}


class Deployment:
    """The module's CLI, its repository and the ``@file`` argument of its work item."""

    def __init__(self, cli: Cli, repository: Path, item: str) -> None:
        self.cli = cli
        self.repository = repository
        self.item = item
        self.elsewhere: list[str] = []
        """Runs of this store served by another (stopped) worker: `show` cannot query them."""

    def head(self) -> str:
        return git(self.repository, "rev-parse", "HEAD")

    def create(self, cli: Cli | None = None, **changes: Any) -> dict[str, Any]:
        """A new worktree run (``changes`` alter the work item); its ``create --json`` object."""
        item = self.item if not changes else json.dumps({**WORK_ITEM, **changes})
        return (cli or self.cli).call("create", "--input-json", item, "--tier", "worktree", "--json").ok()

    def show(self, run_id: str) -> dict[str, Any]:
        return self.cli.call("show", run_id, "--json").ok()


@pytest.fixture(scope="module")
def deployment(
    temporal_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    root = tmp_path_factory.mktemp("cli-approvals")
    repository = make_working_tree(root / "orders")
    item_file = root / "item.json"
    item_file.write_text(json.dumps(WORK_ITEM), encoding="utf-8")
    cli = Cli.isolated(
        root,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"cli-approvals-{uuid.uuid4().hex}",
    )
    cli.call("actors", "register", "alice", "--name", "Alice", "--json").ok()
    cli.call("actors", "register", "bob", "--name", "Bob", "--actor", "alice", "--json").ok()
    cli.call("models", "select", "--primary", "replay:demo", "--actor", "alice", "--json").ok()
    cli.call("repos", "add", ALIAS, str(repository), "--actor", "alice", "--json").ok()
    with running_worker(cli.env, root / "worker.log"):
        yield Deployment(cli, repository, f"@{item_file}")


@pytest.fixture
def waiting(deployment: Deployment) -> dict[str, Any]:
    """A new worktree run awaiting approval (its ``create --json`` object)."""
    run = deployment.create()
    assert run["status"] == "awaiting_approval", run
    return run


def _new_events(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    assert after["audit"][: len(before["audit"])] == before["audit"]
    return after["audit"][len(before["audit"]) :]


# ------------------------------------------------------------------------------------------ the contract


def test_worktree_run_freezes_the_base_commit_and_awaits_approval(deployment: Deployment) -> None:
    head = deployment.head()
    result = deployment.cli.run("create", "--input-json", deployment.item, "--tier", "worktree", "--json")

    run = result.ok()
    assert re.fullmatch(RUN_ID, run["run_id"])
    assert (run["status"], run["tier"], run["automatic"]) == ("awaiting_approval", "worktree", False)
    contract = run["contract"]
    assert contract["base_commit"] == head
    assert contract["repo_alias"] == ALIAS
    assert contract["tier"] == "worktree"
    assert contract["budgets"]["approval_window_seconds"] == 7 * 24 * 3600
    assert re.fullmatch(SHA256_HEX, run["contract_sha256"])
    assert run["approval"] is None
    (captured,) = [e for e in run["audit"] if e["kind"] == "contract_captured"]
    assert captured["data"]["contract_sha256"] == run["contract_sha256"]
    assert captured["data"]["tier"] == "worktree"

    listed = wait_until(
        lambda: [
            r
            for r in deployment.cli.call("list", "--status", "awaiting_approval", "--json").ok()["runs"]
            if r["run_id"] == run["run_id"]
        ]
    )
    assert listed[0]["tier"] == "worktree"

    # What the operator approves is on `show`: the repository and the full base commit.
    shown = " ".join(deployment.cli.call("show", run["run_id"]).stdout.split())
    assert f"repository │ {ALIAS}" in shown and f"base commit │ {head}" in shown


def test_a_new_commit_changes_new_contracts_only(deployment: Deployment, waiting: dict[str, Any]) -> None:
    (deployment.repository / "docs" / "index.md").write_text("orders\n")
    git(deployment.repository, "add", ".")
    git(deployment.repository, "commit", "--quiet", "--no-gpg-sign", "-m", "second")
    moved = deployment.head()
    assert moved != waiting["contract"]["base_commit"]

    later = deployment.create()

    assert later["contract"]["base_commit"] == moved
    assert later["contract_sha256"] != waiting["contract_sha256"]
    shown = deployment.show(waiting["run_id"])
    assert shown["contract"] == waiting["contract"]
    assert shown["contract_sha256"] == waiting["contract_sha256"]


@pytest.mark.parametrize(
    ("changes", "exit_code", "code"),
    [
        ({"repo_alias": None}, 2, "repo_alias_required"),
        ({"repo_alias": "payments-service"}, 3, "unknown_repository"),
    ],
    ids=["no-alias", "unknown-alias"],
)
def test_worktree_run_needs_an_allow_listed_repository(
    deployment: Deployment, changes: dict[str, Any], exit_code: int, code: str
) -> None:
    item = {key: value for key, value in {**WORK_ITEM, **changes}.items() if value is not None}
    for tier in ("worktree", "pr_ready"):
        request_id = f"refused-{uuid.uuid4().hex}"
        created = deployment.cli.call(
            "create", "--input-json", json.dumps(item), "--tier", tier, "--request-id", request_id, "--json"
        )
        created.error(exit_code, code)
        # The run's capture refused it: the run ended failed, its error naming the refusal; it waits
        # for no approval.
        run = deployment.show(_run_id_for(request_id))
        assert (run["status"], run["error"]["type"], run["error"]["exit_code"]) == ("failed", code, exit_code)
        assert run["contract"] is None and run["approval"] is None


def _run_id_for(request_id: str) -> str:
    return "SOR-" + hashlib.sha256(request_id.encode()).hexdigest()[:16].upper()


# -------------------------------------------------------------------------------------- approve, execute


def test_approve_records_the_digest_refuses_a_second_approval_and_cancel_ends_it(
    deployment: Deployment, waiting: dict[str, Any]
) -> None:
    cli, run_id, digest = deployment.cli, waiting["run_id"], waiting["contract_sha256"]
    cli.call("execute", run_id, "--actor", "alice", "--json").error(4, "not_approved")

    result = cli.run("approve", run_id, "--actor", "alice", "--contract-sha256", digest, "--json")

    approved = result.ok()
    assert approved["status"] == "approved"
    assert approved["approval"]["actor"] == "alice"
    assert approved["approval"]["contract_sha256"] == digest
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT.*Z", approved["approval"]["at"])
    assert approved["contract"] == waiting["contract"]
    new = _new_events(waiting, approved)
    assert ("approved", "alice", {"contract_sha256": digest}) in [
        (e["kind"], e["actor"], e["data"]) for e in new
    ]
    assert ("approved" in [e["kind"] for e in new]) and "action_refused" not in [e["kind"] for e in new]

    cli.as_actor("bob").call(
        "approve", run_id, "--actor", "bob", "--contract-sha256", digest, "--json"
    ).error(4, "not_awaiting_approval")
    still = deployment.show(run_id)
    assert still["status"] == "approved"
    assert still["audit"] == approved["audit"]

    cancelled = (
        cli.as_actor("bob").call("cancel", run_id, "--actor", "bob", "--reason", "not now", "--json").ok()
    )
    assert cancelled["status"] == "cancelled"
    assert ("cancel_requested", "bob") in [(e["kind"], e["actor"]) for e in cancelled["audit"]]
    cli.call("execute", run_id, "--actor", "alice", "--json").error(4, "not_approved")
    cli.call("cancel", run_id, "--actor", "alice", "--json").error(4, "run_finished")
    cli.call("approve", run_id, "--actor", "alice", "--contract-sha256", digest, "--json").error(
        4, "run_finished"
    )


def test_approve_and_execute_in_a_repository_deactivated_since_capture_are_refused_before_anything_is_sent(
    deployment: Deployment, tmp_path: Path
) -> None:
    cli, alias = deployment.cli, f"archive-{uuid.uuid4().hex[:8]}"
    cli.call(
        "repos", "add", alias, str(make_working_tree(tmp_path / "archive")), "--actor", "alice", "--json"
    ).ok()
    waiting = deployment.create(repo_alias=alias)
    approved = deployment.create(repo_alias=alias)
    cli.call(
        "approve", approved["run_id"], "--actor", "alice", "--contract-sha256", approved["contract_sha256"],
        "--json",
    ).ok()  # fmt: skip
    before = {run["run_id"]: deployment.show(run["run_id"]) for run in (waiting, approved)}
    cli.call("repos", "deactivate", alias, "--actor", "alice", "--json").ok()

    refused = cli.call(
        "approve", waiting["run_id"], "--actor", "alice", "--contract-sha256", waiting["contract_sha256"],
        "--json",
    ).error(4, "repository_deactivated")  # fmt: skip
    cli.call("execute", approved["run_id"], "--actor", "alice", "--json").error(4, "repository_deactivated")

    assert alias in refused
    for run_id, shown in before.items():  # nothing reached either run: no refusal in its audit trail
        after = deployment.show(run_id)
        assert (after["status"], after["audit"]) == (shown["status"], shown["audit"])
        cli.call("cancel", run_id, "--actor", "alice", "--json").ok()


def test_approval_of_another_digest_is_refused_and_not_recorded(
    deployment: Deployment, waiting: dict[str, Any]
) -> None:
    run_id, digest = waiting["run_id"], waiting["contract_sha256"]
    stale = deployment.create()["contract_sha256"]  # a real digest, of another run's contract
    for wrong in (stale, "0" * 64):
        message = deployment.cli.call(
            "approve", run_id, "--actor", "alice", "--contract-sha256", wrong, "--json"
        ).error(4, "stale_contract_digest")
        assert digest in message

    shown = deployment.show(run_id)
    assert (shown["status"], shown["approval"]) == ("awaiting_approval", None)
    assert shown["audit"] == waiting["audit"]
    approved = deployment.cli.call(
        "approve", run_id, "--actor", "alice", "--contract-sha256", digest, "--json"
    )
    assert approved.ok()["status"] == "approved"
    deployment.cli.call("cancel", run_id, "--actor", "alice", "--json").ok()


@pytest.mark.parametrize(
    ("args", "exit_code", "code"),
    [
        (["--actor", "mallory", "--contract-sha256", "{digest}"], 3, "unknown_actor"),
        (["--contract-sha256", "{digest}"], 2, "actor_required"),
        (["--actor", "alice"], 2, "contract_digest_required"),
        (["--actor", "alice", "--contract-sha256", "{upper}"], 2, "contract_digest_required"),
        (["--actor", "alice", "--contract-sha256", "{short}"], 2, "contract_digest_required"),
        (["--actor", "alice", "--contract-sha256", "sha256:{digest}"], 2, "contract_digest_required"),
        (["--actor", "alice", "--contract-sha256", ""], 2, "contract_digest_required"),
    ],
    ids=["unregistered", "no-actor", "no-digest", "upper-case", "63-digits", "prefixed", "empty"],
)
def test_malformed_approval_is_refused_before_the_run_is_asked(
    deployment: Deployment, waiting: dict[str, Any], args: list[str], exit_code: int, code: str
) -> None:
    digest = waiting["contract_sha256"]
    filled = [arg.format(digest=digest, upper=digest.upper(), short=digest[:63]) for arg in args]

    deployment.cli.call("approve", waiting["run_id"], *filled, "--json").error(exit_code, code)

    shown = deployment.show(waiting["run_id"])
    assert (shown["status"], shown["audit"]) == ("awaiting_approval", waiting["audit"])


def test_approve_of_unknown_or_malformed_run_ids(deployment: Deployment) -> None:
    digest = "a" * 64
    approve = ("--actor", "alice", "--contract-sha256", digest, "--json")
    deployment.cli.call("approve", "SOR-0000000000000000", *approve).error(3, "unknown_run")
    deployment.cli.call("approve", "SOR-1", *approve).error(2, "invalid_run_id")
    deployment.cli.call("execute", "SOR-0000000000000000", "--actor", "alice", "--json").error(
        3, "unknown_run"
    )
    deployment.cli.call("execute", "SOR-1", "--actor", "alice", "--json").error(2, "invalid_run_id")
    deployment.cli.call("execute", "SOR-0000000000000000", "--json").error(2, "actor_required")


def test_approve_and_execute_on_a_read_only_run_are_refused(deployment: Deployment) -> None:
    cli = deployment.cli
    run = cli.call("create", "--input-json", deployment.item, "--tier", "read_only", "--json").ok()
    assert run["status"] == "ready"
    # A read_only run on an allow-listed repository freezes its commit too (its context packs read there).
    assert run["contract"]["base_commit"] is not None

    approve = ("--actor", "alice", "--contract-sha256", run["contract_sha256"], "--json")
    cli.call("approve", run["run_id"], *approve).error(4, "not_awaiting_approval")
    cli.call("execute", run["run_id"], "--actor", "alice", "--json").error(4, "not_approved")
    assert deployment.show(run["run_id"])["audit"] == run["audit"]
    cli.call("cancel", run["run_id"], "--actor", "alice", "--json").ok()


def test_approval_with_another_key_or_none_is_refused_and_changes_nothing(
    deployment: Deployment, waiting: dict[str, Any]
) -> None:
    run_id, digest = waiting["run_id"], waiting["contract_sha256"]
    approve = ("approve", run_id, "--actor", "alice", "--contract-sha256", digest, "--json")

    # Refused by the CLI before anything is sent (a worker refuses such a proof too, audited:
    # tests/control/test_cli_identity.py).
    deployment.cli.stranger().call(*approve).error(4, "actor_key_mismatch")
    deployment.cli.without_key().call(*approve).error(4, "actor_key_missing")

    shown = deployment.show(run_id)
    assert (shown["status"], shown["approval"]) == ("awaiting_approval", None)
    assert _new_events(waiting, shown) == []

    assert deployment.cli.call(*approve).ok()["status"] == "approved"
    deployment.cli.call("cancel", run_id, "--actor", "alice", "--json").ok()


def test_waiting_run_is_cancelled(deployment: Deployment, waiting: dict[str, Any]) -> None:
    cancelled = (
        deployment.cli.as_actor("bob").call("cancel", waiting["run_id"], "--actor", "bob", "--json").ok()
    )
    assert (cancelled["status"], cancelled["approval"]) == ("cancelled", None)
    deployment.cli.call(
        "approve",
        waiting["run_id"],
        "--actor",
        "alice",
        "--contract-sha256",
        waiting["contract_sha256"],
        "--json",
    ).error(4, "run_finished")


# ------------------------------------------------------------------------------------- approval window


def test_run_not_approved_within_the_window_expires(deployment: Deployment) -> None:
    cli = deployment.cli.with_env(SPECIALISTS_TASK_QUEUE=f"cli-approvals-window-{uuid.uuid4().hex}")
    log = deployment.cli.cwd / "window-worker.log"
    with running_worker({**cli.env, "SPECIALISTS_APPROVAL_WINDOW_SECONDS": "2"}, log):
        run = deployment.create(cli)
        deployment.elsewhere.append(run["run_id"])
        assert run["status"] == "awaiting_approval"
        assert run["contract"]["budgets"]["approval_window_seconds"] == 2

        expired = wait_until(lambda: (view := deployment.show(run["run_id"]))["status"] == "expired" and view)

        assert expired["error"]["type"] == "approval_window_expired"
        assert expired["approval"] is None
        kinds = [e["kind"] for e in expired["audit"]]
        assert "approval_window_expired" in kinds and "approved" not in kinds
        cli.call(
            "approve",
            run["run_id"],
            "--actor",
            "alice",
            "--contract-sha256",
            run["contract_sha256"],
            "--json",
        ).error(4, "run_finished")
        cli.call("execute", run["run_id"], "--actor", "alice", "--json").error(4, "not_approved")


# ------------------------------------------------------------------------------------------------ secrets


def test_the_token_appears_nowhere(deployment: Deployment) -> None:
    """After this module's commands: not in CLI output, `show --history`, Temporal history, the
    workers' logs or the store's files."""
    cli = deployment.cli
    run = deployment.create()
    approve = ("approve", run["run_id"], "--actor", "alice", "--contract-sha256", run["contract_sha256"])
    assert cli.call(*approve).exit_code == 0
    assert cli.run("show", run["run_id"], "--history").exit_code == 0
    assert cli.call("cancel", run["run_id"], "--actor", "alice").exit_code == 0

    run_ids = [r["run_id"] for r in cli.call("list", "--limit", "1000", "--json").ok()["runs"]]
    assert run["run_id"] in run_ids
    served = [r for r in run_ids if r not in deployment.elsewhere]
    histories = [cli.call("show", r, "--history", "--json").ok() for r in served]
    assert all(h["history"] for h in histories)
    address = cli.env["SPECIALISTS_TEMPORAL_ADDRESS"]
    blobs = [raw_history(address, r) for r in run_ids]
    # The places searched hold plain text: what is not found there is not there.
    assert token_leaks([run["contract_sha256"]], blobs=blobs)
    assert token_leaks([run["run_id"]], files=[cli.state_dir])
    leaks = token_leaks(
        [ACTION_TOKEN, OTHER_TOKEN],
        texts=[*transcript_texts(cli), *(json.dumps(h) for h in histories)],
        files=[cli.state_dir, *cli.cwd.glob("*worker.log")],
        blobs=blobs,
    )
    assert leaks == []
    assert len(cli.transcript) > 30
