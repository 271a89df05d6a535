"""An attempt's worktree: create it, open it again, and check it still is what was made.

Plain functions (no Temporal; docs/architecture.md "Worktree execution"), git only through
:mod:`runtime.git`:

* :func:`create_attempt_worktree` — a fresh, detached, locked ``git worktree`` of the repository at the
  contract's frozen base commit, under ``<state>/worktrees/<run_id>/attempt-<n>`` (next unused ``n``;
  an earlier attempt's directory is never reused or overwritten), recording the source repository's
  refs and HEAD so later checks see new commits and refs.
* :func:`open_attempt` — git in an existing attempt's worktree, with the filter drivers its
  configuration defines switched off, after checking it is still a worktree of its repository.
* :func:`check_worktree_head` and :func:`check_source_refs` — fail closed
  (:class:`~contracts.worktree.WorktreeExecutionFailed`) when the worktree's HEAD left the base or a
  commit was made, or when the source repository's refs and HEAD are not as recorded.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Final

from activities.worktree_paths import show_path
from contracts.errors import InvalidInput, NotFound, Refused, ServiceUnavailable
from contracts.worktree import ExecutionFailure, WorktreeAttempt, WorktreeExecutionFailed
from runtime.git import Git, first_line, split_z

SOURCE_REFS_FILE: Final = "source-refs.txt"
_RUN_ID_PATTERN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_COMMIT_PATTERN: Final = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_ATTEMPT_ENTRY: Final = re.compile(r"^attempt-([1-9][0-9]{0,8})(?:\.evidence)?$")

_MAX_MESSAGE_ITEMS: Final = 5

_FILTER_KEYS: Final = (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))


def create_attempt_worktree(
    repository: Path, base_commit: str, state_dir: Path, run_id: str, attempt: int | None = None
) -> WorktreeAttempt:
    """Create the next attempt's worktree of ``repository`` at ``base_commit``; return the attempt.

    Inputs: ``repository`` the top level of an (allow-listed) git working tree; ``base_commit`` the
    contract's frozen full commit id; ``state_dir`` the deployment's state directory; ``run_id`` the
    run (``[A-Za-z0-9_-]``, as ``SOR-…``); ``attempt`` the attempt number to use (the claimed
    execution attempt), or ``None`` for one more than any ``attempt-*`` entry already there.

    The worktree is ``<state_dir>/worktrees/<run_id>/attempt-<n>``, so a retry never reuses or
    overwrites an earlier attempt (its directory is claimed with an exclusive ``mkdir``; if it exists
    anyway the call is refused). It is
    made with ``git worktree add --detach --no-checkout --lock`` at the commit itself — not a branch, so
    it works when the branch moved after the contract, and creates no ref — and then filled with ``git
    read-tree --reset -u`` run *inside* the new worktree once its own view of the configuration has
    been read, so that filter drivers it would see are neutralised. Its lock (reason names the run)
    keeps ``git worktree prune`` from dropping a preserved attempt. Before anything is created, the
    source repository's refs (``git for-each-ref``) and HEAD are recorded in ``source-refs.txt`` in
    the attempt's evidence directory ``attempt-<n>.evidence`` and their sha256 in the result.

    Raises :class:`WorktreeExecutionFailed` ``base_commit_unavailable`` when ``base_commit`` is not a
    commit in the repository's object store (nothing is created then); :class:`InvalidInput` for a
    malformed run id or commit id or a path that is not a working tree's top level;
    :class:`Refused` ``attempt_exists`` when the claimed directory appeared concurrently;
    :class:`ServiceUnavailable` when git fails or cannot be run.
    """
    if _RUN_ID_PATTERN.fullmatch(run_id) is None:
        raise InvalidInput("invalid_run_id", f"{run_id!r} is not a run id")
    if _COMMIT_PATTERN.fullmatch(base_commit) is None:
        raise InvalidInput("invalid_commit", f"{base_commit!r} is not a full commit id")
    if attempt is not None and attempt < 1:
        raise InvalidInput("invalid_attempt", f"attempt {attempt} is not a positive number")
    source = Git(_repository_root(repository))
    probe = source.run("cat-file", "-e", f"{base_commit}^{{commit}}")
    if probe.returncode != 0:
        raise WorktreeExecutionFailed(
            ExecutionFailure.BASE_COMMIT_UNAVAILABLE,
            f"base commit {base_commit} is not a commit in {source.cwd}'s object store",
        )
    refs = _source_refs(source)

    run_dir = state_dir.resolve() / "worktrees" / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    if attempt is None:
        attempt = _next_attempt_number(run_dir)
    worktree = run_dir / f"attempt-{attempt}"
    evidence_dir = run_dir / f"attempt-{attempt}.evidence"
    try:
        worktree.mkdir()
        evidence_dir.mkdir()
    except FileExistsError as exc:
        raise Refused(
            "attempt_exists", f"{exc.filename} already exists: an attempt directory is never reused"
        ) from exc
    (evidence_dir / SOURCE_REFS_FILE).write_bytes(refs)

    source.ok(
        "worktree",
        "add",
        "--quiet",
        "--detach",
        "--no-checkout",
        "--lock",
        "--reason",
        f"specialist run {run_id} attempt {attempt}",
        str(worktree),
        base_commit,
    )
    tree = _worktree_git(worktree)
    _check_worktree_identity(tree, worktree, source.cwd)
    tree.ok("read-tree", "--reset", "-u", base_commit)
    head = tree.text("rev-parse", "--verify", "HEAD^{commit}")
    if head != base_commit:
        raise WorktreeExecutionFailed(
            ExecutionFailure.HEAD_MOVED, f"new worktree {worktree} is at {head}, not {base_commit}"
        )
    return WorktreeAttempt(
        run_id=run_id,
        attempt=attempt,
        repository=source.cwd,
        base_commit=base_commit,
        worktree=worktree,
        evidence_dir=evidence_dir,
        source_refs_sha256=hashlib.sha256(refs).hexdigest(),
        source_refs_count=refs.count(b"\n") - 1,
    )


def _repository_root(repository: Path) -> Path:
    resolved = repository.resolve()
    if not resolved.is_dir():
        raise InvalidInput("not_a_git_repository", f"{resolved} is not an existing directory")
    result = Git(resolved).run("rev-parse", "--show-toplevel")
    top = result.stdout.decode("utf-8", "surrogateescape").strip()
    if result.returncode != 0 or Path(top).resolve() != resolved:
        raise InvalidInput("not_a_git_repository", f"{resolved} is not the top level of a git working tree")
    return resolved


def _next_attempt_number(run_dir: Path) -> int:
    numbers = [int(match.group(1)) for name in os.listdir(run_dir) if (match := _ATTEMPT_ENTRY.match(name))]
    return max(numbers, default=0) + 1


def _source_refs(source: Git) -> bytes:
    """The source repository's HEAD (commit and symbolic target) and every ref with its object, one per
    line, sorted: the listing whose sha256 an attempt records."""
    head = source.run("rev-parse", "--verify", "--quiet", "HEAD^{commit}").stdout.strip() or b"-"
    symbolic = source.run("symbolic-ref", "--quiet", "HEAD").stdout.strip() or b"-"
    refs = source.ok("for-each-ref", "--format=%(objectname) %(refname)")
    lines = sorted(line for line in refs.splitlines() if line)
    return b"HEAD " + head + b" " + symbolic + b"\n" + b"".join(line + b"\n" for line in lines)


def _filter_pins(tree: Path) -> tuple[tuple[str, str], ...]:
    """``-c`` settings that switch off every clean/smudge/process filter driver the configuration seen
    from ``tree`` defines. Raises :class:`Refused` ``unsafe_repository_configuration`` for a driver
    name that cannot be overridden on a command line (it contains ``=`` or a newline)."""
    result = Git(tree).run("config", "-z", "--name-only", "--get-regexp", r"^filter\.")
    if result.returncode not in (0, 1):
        raise ServiceUnavailable("git_failed", f"git config failed in {tree}: {first_line(result.stderr)}")
    drivers: set[str] = set()
    for key in split_z(result.stdout):
        name = key.decode("utf-8", "surrogateescape")
        section, _, rest = name.partition(".")
        driver, _, _variable = rest.rpartition(".")
        if section == "filter" and driver:
            if "=" in driver or "\n" in driver:
                raise Refused(
                    "unsafe_repository_configuration",
                    f"filter driver {driver!r} in {tree}'s configuration cannot be switched off",
                )
            drivers.add(driver)
    return tuple((f"filter.{d}.{key}", value) for d in sorted(drivers) for key, value in _FILTER_KEYS)


def _worktree_git(worktree: Path) -> Git:
    return Git(worktree, _filter_pins(worktree))


def _check_worktree_identity(tree: Git, worktree: Path, repository: Path) -> None:
    """The worktree's top level is ``worktree`` and it shares ``repository``'s git directory (its
    ``.git`` file was not pointed elsewhere). Fails closed with ``head_moved`` otherwise."""
    result = tree.run("rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir")
    lines = result.stdout.decode("utf-8", "surrogateescape").splitlines()
    common = Git(repository).run("rev-parse", "--path-format=absolute", "--git-common-dir")
    expected = Path(common.stdout.decode("utf-8", "surrogateescape").strip()).resolve()
    if (
        result.returncode != 0
        or common.returncode != 0
        or len(lines) != 2
        or Path(lines[0]).resolve() != worktree.resolve()
        or Path(lines[1]).resolve() != expected
    ):
        raise WorktreeExecutionFailed(
            ExecutionFailure.HEAD_MOVED,
            f"{worktree} is no longer a worktree of {repository}: {first_line(result.stderr)}",
        )


def open_attempt(attempt: WorktreeAttempt) -> Git:
    """git in ``attempt``'s worktree, its filter drivers switched off. Raises :class:`NotFound`
    ``worktree_missing`` when the directory is gone, ``head_moved`` when it is no longer a worktree of
    the attempt's repository (its ``.git`` file was pointed elsewhere)."""
    worktree = attempt.worktree
    if worktree.is_symlink() or not worktree.is_dir():
        raise NotFound("worktree_missing", f"the worktree of attempt {attempt.attempt} ({worktree}) is gone")
    tree = _worktree_git(worktree)
    _check_worktree_identity(tree, worktree, attempt.repository)
    return tree


def check_worktree_head(tree: Git, attempt: WorktreeAttempt) -> None:
    """The worktree's HEAD is detached at the base commit and its HEAD reflog names no other commit —
    so a commit made and then reset away is still seen. ``head_moved`` otherwise (``new_commit`` when
    the commit descends from the base)."""
    base = attempt.base_commit
    symbolic = tree.run("symbolic-ref", "--quiet", "HEAD")
    if symbolic.returncode == 0:
        raise WorktreeExecutionFailed(
            ExecutionFailure.HEAD_MOVED,
            f"the worktree's HEAD is attached to {show_path(symbolic.stdout.strip())}, "
            f"not detached at {base}",
        )
    head = tree.text("rev-parse", "--verify", "HEAD^{commit}")
    if head != base:
        raise _moved(tree, base, head, "the worktree's HEAD is now")
    reflog = tree.ok("reflog", "show", "--no-abbrev", "--format=%H", "HEAD", "--").decode().split()
    if not reflog:
        raise WorktreeExecutionFailed(
            ExecutionFailure.HEAD_MOVED,
            "the worktree's HEAD reflog is gone: no proof that nothing was committed",
        )
    for commit in reflog:
        if commit != base:
            raise _moved(tree, base, commit, "the worktree's HEAD reflog shows")


def _moved(tree: Git, base: str, commit: str, what: str) -> WorktreeExecutionFailed:
    descends = tree.run("merge-base", "--is-ancestor", base, commit).returncode == 0
    if descends:
        return WorktreeExecutionFailed(
            ExecutionFailure.NEW_COMMIT, f"{what} commit {commit}, made on top of the base {base}"
        )
    return WorktreeExecutionFailed(ExecutionFailure.HEAD_MOVED, f"{what} {commit}, not the base {base}")


def _parse_refs(listing: bytes) -> dict[bytes, bytes]:
    refs: dict[bytes, bytes] = {}
    for line in listing.splitlines():
        if line.startswith(b"HEAD "):
            refs[b"HEAD"] = line[5:]
        else:
            value, _, name = line.partition(b" ")
            refs[name] = value
    return refs


def check_source_refs(attempt: WorktreeAttempt) -> None:
    """The source repository's refs and HEAD are exactly as recorded at creation: ``new_commit`` when a
    ref or HEAD now points elsewhere, ``new_ref`` when a ref appeared or vanished, ``head_moved`` when
    its HEAD switched branch. Deliberately strict: any activity in the source repository during an
    attempt fails it."""
    current = _source_refs(Git(attempt.repository))
    if hashlib.sha256(current).hexdigest() == attempt.source_refs_sha256:
        return
    recorded_file = attempt.evidence_dir / SOURCE_REFS_FILE
    recorded = recorded_file.read_bytes() if recorded_file.is_file() else b""
    if hashlib.sha256(recorded).hexdigest() != attempt.source_refs_sha256:
        raise WorktreeExecutionFailed(
            ExecutionFailure.NEW_REF,
            f"the refs of {attempt.repository} changed since the attempt began "
            f"(and the recorded listing {recorded_file} is missing or altered)",
        )
    before, after = _parse_refs(recorded), _parse_refs(current)
    moved = sorted(n for n in before.keys() & after.keys() if n != b"HEAD" and before[n] != after[n])
    appeared = sorted(after.keys() - before.keys())
    vanished = sorted(before.keys() - after.keys())
    head_before, head_after = before.get(b"HEAD", b"- -").split(b" "), after.get(b"HEAD", b"- -").split(b" ")
    if moved or (head_before[1] == head_after[1] and head_before[0] != head_after[0]):
        names = [show_path(n) for n in moved] or ["HEAD"]
        raise WorktreeExecutionFailed(
            ExecutionFailure.NEW_COMMIT,
            f"{attempt.repository} has new commits since the attempt began: {_listing(names)} moved",
        )
    if appeared or vanished:
        changes = [f"+{show_path(n)}" for n in appeared] + [f"-{show_path(n)}" for n in vanished]
        raise WorktreeExecutionFailed(
            ExecutionFailure.NEW_REF,
            f"refs of {attempt.repository} changed since the attempt began: {_listing(changes)}",
        )
    raise WorktreeExecutionFailed(
        ExecutionFailure.HEAD_MOVED,
        f"the HEAD of {attempt.repository} moved from {show_path(head_before[1])} "
        f"to {show_path(head_after[1])}",
    )


def _listing(items: list[str]) -> str:
    shown = ", ".join(items[:_MAX_MESSAGE_ITEMS])
    more = len(items) - _MAX_MESSAGE_ITEMS
    return shown + (f" and {more} more" if more > 0 else "")
