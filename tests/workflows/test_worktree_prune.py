"""``WorktreePrune`` on the shared dev server: a protected workflow that removes a finished run's
worktrees on the worker of the host that holds them, and refuses — removing nothing — while the run
is live, without a valid proof, or for a run known nowhere.

Real SQLite store and git repositories in ``tmp_path``; workers built by ``worker.build_worker`` (the
shared task queue) and ``worker.build_host_worker`` (the host's own queue, ``<queue>@<host>``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import shutil
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.worker import Worker

from activities.worktree_lifecycle import create_attempt_worktree
from contracts.enums import Tier
from contracts.errors import NotFound, Refused
from contracts.identity import ActorKey
from contracts.ids import new_run_id
from contracts.runs import DecisionOutcome, RunStatus, RunSummary
from contracts.worktree import WorktreeAttempt
from contracts.worktree_prune import PRUNE_ACTION, PruneRequest, PruneResult
from control.worktrees import run_prune
from tests.store.git_repository import git, make_working_tree
from tests.workflows.harness import SLOW_QUERY, Bench, PatchProvider, bench, proof, within
from worker import build_host_worker

ALIAS = "orders-service"  # the repo_alias of the slow-query example
MODEL = "patching:model"
GOOD_PATCH = """diff --git a/docs/README.md b/docs/README.md
--- a/docs/README.md
+++ b/docs/README.md
@@ -1 +1,2 @@
 docs
+Orders report: add an index on orders (merchant_id, created_at).
"""
STALE_PATCH = GOOD_PATCH.replace(" docs\n", " not the file's line\n")


@contextlib.asynccontextmanager
async def prune_bench(
    client: Client, task_queue: str, tmp_path: Path, patch: str | None = GOOD_PATCH
) -> AsyncIterator[tuple[Bench, Path]]:
    """A bench with ``ALIAS`` allow-listed (a fresh git working tree), ``patch`` as a worktree run's
    change, and a running worker for the shared queue."""
    tree = make_working_tree(tmp_path / ALIAS)
    provider = PatchProvider(patch)
    async with bench(client, task_queue, tmp_path, providers={"patching": provider}, model=MODEL) as b:
        b.add_repository(ALIAS, tree, "main")
        async with b.worker():
            yield b, tree


def host_worker(b: Bench, host: str | None = None) -> Worker:
    return build_host_worker(b.client, task_queue=b.task_queue, config=b.config, host=host)


def state(b: Bench) -> Path:
    assert b.config.state_dir is not None
    return b.config.state_dir


async def prune(b: Bench, run_id: str, **fields: object) -> PruneResult:
    """Prune ``run_id`` with a valid proof (``fields`` override the request's)."""
    request = PruneRequest.model_validate(
        {"run_id": run_id, "actor": "alice", "proof": proof(run_id, PRUNE_ACTION), **fields}
    )
    return await run_prune(b.client, request, task_queue=b.task_queue, wait_seconds=60)


def project(b: Bench, run_id: str, status: RunStatus) -> None:
    """A run only the projection knows (no workflow), in ``status``."""
    now = dt.datetime.now(dt.UTC)
    b.store.project_run(
        RunSummary(
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
        ),
        [],
    )


def made_by_hand(b: Bench, tree: Path, run_id: str) -> WorktreeAttempt:
    return create_attempt_worktree(tree, git(tree, "rev-parse", "HEAD"), state(b), run_id)


def git_lists(tree: Path) -> list[str]:
    lines = git(tree, "worktree", "list", "--porcelain").splitlines()
    paths = [line.removeprefix("worktree ") for line in lines if line.startswith("worktree ")]
    return [path for path in paths if Path(path) != tree.resolve()]


async def executed(b: Bench) -> str:
    """A worktree run, approved and executed; its id once it awaits a decision or failed."""
    view = await b.create(SLOW_QUERY, tier=Tier.WORKTREE)
    view = await b.wait(view.run_id, RunStatus.AWAITING_APPROVAL)
    assert view.contract_sha256 is not None
    await b.approve(view.run_id, view.contract_sha256)
    await b.execute(view.run_id)
    await b.wait(
        view.run_id, lambda v: v.status in (RunStatus.AWAITING_DECISION, RunStatus.FAILED), timeout=60
    )
    return view.run_id


# --------------------------------------------------------------------------------- the whole lifecycle


@within(120)
async def test_an_executed_run_is_pruned_only_after_its_decision_and_then_git_forgets_its_worktree(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with prune_bench(temporal_client, task_queue, tmp_path) as (b, tree), host_worker(b):
        run_id = await executed(b)
        run_dir = state(b) / "worktrees" / run_id
        kept = sorted(entry.name for entry in run_dir.iterdir())
        assert kept == ["attempt-1", "attempt-1.evidence"]

        with pytest.raises(Refused) as live:
            await prune(b, run_id)
        assert live.value.code == "run_not_finished" and "awaiting_decision" in live.value.message
        assert sorted(entry.name for entry in run_dir.iterdir()) == kept
        assert len(git_lists(tree)) == 1

        await b.decide(run_id, DecisionOutcome.ACCEPTED)
        await b.terminal(run_id)
        result = await prune(b, run_id)

    assert (result.status, result.hosts, result.unreachable_hosts) == ("accepted", [socket.gethostname()], [])
    (pruned,) = result.pruned
    assert (pruned.attempt, pruned.was_locked, pruned.removed_worktree, pruned.removed_from_git) == (
        1,
        True,
        True,
        True,
    )
    assert pruned.removed_evidence and pruned.repository == str(tree.resolve())
    assert not run_dir.exists()
    assert git_lists(tree) == []
    assert git(tree, "status", "--porcelain") == ""


@within(120)
async def test_a_failed_run_records_the_host_of_its_preserved_worktree_and_prune_removes_it(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with prune_bench(temporal_client, task_queue, tmp_path, STALE_PATCH) as (b, tree), host_worker(b):
        run_id = await executed(b)
        view = await b.terminal(run_id)
        assert view.status is RunStatus.FAILED and view.execution is not None
        location = view.execution.location
        assert location is not None and location.host == socket.gethostname()
        assert Path(location.worktree).is_dir()
        result = await prune(b, run_id)
    assert result.status == "failed" and [p.attempt for p in result.pruned] == [1]
    assert not Path(location.worktree).exists() and git_lists(tree) == []


# ----------------------------------------------------------------------------------------- refusals


@within(60)
async def test_prune_is_refused_while_the_run_is_live_and_removes_nothing(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with prune_bench(temporal_client, task_queue, tmp_path) as (b, tree), host_worker(b):
        view = await b.create(SLOW_QUERY, tier=Tier.WORKTREE)
        await b.wait(view.run_id, RunStatus.AWAITING_APPROVAL)
        made = made_by_hand(b, tree, view.run_id)
        with pytest.raises(Refused) as refused:
            await prune(b, view.run_id)
    assert refused.value.code == "run_not_finished"
    assert made.worktree.is_dir() and made.evidence_dir.is_dir()
    assert git_lists(tree) == [str(made.worktree)]


@within(60)
async def test_prune_of_a_run_only_the_projection_shows_live_is_refused(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with prune_bench(temporal_client, task_queue, tmp_path) as (b, tree), host_worker(b):
        run_id = new_run_id()
        project(b, run_id, RunStatus.RUNNING)
        made = made_by_hand(b, tree, run_id)
        with pytest.raises(Refused) as refused:
            await prune(b, run_id)
    assert refused.value.code == "run_not_finished" and "running" in refused.value.message
    assert made.worktree.is_dir()


@within(60)
async def test_prune_without_a_valid_proof_is_refused_and_removes_nothing(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with prune_bench(temporal_client, task_queue, tmp_path) as (b, tree), host_worker(b):
        run_id = new_run_id()
        project(b, run_id, RunStatus.FAILED)
        made = made_by_hand(b, tree, run_id)
        attempts = {
            "proof_missing": {"proof": None},
            "actor_key_unknown": {"proof": proof(run_id, PRUNE_ACTION, key=ActorKey.generate())},
        }
        refusals = {}
        for expected, fields in attempts.items():
            with pytest.raises(Refused) as refused:
                await prune(b, run_id, **fields)
            refusals[expected] = refused.value.code
        for action, other_run in (("cancel", run_id), (PRUNE_ACTION, new_run_id())):
            with pytest.raises(Refused) as refused:
                await prune(b, run_id, proof=proof(other_run, action))
            assert refused.value.code == "proof_invalid"
        with pytest.raises(NotFound) as unknown_actor:
            await prune(b, run_id, actor="mallory", proof=proof(run_id, PRUNE_ACTION, actor="mallory"))
    assert refusals == {"proof_missing": "proof_missing", "actor_key_unknown": "actor_key_unknown"}
    assert unknown_actor.value.code == "unknown_actor"
    assert made.worktree.is_dir() and made.evidence_dir.is_dir()
    assert git_lists(tree) == [str(made.worktree)]


@within(60)
async def test_prune_of_a_run_known_nowhere_is_refused_as_unknown(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with prune_bench(temporal_client, task_queue, tmp_path) as (b, tree), host_worker(b):
        run_id = new_run_id()
        made = made_by_hand(b, tree, run_id)
        with pytest.raises(NotFound) as unknown:
            await prune(b, run_id)
    assert unknown.value.code == "unknown_run"
    assert made.worktree.is_dir()


# ----------------------------------------------------------------------------------------- leftovers


@within(60)
async def test_prune_cleans_a_deleted_and_a_locked_leftover_of_a_finished_run(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with prune_bench(temporal_client, task_queue, tmp_path) as (b, tree), host_worker(b):
        run_id = new_run_id()
        project(b, run_id, RunStatus.FAILED)
        deleted = made_by_hand(b, tree, run_id)
        locked = made_by_hand(b, tree, run_id)
        shutil.rmtree(deleted.worktree)  # by hand: git still lists it, locked
        other = made_by_hand(b, tree, new_run_id())  # another run's attempt is never touched
        result = await prune(b, run_id)
    assert [(p.attempt, p.existed, p.was_locked, p.removed_from_git) for p in result.pruned] == [
        (1, False, True, True),
        (2, True, True, True),
    ]
    assert not deleted.evidence_dir.exists() and not locked.worktree.exists()
    assert git_lists(tree) == [str(other.worktree)]


@within(60)
async def test_a_run_whose_workflow_was_terminated_counts_as_finished(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with prune_bench(temporal_client, task_queue, tmp_path) as (b, tree), host_worker(b):
        view = await b.create(SLOW_QUERY, tier=Tier.WORKTREE)
        await b.wait(view.run_id, RunStatus.AWAITING_APPROVAL)
        made = made_by_hand(b, tree, view.run_id)
        await temporal_client.get_workflow_handle(view.run_id).terminate("operator stopped it")
        result = await prune(b, view.run_id)
    assert result.status == "terminated" and [p.attempt for p in result.pruned] == [1]
    assert not made.worktree.exists()


# -------------------------------------------------------------------------------------------- hosts


@within(60)
async def test_prune_runs_on_the_worker_of_the_host_recorded_for_the_run(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with prune_bench(temporal_client, task_queue, tmp_path) as (b, tree):
        run_id = new_run_id()
        project(b, run_id, RunStatus.REJECTED)
        made = made_by_hand(b, tree, run_id)
        b.store.claim_worktree_attempt(run_id, 1, "far-host:4242", worktree_attempt=1)
        # Only a worker polling far-host's queue runs; none polls this machine's host queue.
        async with host_worker(b, host="far-host"):
            result = await prune(b, run_id)
    assert result.hosts == ["far-host"] and result.unreachable_hosts == []
    assert [p.attempt for p in result.pruned] == [1] and not made.worktree.exists()


@within(60)
async def test_a_host_whose_worker_does_not_answer_is_reported_and_its_worktrees_are_kept(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with prune_bench(temporal_client, task_queue, tmp_path) as (b, tree), host_worker(b):
        run_id = new_run_id()
        project(b, run_id, RunStatus.EXPIRED)
        made = made_by_hand(b, tree, run_id)
        b.store.claim_worktree_attempt(run_id, 1, "gone-host:7", worktree_attempt=1)
        result = await prune(b, run_id, host_wait_seconds=1)
    assert (result.hosts, result.unreachable_hosts, result.pruned) == (["gone-host"], ["gone-host"], [])
    assert made.worktree.is_dir()
