"""Fixtures for store tests: an opened store, a registered actor (the trust root, with its test key),
and a real git working tree."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from contracts.identity import Signer
from store import Store, open_store
from tests.identity import STORE_ANCHOR, bootstrap
from tests.store.git_repository import make_working_tree

ACTOR = "alice"


@pytest.fixture
def store(database_url: str) -> Iterator[Store]:
    """A freshly created store (SQLite and PostgreSQL variants) that verifies its configuration against
    the test deployment's action token."""
    opened = open_store(database_url, anchor=STORE_ANCHOR)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def signer(store: Store) -> Signer:
    """The first registered actor (the trust root) acting with its key."""
    return bootstrap(store, ACTOR, "Alice Operator")


@pytest.fixture
def actor(signer: Signer) -> str:
    """The id of the first registered actor."""
    return signer.actor_id


@pytest.fixture
def git_repository(tmp_path: Path) -> Path:
    """A git working tree on ``main`` with one commit, a ``feature`` branch and a ``docs`` directory."""
    return make_working_tree(tmp_path / "repository")
