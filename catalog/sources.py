"""Verify a catalog's upstream provenance against a git checkout of the upstream repository.

For every ``upstream`` profile the file at ``source_path`` is read from the commit the profile records
(``provenance.source_commit``, or the catalog's global ``upstream.commit`` when it records none) with
``git cat-file blob <commit>:<path>``, and the sha256 of its raw bytes is compared with
``provenance.sha256``. The working tree is never read, so local edits or another checked-out branch
cannot change the outcome. When the pin names a ``license_path`` and ``license_sha256``, the license
file at the pinned commit is checked the same way.

Statuses (DESIGN.md "Operator contract", ``catalog --source-root``): ``ok`` the hash matches;
``mismatch`` the file exists and hashes differently; ``missing`` the commit or the file is not in the
repository (or git could not read it); ``local`` a locally authored profile with no upstream file.

git runs with an argument vector (no shell), a timeout, no terminal prompt, no pager, and with ``GIT_*``
variables from the caller's environment removed so that none of them redirects it to another repository.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict

from catalog.schema import CatalogFile
from contracts.errors import InvalidInput, ServiceUnavailable

__all__ = ["GIT_TIMEOUT_SECONDS", "SourceCheck", "SourceStatus", "SourceVerification", "verify_sources"]

GIT_TIMEOUT_SECONDS: Final = 30.0
"""Longest time one git command may take before the file it reads counts as ``missing``."""


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
    """Read-only access to blobs of one git repository through the ``git`` command."""

    def __init__(self, root: Path, timeout: float) -> None:
        self.root = root
        self.timeout = timeout
        self.env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
        self.env.update(
            GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", PAGER="cat", GIT_OPTIONAL_LOCKS="0", LC_ALL="C"
        )
        self._commits: dict[str, bool] = {}
        self._blobs: dict[tuple[str, str], _Blob] = {}

    def _git(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        try:
            return subprocess.run(
                ["git", "--no-pager", "-C", str(self.root), *args],
                capture_output=True,
                stdin=subprocess.DEVNULL,
                env=self.env,
                timeout=self.timeout,
                check=False,
            )
        except FileNotFoundError as exc:
            raise ServiceUnavailable(
                "git_unavailable", "the git command was not found: install git to verify catalog sources"
            ) from exc

    def check_root(self) -> None:
        """Raise ``InvalidInput(source_root_not_git)`` unless ``root`` is the top of a repository."""
        try:
            bare = self._git("rev-parse", "--is-bare-repository")
            top = self._git("rev-parse", "--show-cdup") if bare.stdout.strip() == b"false" else None
        except subprocess.TimeoutExpired as exc:
            raise InvalidInput(
                "source_root_not_git", f"git did not answer within {self.timeout:g}s for {self.root}"
            ) from exc
        if bare.returncode != 0:
            reason = bare.stderr.decode("utf-8", "replace").strip().splitlines()
            raise InvalidInput(
                "source_root_not_git",
                f"--source-root {self.root} is not a git repository"
                + (f" ({reason[-1]})" if reason else "")
                + ": give a clone of the upstream repository",
            )
        if top is not None and (top.returncode != 0 or top.stdout.strip()):
            raise InvalidInput(
                "source_root_not_git",
                f"--source-root {self.root} is inside a git repository but is not its top level: "
                "give the repository's root directory",
            )

    def has_commit(self, commit: str) -> bool:
        if commit not in self._commits:
            try:
                result = self._git("cat-file", "-e", f"{commit}^{{commit}}")
                self._commits[commit] = result.returncode == 0
            except subprocess.TimeoutExpired:
                self._commits[commit] = False
        return self._commits[commit]

    def blob(self, commit: str, path: str) -> _Blob:
        key = (commit, path)
        if key not in self._blobs:
            self._blobs[key] = self._read_blob(commit, path)
        return self._blobs[key]

    def _read_blob(self, commit: str, path: str) -> _Blob:
        if not self.has_commit(commit):
            return _Blob(None, f"commit {commit} is not in the repository at {self.root}")
        try:
            result = self._git("cat-file", "blob", f"{commit}:{path}")
        except subprocess.TimeoutExpired:
            return _Blob(None, f"git did not answer within {self.timeout:g}s reading {path} at {commit}")
        if result.returncode != 0:
            return _Blob(None, f"{path} does not exist (as a file) at commit {commit}")
        return _Blob(result.stdout, "")


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


def verify_sources(
    catalog: CatalogFile, source_root: Path, *, timeout: float = GIT_TIMEOUT_SECONDS
) -> SourceVerification:
    """Check every upstream profile's recorded file hash against the git repository at ``source_root``.

    Inputs: a parsed (preferably validated) catalog; ``source_root``, the top directory of a clone of
    the upstream repository (a bare repository works too); ``timeout`` per git command, in seconds.
    Output: a :class:`SourceVerification` with one :class:`SourceCheck` per profile (see the module
    docstring for the statuses). Raises :class:`~contracts.errors.InvalidInput` with code
    ``source_root_not_git`` when ``source_root`` is not the top of a git repository, and
    :class:`~contracts.errors.ServiceUnavailable` (``git_unavailable``) when git is not installed.
    """
    repo = _Repository(source_root, timeout)
    repo.check_root()

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
