"""What an attempt changed, as git computes it: the fail-closed check, the evidence, the patch file.

Plain functions (no Temporal; docs/architecture.md "Worktree execution"), git only through
:mod:`runtime.git`:

* :func:`check_and_collect` — fail closed (:class:`~contracts.worktree.WorktreeExecutionFailed`) unless
  the worktree's HEAD is still the base, nothing was committed, the source repository's refs are as
  recorded, ``git diff --check`` passes, at most 40 paths changed and none escapes the worktree; then
  the evidence (file list, numstat, diff) as git computes it against the base commit, parsed from
  ``--raw``/``--numstat`` output, a large or non-UTF-8 diff stored by reference.
  What a real repository holds is judged as it is: line endings are kept and never a whitespace
  error by themselves (CRLF, LF, mixed, no final newline), a binary file is named as binary, renames
  and mode changes are reported as such (see :func:`check_and_collect`).
* :func:`store_evidence_file` — content-addressed, atomic files in the attempt's evidence directory.
* :func:`write_pr_ready_patch` — a pr_ready attempt's complete patch (``pr-ready.patch``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Final

from activities.worktree_lifecycle import check_source_refs, check_worktree_head, open_attempt
from activities.worktree_paths import check_changed_path, show_path
from contracts.errors import ServiceUnavailable
from contracts.worktree import (
    MAX_CHANGED_FILES,
    MAX_INLINE_DIFF_BYTES,
    ChangedFile,
    ChangeEvidence,
    ExecutionFailure,
    FileStatus,
    NumstatEntry,
    WorktreeAttempt,
    WorktreeExecutionFailed,
)
from runtime.git import Git, first_line, split_z

_DIFF_OPTIONS: Final = (
    "--no-ext-diff",
    "--no-textconv",
    "--no-color",
    "--ignore-submodules=none",
)


def check_and_collect(attempt: WorktreeAttempt) -> ChangeEvidence:
    """Fail closed unless the attempt's change is acceptable; return the evidence of what changed.

    Checks, in order (each raises :class:`WorktreeExecutionFailed` with the named type):

    1. The worktree is still ``attempt.worktree`` sharing the source repository's git directory, its
       HEAD is detached at the base commit and its HEAD reflog names no other commit — so a commit made
       and then reset away is still seen (``head_moved``; ``new_commit`` when the commit descends from
       the base).
    2. The source repository's refs and HEAD are exactly as recorded at creation (``new_commit`` when a
       ref or HEAD now points elsewhere, ``new_ref`` when a ref appeared or vanished, ``head_moved``
       when its HEAD switched branch). This is deliberately strict: any activity in the source
       repository during an attempt fails it.
    3. The worktree's index is reset to the base tree (``git read-tree``: nothing is ever staged or
       committed here, so nothing is lost, and it clears ``assume-unchanged``/``skip-worktree`` bits a
       process could have set to hide a change). Changed paths are then those ``git diff --no-renames``
       reports against the base (modified, deleted, type-changed) plus every untracked path from ``git
       ls-files --others`` *without* exclude rules — an ignored file is still a file the attempt
       created. More than :data:`MAX_CHANGED_FILES` → ``too_many_files``.
    4. Every changed path is a plain relative path without a ``.git`` segment, is not a nested
       repository, and resolves (``os.path.realpath``, through any symlink it is or passes through)
       inside the worktree and not onto its ``.git`` → otherwise ``path_outside_worktree``.
    5. Untracked paths are marked intent-to-add (``git add --intent-to-add --force``: no object is
       written, but the diff against the base now shows them as new files), and ``git diff --check``
       against the base, with the pinned whitespace rules (``runtime.git.WHITESPACE_RULES``: git's
       defaults plus ``cr-at-eol``), must pass → ``diff_check_failed`` with its first findings. So a
       change that keeps a file's line endings — CRLF, LF or mixed, with or without a final newline —
       passes, while a space or tab it leaves before a line's end (before its CR too), a space before
       a tab in an indent, or a blank line it adds at the end of a file fails.

    Evidence: ``git diff --raw -M`` (status, modes, renames), ``git diff --numstat -M`` (``None``
    counts for binary files) and the full text diff (``-M``, ``--full-index``, ``a/``/``b/`` prefixes,
    3 lines of context, Myers) of the working tree against the base commit. A renamed file, with or
    without a content change, is one ``R`` entry naming its old and new path (git's similarity rule,
    at least 50 %); a mode change (``100644`` ↔ ``100755``; a file becoming a symlink ``120000``, git's
    ``T``) is a modified entry with both modes — read with ``core.fileMode=true``
    (:func:`_checking_git`), and a symlink still has to pass step 4. A binary
    file (git's own detection, or a ``-diff`` attribute at the base) has ``None`` counts and the diff
    says only ``Binary files a/… and b/… differ`` (no ``--binary``: its bytes are never put in the
    evidence; the pr-ready patch file carries them). The diff is inline up to
    :data:`MAX_INLINE_DIFF_BYTES` when it is UTF-8; otherwise it is written to
    ``diff-<sha256>.patch`` in the evidence directory and referenced. The worktree itself is left as
    it is, failed or not. :class:`ServiceUnavailable` when git fails.
    """
    tree = _checking_git(attempt)
    check_worktree_head(tree, attempt)
    check_source_refs(attempt)
    base = attempt.base_commit

    tree.ok("read-tree", base)
    refresh = tree.run("update-index", "-q", "--refresh")  # stat data only; exit 1 = files differ
    if refresh.returncode > 1:
        raise ServiceUnavailable("git_failed", f"git update-index failed: {first_line(refresh.stderr)}")
    tracked = set(split_z(tree.ok("diff", *_DIFF_OPTIONS, "--no-renames", "--name-only", "-z", base, "--")))
    untracked = split_z(tree.ok("ls-files", "-z", "--others"))
    changed = tracked | set(untracked)
    if len(changed) > MAX_CHANGED_FILES:
        raise WorktreeExecutionFailed(
            ExecutionFailure.TOO_MANY_FILES,
            f"{len(changed)} paths changed (tracked, untracked and deleted), over the limit of "
            f"{MAX_CHANGED_FILES}",
        )
    for path in sorted(changed):
        check_changed_path(attempt.worktree, path)
    if untracked:
        tree.ok(
            "add",
            "--intent-to-add",
            "--force",
            "--pathspec-from-file=-",
            "--pathspec-file-nul",
            stdin=b"\0".join(untracked) + b"\0",
        )
    check = tree.run("diff", *_DIFF_OPTIONS, "--check", base, "--")
    if check.returncode != 0:
        findings = check.stdout.decode("utf-8", "backslashreplace").splitlines()[:10] or [
            first_line(check.stderr)
        ]
        raise WorktreeExecutionFailed(
            ExecutionFailure.DIFF_CHECK_FAILED, "git diff --check failed: " + "; ".join(findings)
        )
    return _evidence(attempt, tree)


_FILE_MODE_PIN: Final = ("core.fileMode", "true")


def _checking_git(attempt: WorktreeAttempt) -> Git:
    """git in ``attempt``'s worktree (:func:`open_attempt`: filter drivers off) that reads the
    executable bit. The worktree is on this worker's disk and git checked every file out with the mode
    the base tree gives it, so the bit is reliable there whatever the source repository's
    ``core.fileMode`` says (``false`` in a repository made on a file system without it — then a mode
    change a patch or an agent makes would be missing from the evidence and the pr-ready patch)."""
    tree = open_attempt(attempt)
    return dataclasses.replace(tree, extra_config=(*tree.extra_config, _FILE_MODE_PIN))


def _evidence(attempt: WorktreeAttempt, tree: Git) -> ChangeEvidence:
    base = attempt.base_commit
    names = split_z(tree.ok("diff", *_DIFF_OPTIONS, "--no-renames", "--name-only", "-z", base, "--"))
    raw = tree.ok("diff", *_DIFF_OPTIONS, "--raw", "-z", "-M", "--no-abbrev", base, "--")
    numstat = tree.ok("diff", *_DIFF_OPTIONS, "--numstat", "-z", "-M", base, "--")
    diff = tree.ok(
        "diff",
        *_DIFF_OPTIONS,
        "-M",
        "--full-index",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        "--unified=3",
        "--inter-hunk-context=0",
        "--diff-algorithm=myers",
        f"-O{os.devnull}",
        base,
        "--",
    )
    digest = _sha256(diff)
    inline: str | None = None
    if len(diff) <= MAX_INLINE_DIFF_BYTES:
        try:
            inline = diff.decode("utf-8")
        except UnicodeDecodeError:
            inline = None
    stored = (
        None
        if inline is not None
        else store_evidence_file(attempt.evidence_dir, f"diff-{digest}.patch", diff)
    )
    return ChangeEvidence(
        run_id=attempt.run_id,
        attempt=attempt.attempt,
        base_commit=base,
        files=_parse_raw(raw),
        numstat=_parse_numstat(numstat),
        files_changed=len(set(names)),
        diff=inline,
        diff_path=stored,
        diff_sha256=digest,
        diff_bytes=len(diff),
    )


_STATUS: Final = {
    "A": FileStatus.ADDED,
    "D": FileStatus.DELETED,
    "M": FileStatus.MODIFIED,
    "T": FileStatus.MODIFIED,
    "R": FileStatus.RENAMED,
}


def _parse_raw(raw: bytes) -> list[ChangedFile]:
    tokens = raw.split(b"\0")
    files: list[ChangedFile] = []
    index = 0
    while index < len(tokens) and tokens[index].startswith(b":"):
        fields = tokens[index][1:].decode("ascii").split(" ")
        old_mode, new_mode, letter = fields[0], fields[1], fields[4][:1]
        first = show_path(tokens[index + 1])
        renamed = letter in ("R", "C")
        second = show_path(tokens[index + 2]) if renamed else None
        index += 3 if renamed else 2
        files.append(
            ChangedFile(
                path=second if second is not None else first,
                status=_STATUS.get(letter, FileStatus.ADDED if letter == "C" else FileStatus.MODIFIED),
                old_path=first if letter == "R" else None,
                old_mode=None if old_mode == "000000" else old_mode,
                new_mode=None if new_mode == "000000" else new_mode,
            )
        )
    return files


def _parse_numstat(output: bytes) -> list[NumstatEntry]:
    tokens = output.split(b"\0")
    entries: list[NumstatEntry] = []
    index = 0
    while index < len(tokens) and tokens[index]:
        added, deleted, name = tokens[index].split(b"\t", 2)
        old_path: str | None = None
        if name:
            path = show_path(name)
            index += 1
        else:
            old_path, path = show_path(tokens[index + 1]), show_path(tokens[index + 2])
            index += 3
        entries.append(
            NumstatEntry(
                path=path,
                added=None if added == b"-" else int(added),
                deleted=None if deleted == b"-" else int(deleted),
                old_path=old_path,
            )
        )
    return entries


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def store_evidence_file(directory: Path, name: str, data: bytes) -> Path:
    """Write ``data`` to ``directory/name`` atomically (content-addressed names: an existing file with
    the same bytes is kept as it is) and return the path."""
    target = directory / name
    if target.is_file() and not target.is_symlink() and _sha256(target.read_bytes()) == _sha256(data):
        return target
    descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=f".{name}.")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


PR_READY_PATCH_FILE: Final = "pr-ready.patch"


def write_pr_ready_patch(attempt: WorktreeAttempt) -> tuple[Path, str, int]:
    """Write the complete patch of a pr_ready attempt to ``pr-ready.patch`` in its evidence directory:
    ``git diff --binary --full-index <base>`` of the working tree (untracked files are intent-to-add
    after :func:`check_and_collect`, so they are in it), which ``git apply`` takes at the base commit:
    binary files as ``GIT binary patch`` literals or deltas, renames, mode changes and line endings
    (CRs included) exactly. Returns its path, sha256 and size. Nothing is committed."""
    tree = _checking_git(attempt)
    patch = tree.ok(
        "diff",
        *_DIFF_OPTIONS,
        "--binary",
        "--full-index",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        attempt.base_commit,
        "--",
    )
    target = attempt.evidence_dir / PR_READY_PATCH_FILE
    descriptor, temporary = tempfile.mkstemp(dir=attempt.evidence_dir, prefix=f".{PR_READY_PATCH_FILE}.")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(patch)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target, _sha256(patch), len(patch)
