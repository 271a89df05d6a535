"""``catalog --source-root``: verify a catalog's upstream sources against a git checkout, and the
licence copy kept in ``third_party/`` against the catalog's recorded licence sha256.

The comparing is :func:`catalog.sources.verify_sources` (no I/O); the git reading and the reading of
the licence copy are :mod:`runtime.catalog_sources` (docs/architecture.md "Layers").
"""

from __future__ import annotations

from pathlib import Path

from catalog.schema import CatalogFile
from catalog.sources import LicenseCopy, SourceVerification, license_copy_path, verify_sources
from runtime import catalog_sources as runtime_sources
from runtime.catalog_sources import SOURCE_GIT_TIMEOUT_SECONDS, open_source_repository, read_license_copy


def _license_copy(catalog: CatalogFile, third_party: Path) -> LicenseCopy | None:
    pin = catalog.upstream
    if pin.license_sha256 is None:
        return None
    relative = license_copy_path(pin)
    if relative is None:
        where = f"{third_party}/<repository>/{pin.license_path or '<license_path>'}"
        return LicenseCopy(
            location=where,
            data=None,
            problem="the catalog's upstream pin records a licence sha256 but no license_path, or its "
            "repository URL names no repository",
        )
    path = third_party / relative
    data, problem = read_license_copy(path)
    return LicenseCopy(location=str(path), data=data, problem=problem)


def verify_catalog_sources(
    catalog: CatalogFile,
    source_root: Path,
    *,
    timeout: float = SOURCE_GIT_TIMEOUT_SECONDS,
    third_party: Path | None = None,
) -> SourceVerification:
    """Check every upstream profile's recorded file hash against the git repository at ``source_root``,
    and the licence copy under ``third_party`` against the recorded licence sha256.

    Inputs: a parsed (preferably validated) catalog; ``source_root``, the top directory of a clone of
    the upstream repository (a bare repository works too); ``timeout`` per git command, in seconds;
    ``third_party``, the directory of kept upstream texts (by default
    :data:`runtime.catalog_sources.THIRD_PARTY_DIR`, ``third_party/`` of this source tree).
    Output: a :class:`SourceVerification` with one check per profile, the upstream licence's check and
    the licence copy's (``missing`` when the pin records a licence sha256 and no copy is there).
    Raises :class:`~contracts.errors.InvalidInput` ``source_root_not_git`` when ``source_root`` is not
    the top of a git repository, and :class:`~contracts.errors.ServiceUnavailable` ``git_unavailable``
    when git is not installed.
    """
    repository = open_source_repository(source_root, timeout=timeout)
    kept = third_party if third_party is not None else runtime_sources.THIRD_PARTY_DIR
    return verify_sources(catalog, repository, _license_copy(catalog, kept))
