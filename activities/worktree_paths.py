"""The path rules of worktree execution: which paths a patch may name and a change may leave.

Plain functions (no Temporal, no git; docs/architecture.md "Worktree execution"). A path is refused
when it is absolute or climbs out (``..``), is not plain (empty or ``.`` segments, a backslash, a
control, format or separator character), or touches git's own files — ``.git`` in any spelling a file
system may fold to it, ``.gitattributes`` and ``.gitmodules`` (they change how git checks and shows
a change). A path on disk must also resolve, through every symlink, inside the worktree; a symlink a
change leaves must point inside the tree as written.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path
from typing import Final

from contracts.worktree import ExecutionFailure, WorktreeExecutionFailed


def show_path(path: bytes) -> str:
    """A git path (bytes) as text for a message: bytes that are not UTF-8 are shown escaped."""
    return path.decode("utf-8", "backslashreplace")


def patch_invalid(message: str) -> WorktreeExecutionFailed:
    """The ``patch_invalid`` failure: the patch breaks a rule of
    :func:`activities.patch_checks.apply_patch`."""
    return WorktreeExecutionFailed(ExecutionFailure.PATCH_INVALID, message)


_GIT_CONTROL_FILES: Final = frozenset({b".gitattributes", b".gitmodules"})
"""Files in the tree that change how git itself checks and shows a change (``-diff`` hides content
from the evidence, ``-whitespace`` relaxes ``diff --check``): a change may not touch them."""


def is_git_segment(segment: bytes) -> bool:
    """``.git`` in any case, with the trailing dots/spaces Windows ignores, or its 8.3 short name; or a
    file that controls git (``.gitattributes``, ``.gitmodules``)."""
    folded = segment.rstrip(b". ").lower()
    return folded == b".git" or folded.startswith(b"git~") or folded in _GIT_CONTROL_FILES


_UNSAFE_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Characters a path may not hold: controls (C0, DEL, C1 such as NEL), format characters (bidi
overrides), line and paragraph separators — any could make a path pose as other text where it is
shown."""


def check_patch_path(path: str) -> None:
    """Refuse a patch path that is not a plain relative path inside the worktree (see
    :func:`activities.patch_checks.apply_patch`)."""
    segments = path.split("/")
    if path.startswith("/") or ".." in segments:
        raise WorktreeExecutionFailed(
            ExecutionFailure.PATH_OUTSIDE_WORKTREE, f"patch path {path!r} leads outside the worktree"
        )
    if (
        not path
        or "\\" in path
        or any(unicodedata.category(c) in _UNSAFE_CATEGORIES for c in path)
        or any(segment in ("", ".") for segment in segments)
    ):
        raise patch_invalid(f"patch path {path!r} is not a plain relative path")
    if any(is_git_segment(segment.encode("utf-8")) for segment in segments):
        raise patch_invalid(f"patch path {path!r} touches git's metadata (.git, .gitattributes, .gitmodules)")


def _outside(message: str) -> WorktreeExecutionFailed:
    return WorktreeExecutionFailed(ExecutionFailure.PATH_OUTSIDE_WORKTREE, message)


def check_changed_path(worktree: Path, path: bytes) -> None:
    """A path an attempt changed (as git lists it) is a plain relative path without a ``.git``
    segment, is not a nested repository, and resolves inside ``worktree`` and off its ``.git``;
    ``path_outside_worktree`` otherwise."""
    if path.endswith(b"/"):
        raise _outside(
            f"{show_path(path)} is a nested git repository: its content is outside this worktree's view"
        )
    segments = path.split(b"/")
    if path.startswith(b"/") or any(s in (b"", b".", b"..") for s in segments):
        raise _outside(f"changed path {show_path(path)} is not a plain relative path")
    if any(is_git_segment(segment) for segment in segments):
        raise _outside(f"changed path {show_path(path)} is git metadata (.git, .gitattributes, .gitmodules)")
    _check_link_target(worktree, path)
    check_inside(worktree, path)


def _check_link_target(worktree: Path, path: bytes) -> None:
    """A symlink the change leaves must point inside the tree *as written*: relative, and not above
    the top when joined to its own directory — a link that only resolves back inside here (an
    absolute path to this worktree, a ``../../attempt-n/…`` detour) leaves the tree once the change
    is taken elsewhere."""
    full = os.path.join(os.fsencode(worktree), path)
    if not os.path.islink(full):
        return
    target = os.readlink(full)
    joined = os.path.normpath(os.path.join(os.path.dirname(path), target))
    if target.startswith(b"/") or joined == b".." or joined.startswith(b"../"):
        raise _outside(
            f"symlink {show_path(path)} points to {show_path(target)}, which is outside the worktree"
        )


def check_inside(worktree: Path, path: bytes) -> None:
    """``worktree/path``, every symlink on the way and the symlink it may be itself, resolved, stays
    inside the worktree (and off its ``.git``); ``path_outside_worktree`` otherwise."""
    root = os.path.realpath(os.fsencode(worktree))
    full = os.path.join(os.fsencode(worktree), path)
    resolved = os.path.realpath(full)
    relative = os.path.relpath(resolved, root) if resolved.startswith(root + b"/") else None
    if relative is None and resolved != root:
        target = f" (a symlink to {show_path(os.readlink(full))})" if os.path.islink(full) else ""
        raise _outside(f"{show_path(path)}{target} resolves outside the worktree")
    if relative is not None and is_git_segment(relative.split(b"/")[0]):
        raise _outside(f"{show_path(path)} resolves onto the worktree's git metadata")
