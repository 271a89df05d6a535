"""Removing a run's preserved attempt worktrees: the synchronous core of the ``prune_worktrees``
activity (no Temporal).

Which attempts there are, and what git remembers of them, is :mod:`runtime.worktree_attempts` (the
operator surface lists them with it too); this module deletes them — through git where a source
repository lists the worktree, as plain directories otherwise. git only through :mod:`runtime.git`
(docs/architecture.md "Worktree execution").
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from contracts.errors import InvalidInput, Refused, ServiceUnavailable
from contracts.ids import is_run_id
from contracts.worktree_prune import PrunedAttempt
from runtime.git import Git
from runtime.worktree_attempts import git_worktrees, list_attempts, worktrees_root


def prune_run(
    state_dir: Path, run_id: str, repositories: Iterable[Path | str] = (), *, host: str
) -> list[PrunedAttempt]:
    """Remove every attempt of ``run_id`` under ``<state_dir>/worktrees``; what was removed.

    For each attempt a source repository lists: unlock it (``git worktree unlock``), then ``git
    worktree remove --force`` it from the source repository — for a directory already deleted by
    hand this drops git's bookkeeping, and should git keep listing it ``git worktree prune`` (it is
    unlocked now) does. A worktree directory no repository lists is deleted as a plain directory,
    and so is the evidence directory; a symlink in their place is removed, never followed. The
    run's directory goes when empty, and so does each of its probes' (``<run>-probe-<k>``).
    Idempotent: a second call finds nothing and returns ``[]``.

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
            source = Git(Path(attempt.repository))
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
                probe=attempt.probe,
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
    for directory in [run_dir, *sorted({Path(attempt.worktree).parent for attempt in pruned} - {run_dir})]:
        with contextlib.suppress(OSError):
            if directory.is_dir() and not directory.is_symlink():
                directory.rmdir()  # only when empty
    return pruned


def _succeed(source: Git, *args: str) -> None:
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
