"""Fixtures for the catalog tests."""

from __future__ import annotations

import pytest

from catalog.loaded import LoadedCatalog
from catalog.loader import load_catalog


@pytest.fixture(scope="session")
def loaded_catalog() -> LoadedCatalog:
    """The shipped catalog, validated and loaded the way the router and the CLI load it."""
    return load_catalog()
