"""Verify a catalog's upstream provenance against the upstream repository, read through a reader.

For every ``upstream`` profile the file at ``source_path`` is read from the commit the profile records
(``provenance.source_commit``, or the catalog's global ``upstream.commit`` when it records none), and
the sha256 of its raw bytes is compared with ``provenance.sha256``. Files are read from commits only,
never from a working tree, so local edits or another checked-out branch cannot change the outcome.
When the pin names a ``license_path`` and ``license_sha256``, the license file at the pinned commit is
checked the same way.

Statuses (docs/architecture.md "Operator contract", ``catalog --source-root``): ``ok`` the hash
matches; ``mismatch`` the file exists and hashes differently; ``missing`` the commit or the file is not
in the repository (or it could not be read); ``local`` a locally authored profile with no upstream file.

This module does no I/O (docs/architecture.md "Layers"): the repository is a :class:`SourceReader` its
caller opens — the git-backed one is :func:`runtime.catalog_sources.open_source_repository`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from catalog.schema import CatalogFile

__all__ = ["SourceCheck", "SourceReader", "SourceStatus", "SourceVerification", "verify_sources"]


class SourceReader(Protocol):
    """Read-only access to files of the upstream repository at given commits."""

    @property
    def root(self) -> Path:
        """Where the repository is (named in messages)."""
        ...

    def has_commit(self, commit: str) -> bool:
        """Whether ``commit`` is a commit in the repository (``False`` also when it cannot tell)."""
        ...

    def read_blob(self, commit: str, path: str) -> bytes | None:
        """The bytes of the file ``path`` at ``commit`` (a commit :meth:`has_commit` knows), or ``None``
        when it is not a file there. Raises :class:`OSError` (e.g. :class:`TimeoutError`) when it could
        not be read; its message becomes the check's detail."""
        ...


class SourceStatus(StrEnum):
    """Outcome of checking one recorded source file."""

    OK = "ok"
    MISMATCH = "mismatch"
    MISSING = "missing"
    LOCAL = "local"


class SourceCheck(BaseModel):
    """One profile's (or the license's) source check.

    ``id`` is the profile id (``LICENSE`` for the license check); ``path`` and ``commit`` say which
    blob was read; ``expected_sha256`` is the recorded hash, ``actual_sha256`` the hash of the blob
    (``None`` when it could not be read); ``detail`` explains the status in one sentence.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    status: SourceStatus
    path: str | None
    commit: str | None
    expected_sha256: str | None
    actual_sha256: str | None
    detail: str


class SourceVerification(BaseModel):
    """The result of :func:`verify_sources`.

    ``verified`` is true when no check is ``mismatch`` or ``missing``; ``profiles`` has one entry per
    catalog profile in catalog order; ``license`` is the license file check, or ``None`` when the
    catalog's pin records no ``license_path``/``license_sha256``.
    """

    model_config = ConfigDict(frozen=True)

    verified: bool
    profiles: list[SourceCheck]
    license: SourceCheck | None = None


@dataclass(frozen=True)
class _Blob:
    data: bytes | None
    problem: str


class _Repository:
    """A :class:`SourceReader` with each commit and blob looked up once."""

    def __init__(self, reader: SourceReader) -> None:
        self._reader = reader
        self._commits: dict[str, bool] = {}
        self._blobs: dict[tuple[str, str], _Blob] = {}

    def blob(self, commit: str, path: str) -> _Blob:
        key = (commit, path)
        if key not in self._blobs:
            self._blobs[key] = self._read_blob(commit, path)
        return self._blobs[key]

    def _has_commit(self, commit: str) -> bool:
        if commit not in self._commits:
            self._commits[commit] = self._reader.has_commit(commit)
        return self._commits[commit]

    def _read_blob(self, commit: str, path: str) -> _Blob:
        if not self._has_commit(commit):
            return _Blob(None, f"commit {commit} is not in the repository at {self._reader.root}")
        try:
            data = self._reader.read_blob(commit, path)
        except OSError as error:
            return _Blob(None, str(error))
        if data is None:
            return _Blob(None, f"{path} does not exist (as a file) at commit {commit}")
        return _Blob(data, "")


def _check(
    repo: _Repository, check_id: str, commit: str, path: str | None, expected: str | None
) -> SourceCheck:
    if path is None or expected is None:
        return SourceCheck(
            id=check_id,
            status=SourceStatus.MISSING,
            path=path,
            commit=commit,
            expected_sha256=expected,
            actual_sha256=None,
            detail="provenance records no source_path or sha256 to verify",
        )
    blob = repo.blob(commit, path)
    if blob.data is None:
        return SourceCheck(
            id=check_id,
            status=SourceStatus.MISSING,
            path=path,
            commit=commit,
            expected_sha256=expected,
            actual_sha256=None,
            detail=blob.problem,
        )
    actual = hashlib.sha256(blob.data).hexdigest()
    matches = actual == expected
    return SourceCheck(
        id=check_id,
        status=SourceStatus.OK if matches else SourceStatus.MISMATCH,
        path=path,
        commit=commit,
        expected_sha256=expected,
        actual_sha256=actual,
        detail=(
            f"{path} at {commit[:12]} matches the recorded sha256"
            if matches
            else f"{path} at {commit[:12]} hashes to {actual}, not the recorded {expected}"
        ),
    )


def verify_sources(catalog: CatalogFile, source: SourceReader) -> SourceVerification:
    """Check every upstream profile's recorded file hash against the upstream repository ``source``.

    Inputs: a parsed (preferably validated) catalog; ``source``, a reader of the upstream repository
    (already checked to be one). Output: a :class:`SourceVerification` with one :class:`SourceCheck`
    per profile (see the module docstring for the statuses). Whatever the reader raises besides
    :class:`OSError` (e.g. :class:`~contracts.errors.ServiceUnavailable` when git is not installed)
    propagates.
    """
    repo = _Repository(source)

    checks: list[SourceCheck] = []
    for profile in catalog.profiles:
        provenance = profile.provenance
        if provenance.origin == "local":
            checks.append(
                SourceCheck(
                    id=profile.id,
                    status=SourceStatus.LOCAL,
                    path=None,
                    commit=None,
                    expected_sha256=None,
                    actual_sha256=None,
                    detail="locally authored: no upstream file to verify",
                )
            )
            continue
        commit = provenance.source_commit or catalog.upstream.commit
        checks.append(_check(repo, profile.id, commit, provenance.source_path, provenance.sha256))

    pin = catalog.upstream
    license_check = None
    if pin.license_path is not None and pin.license_sha256 is not None:
        license_check = _check(repo, "LICENSE", pin.commit, pin.license_path, pin.license_sha256)

    failed = (SourceStatus.MISMATCH, SourceStatus.MISSING)
    verified = not any(
        check.status in failed for check in [*checks, *([license_check] if license_check else [])]
    )
    return SourceVerification(verified=verified, profiles=checks, license=license_check)
