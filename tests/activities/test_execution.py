"""``execute_worktree_attempt``: one claimed attempt per activity attempt, a new worktree for each, fail
closed with the worktree's location. Real git repository and SQLite store in ``tmp_path``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.config import ActivityConfig
from activities.execution import ExecutionActivities
from activities.store_access import SharedStore
from contracts.execution import ExecuteAttemptRequest, WorktreeExecution
from contracts.failures import WorktreeFailureDetail, failure_detail
from tests.identity import STORE_ANCHOR, bootstrap
from tests.store.git_repository import git, make_working_tree, register_repository

RUN_ID = "SOR-EXECUTIONTEST01"
ALIAS = "orders-service"
PATCH = (
    "diff --git a/docs/README.md b/docs/README.md\n--- a/docs/README.md\n+++ b/docs/README.md\n"
    "@@ -1 +1,2 @@\n docs\n+an index note\n"
)


@pytest.fixture
def setup(tmp_path: Path) -> tuple[ExecutionActivities, SharedStore, str, Path]:
    tree = make_working_tree(tmp_path / ALIAS)
    shared = SharedStore(f"sqlite:///{tmp_path / 'specialists.db'}", STORE_ANCHOR)
    store = shared.get()
    bootstrap(store)
    register_repository(store, ALIAS, tree, "main", "alice")
    config = ActivityConfig(database_url="unused", state_dir=tmp_path / "state")
    return ExecutionActivities(config, shared), shared, git(tree, "rev-parse", "HEAD"), tmp_path


def _run(activities: ExecutionActivities, base: str, attempt: int, patch: str = PATCH) -> WorktreeExecution:
    environment = ActivityEnvironment()
    environment.info = dataclasses.replace(ActivityEnvironment.default_info(), attempt=attempt)
    request = ExecuteAttemptRequest(run_id=RUN_ID, repo_alias=ALIAS, base_commit=base, patch=patch)
    result: WorktreeExecution = environment.run(activities.execute_worktree_attempt, request)
    return result


def test_an_attempt_claims_its_number_and_makes_the_worktree_of_that_number(
    setup: tuple[ExecutionActivities, SharedStore, str, Path],
) -> None:
    activities, shared, base, tmp_path = setup
    result = _run(activities, base, attempt=1)
    assert result.attempt.worktree == (tmp_path / "state" / "worktrees" / RUN_ID / "attempt-1").resolve()
    assert result.evidence.files_changed == 1 and result.execution_attempt == 1
    (claim,) = shared.get().worktree_claims(RUN_ID)
    assert (claim.execution_attempt, claim.worktree_attempt) == (1, 1)


def test_the_same_attempt_run_twice_is_refused_as_claimed_and_touches_nothing(
    setup: tuple[ExecutionActivities, SharedStore, str, Path],
) -> None:
    activities, _, base, tmp_path = setup
    first = _run(activities, base, attempt=1)
    before = (first.attempt.worktree / "docs" / "README.md").read_text()
    with pytest.raises(ApplicationError) as refused:
        _run(activities, base, attempt=1)
    assert refused.value.type == "attempt_claimed" and refused.value.non_retryable
    assert (first.attempt.worktree / "docs" / "README.md").read_text() == before
    assert sorted(p.name for p in (tmp_path / "state" / "worktrees" / RUN_ID).iterdir()) == [
        "attempt-1",
        "attempt-1.evidence",
    ]


def test_a_retry_claims_the_next_attempt_and_leaves_the_earlier_worktree_as_it_was(
    setup: tuple[ExecutionActivities, SharedStore, str, Path],
) -> None:
    activities, shared, base, _ = setup
    first = _run(activities, base, attempt=1)
    second = _run(activities, base, attempt=2)
    assert second.attempt.worktree != first.attempt.worktree
    assert first.attempt.worktree.is_dir() and second.attempt.worktree.is_dir()
    assert [claim.execution_attempt for claim in shared.get().worktree_claims(RUN_ID)] == [1, 2]


def test_a_failed_attempt_names_where_its_worktree_is_kept(
    setup: tuple[ExecutionActivities, SharedStore, str, Path],
) -> None:
    activities, _, base, tmp_path = setup
    stale = PATCH.replace(" docs\n", " not the file's line\n")
    with pytest.raises(ApplicationError) as failed:
        _run(activities, base, attempt=1, patch=stale)
    assert failed.value.type == "patch_does_not_apply" and failed.value.non_retryable
    assert len(failed.value.details) == 1  # one detail, a WorktreeFailureDetail
    detail = failure_detail(failed.value, WorktreeFailureDetail)
    assert detail is not None and detail.command is None
    location = detail.location
    assert Path(location.worktree) == (tmp_path / "state" / "worktrees" / RUN_ID / "attempt-1").resolve()
    assert Path(location.worktree).is_dir() and location.base_commit == base


def test_an_alias_no_longer_allow_listed_fails_as_repository_unavailable(
    setup: tuple[ExecutionActivities, SharedStore, str, Path],
) -> None:
    activities, _, base, tmp_path = setup
    environment = ActivityEnvironment()
    request = ExecuteAttemptRequest(run_id=RUN_ID, repo_alias="gone", base_commit=base, patch=PATCH)
    with pytest.raises(ApplicationError) as failed:
        environment.run(activities.execute_worktree_attempt, request)
    assert failed.value.type == "repository_unavailable"
    assert not (tmp_path / "state" / "worktrees").exists()


def test_a_worker_without_a_state_directory_refuses_to_execute(
    setup: tuple[ExecutionActivities, SharedStore, str, Path],
) -> None:
    _, shared, base, _ = setup
    activities = ExecutionActivities(ActivityConfig(database_url="unused"), shared)
    with pytest.raises(ApplicationError) as failed:
        _run(activities, base, attempt=1)
    assert failed.value.type == "execution_failed"
