"""``runtime.git_repository``: reading allow-listed repositories with the environment every git call
gets, and the checks callers make before registering one or freezing its base commit."""

from __future__ import annotations

from pathlib import Path

import pytest

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
