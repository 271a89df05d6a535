"""Read-only git queries of allow-listed repositories: a working tree's top level and its branches
(checked before a repository is registered), a branch's current commit (frozen as a contract's base
commit), and files at a frozen commit (context-pack evidence).

git runs only through :mod:`runtime.git` (docs/architecture.md "Worktree execution"): an argument
vector, a timeout, and its one pinned environment and configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from contracts.config import RepositoryRecord
from contracts.errors import InvalidInput, Refused, ServiceUnavailable
from runtime.git import run_git

GIT_TIMEOUT_SECONDS: Final = 15.0
MAX_BRANCH_CHARS: Final = 255


def working_tree_root(path: Path) -> Path:
    """The absolute, resolved ``path`` if it is the top level of a git working tree.

    Raises :class:`InvalidInput` (``not_a_git_repository``) for a missing directory, a directory that
    is not in a working tree, a bare repository, or a subdirectory of a working tree (naming its top
    level); :class:`ServiceUnavailable` (``git_unavailable``) when git cannot be run.
    """
    resolved = path.resolve()
    if not resolved.is_dir():
        raise InvalidInput("not_a_git_repository", f"{resolved} is not an existing directory")
    result = _git(resolved, "rev-parse", "--show-toplevel")
    if result.returncode != 0:
        raise InvalidInput(
            "not_a_git_repository",
            f"{resolved} is not a git working tree: {_first_line(result.stderr)}",
        )
    toplevel = Path(result.stdout.strip()).resolve()
    if toplevel != resolved:
        raise InvalidInput(
            "not_a_git_repository",
            f"{resolved} is inside the git working tree {toplevel}, not its top level: register {toplevel}",
        )
    return resolved


def local_branch(tree: Path, branch: str | None) -> str:
    """The default branch for the working tree ``tree``: ``branch`` if it is an existing local
    branch, or, when ``branch`` is ``None``, the branch checked out at ``tree``.

    Raises :class:`InvalidInput` (``unknown_branch``) for a malformed or missing branch, a detached
    HEAD, or a branch without commits.
    """
    if branch is None:
        result = _git(tree, "symbolic-ref", "--quiet", "--short", "HEAD")
        if result.returncode != 0:
            raise InvalidInput(
                "unknown_branch",
                f"{tree} has a detached HEAD, so it has no current branch: name the default branch",
            )
        branch = result.stdout.strip()
    if (
        not branch
        or len(branch) > MAX_BRANCH_CHARS
        or branch.startswith("-")
        or _git(tree, "check-ref-format", f"refs/heads/{branch}").returncode != 0
    ):
        raise InvalidInput("unknown_branch", f"{branch!r} is not a valid branch name")
    if _git(tree, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}").returncode != 0:
        raise InvalidInput("unknown_branch", f"{tree} has no local branch {branch!r} with a commit on it")
    return branch


def branch_commit(tree: Path, branch: str) -> str:
    """The full commit id (40 hex) the local ``branch`` of working tree ``tree`` points at.

    Raises :class:`InvalidInput` (``not_a_git_repository``, ``unknown_branch``) like
    :func:`working_tree_root` and :func:`local_branch`.
    """
    root = working_tree_root(tree)
    name = local_branch(root, branch)
    result = _git(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{name}^{{commit}}")
    commit = result.stdout.strip()
    if result.returncode != 0 or len(commit) != 40:
        raise InvalidInput("unknown_branch", f"{root}: branch {name!r} does not resolve to a commit")
    return commit


def checked_working_tree(path: Path, branch: str | None) -> tuple[Path, str]:
    """``(root, branch)`` to register: ``path`` resolved, if it is the top level of a git working tree,
    and ``branch`` if it is an existing local branch there (``None``: the branch checked out).

    What :meth:`store.Store.add_repository` stores; its caller checks it here first. Raises
    :class:`InvalidInput` ``not_a_git_repository`` (see :func:`working_tree_root`) or
    ``unknown_branch`` (see :func:`local_branch`), :class:`ServiceUnavailable` when git cannot be run.
    """
    root = working_tree_root(path)
    return root, local_branch(root, branch)


def base_commit_of(record: RepositoryRecord) -> str:
    """The commit the registered repository's default branch points at now (a contract freezes it).

    Raises :class:`Refused` ``repository_unavailable`` when the path is no longer a git working tree
    or the branch does not resolve to a commit; :class:`ServiceUnavailable` when git cannot be run.
    """
    try:
        return branch_commit(Path(record.path), record.default_branch)
    except InvalidInput as error:
        raise Refused(
            "repository_unavailable",
            f"repository {record.alias!r} ({record.path}, branch {record.default_branch}): {error.message}",
        ) from None


def _git(tree: Path, *args: str) -> _TextResult:
    result = run_git(tree, *args, timeout=GIT_TIMEOUT_SECONDS)
    return _TextResult(
        result.returncode,
        result.stdout.decode("utf-8", "surrogateescape"),
        result.stderr.decode("utf-8", "backslashreplace"),
    )


@dataclass(frozen=True)
class _TextResult:
    returncode: int
    stdout: str
    stderr: str


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "git gave no reason"


def check_repository_path(path: str) -> str:
    """Return ``path`` if it is a plain relative path inside a repository (``a/b.py``): no leading
    ``/``, no ``.``/``..``/empty segments, no backslash, no control characters, at most 400
    characters. Raises :class:`InvalidInput` ``invalid_evidence_path`` otherwise.

    Paths come from work items' ``file:PATH`` evidence refs; they are only ever used to name an object
    at a frozen commit (``git cat-file``), never to touch the file system.
    """
    segments = path.split("/")
    if (
        not path
        or len(path) > 400
        or path.startswith("/")
        or "\\" in path
        or any(not c.isprintable() for c in path)
        or any(segment in ("", ".", "..") for segment in segments)
    ):
        raise InvalidInput("invalid_evidence_path", f"evidence path {path!r} is not a plain relative path")
    return path


def _check_commit(commit: str) -> str:
    if len(commit) not in (40, 64) or any(c not in "0123456789abcdef" for c in commit):
        raise InvalidInput("invalid_commit", f"{commit!r} is not a full commit id")
    return commit


def commit_exists(tree: Path, commit: str) -> bool:
    """Whether ``commit`` is a commit in ``tree``'s object store. Raises :class:`InvalidInput` for a
    malformed commit id, :class:`ServiceUnavailable` when git cannot be run."""
    return _git(tree, "cat-file", "-e", f"{_check_commit(commit)}^{{commit}}").returncode == 0


def blob_size(tree: Path, commit: str, path: str) -> int | None:
    """The size in bytes of the file ``path`` at ``commit``, or ``None`` when it is not a file there.

    Raises :class:`InvalidInput` for a bad path or commit, :class:`ServiceUnavailable` when git fails.
    """
    spec = f"{_check_commit(commit)}:{check_repository_path(path)}"
    kind = _git(tree, "cat-file", "-t", spec)
    if kind.returncode != 0 or kind.stdout.strip() != "blob":
        return None
    size = _git(tree, "cat-file", "-s", spec)
    if size.returncode != 0:
        return None
    return int(size.stdout.strip())


def read_blob(tree: Path, commit: str, path: str) -> bytes:
    """The bytes of the file ``path`` at ``commit`` (check :func:`blob_size` first: this reads it all).

    Raises :class:`InvalidInput` for a bad path or commit or a path that is not a file there,
    :class:`ServiceUnavailable` when git fails.
    """
    spec = f"{_check_commit(commit)}:{check_repository_path(path)}"
    result = run_git(tree, "cat-file", "blob", spec, timeout=GIT_TIMEOUT_SECONDS)
    if result.returncode != 0:
        raise InvalidInput("evidence_not_found", f"{path} is not a file at {commit[:12]}")
    return result.stdout


def tracked_paths(tree: Path, commit: str) -> list[str]:
    """Every path tracked at ``commit``, sorted as git lists them. Raises :class:`InvalidInput` for a
    bad commit, :class:`ServiceUnavailable` when git fails."""
    result = run_git(
        tree, "ls-tree", "-r", "-z", "--name-only", _check_commit(commit), timeout=GIT_TIMEOUT_SECONDS
    )
    if result.returncode != 0:
        error = result.stderr.decode("utf-8", "replace")
        raise ServiceUnavailable("git_failed", f"git ls-tree failed: {_first_line(error)}")
    # Git paths are bytes; one that is not UTF-8 is shown with its bytes escaped, never dropped.
    return [path.decode("utf-8", "backslashreplace") for path in result.stdout.split(b"\0") if path]
