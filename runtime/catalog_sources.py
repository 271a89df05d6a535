"""The git-backed reader of catalog source verification (``catalog --source-root``).

:func:`open_source_repository` checks that a directory is the top of a git repository (a bare clone
works too) and returns a reader for :func:`catalog.sources.verify_sources`, which does the comparing
without I/O (docs/architecture.md "Layers"). Files are read from commits with ``git cat-file blob
<commit>:<path>`` through :mod:`runtime.git`, never from the working tree.

A git call that does not answer in time makes the root ``source_root_not_git``, a commit unknown and a
file ``missing`` (with the reason as its detail); git missing altogether is
:class:`~contracts.errors.ServiceUnavailable` ``git_unavailable``.

:func:`read_license_copy` reads the copy of the upstream licence this project keeps under
:data:`THIRD_PARTY_DIR` (``third_party/`` at the top of the source tree), which
:func:`catalog.sources.check_license_copy` compares with the catalog's recorded licence sha256.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from contracts.errors import InvalidInput
from runtime.git import GitNotFound, GitOutputTooLarge, GitResult, GitTimedOut, run_git

__all__ = [
    "MAX_LICENSE_COPY_BYTES",
    "SOURCE_GIT_TIMEOUT_SECONDS",
    "THIRD_PARTY_DIR",
    "GitSourceRepository",
    "open_source_repository",
    "read_license_copy",
]

THIRD_PARTY_DIR: Final = Path(__file__).resolve().parents[1] / "third_party"
"""The upstream texts this project keeps beside its code (``third_party/README.md`` says what each is)."""

MAX_LICENSE_COPY_BYTES: Final = 1024 * 1024
"""A licence copy larger than this is not read (the MIT text is about 1 KB)."""

SOURCE_GIT_TIMEOUT_SECONDS: Final = 30.0
"""Longest time one git command may take before the file it reads counts as ``missing``."""

_GIT_NOT_FOUND: Final = "the git command was not found: install git to verify catalog sources"


class GitSourceRepository:
    """Read-only access to blobs of one git repository (a :class:`catalog.sources.SourceReader`)."""

    def __init__(self, root: Path, timeout: float = SOURCE_GIT_TIMEOUT_SECONDS) -> None:
        self._root = root
        self.timeout = timeout

    @property
    def root(self) -> Path:
        return self._root

    def _git(self, *args: str) -> GitResult:
        try:
            return run_git(self._root, *args, timeout=self.timeout)
        except GitNotFound:
            raise GitNotFound(_GIT_NOT_FOUND) from None

    def check_root(self) -> None:
        """Raise ``InvalidInput(source_root_not_git)`` unless ``root`` is the top of a repository."""
        try:
            bare = self._git("rev-parse", "--is-bare-repository")
            top = self._git("rev-parse", "--show-cdup") if bare.stdout.strip() == b"false" else None
        except GitTimedOut as exc:
            raise InvalidInput(
                "source_root_not_git", f"git did not answer within {self.timeout:g}s for {self._root}"
            ) from exc
        if bare.returncode != 0:
            reason = bare.stderr.decode("utf-8", "replace").strip().splitlines()
            raise InvalidInput(
                "source_root_not_git",
                f"--source-root {self._root} is not a git repository"
                + (f" ({reason[-1]})" if reason else "")
                + ": give a clone of the upstream repository",
            )
        if top is not None and (top.returncode != 0 or top.stdout.strip()):
            raise InvalidInput(
                "source_root_not_git",
                f"--source-root {self._root} is inside a git repository but is not its top level: "
                "give the repository's root directory",
            )

    def has_commit(self, commit: str) -> bool:
        try:
            return self._git("cat-file", "-e", f"{commit}^{{commit}}").returncode == 0
        except GitTimedOut:
            return False

    def read_blob(self, commit: str, path: str) -> bytes | None:
        try:
            result = self._git("cat-file", "blob", f"{commit}:{path}")
        except GitTimedOut:
            raise TimeoutError(
                f"git did not answer within {self.timeout:g}s reading {path} at {commit}"
            ) from None
        except GitOutputTooLarge as error:
            raise OSError(error.message) from None
        return result.stdout if result.returncode == 0 else None


def open_source_repository(root: Path, *, timeout: float = SOURCE_GIT_TIMEOUT_SECONDS) -> GitSourceRepository:
    """A reader of the git repository whose top directory is ``root``; ``timeout`` per git command.

    Raises :class:`~contracts.errors.InvalidInput` ``source_root_not_git`` when ``root`` is not the top
    of a git repository, :class:`~contracts.errors.ServiceUnavailable` ``git_unavailable`` when git is
    not installed.
    """
    repository = GitSourceRepository(root, timeout)
    repository.check_root()
    return repository


def read_license_copy(path: Path) -> tuple[bytes | None, str]:
    """The bytes of the licence copy at ``path``, or ``None`` and why it could not be read (absent, not
    a regular file, larger than :data:`MAX_LICENSE_COPY_BYTES`, unreadable). Never raises ``OSError``."""
    try:
        if not path.is_file():
            return None, "the file does not exist" if not path.exists() else "it is not a regular file"
        with path.open("rb") as handle:
            data = handle.read(MAX_LICENSE_COPY_BYTES + 1)
    except OSError as exc:
        return None, f"cannot read it: {exc.strerror or exc}"
    if len(data) > MAX_LICENSE_COPY_BYTES:
        return None, f"it is larger than {MAX_LICENSE_COPY_BYTES} bytes"
    return data, ""
