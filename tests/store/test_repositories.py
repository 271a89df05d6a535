"""Allow-listing repositories: only the top level of a git working tree, with a real local branch."""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts.errors import InvalidInput, NotFound, Refused
from contracts.identity import Signer
from contracts.models import ModelSelection
from store import Store
from tests.identity import signer as actor_signer
from tests.store.git_repository import git, register_repository


def test_repository_is_added_with_its_current_branch(
    store: Store, signer: Signer, git_repository: Path
) -> None:
    record = register_repository(store, "service", git_repository, None, signer)
    assert record.alias == "service"
    assert record.path == str(git_repository.resolve())
    assert record.default_branch == "main"
    assert record.added_by == signer.actor_id
    assert store.get_repository("service") == record
    assert store.list_repositories() == [record]


def test_repository_is_added_with_an_explicit_local_branch(
    store: Store, signer: Signer, git_repository: Path
) -> None:
    assert (
        register_repository(store, "service", git_repository, "feature", signer).default_branch == "feature"
    )


def test_relative_path_is_stored_absolute(
    store: Store, signer: Signer, git_repository: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(git_repository.parent)
    record = register_repository(store, "service", Path(git_repository.name), None, signer)
    assert Path(record.path).is_absolute()
    assert record.path == str(git_repository.resolve())


def test_repositories_are_listed_by_alias(store: Store, signer: Signer, git_repository: Path) -> None:
    register_repository(store, "zeta", git_repository, None, signer)
    register_repository(store, "alpha", git_repository, "feature", signer)
    assert [record.alias for record in store.list_repositories()] == ["alpha", "zeta"]


def test_directory_outside_git_is_refused(store: Store, signer: Signer, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(InvalidInput) as raised:
        register_repository(store, "plain", plain, None, signer)
    assert raised.value.code == "not_a_git_repository"
    assert raised.value.exit_code == 2
    assert store.list_repositories() == []


def test_missing_path_is_refused(store: Store, signer: Signer, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as raised:
        register_repository(store, "missing", tmp_path / "missing", None, signer)
    assert raised.value.code == "not_a_git_repository"


def test_subdirectory_of_a_repository_is_refused(store: Store, signer: Signer, git_repository: Path) -> None:
    with pytest.raises(InvalidInput) as raised:
        register_repository(store, "docs", git_repository / "docs", None, signer)
    assert raised.value.code == "not_a_git_repository"
    assert str(git_repository.resolve()) in raised.value.message
    assert store.list_repositories() == []


def test_bare_repository_is_refused(store: Store, signer: Signer, tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    bare.mkdir()
    git(bare, "init", "--quiet", "--bare")
    with pytest.raises(InvalidInput) as raised:
        register_repository(store, "bare", bare, None, signer)
    assert raised.value.code == "not_a_git_repository"


@pytest.mark.parametrize("branch", ["release", "main~1", "main^", "HEAD", "-main", "a..b", ""])
def test_unknown_or_malformed_branch_is_refused(
    store: Store, signer: Signer, git_repository: Path, branch: str
) -> None:
    with pytest.raises(InvalidInput) as raised:
        register_repository(store, "service", git_repository, branch, signer)
    assert raised.value.code == "unknown_branch"
    assert store.list_repositories() == []


def test_detached_head_needs_an_explicit_branch(store: Store, signer: Signer, git_repository: Path) -> None:
    git(git_repository, "checkout", "--quiet", "--detach")
    with pytest.raises(InvalidInput) as raised:
        register_repository(store, "service", git_repository, None, signer)
    assert raised.value.code == "unknown_branch"
    assert register_repository(store, "service", git_repository, "main", signer).default_branch == "main"


def test_branch_without_commits_is_refused(store: Store, signer: Signer, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "--quiet", "--initial-branch=main")
    with pytest.raises(InvalidInput) as raised:
        register_repository(store, "empty", empty, None, signer)
    assert raised.value.code == "unknown_branch"


def test_duplicate_alias_is_refused_and_the_original_kept(
    store: Store, signer: Signer, git_repository: Path
) -> None:
    original = register_repository(store, "service", git_repository, "main", signer)
    with pytest.raises(Refused) as raised:
        register_repository(store, "service", git_repository, "feature", signer)
    assert raised.value.code == "duplicate_alias"
    assert raised.value.exit_code == 4
    assert store.list_repositories() == [original]


@pytest.mark.parametrize("alias", ["", "-service", ".service", "my service", "a" * 65, "svc/x"])
def test_malformed_alias_is_invalid_input(
    store: Store, signer: Signer, git_repository: Path, alias: str
) -> None:
    with pytest.raises(InvalidInput) as raised:
        register_repository(store, alias, git_repository, None, signer)
    assert raised.value.code == "invalid_alias"
    assert store.list_repositories() == []


def test_repository_added_by_unknown_actor_is_refused(
    store: Store, signer: Signer, git_repository: Path
) -> None:
    with pytest.raises(NotFound) as raised:
        register_repository(store, "service", git_repository, None, actor_signer("mallory"))
    assert raised.value.code == "unknown_actor"
    assert store.list_repositories() == []


def test_unknown_alias_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound) as raised:
        store.get_repository("service")
    assert raised.value.code == "unknown_repository"


def test_git_environment_of_the_caller_does_not_redirect_the_check(
    store: Store,
    signer: Signer,
    git_repository: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.setenv("GIT_DIR", str(git_repository / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(git_repository))
    with pytest.raises(InvalidInput):
        register_repository(store, "plain", plain, None, signer)


def test_the_store_runs_no_git_and_refuses_what_was_not_checked(
    store: Store, signer: Signer, git_repository: Path
) -> None:
    with pytest.raises(InvalidInput) as relative:
        store.add_repository("service", Path(git_repository.name), "main", signer)
    assert relative.value.code == "not_a_git_repository"
    with pytest.raises(InvalidInput) as no_branch:
        store.add_repository("service", git_repository.resolve(), "", signer)
    assert no_branch.value.code == "unknown_branch"
    assert store.list_repositories() == []
    record = store.add_repository("service", git_repository.resolve(), "feature", signer)
    assert (record.path, record.default_branch) == (str(git_repository.resolve()), "feature")


def test_capture_reads_policy_selection_and_repository_together(
    store: Store, signer: Signer, git_repository: Path
) -> None:
    record = register_repository(store, "service", git_repository, None, signer)
    selection = store.select_models(ModelSelection(primary="replay:demo"), signer)

    assert store.capture_reads("service") == (store.get_policy(), selection, record)
    assert store.capture_reads("unregistered") == (store.get_policy(), selection, None)
    assert store.capture_reads(None) == (store.get_policy(), selection, None)


def test_a_deactivated_repository_stays_listed_and_can_no_longer_be_changed(
    store: Store, signer: Signer, git_repository: Path
) -> None:
    from contracts.config import RepositoryConfig
    from store.repositories import require_active

    register_repository(store, "service", git_repository, None, signer)
    record = store.deactivate_repository("service", signer)
    assert (record.active, record.deactivated_by) == (False, signer.actor_id)
    assert store.list_repositories() == [record]
    assert store.get_repository("service") == record
    with pytest.raises(Refused) as used:
        require_active(record)
    assert used.value.code == "repository_deactivated"
    with pytest.raises(Refused) as updated:
        store.update_repository_config("service", RepositoryConfig(), signer)
    assert updated.value.code == "repository_deactivated"
    with pytest.raises(Refused) as again:
        store.deactivate_repository("service", signer)
    assert again.value.code == "repository_deactivated"
    with pytest.raises(NotFound):
        store.deactivate_repository("ghost", signer)
