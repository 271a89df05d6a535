"""Load the catalog the router and the CLI use.

:func:`load_catalog` validates a catalog file with :func:`catalog.validation.validate_catalog_file`
(every rule listed there) and returns it only when it has no violation. The installed catalog,
:data:`DEFAULT_CATALOG_PATH`, is read once per process and then served from memory, because routing
and most CLI commands need it. It is trusted by digest (:mod:`catalog.reviewed`, whose digests a test
ties to a full validation), which keeps ``specialists route`` quick to start:

* when its bytes are exactly the reviewed file's, it is built from them without validating
  (:meth:`catalog.loaded.LoadedCatalog.reviewed`: its models are built on first use, with
  :func:`catalog.schema.construct_reviewed_catalog`) and carries the reviewed canonical sha256;
* when only its canonical sha256 equals the reviewed digest (the same JSON value, written another
  way), it is parsed against the schema without repeating the text-safety scan;
* any other content gets the full validation.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Final

from catalog.loaded import LoadedCatalog
from catalog.reviewed import REVIEWED_CATALOG_FILE_SHA256, REVIEWED_CATALOG_SHA256

__all__ = ["DEFAULT_CATALOG_PATH", "clear_catalog_cache", "load_catalog"]

DEFAULT_CATALOG_PATH: Final = Path(__file__).resolve().with_name("catalog.v1.json")
"""The catalog shipped inside the ``catalog`` package (package data ``catalog/*.json``)."""


def _load(path: Path) -> LoadedCatalog:
    # Imported here: the validation rules (and their compiled patterns) are needed only when a file
    # is not the reviewed catalog.
    from catalog.validation import CatalogInvalid, validate_catalog_file

    report = validate_catalog_file(path)
    if report.catalog is None:
        raise CatalogInvalid(report.violations, str(path))
    return report.catalog


@functools.lru_cache(maxsize=1)
def _load_default() -> LoadedCatalog:
    try:
        raw = DEFAULT_CATALOG_PATH.read_bytes()
        data = json.loads(raw)
    except (OSError, ValueError):
        return _load(DEFAULT_CATALOG_PATH)  # reports exactly what is wrong with the file
    if hashlib.sha256(raw).hexdigest() == REVIEWED_CATALOG_FILE_SHA256:
        return LoadedCatalog.reviewed(data, REVIEWED_CATALOG_SHA256)
    # Imported here: canonical JSON and the schema are needed only when the bytes are not the
    # reviewed ones.
    from catalog.schema import CatalogFile
    from contracts.hashing import CanonicalJsonError, canonical_sha256

    try:
        digest = canonical_sha256(data)
    except CanonicalJsonError:
        return _load(DEFAULT_CATALOG_PATH)
    if digest != REVIEWED_CATALOG_SHA256:
        return _load(DEFAULT_CATALOG_PATH)
    return LoadedCatalog(file=CatalogFile.model_validate(data), sha256=digest)


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
