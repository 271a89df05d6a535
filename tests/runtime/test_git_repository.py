"""``runtime.git_repository``: reading allow-listed repositories with the environment every git call
gets, and the checks callers make before registering one or freezing its base commit."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from contracts.config import RepositoryRecord
from contracts.errors import InvalidInput, Refused
from runtime import git_repository as git
from runtime.git import git_environment
from tests.store.git_repository import make_working_tree


def test_git_gets_no_secret_and_no_variable_that_would_point_it_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-git")
    monkeypatch.setenv("SPECIALISTS_ACTION_TOKEN", "not-for-git")
    monkeypatch.setenv("GIT_DIR", "/somewhere/else")
    environment = git_environment()
    assert not {"OPENAI_API_KEY", "SPECIALISTS_ACTION_TOKEN", "GIT_DIR"} & set(environment)
    inherited = {name for name in environment if not name.startswith("GIT_")} - {"LC_ALL"}
    assert inherited <= {"PATH", "HOME", "TMPDIR", "XDG_CONFIG_HOME"}


def test_a_repository_is_read_where_it_is_even_with_git_dir_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = make_working_tree(tmp_path / "repo")
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "nowhere"))
    commit = git.branch_commit(tree, "main")
    assert git.commit_exists(tree, commit)
    assert git.tracked_paths(tree, commit) == ["docs/README.md"]


def test_the_checked_working_tree_is_its_resolved_top_level_and_an_existing_branch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = make_working_tree(tmp_path / "repo")
    monkeypatch.chdir(tmp_path)
    assert git.checked_working_tree(Path("repo"), None) == (tree.resolve(), "main")
    assert git.checked_working_tree(tree, "feature") == (tree.resolve(), "feature")
    with pytest.raises(InvalidInput) as not_top:
        git.checked_working_tree(tree / "docs", None)
    assert not_top.value.code == "not_a_git_repository"
    with pytest.raises(InvalidInput) as unknown:
        git.checked_working_tree(tree, "release")
    assert unknown.value.code == "unknown_branch"


def _record(path: Path, branch: str = "main") -> RepositoryRecord:
    return RepositoryRecord(
        alias="app", path=str(path), default_branch=branch, added_by="alice", added_at=dt.datetime.now(dt.UTC)
    )


def test_the_base_commit_is_the_branchs_commit_now_or_repository_unavailable(tmp_path: Path) -> None:
    tree = make_working_tree(tmp_path / "repo")
    assert git.base_commit_of(_record(tree)) == git.branch_commit(tree, "main")
    with pytest.raises(Refused) as no_branch:
        git.base_commit_of(_record(tree, "release"))
    assert no_branch.value.code == "repository_unavailable"
    assert no_branch.value.message.startswith(f"repository 'app' ({tree}, branch release): ")
    with pytest.raises(Refused) as gone:
        git.base_commit_of(_record(tmp_path / "gone"))
    assert gone.value.code == "repository_unavailable" and gone.value.exit_code == 4
