"""Worktree housekeeping on real git repositories: every preserved attempt is listed with what git
knows of it, leftovers of a crash (a worktree deleted by hand, a lock left behind) never block a new
attempt, and pruning a run removes its worktrees, git's bookkeeping of them and their evidence — and
nothing of any other run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from activities.worktree_housekeeping import prune_run
from activities.worktree_lifecycle import create_attempt_worktree
from contracts.errors import InvalidInput
from contracts.worktree import WorktreeAttempt
from runtime.worktree_attempts import list_attempts, repository_of
from tests.store.git_repository import git, make_working_tree

RUN = "SOR-HOUSEKEEPING0001"
OTHER = "SOR-HOUSEKEEPING0002"
HOST = "test-host"


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    return make_working_tree(tmp_path / "repository")


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


def attempt(repository: Path, state: Path, run_id: str = RUN, number: int | None = None) -> WorktreeAttempt:
    return create_attempt_worktree(repository, git(repository, "rev-parse", "HEAD"), state, run_id, number)


def git_lists(repository: Path) -> list[str]:
    """The worktree paths git lists for ``repository`` (its main working tree left out)."""
    lines = git(repository, "worktree", "list", "--porcelain").splitlines()
    paths = [line.removeprefix("worktree ") for line in lines if line.startswith("worktree ")]
    return [path for path in paths if Path(path) != repository.resolve()]


# ------------------------------------------------------------------------------------------- listing


def test_listing_shows_each_attempt_with_its_directory_git_entry_and_lock(
    repository: Path, state: Path
) -> None:
    first = attempt(repository, state)
    second = attempt(repository, state)
    listed = list_attempts(state)
    assert [(a.run_id, a.attempt) for a in listed] == [(RUN, 1), (RUN, 2)]
    for entry, made in zip(listed, (first, second), strict=True):
        assert entry.worktree == str(made.worktree) and entry.exists
        assert entry.evidence_dir == str(made.evidence_dir) and entry.evidence_exists
        assert entry.repository == str(repository.resolve())
        assert entry.git_known is True and entry.locked is True
        assert entry.lock_reason == f"specialist run {RUN} attempt {entry.attempt}"


def test_the_repository_is_found_from_the_worktrees_git_file(repository: Path, state: Path) -> None:
    made = attempt(repository, state)
    assert repository_of(made.worktree) == repository.resolve()
    assert repository_of(state) is None


def test_a_worktree_deleted_by_hand_is_listed_as_missing_but_still_known_and_locked(
    repository: Path, state: Path
) -> None:
    made = attempt(repository, state)
    shutil.rmtree(made.worktree)
    # Its .git file is gone with it: only an allow-listed repository can say what git remembers.
    (entry,) = list_attempts(state, [repository])
    assert (entry.exists, entry.evidence_exists, entry.git_known, entry.locked) == (False, True, True, True)
    (unasked,) = list_attempts(state)
    assert (unasked.exists, unasked.git_known, unasked.locked) == (False, None, None)


def test_an_attempt_whose_directories_are_both_gone_is_still_found_in_gits_bookkeeping(
    repository: Path, state: Path
) -> None:
    made = attempt(repository, state)
    shutil.rmtree(made.worktree)
    shutil.rmtree(made.evidence_dir)
    (entry,) = list_attempts(state, [repository])
    assert (entry.run_id, entry.attempt, entry.exists, entry.evidence_exists) == (RUN, 1, False, False)
    assert entry.git_known is True


def test_a_directory_git_does_not_know_is_listed_as_unknown_to_git(repository: Path, state: Path) -> None:
    stray = state.resolve() / "worktrees" / RUN / "attempt-1"
    stray.mkdir(parents=True)
    (entry,) = list_attempts(state, [repository])
    assert (entry.exists, entry.git_known, entry.locked, entry.repository) == (True, False, False, None)


def test_an_empty_or_missing_state_directory_lists_nothing(state: Path) -> None:
    assert list_attempts(state) == []
    (state / "worktrees" / "not a run").mkdir(parents=True)
    assert list_attempts(state) == []


# ------------------------------------------------------------------- leftovers never block an attempt


def test_a_new_attempt_of_the_same_run_succeeds_beside_a_deleted_and_a_locked_leftover(
    repository: Path, state: Path
) -> None:
    deleted = attempt(repository, state)
    locked = attempt(repository, state)
    shutil.rmtree(deleted.worktree)  # deleted by hand; git still lists it, locked
    # `locked` is left as a crash leaves it: directory, evidence and git's lock all still there.
    fresh = attempt(repository, state)
    assert fresh.attempt == 3 and fresh.worktree.is_dir()
    claimed = attempt(repository, state, number=7)  # a claimed execution attempt number
    assert claimed.worktree.name == "attempt-7"
    assert set(git_lists(repository)) == {
        str(deleted.worktree),
        str(locked.worktree),
        str(fresh.worktree),
        str(claimed.worktree),
    }


def test_a_new_attempt_of_another_run_succeeds_beside_a_deleted_and_a_locked_leftover(
    repository: Path, state: Path
) -> None:
    deleted = attempt(repository, state)
    attempt(repository, state)
    shutil.rmtree(deleted.worktree)
    shutil.rmtree(deleted.evidence_dir)
    # The other run's attempt-1 has the same base name as the deleted, still registered attempt-1.
    other = attempt(repository, state, OTHER)
    assert other.attempt == 1 and other.worktree.is_dir()
    assert git(other.worktree, "rev-parse", "HEAD") == git(repository, "rev-parse", "HEAD")


# ------------------------------------------------------------------------------------------- pruning


def test_prune_removes_the_runs_worktrees_git_entries_and_evidence(repository: Path, state: Path) -> None:
    first = attempt(repository, state)
    second = attempt(repository, state)
    (second.worktree / "untracked.txt").write_text("left by the executor\n")
    pruned = prune_run(state, RUN, [repository], host=HOST)
    assert [(p.attempt, p.was_locked, p.removed_worktree, p.removed_from_git) for p in pruned] == [
        (1, True, True, True),
        (2, True, True, True),
    ]
    assert all(p.removed_evidence and p.host == HOST for p in pruned)
    for made in (first, second):
        assert not made.worktree.exists() and not made.evidence_dir.exists()
    assert git_lists(repository) == []
    assert not (state / "worktrees" / RUN).exists()
    assert list_attempts(state, [repository]) == []


def test_prune_cleans_a_deleted_and_a_locked_leftover_and_keeps_other_runs(
    repository: Path, state: Path
) -> None:
    deleted = attempt(repository, state)
    locked = attempt(repository, state)
    gone = attempt(repository, state)
    other = attempt(repository, state, OTHER)
    shutil.rmtree(deleted.worktree)
    shutil.rmtree(gone.worktree)
    shutil.rmtree(gone.evidence_dir)

    pruned = prune_run(state, RUN, [repository], host=HOST)

    assert [(p.attempt, p.existed, p.was_known_to_git, p.removed_from_git) for p in pruned] == [
        (1, False, True, True),
        (2, True, True, True),
        (3, False, True, True),
    ]
    assert [p.removed_evidence for p in pruned] == [True, True, False]
    assert not locked.worktree.exists() and not deleted.evidence_dir.exists()
    assert git_lists(repository) == [str(other.worktree)]
    assert other.worktree.is_dir() and other.evidence_dir.is_dir()
    # git's bookkeeping is clean: a fresh attempt may now reuse the number of the deleted one.
    again = attempt(repository, state)
    assert again.attempt == 1


def test_prune_finds_the_repository_from_the_worktrees_git_file(repository: Path, state: Path) -> None:
    made = attempt(repository, state)
    (pruned,) = prune_run(state, RUN, host=HOST)
    assert pruned.repository == str(repository.resolve()) and pruned.removed_from_git
    assert not made.worktree.exists() and git_lists(repository) == []


def test_prune_deletes_a_directory_git_does_not_know(repository: Path, state: Path) -> None:
    stray = state.resolve() / "worktrees" / RUN / "attempt-1"
    (stray / "sub").mkdir(parents=True)
    (stray / "sub" / "file.txt").write_text("x")
    (pruned,) = prune_run(state, RUN, [repository], host=HOST)
    assert (pruned.existed, pruned.was_known_to_git, pruned.removed_worktree) == (True, False, True)
    assert not stray.exists()


def test_prune_removes_a_symlink_in_an_attempts_place_without_following_it(
    repository: Path, state: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not ours\n")
    run_dir = state.resolve() / "worktrees" / RUN
    run_dir.mkdir(parents=True)
    (run_dir / "attempt-1").symlink_to(outside, target_is_directory=True)
    (run_dir / "attempt-1.evidence").symlink_to(outside, target_is_directory=True)
    prune_run(state, RUN, [repository], host=HOST)
    assert not (run_dir / "attempt-1").is_symlink() and not (run_dir / "attempt-1.evidence").is_symlink()
    assert (outside / "keep.txt").read_text() == "not ours\n"


def test_prune_twice_finds_nothing_the_second_time(repository: Path, state: Path) -> None:
    attempt(repository, state)
    assert len(prune_run(state, RUN, [repository], host=HOST)) == 1
    assert prune_run(state, RUN, [repository], host=HOST) == []


@pytest.mark.parametrize("run_id", ["../state", "SOR-0123", "attempt-1", ""])
def test_prune_refuses_anything_but_a_run_id(state: Path, run_id: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        prune_run(state, run_id, host=HOST)
    assert refused.value.code == "invalid_run_id"
