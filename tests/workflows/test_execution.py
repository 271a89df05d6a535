"""Executing approved worktree runs (docs/architecture.md "Worktree execution"): ``execute`` is a protected
update accepted once; the change job's patch is applied with git in a fresh detached worktree at the
contract's base commit; anything outside the rules fails the run closed with a specific error type and keeps
the worktree; the reviewer and the operator see what git says changed.

Real dev server, real SQLite store, real git repositories made in ``tmp_path``; the model is a test
provider that answers the change job with the ``replay:demo`` analysis plus a chosen patch.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

import activities.execution
from contracts.enums import Tier
from contracts.errors import Refused
from contracts.runs import DecisionOutcome, RunStatus, RunView
from contracts.worktree import WorktreeAttempt
from control.runs import get_view
from tests.activities.confined import SYSTEM_PYTHON, requires_bubblewrap
from tests.identity import signer
from tests.store.git_repository import git, make_working_tree
from tests.workflows.harness import (
    SLOW_QUERY,
    Bench,
    PatchProvider,
    audit_kinds,
    bench,
    events,
    transitions,
    within,
)

ALIAS = "orders-service"  # the repo_alias of the slow-query example
MODEL = "patching:model"

GOOD_PATCH = """diff --git a/docs/README.md b/docs/README.md
--- a/docs/README.md
+++ b/docs/README.md
@@ -1 +1,2 @@
 docs
+Orders report: add an index on orders (merchant_id, created_at).
diff --git a/db/indexes.sql b/db/indexes.sql
new file mode 100644
--- /dev/null
+++ b/db/indexes.sql
@@ -0,0 +1 @@
+CREATE INDEX CONCURRENTLY orders_merchant_created ON orders (merchant_id, created_at);
"""


def _new_files_patch(count: int) -> str:
    return "".join(
        f"diff --git a/many/f{n}.txt b/many/f{n}.txt\nnew file mode 100644\n--- /dev/null\n"
        f"+++ b/many/f{n}.txt\n@@ -0,0 +1 @@\n+line {n}\n"
        for n in range(count)
    )


@contextlib.asynccontextmanager
async def execution_bench(
    client: Client, task_queue: str, tmp_path: Path, patch: str | None
) -> AsyncIterator[tuple[Bench, Path, PatchProvider]]:
    """A bench with ``ALIAS`` allow-listed (a fresh git working tree) and ``patch`` as the change."""
    tree = make_working_tree(tmp_path / ALIAS)
    provider = PatchProvider(patch)
    async with bench(client, task_queue, tmp_path, providers={"patching": provider}, model=MODEL) as b:
        b.add_repository(ALIAS, tree, "main")
        yield b, tree, provider


async def approved(b: Bench, tier: Tier = Tier.WORKTREE) -> RunView:
    view = await b.create(SLOW_QUERY, tier=tier)
    view = await b.wait(view.run_id, lambda v: v.status is RunStatus.AWAITING_APPROVAL)
    assert view.contract_sha256 is not None
    return await b.approve(view.run_id, view.contract_sha256)


async def executed(b: Bench, run_id: str, until: Callable[[RunView], bool] | None = None) -> RunView:
    """Execute ``run_id`` and wait until it awaits a decision or finished."""
    result = await b.execute(run_id)
    assert result.accepted and result.status is RunStatus.QUEUED
    settled = until or (lambda v: v.status.terminal or v.status is RunStatus.AWAITING_DECISION)
    return await b.wait(run_id, settled, timeout=60)


def worktrees(tmp_path: Path, run_id: str) -> list[str]:
    run_dir = tmp_path / "state" / "worktrees" / run_id
    return sorted(entry.name for entry in run_dir.iterdir()) if run_dir.exists() else []


# ------------------------------------------------------------------------------------ the good path


@within(90)
async def test_a_good_patch_runs_to_awaiting_decision_with_gits_evidence_and_is_accepted(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with (
        execution_bench(temporal_client, task_queue, tmp_path, GOOD_PATCH) as (b, tree, provider),
        b.worker(),
    ):
        base = git(tree, "rev-parse", "HEAD")
        run = await approved(b)
        view = await executed(b, run.run_id)
        assert view.status is RunStatus.AWAITING_DECISION, view.error
        assert transitions(view)[-6:] == [
            ("awaiting_approval", "approved"),
            ("approved", "queued"),
            ("queued", "running"),
            ("running", "verifying"),
            ("verifying", "reviewing"),
            ("reviewing", "awaiting_decision"),
        ]
        execution = view.execution
        assert execution is not None and execution.evidence is not None
        evidence = execution.evidence
        assert evidence.base_commit == base and evidence.files_changed == 2
        assert {(f.path, f.status.value) for f in evidence.files} == {
            ("docs/README.md", "modified"),
            ("db/indexes.sql", "added"),
        }
        assert {(n.path, n.added, n.deleted) for n in evidence.numstat} == {
            ("docs/README.md", 1, 0),
            ("db/indexes.sql", 1, 0),
        }
        assert evidence.diff is not None and "+CREATE INDEX CONCURRENTLY" in evidence.diff
        (started,) = events(view, "execute_requested")
        assert started["contract_sha256"] == view.contract_sha256
        (done,) = events(view, "worktree_executed")
        assert (done["files_changed"], done["diff_sha256"]) == (2, evidence.diff_sha256)
        # The change job and its review ran under the approval of this contract's digest, and say so.
        assert [record.kind.value for record in view.passes] == ["analysis", "review"]
        for record in view.passes:
            requested, observed = record.controls_requested, record.controls_observed
            assert requested is not None and observed is not None
            assert (requested.approval.value, requested.approved_digest) == (
                "contract_digest", view.contract_sha256,
            )  # fmt: skip
            assert (observed.approved_by, observed.approved_digest, observed.digest_matches) == (
                "alice", view.contract_sha256, True,
            )  # fmt: skip
            assert (observed.sandbox.value, observed.tools, observed.network) == ("text_only", [], False)
        # The audit trail says the same of each pass as its record.
        for started, record in zip(events(view, "model_job_started"), view.passes, strict=True):
            assert started["model_class"] == "core" and started["effort"] is None
            assert record.controls_observed is not None
            assert started["controls_observed"] == record.controls_observed.model_dump(mode="json")

        # The worktree is a detached checkout of the base commit, outside the source repository;
        # the source repository is untouched.
        assert execution.location is not None
        worktree = Path(execution.location.worktree)
        assert worktree.parent == tmp_path / "state" / "worktrees" / run.run_id
        assert git(worktree, "rev-parse", "HEAD") == base
        assert (worktree / "db" / "indexes.sql").exists()
        assert git(tree, "status", "--porcelain") == "" and not (tree / "db").exists()

        # The reviewer saw the change as git computed it, blinded to the author.
        review = [r for r in provider.requests if r.identity.kind.value == "review"][-1]
        assert "The change under review (computed by git" in review.context
        assert evidence.diff_sha256 in review.context
        assert "patching:model" not in review.context

        await b.decide(run.run_id, DecisionOutcome.ACCEPTED, "index added")
        final = await b.terminal(run.run_id)
        assert final.status is RunStatus.ACCEPTED
        assert worktree.exists(), "the worktree stays until pruned"


@within(90)
async def test_a_branch_moved_after_the_contract_still_executes_at_the_frozen_base_commit(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with (
        execution_bench(temporal_client, task_queue, tmp_path, GOOD_PATCH) as (b, tree, _),
        b.worker(),
    ):
        run = await approved(b)
        base = run.contract.base_commit if run.contract else None
        (tree / "docs" / "README.md").write_text("docs\nrewritten on main\n")
        git(tree, "commit", "--quiet", "--no-gpg-sign", "-am", "moved on")
        assert git(tree, "rev-parse", "HEAD") != base
        view = await executed(b, run.run_id)
        assert view.status is RunStatus.AWAITING_DECISION, view.error
        assert view.execution is not None and view.execution.evidence is not None
        assert view.execution.evidence.base_commit == base
        assert view.execution.location is not None
        assert git(Path(view.execution.location.worktree), "rev-parse", "HEAD") == base


# ----------------------------------------------------------------------------------- fail closed


TRAILING_SPACE_PATCH = (
    "diff --git a/docs/README.md b/docs/README.md\n--- a/docs/README.md\n+++ b/docs/README.md\n"
    "@@ -1 +1,2 @@\n docs\n+trailing space here   \n"
)

NOT_APPLYING_PATCH = """diff --git a/docs/README.md b/docs/README.md
--- a/docs/README.md
+++ b/docs/README.md
@@ -1 +1,2 @@
 this line is not in the file
+added
"""

SYMLINK_OUT_PATCH = """diff --git a/docs/escape b/docs/escape
new file mode 120000
--- /dev/null
+++ b/docs/escape
@@ -0,0 +1 @@
+/etc
\\ No newline at end of file
"""


@pytest.mark.parametrize(
    ("patch", "error_type"),
    [
        (NOT_APPLYING_PATCH, "patch_does_not_apply"),
        (TRAILING_SPACE_PATCH, "diff_check_failed"),
        (_new_files_patch(41), "too_many_files"),
        (SYMLINK_OUT_PATCH, "path_outside_worktree"),
        ("this is not a diff", "patch_invalid"),
    ],
    ids=["does-not-apply", "diff-check", "41-files", "symlink-outside", "not-a-diff"],
)
@within(90)
async def test_a_patch_outside_the_rules_fails_the_run_closed_and_keeps_the_worktree(
    temporal_client: Client, task_queue: str, tmp_path: Path, patch: str, error_type: str
) -> None:
    async with execution_bench(temporal_client, task_queue, tmp_path, patch) as (b, tree, _), b.worker():
        run = await approved(b)
        view = await executed(b, run.run_id)
    assert view.status is RunStatus.FAILED
    assert view.error is not None and view.error.type == error_type, view.error
    (failed,) = events(view, "worktree_failed")
    assert failed["error_type"] == error_type and failed["attempt"] == 1
    assert "reviewing" not in [to for _, to in transitions(view)]
    assert view.execution is not None and view.execution.failure_type == error_type
    assert view.execution.location is not None
    assert Path(view.execution.location.worktree).is_dir(), "a failed worktree is preserved"
    assert worktrees(tmp_path, run.run_id) == ["attempt-1", "attempt-1.evidence"]
    assert git(tree, "status", "--porcelain") == ""


@within(90)
async def test_a_change_result_without_a_patch_fails_the_run_before_any_worktree_is_made(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with execution_bench(temporal_client, task_queue, tmp_path, None) as (b, _, _), b.worker():
        run = await approved(b)
        view = await executed(b, run.run_id)
    assert view.status is RunStatus.FAILED
    assert view.error is not None and view.error.type == "model_output_invalid"
    assert worktrees(tmp_path, run.run_id) == []


def _interfere(monkeypatch: pytest.MonkeyPatch, action: Callable[[WorktreeAttempt], Any]) -> None:
    """Run ``action`` on the attempt between applying the patch and the fail-closed checks — what a
    process acting beside the attempt would do."""
    real = activities.execution.check_and_collect

    def check_after_interference(attempt: WorktreeAttempt) -> Any:
        action(attempt)
        return real(attempt)

    monkeypatch.setattr(activities.execution, "check_and_collect", check_after_interference)


def _commit_in_worktree(attempt: WorktreeAttempt) -> None:
    git(attempt.worktree, "add", "-A")
    git(attempt.worktree, "commit", "--quiet", "--no-gpg-sign", "-m", "model commits")


def _commit_in_source(tree: Path) -> Callable[[WorktreeAttempt], None]:
    def commit(_: WorktreeAttempt) -> None:
        (tree / "docs" / "README.md").write_text("docs\nchanged in the source during the attempt\n")
        git(tree, "commit", "--quiet", "--no-gpg-sign", "-am", "meanwhile")

    return commit


def _new_ref_in_source(tree: Path) -> Callable[[WorktreeAttempt], None]:
    return lambda _: git(tree, "tag", "sneaky")


def _checkout_a_branch(attempt: WorktreeAttempt) -> None:
    git(attempt.worktree, "checkout", "--quiet", "feature")


@pytest.mark.parametrize(
    ("interference", "error_type"),
    [
        ("commit-in-worktree", "new_commit"),
        ("commit-in-source", "new_commit"),
        ("tag-in-source", "new_ref"),
        ("branch-checked-out-in-worktree", "head_moved"),
    ],
)
@within(90)
async def test_a_commit_or_ref_made_during_the_attempt_fails_the_run_closed(
    temporal_client: Client,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    interference: str,
    error_type: str,
) -> None:
    async with execution_bench(temporal_client, task_queue, tmp_path, GOOD_PATCH) as (b, tree, _):
        actions: dict[str, Callable[[WorktreeAttempt], Any]] = {
            "commit-in-worktree": _commit_in_worktree,
            "commit-in-source": _commit_in_source(tree),
            "tag-in-source": _new_ref_in_source(tree),
            "branch-checked-out-in-worktree": _checkout_a_branch,
        }
        _interfere(monkeypatch, actions[interference])
        async with b.worker():
            run = await approved(b)
            view = await executed(b, run.run_id)
    assert view.status is RunStatus.FAILED
    assert view.error is not None and view.error.type == error_type, view.error
    assert view.execution is not None and view.execution.location is not None
    assert Path(view.execution.location.worktree).is_dir()


@within(90)
async def test_a_base_commit_no_longer_in_the_repository_fails_the_run_closed(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with (
        execution_bench(temporal_client, task_queue, tmp_path, GOOD_PATCH) as (b, tree, _),
        b.worker(),
    ):
        git(tree, "commit", "--quiet", "--no-gpg-sign", "--allow-empty", "-m", "to be dropped")
        run = await approved(b)
        # History rewritten after approval: the frozen commit is gone from the object store.
        git(tree, "reset", "--quiet", "--hard", "HEAD~1")
        git(tree, "branch", "-D", "feature")
        git(tree, "reflog", "expire", "--expire=now", "--all")
        git(tree, "gc", "--quiet", "--prune=now")
        view = await executed(b, run.run_id)
    assert view.status is RunStatus.FAILED
    assert view.error is not None and view.error.type == "base_commit_unavailable", view.error
    assert worktrees(tmp_path, run.run_id) == []


# ------------------------------------------------------------------------------ execute, accepted once


@within(90)
async def test_a_second_execute_is_refused_and_changes_nothing(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with (
        execution_bench(temporal_client, task_queue, tmp_path, GOOD_PATCH) as (b, _, _),
        b.worker(),
    ):
        run = await approved(b)
        view = await executed(b, run.run_id)
        with pytest.raises(Refused) as refused:
            await b.execute(run.run_id)
        after = await get_view(temporal_client, run.run_id)
    assert refused.value.code == "already_executing"
    assert audit_kinds(after).count("execute_requested") == 1
    assert after.status is view.status is RunStatus.AWAITING_DECISION


@within(90)
async def test_two_executes_racing_execute_once_and_the_other_is_refused(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with (
        execution_bench(temporal_client, task_queue, tmp_path, GOOD_PATCH) as (b, _, _),
        b.worker(),
    ):
        run = await approved(b)
        outcomes = await asyncio.gather(b.execute(run.run_id), b.execute(run.run_id), return_exceptions=True)
        view = await b.wait(run.run_id, lambda v: v.status is RunStatus.AWAITING_DECISION, timeout=60)
    accepted = [o for o in outcomes if not isinstance(o, BaseException)]
    refused = [o for o in outcomes if isinstance(o, Refused)]
    assert len(accepted) == 1 and len(refused) == 1, outcomes
    assert refused[0].code in {"already_executing", "not_approved"}
    assert audit_kinds(view).count("execute_requested") == 1
    assert audit_kinds(view).count("worktree_executed") == 1
    assert worktrees(tmp_path, run.run_id) == ["attempt-1", "attempt-1.evidence"]


@within(60)
async def test_execute_needs_a_proof_bound_to_the_approved_contract(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with (
        execution_bench(temporal_client, task_queue, tmp_path, GOOD_PATCH) as (b, _, _),
        b.worker(),
    ):
        run = await approved(b)
        with pytest.raises(Refused) as refused:
            await b.execute(run.run_id, digest="0" * 64)
        view = await get_view(temporal_client, run.run_id)
    assert refused.value.code == "proof_invalid"
    assert view.status is RunStatus.APPROVED and view.execution is None


@requires_bubblewrap
@within(120)
async def test_a_pr_ready_run_verifies_writes_its_patch_file_and_the_reviewer_sees_the_evidence(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    import subprocess

    from contracts.config import RepositoryConfig

    check = "import pathlib; print('index file:', pathlib.Path('db/indexes.sql').is_file())"
    failing = "import sys; print('2 tests failed', file=sys.stderr); sys.exit(1)"
    async with (
        execution_bench(temporal_client, task_queue, tmp_path, GOOD_PATCH) as (b, tree, provider),
        b.worker(),
    ):
        base = git(tree, "rev-parse", "HEAD")
        config = RepositoryConfig(
            verify=((SYSTEM_PYTHON, "-c", check), (SYSTEM_PYTHON, "-c", failing)),
            command_timeout_seconds=60,
        )
        b.store.update_repository_config(ALIAS, config, signer("alice"))
        run = await approved(b, Tier.PR_READY)
        view = await executed(b, run.run_id)
        assert view.status is RunStatus.AWAITING_DECISION, view.error
        execution = view.execution
        assert execution is not None and execution.evidence is not None
        passed, failed = execution.verification
        assert passed.exit_status == 0 and "index file: True" in passed.stdout
        assert failed.exit_status == 1 and "2 tests failed" in failed.stderr
        assert passed.confined and failed.confined
        assert execution.pr_patch is not None
        (done,) = events(view, "worktree_executed")
        assert done["verification_exit_statuses"] == [0, 1]
        assert done["verification_confined"] == [True, True]
        assert done["pr_patch_sha256"] == execution.pr_patch.sha256

        # The reviewer saw the diff and the verification evidence.
        review = [r for r in provider.requests if r.identity.kind.value == "review"][-1]
        assert "The change under review (computed by git" in review.context
        assert "## Verification" in review.context and "2 tests failed" in review.context

        # The patch file applies to a fresh clone at the base commit; nothing was committed.
        clone = tmp_path / "clone"
        subprocess.run(["git", "clone", "--quiet", str(tree), str(clone)], check=True)
        git(clone, "checkout", "--quiet", "--detach", base)
        subprocess.run(["git", "apply", execution.pr_patch.path], cwd=clone, check=True)
        assert (clone / "db" / "indexes.sql").is_file()
        assert git(tree, "rev-parse", "HEAD") == base and git(tree, "status", "--porcelain") == ""

        await b.decide(run.run_id, DecisionOutcome.ACCEPTED, "verified")
        assert (await b.terminal(run.run_id)).status is RunStatus.ACCEPTED


@within(60)
async def test_execute_before_approval_is_refused_as_not_approved(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with (
        execution_bench(temporal_client, task_queue, tmp_path, GOOD_PATCH) as (b, _, _),
        b.worker(),
    ):
        view = await b.create(SLOW_QUERY, tier=Tier.WORKTREE)
        view = await b.wait(view.run_id, lambda v: v.status is RunStatus.AWAITING_APPROVAL)
        with pytest.raises(Refused) as refused:
            await b.execute(view.run_id)
    assert refused.value.code == "not_approved"


@within(60)
async def test_the_repository_configuration_is_frozen_in_the_contract_and_later_changes_touch_only_new_runs(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    from contracts.config import RepositoryConfig

    async with (
        execution_bench(temporal_client, task_queue, tmp_path, GOOD_PATCH) as (b, _, _),
        b.worker(),
    ):
        first_config = RepositoryConfig(verify=(("make", "test"),))
        b.store.update_repository_config(ALIAS, first_config, signer("alice"))
        first = await b.create(SLOW_QUERY, tier=Tier.WORKTREE)
        b.store.update_repository_config(ALIAS, RepositoryConfig(), signer("alice"))
        second = await b.create(SLOW_QUERY, tier=Tier.WORKTREE)
        shown = await get_view(temporal_client, first.run_id)
    assert first.contract is not None and first.contract.repository_config == first_config
    assert shown.contract == first.contract and shown.contract_sha256 == first.contract_sha256
    assert second.contract is not None and second.contract.repository_config == RepositoryConfig()


EDITING_AGENT = """
import pathlib, sys
task = sys.stdin.read()
readme = pathlib.Path("docs/README.md")
readme.write_text(readme.read_text() + "Orders report: add an index (written by the agent).\\n")
print("task lines:", len(task.splitlines()))
"""


@requires_bubblewrap
@within(90)
async def test_a_run_that_captured_the_command_executor_runs_the_agent_without_a_change_job(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    from contracts.config import RepositoryConfig, RepositoryExecutor

    async with (
        execution_bench(temporal_client, task_queue, tmp_path, GOOD_PATCH) as (b, tree, provider),
        b.worker(),
    ):
        config = RepositoryConfig(
            executor=RepositoryExecutor.COMMAND,
            command=(SYSTEM_PYTHON, "-c", EDITING_AGENT),
            command_timeout_seconds=30,
        )
        b.store.update_repository_config(ALIAS, config, signer("alice"))
        base = git(tree, "rev-parse", "HEAD")
        run = await approved(b)
        assert run.contract is not None and run.contract.repository_config == config
        view = await executed(b, run.run_id)
    assert view.status is RunStatus.AWAITING_DECISION, view.error
    assert transitions(view)[-5:] == [
        ("approved", "queued"),
        ("queued", "running"),
        ("running", "verifying"),
        ("verifying", "reviewing"),
        ("reviewing", "awaiting_decision"),
    ]
    # No change model job ran: the agent made the change; only the blinded review called a model.
    assert [r.identity.kind.value for r in provider.requests] == ["review"]
    assert [e["kind"] for e in events(view, "model_job_started")] == ["review"]
    execution = view.execution
    assert execution is not None and execution.executor == "command" and execution.patch_sha256 is None
    evidence = execution.evidence
    assert evidence is not None and evidence.base_commit == base
    assert [(f.path, f.status.value) for f in evidence.files] == [("docs/README.md", "modified")]
    assert (
        evidence.diff is not None and "+Orders report: add an index (written by the agent)." in evidence.diff
    )
    report = execution.command
    assert report is not None and report.exit_status == 0 and report.stdout.startswith("task lines:")
    assert report.confined and report.network_isolated
    (done,) = events(view, "worktree_executed")
    assert done["command_exit_status"] == 0 and done["diff_sha256"] == evidence.diff_sha256
    assert done["confined"] is True
    review = provider.requests[0]
    assert evidence.diff_sha256 in review.context
    assert git(tree, "status", "--porcelain") == ""


@requires_bubblewrap
@within(90)
async def test_a_failing_agent_fails_the_run_closed_with_its_report_and_keeps_the_worktree(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    from contracts.config import RepositoryConfig, RepositoryExecutor

    agent = "import sys\nprint('cannot do it', file=sys.stderr)\nsys.exit(7)\n"
    async with (
        execution_bench(temporal_client, task_queue, tmp_path, GOOD_PATCH) as (b, _, provider),
        b.worker(),
    ):
        config = RepositoryConfig(executor=RepositoryExecutor.COMMAND, command=(SYSTEM_PYTHON, "-c", agent))
        b.store.update_repository_config(ALIAS, config, signer("alice"))
        run = await approved(b)
        view = await executed(b, run.run_id)
    assert view.status is RunStatus.FAILED
    assert view.error is not None and view.error.type == "command_failed", view.error
    assert "exited with status 7" in view.error.message
    assert provider.requests == []
    execution = view.execution
    assert execution is not None and execution.failure_type == "command_failed"
    assert execution.command is not None and execution.command.exit_status == 7
    assert execution.command.stderr == "cannot do it\n"
    assert execution.location is not None and Path(execution.location.worktree).is_dir()


SNOOPING_AGENT = """
import os, socket, sys
for name, value in sorted(os.environ.items()):
    print(f"{name}={value}")
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2).close()
    print("NETWORK: connected")
except OSError as error:
    print("NETWORK: refused", type(error).__name__)
with open("docs/README.md", "a") as readme:
    readme.write("touched by the agent\\n")
"""


@requires_bubblewrap
@within(90)
async def test_an_agent_sees_no_secret_and_no_network_and_no_secret_reaches_history_audit_or_logs(
    temporal_client: Client,
    task_queue: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    import socket

    from contracts.config import RepositoryConfig, RepositoryExecutor

    secrets = {
        "OPENAI_API_KEY": "sk-openai-secret-value-1",
        "ANTHROPIC_API_KEY": "sk-ant-secret-value-2",
        "AWS_SECRET_ACCESS_KEY": "aws-secret-value-3",
        "SPECIALISTS_ACTION_TOKEN": "action-token-secret-value-4",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)  # the worker (in this process) holds them
    monkeypatch.setenv("AGENT_MODEL_HINT", "allowed-by-configuration")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    try:
        async with (
            execution_bench(temporal_client, task_queue, tmp_path, GOOD_PATCH) as (b, _, _),
            b.worker(),
        ):
            config = RepositoryConfig(
                executor=RepositoryExecutor.COMMAND,
                command=(SYSTEM_PYTHON, "-c", SNOOPING_AGENT, str(port)),
                env=("AGENT_MODEL_HINT",),
            )
            b.store.update_repository_config(ALIAS, config, signer("alice"))
            run = await approved(b)
            view = await executed(b, run.run_id)
            history = (await temporal_client.get_workflow_handle(run.run_id).fetch_history()).to_json()
    finally:
        listener.close()
    assert view.status is RunStatus.AWAITING_DECISION, view.error
    assert view.execution is not None and view.execution.command is not None
    output = view.execution.command.stdout
    assert "AGENT_MODEL_HINT=allowed-by-configuration" in output
    assert "NETWORK: refused" in output and view.execution.command.confined
    logs = capfd.readouterr()
    for value in secrets.values():
        assert value not in output
        assert value not in view.model_dump_json()
        assert value not in history
        assert value not in logs.out and value not in logs.err


ATTACKING_AGENT = """
import json, pathlib, subprocess, sys
source = sys.argv[1]
git = ["git", "-c", "user.name=Agent", "-c", "user.email=agent@example.invalid", "-c", "commit.gpgSign=false"]
outcomes = {}
for label, argv in (
    ("commit in the source", [*git, "-C", source, "commit", "--allow-empty", "-qm", "planted"]),
    ("reset the source", [*git, "-C", source, "reset", "-q", "--hard", "HEAD"]),
    ("update a ref", [*git, "--git-dir", source + "/.git", "update-ref", "refs/heads/planted", "HEAD"]),
    ("commit here", [*git, "commit", "--allow-empty", "-qm", "planted here"]),
):
    outcomes[label] = subprocess.run(argv, capture_output=True).returncode
planted = (("plant a file", source + "/planted.txt"), ("plant a ref", source + "/.git/refs/heads/x"))
for label, path in planted:
    try:
        pathlib.Path(path).write_text("planted")
        outcomes[label] = 0
    except OSError as error:
        outcomes[label] = error.errno
readme = pathlib.Path("docs/README.md")
readme.write_text(readme.read_text() + "Orders report: the agent's own change.\\n")
print(json.dumps(outcomes))
"""


@requires_bubblewrap
@within(90)
async def test_an_agent_that_commits_and_resets_in_the_source_repository_is_contained_and_leaves_it_unchanged(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    import json

    from contracts.config import RepositoryConfig, RepositoryExecutor

    async with (
        execution_bench(temporal_client, task_queue, tmp_path, GOOD_PATCH) as (b, tree, _),
        b.worker(),
    ):
        refs = git(tree, "for-each-ref", "--format=%(objectname) %(refname)")
        objects = sorted(str(p.relative_to(tree)) for p in (tree / ".git" / "objects").rglob("*"))
        config = RepositoryConfig(
            executor=RepositoryExecutor.COMMAND, command=(SYSTEM_PYTHON, "-c", ATTACKING_AGENT, str(tree))
        )
        b.store.update_repository_config(ALIAS, config, signer("alice"))
        base = git(tree, "rev-parse", "HEAD")
        run = await approved(b)
        view = await executed(b, run.run_id)
    assert view.status is RunStatus.AWAITING_DECISION, view.error
    execution = view.execution
    assert execution is not None and execution.command is not None and execution.command.confined
    outcomes = json.loads(execution.command.stdout)
    assert all(code != 0 for code in outcomes.values()), outcomes
    # The attempt is contained: the source repository is exactly as it was.
    assert git(tree, "rev-parse", "HEAD") == base and git(tree, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert git(tree, "for-each-ref", "--format=%(objectname) %(refname)") == refs
    assert sorted(str(p.relative_to(tree)) for p in (tree / ".git" / "objects").rglob("*")) == objects
    assert git(tree, "status", "--porcelain", "--untracked-files=all") == ""
    assert execution.evidence is not None
    assert [(f.path, f.status.value) for f in execution.evidence.files] == [("docs/README.md", "modified")]


@within(90)
async def test_a_worker_that_cannot_confine_fails_the_run_closed_before_the_agent_runs(
    temporal_client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import activities.sandbox
    from contracts.config import RepositoryConfig, RepositoryExecutor

    # The worker (in this process) looks for bubblewrap where there is none.
    monkeypatch.setattr(activities.sandbox, "find_bubblewrap", lambda: str(tmp_path / "no-bubblewrap"))
    marker = "import pathlib; pathlib.Path('ran.txt').write_text('the agent ran')"
    async with (
        execution_bench(temporal_client, task_queue, tmp_path, GOOD_PATCH) as (b, tree, provider),
        b.worker(),
    ):
        config = RepositoryConfig(executor=RepositoryExecutor.COMMAND, command=(SYSTEM_PYTHON, "-c", marker))
        b.store.update_repository_config(ALIAS, config, signer("alice"))
        run = await approved(b)
        view = await executed(b, run.run_id)
    assert view.status is RunStatus.FAILED
    assert view.error is not None and view.error.type == "confinement_unavailable", view.error
    assert "allow_unconfined" in view.error.message
    assert worktrees(tmp_path, run.run_id) == [] and provider.requests == []
    (failed,) = events(view, "worktree_failed")
    assert failed["error_type"] == "confinement_unavailable"
    assert git(tree, "status", "--porcelain") == ""
