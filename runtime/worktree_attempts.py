"""Worktree attempts on this host: which a state directory holds and what git remembers of them.

Read-only, and shared by the operator surface (``specialists worktrees``) and the worker (the
``prune_worktrees`` activity, whose removing part is :mod:`activities.worktree_housekeeping`); git
only through :mod:`runtime.git` (docs/architecture.md "Layers", "Worktree execution"). Attempts live
where :func:`activities.worktree_lifecycle.create_attempt_worktree` makes them —
``<state>/worktrees/<run>/attempt-<n>`` with a sibling ``attempt-<n>.evidence``, and a probe's under
``<state>/worktrees/<run>-probe-<k>/`` (listed and pruned with its run) — and are *locked* git
worktrees of the source repository.

**What an attempt can look like after a crash or a hand clean-up**, and how each is found:

* a worktree and its evidence directory, locked (the normal preserved case);
* a worktree directory deleted by hand: git still lists it (``git worktree list``) and, being
  locked, ``git worktree prune`` alone does not forget it; its evidence directory may remain;
* both directories deleted: only the source repository's bookkeeping remains — found by asking
  the allow-listed repositories for worktrees under the state directory;
* a directory git no longer knows (its bookkeeping was pruned, or ``git worktree add`` never ran).

None of these blocks a new attempt: every attempt gets a new directory name (the claimed attempt
number, or one more than any ``attempt-*`` entry), and git names each worktree's bookkeeping after
a free name. The one exception: with both directories of ``attempt-<n>`` deleted by hand and the
number chosen by ``create_attempt_worktree`` (not claimed), ``n`` is reused and git refuses the path
it still remembers as a locked worktree — pruning the run clears it.

Which repository a worktree belongs to: the one its ``.git`` file names (``gitdir: <repo>/.git/
worktrees/<name>``, through ``commondir``), plus the repositories the caller names (allow-listed
ones, the run's execution record).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from contracts.worktree_prune import AttemptState
from runtime.git import Git

__all__ = [
    "WORKTREES_DIR",
    "GitWorktree",
    "git_worktrees",
    "list_attempts",
    "repository_of",
    "run_of",
    "worktrees_root",
]

WORKTREES_DIR: Final = "worktrees"
_RUN_DIR: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_ATTEMPT: Final = re.compile(r"^attempt-([1-9][0-9]{0,8})$")
_ENTRY: Final = re.compile(r"^attempt-([1-9][0-9]{0,8})(\.evidence)?$")
_PROBE_DIR: Final = re.compile(r"^(?P<run>.+)-probe-(?P<probe>[1-9][0-9]{0,2})$")
_MAX_GIT_FILE_BYTES: Final = 4096


@dataclass(frozen=True)
class GitWorktree:
    """One entry of ``git worktree list --porcelain``."""

    path: Path
    locked: bool
    lock_reason: str | None


def run_of(directory: str) -> tuple[str, int | None]:
    """The run a directory under ``worktrees/`` belongs to, and the probe whose attempts it holds
    (``SOR-…-probe-2`` → ``("SOR-…", 2)``; a run's own directory → ``(name, None)``)."""
    match = _PROBE_DIR.fullmatch(directory)
    if match is None:
        return directory, None
    return match.group("run"), int(match.group("probe"))


def worktrees_root(state_dir: Path) -> Path:
    """``<state_dir>/worktrees``, resolved (as
    :func:`activities.worktree_lifecycle.create_attempt_worktree` records paths)."""
    return state_dir.resolve() / WORKTREES_DIR


def git_worktrees(repository: Path) -> list[GitWorktree] | None:
    """The worktrees git lists for ``repository`` (its main working tree included), or ``None`` when
    ``repository`` is not a git repository git can read."""
    if not repository.is_dir():
        return None
    result = Git(repository).run("worktree", "list", "--porcelain", "-z")
    if result.returncode != 0:
        return None
    entries: list[GitWorktree] = []
    for record in result.stdout.split(b"\0\0"):
        fields = [field.decode("utf-8", "surrogateescape") for field in record.split(b"\0") if field]
        path = next((f.removeprefix("worktree ") for f in fields if f.startswith("worktree ")), None)
        if path is None:
            continue
        lock = next((f for f in fields if f == "locked" or f.startswith("locked ")), None)
        reason = None
        if lock is not None:
            reason = lock.removeprefix("locked").strip() or None
        entries.append(GitWorktree(path=Path(path), locked=lock is not None, lock_reason=reason))
    return entries


def repository_of(worktree: Path) -> Path | None:
    """The source repository named by ``worktree``'s ``.git`` file, or ``None``.

    The file reads ``gitdir: <common dir>/worktrees/<name>``; the common directory is found through
    that directory's ``commondir`` file (or, when git already dropped it, as its grandparent). Only a
    repository with a working tree (common directory ``<repo>/.git``) is returned.
    """
    dotgit = worktree / ".git"
    try:
        if dotgit.is_symlink() or not dotgit.is_file():
            return None
        with dotgit.open("rb") as handle:
            text = handle.read(_MAX_GIT_FILE_BYTES).decode("utf-8", "surrogateescape")
    except OSError:
        return None
    if not text.startswith("gitdir: "):
        return None
    gitdir = Path(text.removeprefix("gitdir: ").strip())
    if not gitdir.is_absolute():
        gitdir = worktree / gitdir
    try:
        common = (gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    except (OSError, UnicodeDecodeError):
        if gitdir.parent.name != "worktrees":
            return None
        common = gitdir.parent.parent.resolve()
    if common.name != ".git" or not common.is_dir():
        return None
    return common.parent


def list_attempts(
    state_dir: Path, repositories: Iterable[Path | str] = (), *, run_id: str | None = None
) -> list[AttemptState]:
    """Every attempt under ``<state_dir>/worktrees`` (only ``run_id``'s when given), sorted by run and
    attempt: those with a worktree or evidence directory there, and those a source repository still
    lists there — a run's probes' attempts with it (``probe`` set), after its own. ``repositories``
    are asked besides the ones the worktrees' ``.git`` files name."""
    root = worktrees_root(state_dir)
    found: set[tuple[str, int]] = set()
    if root.is_dir():
        for run_dir in sorted(root.iterdir()):
            if not _RUN_DIR.fullmatch(run_dir.name) or (
                run_id is not None and run_of(run_dir.name)[0] != run_id
            ):
                continue
            if run_dir.is_symlink() or not run_dir.is_dir():
                continue
            for entry in run_dir.iterdir():
                match = _ENTRY.fullmatch(entry.name)
                if match is not None:
                    found.add((run_dir.name, int(match.group(1))))

    candidates: list[Path] = []
    for repository in [
        *(Path(r) for r in repositories),
        *(repository_of(root / run / f"attempt-{n}") for run, n in sorted(found)),
    ]:
        if repository is not None and repository.resolve() not in candidates:
            candidates.append(repository.resolve())
    listings: dict[Path, list[GitWorktree]] = {}
    for repository in candidates:
        listing = git_worktrees(repository)
        if listing is not None:
            listings[repository] = listing

    known: dict[tuple[str, int], tuple[Path, GitWorktree]] = {}
    for repository, listing in listings.items():
        for listed in listing:
            key = _attempt_key(root, listed.path)
            if key is not None and (run_id is None or run_of(key[0])[0] == run_id):
                known.setdefault(key, (repository, listed))
                found.add(key)

    attempts: list[AttemptState] = []
    for directory, number in sorted(found):
        worktree = root / directory / f"attempt-{number}"
        evidence = root / directory / f"attempt-{number}.evidence"
        named = repository_of(worktree)
        if (directory, number) in known:
            repository, listed = known[(directory, number)]
            git_known: bool | None = True
            locked: bool | None = listed.locked
            reason = listed.lock_reason
        else:
            repository = named.resolve() if named is not None else None
            git_known = False if listings else None
            locked, reason = (False, None) if listings else (None, None)
        run, probe = run_of(directory)
        attempts.append(
            AttemptState(
                run_id=run,
                probe=probe,
                attempt=number,
                worktree=str(worktree),
                exists=worktree.is_dir() and not worktree.is_symlink(),
                evidence_dir=str(evidence),
                evidence_exists=evidence.is_dir() and not evidence.is_symlink(),
                repository=str(repository) if repository is not None else None,
                git_known=git_known,
                locked=locked,
                lock_reason=reason,
            )
        )
    return attempts


def _attempt_key(root: Path, path: Path) -> tuple[str, int] | None:
    """``(directory, n)`` when ``path`` is ``<root>/<directory>/attempt-<n>`` (the directory of a run
    or of one of its probes)."""
    resolved = Path(os.path.abspath(path))
    if resolved.parent.parent != root:
        return None
    match = _ATTEMPT.fullmatch(resolved.name)
    if match is None or not _RUN_DIR.fullmatch(resolved.parent.name):
        return None
    return resolved.parent.name, int(match.group(1))
