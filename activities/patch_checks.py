"""Applying a change job's patch to an attempt's worktree: which patches are accepted, and how.

Plain functions (no Temporal; docs/architecture.md "Worktree execution"): :func:`apply_patch`
validates a unified ``diff --git`` patch — its sections, headers, hunks and the paths it names (header
names, plain or C-quoted, and git's own reading of them; the rules are :mod:`activities.worktree_paths`)
— and applies it to the worktree's files with ``git apply`` through :mod:`runtime.git`.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

from activities.change_evidence import store_evidence_file
from activities.worktree_lifecycle import check_worktree_head, open_attempt
from activities.worktree_paths import check_inside, check_patch_path, patch_invalid, show_path
from contracts.worktree import (
    MAX_PATCH_BYTES,
    AppliedPatch,
    ExecutionFailure,
    WorktreeAttempt,
    WorktreeExecutionFailed,
)
from runtime.git import error_line, split_z

_HUNK_HEADER: Final = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_FILE_MODES: Final = frozenset({"100644", "100755", "120000"})
_BINARY_REFUSED: Final = (
    "binary changes are refused (a reviewer could not read them); a change job's patch must be text"
)


def apply_patch(attempt: WorktreeAttempt, patch_text: str) -> AppliedPatch:
    """Validate ``patch_text`` and apply it to the files of ``attempt``'s worktree.

    Accepted: a non-empty unified diff of at most :data:`MAX_PATCH_BYTES` made only of ``diff --git``
    sections (extended headers, ``a/``/``b/`` prefixed ``---``/``+++`` lines, hunks whose line counts
    match) — no text before the first section or between sections, no binary patch, no submodule
    (mode ``160000``), no path that is absolute, has ``..``/``.``/empty segments, a backslash or a
    control character, or has a ``.git`` segment (any case). Paths are taken both from the headers and
    from git's own reading of the patch (``git apply --numstat``), which must find exactly one file per
    section.

    Applied with ``git apply -p1 --whitespace=nowarn`` *without* ``--index``: the patch changes the
    working tree only, exactly as any other executor (an agent editing files) would, so
    :func:`activities.change_evidence.check_and_collect` judges every executor the same way, from the
    files against the base commit; ``--index`` would also write blobs into the source repository's
    shared object store and split the change between index and files. Never ``--unsafe-paths``,
    ``--reject``, ``--3way`` or ``--recount``: git checks the whole patch first and applies all of it
    or nothing. Whitespace is not fixed or warned about here — ``git diff --check`` judges it at
    collection. After applying, every touched path is resolved: a symlink the patch created that
    points outside the worktree fails.

    Real repositories: the patch's bytes are applied as they are. A line of a CRLF file carries its CR
    before the line feed (as ``git diff`` writes it); with ``core.autocrlf=false`` pinned, git matches
    the context and writes the new lines exactly, so a file keeps CRLF, LF or mixed endings and a
    missing final newline (``\\ No newline at end of file``) as the patch says. Renames (``rename
    from``/``rename to``, with or without hunks) and mode changes (``old mode``/``new mode`` among
    ``100644``, ``100755`` and ``120000``) are applied as git reads them.

    **Binary patches are refused** (``patch_invalid``, naming the section), not handed to ``git
    apply`` even though git would check a well-formed ``GIT binary patch``: the patch is model output,
    and what the independent reviewer and the operator judge is the change as git shows it — for a
    binary file only ``Binary files … differ``. Accepting one would let a change job put bytes nobody
    could read into an approved change, produced as base85 of zlib data by the model itself, which
    git checks for form but nobody can check for intent. A binary file can still be changed by the
    ``command`` executor: its evidence names the file as binary (numstat ``-``/``-``) and a pr_ready
    run's patch file carries its bytes.

    Returns the patch's sha256, size and touched paths, and where a copy was kept in the evidence
    directory. Raises :class:`WorktreeExecutionFailed`: ``patch_invalid`` (rule above),
    ``path_outside_worktree`` (absolute or ``..`` path, or a created symlink leading out),
    ``patch_does_not_apply`` (with git's first error line), ``head_moved``/``new_commit`` when the
    worktree is no longer at its base.
    """
    data = patch_text.encode("utf-8", "surrogatepass")
    header_paths, sections = _parse_patch(patch_text, len(data))
    for path in sorted(header_paths):
        check_patch_path(path)
    tree = open_attempt(attempt)
    check_worktree_head(tree, attempt)

    numstat = tree.run("apply", "--numstat", "-z", "-p1", "-", stdin=data)
    if numstat.returncode != 0:
        raise patch_invalid(f"git cannot read the patch: {error_line(numstat.stderr)}")
    entries = split_z(numstat.stdout)
    if len(entries) != sections:
        raise patch_invalid(
            f"git reads {len(entries)} file(s) in the patch, not the {sections} 'diff --git' sections"
        )
    git_paths: set[str] = set()
    for entry in entries:
        added, _, rest = entry.partition(b"\t")
        deleted, _, name = rest.partition(b"\t")
        if added == b"-" or deleted == b"-":
            raise patch_invalid(f"binary patch for {show_path(name)}: {_BINARY_REFUSED}")
        try:
            git_paths.add(name.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise patch_invalid(f"path {show_path(name)} is not UTF-8") from exc
    paths = sorted(header_paths | git_paths)
    for path in paths:
        check_patch_path(path)

    check = tree.run("apply", "--check", "-p1", "--whitespace=nowarn", "-", stdin=data)
    if check.returncode != 0:
        raise WorktreeExecutionFailed(ExecutionFailure.PATCH_DOES_NOT_APPLY, error_line(check.stderr))
    digest = hashlib.sha256(data).hexdigest()
    kept = store_evidence_file(attempt.evidence_dir, f"patch-{digest}.diff", data)
    applied = tree.run("apply", "-p1", "--whitespace=nowarn", "-", stdin=data)
    if applied.returncode != 0:
        raise WorktreeExecutionFailed(ExecutionFailure.PATCH_DOES_NOT_APPLY, error_line(applied.stderr))
    for path in paths:
        check_inside(attempt.worktree, path.encode("utf-8"))
    return AppliedPatch(patch_sha256=digest, patch_bytes=len(data), paths=paths, patch_path=kept)


_EXTENDED_HEADERS: Final = (
    "old mode ",
    "new mode ",
    "deleted file mode ",
    "new file mode ",
    "similarity index ",
    "dissimilarity index ",
    "index ",
    "rename from ",
    "rename to ",
    "copy from ",
    "copy to ",
)


def _parse_patch(patch_text: str, size: int) -> tuple[set[str], int]:
    """The paths a patch's headers name and its number of ``diff --git`` sections; raises
    ``patch_invalid``/``path_outside_worktree`` for a patch :func:`apply_patch` does not accept."""
    if not patch_text.strip():
        raise patch_invalid("the patch is empty")
    if size > MAX_PATCH_BYTES:
        raise patch_invalid(f"the patch is {size} bytes, over the {MAX_PATCH_BYTES} byte limit")
    if "\0" in patch_text:
        raise patch_invalid("the patch contains a NUL byte")
    lines = patch_text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if not lines[0].startswith("diff --git "):
        raise patch_invalid(
            "a patch must start with a 'diff --git' header: only git-style patches are accepted"
        )
    paths: set[str] = set()
    sections = 0
    section = ""
    state = "header"  # "header" (after diff --git), "hunk" (inside one), "between" (after a hunk)
    remaining_old = remaining_new = 0
    has_file_lines = False
    for number, line in enumerate(lines, start=1):
        if state == "hunk":
            if line.startswith("\\"):
                continue
            tag = line[:1]
            if tag in (" ", ""):
                remaining_old -= 1
                remaining_new -= 1
            elif tag == "-":
                remaining_old -= 1
            elif tag == "+":
                remaining_new -= 1
            else:
                raise patch_invalid(f"line {number}: unexpected line inside a hunk")
            if remaining_old < 0 or remaining_new < 0:
                raise patch_invalid(f"line {number}: hunk longer than its header says")
            if remaining_old == 0 and remaining_new == 0:
                state = "between"
            continue
        if line.startswith("diff --git "):
            if not line.startswith(("diff --git a/", 'diff --git "a/')):
                raise patch_invalid(f"line {number}: 'diff --git' header without the a/ and b/ prefixes")
            sections += 1
            section = line[:200]
            state = "header"
            has_file_lines = False
            continue
        if line.startswith("@@"):
            match = _HUNK_HEADER.match(line)
            if match is None or not has_file_lines:
                raise patch_invalid(f"line {number}: malformed hunk header or hunk without ---/+++ lines")
            remaining_old = int(match.group(2) or "1")
            remaining_new = int(match.group(4) or "1")
            state = "hunk" if remaining_old or remaining_new else "between"
            continue
        if state == "between" and line.startswith("\\"):
            continue
        if state != "header":
            raise patch_invalid(
                f"line {number}: text between sections: only 'diff --git' patches are accepted"
            )
        if line.startswith("GIT binary patch") or line.startswith("Binary files "):
            raise patch_invalid(f"line {number}: binary patch in '{section}': {_BINARY_REFUSED}")
        if line.startswith(("--- ", "+++ ")):
            name = _header_name(line[4:], number)
            if name != "/dev/null":
                prefix = "a/" if line.startswith("---") else "b/"
                if not name.startswith(prefix):
                    raise patch_invalid(f"line {number}: path {name!r} lacks the {prefix} prefix")
                paths.add(name[2:])
            has_file_lines = has_file_lines or line.startswith("+++")
            continue
        header = next((h for h in _EXTENDED_HEADERS if line.startswith(h)), None)
        if header is None:
            raise patch_invalid(f"line {number}: unexpected header line")
        value = line[len(header) :]
        if header.endswith("mode "):
            if value not in _FILE_MODES:
                raise patch_invalid(
                    f"line {number}: mode {value!r} (submodules and unknown modes are refused)"
                )
        elif header == "index ":
            mode = value.rpartition(" ")[2] if " " in value else None
            if mode is not None and mode not in _FILE_MODES:
                raise patch_invalid(
                    f"line {number}: mode {mode!r} (submodules and unknown modes are refused)"
                )
        elif header.startswith(("rename ", "copy ")):
            paths.add(_header_name(value, number))
    if state == "hunk":
        raise patch_invalid("the patch ends inside a hunk")
    return paths, sections


_ESCAPES: Final = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _header_name(raw: str, number: int) -> str:
    """A path as a header writes it: plain (a trailing tab git adds after names with spaces is
    dropped) or C-quoted (``"a/caf\\303\\251"``), decoded as UTF-8."""
    if not raw.startswith('"'):
        return raw[:-1] if raw.endswith("\t") else raw
    out = bytearray()
    index = 1
    while index < len(raw):
        char = raw[index]
        if char == '"':
            if raw[index + 1 :] not in ("", "\t"):
                raise patch_invalid(f"line {number}: text after a quoted path")
            try:
                return out.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise patch_invalid(f"line {number}: path is not UTF-8") from exc
        if char == "\\":
            following = raw[index + 1 : index + 2]
            if following in _ESCAPES:
                out.append(_ESCAPES[following])
                index += 2
                continue
            octal = raw[index + 1 : index + 4]
            if len(octal) == 3 and all(c in "01234567" for c in octal):
                out.append(int(octal, 8))
                index += 4
                continue
            raise patch_invalid(f"line {number}: bad escape in a quoted path")
        out += char.encode("utf-8")
        index += 1
    raise patch_invalid(f"line {number}: unterminated quoted path")
