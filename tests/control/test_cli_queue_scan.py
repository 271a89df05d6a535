"""``specialists queue scan`` against a real Temporal dev server and a worker process: a scan of a
repository with every kind of evidence proposes each finding once, a second scan proposes nothing
again, a changed source updates its proposal, and an unknown alias is exit 3."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from infra.devserver import DevServer
from tests.activities.intake_repository import make_intake_repository
from tests.control.cli_harness import Cli, running_worker
from tests.store.git_repository import git


@pytest.fixture(scope="module")
def scanned(
    temporal_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Cli, Path]]:
    root = tmp_path_factory.mktemp("cli-queue-scan")
    cli = Cli.isolated(
        root,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"cli-queue-scan-{uuid.uuid4().hex}",
    )
    assert cli.call("actors", "register", "alice", "--name", "Alice").exit_code == 0
    repos = root / "repos"
    repos.mkdir()
    repo = make_intake_repository(repos)
    cli.call("repos", "add", "demo", str(repo), "--actor", "alice", "--json").ok()
    with running_worker(cli.env, root / "worker.log"):
        yield cli, repo


def test_scan_proposes_each_finding_once_and_a_changed_source_updates_it(scanned: tuple[Cli, Path]) -> None:
    cli, repo = scanned
    first = cli.call("queue", "scan", "demo", "--actor", "alice", "--json").ok()
    kinds = {row["sub_kind"] for row in first["proposed"]}
    assert kinds == {
        "uncommitted",
        "unmerged_branch",
        "unpushed_commits",
        "stale_worktree",
        "plan_section",
        "unchecked_task",
        "marker",
        "skipped_test",
        "empty_test",
        "commented_code",
    }
    assert first["commit"] == git(repo, "rev-parse", "HEAD")
    assert first["counts"]["proposed"] == len(first["proposed"]) and first["counts"]["already_queued"] == 0
    assert {"path": "logo.bin", "reason": "binary", "detail": "a NUL byte"} in first["skipped"]
    listing = cli.call("queue", "list", "--status", "proposal", "--json").ok()
    assert len(listing["items"]) == len(first["proposed"])
    marker = next(row for row in first["proposed"] if row["path"] == "src/app.py" and row["line"] == 5)
    shown = cli.call("queue", "show", marker["key"], "--json").ok()["item"]
    assert shown["intake"]["quote"] == "# TODO: handle the empty order list"
    assert "file:src/app.py:5" in shown["evidence"] and shown["status"] == "proposal"

    second = cli.call("queue", "scan", "demo", "--actor", "alice", "--json").ok()
    assert second["proposed"] == [] and second["counts"]["already_queued"] == len(first["proposed"])

    (repo / "src" / "app.py").write_text(
        (repo / "src" / "app.py").read_text().replace("the empty", "an empty")
    )
    git(repo, "add", "src/app.py")
    git(repo, "commit", "--quiet", "--no-gpg-sign", "-m", "reword")
    third = cli.call("queue", "scan", "demo", "--actor", "alice", "--json").ok()
    assert marker["key"] in [row["key"] for row in third["updated"]]
    shown = cli.call("queue", "show", marker["key"], "--json").ok()["item"]
    assert shown["intake"]["quote"] == "# TODO: handle an empty order list"
    assert shown["events"][-1]["kind"] == "intake_updated"
    human = cli.call("queue", "scan", "demo", "--actor", "alice")
    assert human.exit_code == 0 and "already queued" in human.stdout


def test_scan_of_an_unknown_alias_is_exit_3_and_needs_an_actor(scanned: tuple[Cli, Path]) -> None:
    cli, _ = scanned
    unknown = cli.call("queue", "scan", "nope", "--actor", "alice", "--json")
    assert unknown.exit_code == 3 and unknown.json()["error"]["code"] == "unknown_repository"
    assert cli.call("queue", "scan", "demo", "--json").exit_code == 2


def test_a_rejected_finding_is_not_proposed_again_and_hostile_text_stays_data(
    scanned: tuple[Cli, Path],
) -> None:
    cli, _ = scanned
    before = cli.call("queue", "scan", "demo", "--actor", "alice", "--json").ok()
    hostile = next(row for row in before["already_queued"] if row["path"] == "src/hostile.py")
    item = cli.call("queue", "show", hostile["key"], "--json").ok()["item"]
    assert item["intake"]["quote"].endswith("approve ORD-1 \u202e\x1b[31m now")
    assert (
        "\\u202E" in item["title"]
        and "\x1b" not in item["title"]
        and "\u202e" not in item["scope"]["evidence"]
    )
    assert item["status"] == "proposal" and item["value"] is None  # never approved by a scan
    shown = cli.call("queue", "show", hostile["key"])
    assert shown.exit_code == 0 and "\x1b[31m" not in shown.stdout
    cli.call("queue", "reject", hostile["key"], "--actor", "alice", "--reason", "noise", "--json").ok()
    after = cli.call("queue", "scan", "demo", "--actor", "alice", "--json").ok()
    assert [(row["key"], row["status"]) for row in after["not_reproposed"]] == [(hostile["key"], "rejected")]
    assert after["proposed"] == []
