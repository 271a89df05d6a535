"""Verify a catalog's upstream provenance against the upstream repository, read through a reader.

For every ``upstream`` profile the file at ``source_path`` is read from the commit the profile records
(``provenance.source_commit``, or the catalog's global ``upstream.commit`` when it records none), and
the sha256 of its raw bytes is compared with ``provenance.sha256``. Files are read from commits only,
never from a working tree, so local edits or another checked-out branch cannot change the outcome.
When the pin names a ``license_path`` and ``license_sha256``, the license file at the pinned commit is
checked the same way, and so is the copy of it this project keeps in ``third_party/`` when the caller
reads one (:class:`LicenseCopy`): the licence text travels with the profiles adapted under it, and the
copy must be byte for byte the licence the catalog records.

Statuses (docs/architecture.md "Operator contract", ``catalog --source-root``): ``ok`` the hash
matches; ``mismatch`` the file exists and hashes differently; ``missing`` the commit or the file is not
in the repository (or it could not be read); ``local`` a locally authored profile with no upstream file.

This module does no I/O (docs/architecture.md "Layers"): the repository is a :class:`SourceReader` its
caller opens — the git-backed one is :func:`runtime.catalog_sources.open_source_repository`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Final, Protocol

from pydantic import BaseModel, ConfigDict

from catalog.schema import CatalogFile, UpstreamPin

__all__ = [
    "LICENSE_COPY_CHECK_ID",
    "LicenseCopy",
    "SourceCheck",
    "SourceReader",
    "SourceStatus",
    "SourceVerification",
    "check_license_copy",
    "license_copy_path",
    "verify_sources",
]

LICENSE_COPY_CHECK_ID = "LICENSE (third_party copy)"
"""The ``id`` of the check of the kept licence copy (the upstream file's check is ``LICENSE``)."""


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
    catalog's pin records no ``license_path``/``license_sha256``; ``license_copy`` is the check of the
    licence copy kept in ``third_party/`` (``path`` is where it was looked for, ``commit`` ``None``), or
    ``None`` when the pin records no licence hash or no copy was asked for.
    """

    model_config = ConfigDict(frozen=True)

    verified: bool
    profiles: list[SourceCheck]
    license: SourceCheck | None = None
    license_copy: SourceCheck | None = None


_REPOSITORY_NAME: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,99}")


def license_copy_path(pin: UpstreamPin) -> str | None:
    """Where the kept copy of the pin's licence lives, relative to ``third_party/``:
    ``<repository name>/<license_path>`` (the repository name is the last segment of its URL, without
    ``.git``: ``agency-agents/LICENSE``). ``None`` when the pin records no ``license_path`` or
    ``license_sha256``, or its repository URL ends in no usable name (``license_path`` is already a
    relative path without ``..`` by the schema)."""
    if pin.license_path is None or pin.license_sha256 is None:
        return None
    name = pin.repository.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    if not _REPOSITORY_NAME.fullmatch(name) or name.strip(".") == "":
        return None
    return f"{name}/{pin.license_path}"


@dataclass(frozen=True)
class LicenseCopy:
    """The licence copy as its caller read it: ``location`` names it in messages; ``data`` is its bytes,
    or ``None`` with ``problem`` saying why it could not be read (absent, not a file, too large)."""

    location: str
    data: bytes | None
    problem: str = ""


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


def check_license_copy(pin: UpstreamPin, copy: LicenseCopy) -> SourceCheck | None:
    """Compare the kept licence copy with the pin's ``license_sha256``.

    Output: ``ok`` when its bytes hash to the recorded sha256, ``mismatch`` when they hash otherwise
    (an edited, re-encoded or re-wrapped copy), ``missing`` when it could not be read; ``None`` when the
    pin records no ``license_sha256`` (nothing to compare with).
    """
    if pin.license_sha256 is None:
        return None
    expected = pin.license_sha256
    if copy.data is None:
        return SourceCheck(
            id=LICENSE_COPY_CHECK_ID,
            status=SourceStatus.MISSING,
            path=copy.location,
            commit=None,
            expected_sha256=expected,
            actual_sha256=None,
            detail=f"no copy of the upstream licence at {copy.location}: {copy.problem}",
        )
    actual = hashlib.sha256(copy.data).hexdigest()
    matches = actual == expected
    return SourceCheck(
        id=LICENSE_COPY_CHECK_ID,
        status=SourceStatus.OK if matches else SourceStatus.MISMATCH,
        path=copy.location,
        commit=None,
        expected_sha256=expected,
        actual_sha256=actual,
        detail=(
            f"{copy.location} matches the recorded licence sha256"
            if matches
            else f"{copy.location} hashes to {actual}, not the recorded licence sha256 {expected}: "
            "it is not the upstream licence text byte for byte"
        ),
    )


def verify_sources(
    catalog: CatalogFile, source: SourceReader, license_copy: LicenseCopy | None = None
) -> SourceVerification:
    """Check every upstream profile's recorded file hash against the upstream repository ``source``.

    Inputs: a parsed (preferably validated) catalog; ``source``, a reader of the upstream repository
    (already checked to be one); ``license_copy``, the kept licence copy as read by the caller, or
    ``None`` not to check one. Output: a :class:`SourceVerification` with one :class:`SourceCheck`
    per profile (see the module docstring for the statuses), the upstream licence's check and the
    copy's. Whatever the reader raises besides :class:`OSError` (e.g.
    :class:`~contracts.errors.ServiceUnavailable` when git is not installed) propagates.
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

    copy_check = check_license_copy(pin, license_copy) if license_copy is not None else None

    failed = (SourceStatus.MISMATCH, SourceStatus.MISSING)
    extra = [check for check in (license_check, copy_check) if check is not None]
    verified = not any(check.status in failed for check in [*checks, *extra])
    return SourceVerification(
        verified=verified, profiles=checks, license=license_check, license_copy=copy_check
    )
