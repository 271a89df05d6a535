"""Load the catalog the router and the CLI use.

:func:`load_catalog` validates a catalog file with :func:`catalog.validation.validate_catalog_file`
(every rule listed there) and returns it only when it has no violation. The installed catalog,
:data:`DEFAULT_CATALOG_PATH`, is read and validated once per process and then served from memory,
because routing and most CLI commands need it.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Final

from catalog.loaded import LoadedCatalog
from catalog.validation import CatalogInvalid, validate_catalog_file

__all__ = ["DEFAULT_CATALOG_PATH", "clear_catalog_cache", "load_catalog"]

DEFAULT_CATALOG_PATH: Final = Path(__file__).resolve().with_name("catalog.v1.json")
"""The catalog shipped inside the ``catalog`` package (package data ``catalog/*.json``)."""


def _load(path: Path) -> LoadedCatalog:
    report = validate_catalog_file(path)
    if report.catalog is None:
        raise CatalogInvalid(report.violations, str(path))
    return report.catalog


@functools.lru_cache(maxsize=1)
def _load_default() -> LoadedCatalog:
    return _load(DEFAULT_CATALOG_PATH)


def load_catalog(path: Path | None = None) -> LoadedCatalog:
    """Load and validate a catalog.

    Input: ``path`` of a catalog file, or ``None`` for :data:`DEFAULT_CATALOG_PATH` (cached after the
    first successful load; the same path given explicitly uses the cache too). Output: the
    :class:`~catalog.loaded.LoadedCatalog` with its canonical sha256. Raises
    :class:`~catalog.validation.CatalogInvalid` (code ``catalog_invalid``, exit 2) carrying every
    violation when the file is unreadable, not JSON or breaks any catalog rule.
    """
    if path is None or path.resolve() == DEFAULT_CATALOG_PATH:
        return _load_default()
    return _load(path)


def clear_catalog_cache() -> None:
    """Forget the cached default catalog, so the next :func:`load_catalog` reads the file again."""
    _load_default.cache_clear()
