"""Deployment-level store features: the adopted action token and repository base commits."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from contracts.errors import NotFound, Refused
from contracts.identity import Signer
from contracts.proofs import token_fingerprint
from store import Store
from tests.store.git_repository import register_repository, resolve_base_commit


def test_first_fingerprint_is_adopted_and_the_same_one_is_accepted_later(store: Store) -> None:
    fingerprint = token_fingerprint(b"first-deployment-token")
    assert store.adopt_token_fingerprint(fingerprint) is True
    assert store.adopt_token_fingerprint(fingerprint) is False


def test_a_different_token_after_adoption_is_refused(store: Store) -> None:
    store.adopt_token_fingerprint(token_fingerprint(b"first-deployment-token"))
    with pytest.raises(Refused) as refused:
        store.adopt_token_fingerprint(token_fingerprint(b"another-token-entirely"))
    assert refused.value.code == "action_token_mismatch"


def _head(path: Path, ref: str = "main") -> str:
    return subprocess.run(
        ["git", "-C", str(path), "rev-parse", ref], check=True, capture_output=True, text=True
    ).stdout.strip()


def test_base_commit_is_the_commit_the_default_branch_points_at(
    store: Store, signer: Signer, git_repository: Path
) -> None:
    register_repository(store, "app", git_repository, "main", signer)
    record, commit = resolve_base_commit(store, "app")
    assert record.alias == "app"
    assert commit == _head(git_repository)


def test_base_commit_of_an_unknown_alias_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound) as missing:
        resolve_base_commit(store, "nope")
    assert missing.value.code == "unknown_repository"


def test_base_commit_of_a_repository_that_disappeared_is_refused(
    store: Store, signer: Signer, git_repository: Path
) -> None:
    register_repository(store, "app", git_repository, "main", signer)
    shutil.rmtree(git_repository / ".git")
    with pytest.raises(Refused) as refused:
        resolve_base_commit(store, "app")
    assert refused.value.code == "repository_unavailable"


def test_base_commit_of_a_deleted_branch_is_refused(
    store: Store, signer: Signer, git_repository: Path
) -> None:
    register_repository(store, "app", git_repository, "feature", signer)
    subprocess.run(
        ["git", "-C", str(git_repository), "branch", "-D", "feature"], check=True, capture_output=True
    )
    with pytest.raises(Refused) as refused:
        resolve_base_commit(store, "app")
    assert refused.value.code == "repository_unavailable"
