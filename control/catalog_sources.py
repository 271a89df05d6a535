"""``catalog --source-root``: verify a catalog's upstream sources against a git checkout.

The comparing is :func:`catalog.sources.verify_sources` (no I/O); the git reading is
:func:`runtime.catalog_sources.open_source_repository` (docs/architecture.md "Layers").
"""

from __future__ import annotations

from pathlib import Path

from catalog.schema import CatalogFile
from catalog.sources import SourceVerification, verify_sources
from runtime.catalog_sources import SOURCE_GIT_TIMEOUT_SECONDS, open_source_repository


def verify_catalog_sources(
    catalog: CatalogFile, source_root: Path, *, timeout: float = SOURCE_GIT_TIMEOUT_SECONDS
) -> SourceVerification:
    """Check every upstream profile's recorded file hash against the git repository at ``source_root``.

    Inputs: a parsed (preferably validated) catalog; ``source_root``, the top directory of a clone of
    the upstream repository (a bare repository works too); ``timeout`` per git command, in seconds.
    Output: a :class:`SourceVerification` with one check per profile. Raises
    :class:`~contracts.errors.InvalidInput` ``source_root_not_git`` when ``source_root`` is not the top
    of a git repository, and :class:`~contracts.errors.ServiceUnavailable` ``git_unavailable`` when git
    is not installed.
    """
    return verify_sources(catalog, open_source_repository(source_root, timeout=timeout))
