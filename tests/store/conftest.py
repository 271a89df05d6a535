"""Fixtures for store tests: an opened store, a registered actor, and a real git working tree."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from store import Store, open_store
from tests.store.git_repository import make_working_tree

ACTOR = "alice"


@pytest.fixture
def store(database_url: str) -> Iterator[Store]:
    """A freshly created store (SQLite and PostgreSQL variants)."""
    opened = open_store(database_url)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def actor(store: Store) -> str:
    """The id of the first registered actor."""
    store.register_actor(ACTOR, "Alice Operator", None)
    return ACTOR


@pytest.fixture
def git_repository(tmp_path: Path) -> Path:
    """A git working tree on ``main`` with one commit, a ``feature`` branch and a ``docs`` directory."""
    return make_working_tree(tmp_path / "repository")
