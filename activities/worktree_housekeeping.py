"""Worktree housekeeping, the synchronous core: find a run's preserved attempts and remove them.

Plain functions (no Temporal): :func:`list_attempts` backs ``specialists worktrees`` and
:func:`prune_run` the ``prune_worktrees`` activity. Attempts live where
:func:`activities.worktree.create_attempt_worktree` makes them — ``<state>/worktrees/<run>/attempt-<n>``
with a sibling ``attempt-<n>.evidence`` — and are *locked* git worktrees of the source repository.

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
number chosen by :func:`create_attempt_worktree` (not claimed), ``n`` is reused and git refuses the
path it still remembers as a locked worktree — pruning the run clears it.

Which repository a worktree belongs to: the one its ``.git`` file names (``gitdir: <repo>/.git/
worktrees/<name>``, through ``commondir``), plus the repositories the caller names (allow-listed
ones, the run's execution record). git is run exactly as :mod:`activities.worktree` runs it: the
pinned environment and configuration of :class:`activities.worktree._Git`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from activities.worktree import _Git
from contracts.errors import InvalidInput, Refused, ServiceUnavailable
from contracts.ids import is_run_id
from contracts.worktree_prune import AttemptState, PrunedAttempt

WORKTREES_DIR: Final = "worktrees"
_RUN_DIR: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_ATTEMPT: Final = re.compile(r"^attempt-([1-9][0-9]{0,8})$")
_ENTRY: Final = re.compile(r"^attempt-([1-9][0-9]{0,8})(\.evidence)?$")
_MAX_GIT_FILE_BYTES: Final = 4096


@dataclass(frozen=True)
class GitWorktree:
    """One entry of ``git worktree list --porcelain``."""

    path: Path
    locked: bool
    lock_reason: str | None


def worktrees_root(state_dir: Path) -> Path:
    """``<state_dir>/worktrees``, resolved (as :func:`create_attempt_worktree` records paths)."""
    return state_dir.resolve() / WORKTREES_DIR


def git_worktrees(repository: Path) -> list[GitWorktree] | None:
    """The worktrees git lists for ``repository`` (its main working tree included), or ``None`` when
    ``repository`` is not a git repository git can read."""
    if not repository.is_dir():
        return None
    result = _Git(repository).run("worktree", "list", "--porcelain", "-z")
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
    lists there. ``repositories`` are asked besides the ones the worktrees' ``.git`` files name."""
    root = worktrees_root(state_dir)
    found: set[tuple[str, int]] = set()
    if root.is_dir():
        for run_dir in sorted(root.iterdir()):
            if not _RUN_DIR.fullmatch(run_dir.name) or (run_id is not None and run_dir.name != run_id):
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
            if key is not None and (run_id is None or key[0] == run_id):
                known.setdefault(key, (repository, listed))
                found.add(key)

    attempts: list[AttemptState] = []
    for run, number in sorted(found):
        worktree = root / run / f"attempt-{number}"
        evidence = root / run / f"attempt-{number}.evidence"
        named = repository_of(worktree)
        if (run, number) in known:
            repository, listed = known[(run, number)]
            git_known: bool | None = True
            locked: bool | None = listed.locked
            reason = listed.lock_reason
        else:
            repository = named.resolve() if named is not None else None
            git_known = False if listings else None
            locked, reason = (False, None) if listings else (None, None)
        attempts.append(
            AttemptState(
                run_id=run,
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
    """``(run, n)`` when ``path`` is ``<root>/<run>/attempt-<n>``."""
    resolved = Path(os.path.abspath(path))
    if resolved.parent.parent != root:
        return None
    match = _ATTEMPT.fullmatch(resolved.name)
    if match is None or not _RUN_DIR.fullmatch(resolved.parent.name):
        return None
    return resolved.parent.name, int(match.group(1))


def prune_run(
    state_dir: Path, run_id: str, repositories: Iterable[Path | str] = (), *, host: str
) -> list[PrunedAttempt]:
    """Remove every attempt of ``run_id`` under ``<state_dir>/worktrees``; what was removed.

    For each attempt a source repository lists: unlock it (``git worktree unlock``), then ``git
    worktree remove --force`` it from the source repository — for a directory already deleted by
    hand this drops git's bookkeeping, and should git keep listing it ``git worktree prune`` (it is
    unlocked now) does. A worktree directory no repository lists is deleted as a plain directory,
    and so is the evidence directory; a symlink in their place is removed, never followed. The
    run's directory goes when empty. Idempotent: a second call finds nothing and returns ``[]``.

    Raises :class:`InvalidInput` ``invalid_run_id`` for anything but a run id (``SOR-`` + 16), and
    :class:`ServiceUnavailable` ``git_failed`` when git refuses a step (the attempt is then kept as
    far as git kept it; a retry continues where this stopped).
    """
    if not is_run_id(run_id):
        raise InvalidInput("invalid_run_id", f"{run_id!r} is not a run id")
    root = worktrees_root(state_dir)
    run_dir = root / run_id
    if run_dir.is_symlink():
        raise Refused("unsafe_worktree_directory", f"{run_dir} is a symlink: nothing is removed through it")
    pruned: list[PrunedAttempt] = []
    for attempt in list_attempts(state_dir, repositories, run_id=run_id):
        worktree = Path(attempt.worktree)
        existed = attempt.exists
        removed_from_git = False
        if attempt.git_known and attempt.repository is not None:
            source = _Git(Path(attempt.repository))
            if attempt.locked:
                _succeed(source, "worktree", "unlock", str(worktree))
            if source.run("worktree", "remove", "--force", str(worktree)).returncode != 0:
                # git refused (e.g. a nested repository in it): delete the directory, then let git
                # drop what it remembers of a worktree that is gone (it is unlocked now).
                _remove_tree(worktree)
            if _still_listed(Path(attempt.repository), worktree):
                _succeed(source, "worktree", "prune")
            if _still_listed(Path(attempt.repository), worktree):
                raise ServiceUnavailable(
                    "git_failed", f"{attempt.repository} still lists the worktree {worktree} after removal"
                )
            removed_from_git = True
        removed_worktree = _remove_tree(worktree)
        removed_evidence = _remove_tree(Path(attempt.evidence_dir))
        pruned.append(
            PrunedAttempt(
                run_id=run_id,
                attempt=attempt.attempt,
                worktree=attempt.worktree,
                host=host,
                repository=attempt.repository,
                existed=existed,
                was_known_to_git=bool(attempt.git_known),
                was_locked=bool(attempt.locked),
                removed_worktree=existed and (removed_worktree or not worktree.exists()),
                removed_from_git=removed_from_git,
                removed_evidence=removed_evidence,
            )
        )
    with contextlib.suppress(OSError):
        if run_dir.is_dir() and not run_dir.is_symlink():
            run_dir.rmdir()  # only when empty
    return pruned


def _succeed(source: _Git, *args: str) -> None:
    result = source.run(*args)
    if result.returncode != 0:
        message = result.stderr.decode("utf-8", "backslashreplace").strip().splitlines()
        raise ServiceUnavailable(
            "git_failed",
            f"git {' '.join(args[:2])} failed in {source.cwd}: {message[0] if message else 'no reason'}",
        )


def _still_listed(repository: Path, worktree: Path) -> bool:
    listing = git_worktrees(repository) or []
    return any(Path(os.path.abspath(entry.path)) == worktree for entry in listing)


def _remove_tree(path: Path) -> bool:
    """Delete ``path`` (a directory tree, or a symlink itself); True when something was deleted."""
    if path.is_symlink() or path.is_file():
        path.unlink()
        return True
    if not path.is_dir():
        return False
    shutil.rmtree(path)
    return True
