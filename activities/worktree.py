"""Worktree execution, the synchronous core: create an attempt's worktree, apply a patch, check and collect.

Plain functions a future Temporal activity calls (no Temporal here). DESIGN.md "Worktree execution":

* :func:`create_attempt_worktree` — a fresh, detached, locked ``git worktree`` of the repository at the
  contract's frozen base commit, under ``<state>/worktrees/<run_id>/attempt-<n>`` (next unused ``n``;
  an earlier attempt's directory is never reused or overwritten), recording the source repository's
  refs and HEAD so later checks see new commits and refs.
* :func:`apply_patch` — validate a unified ``diff --git`` patch and apply it to the worktree's files.
* :func:`check_and_collect` — fail closed (:class:`~contracts.worktree.WorktreeExecutionFailed`) unless
  the worktree's HEAD is still the base, nothing was committed, the source repository's refs are as
  recorded, ``git diff --check`` passes, at most 40 paths changed and none escapes the worktree; then
  the evidence (file list, numstat, diff) as git computes it against the base commit.

**How git is run.** An argument vector (never a shell), a timeout, stdin closed or a given input, and
a pinned environment: every inherited ``GIT_*`` variable is dropped (so nothing can point git at
another repository, inject configuration through ``GIT_CONFIG_PARAMETERS``/``GIT_CONFIG_COUNT``, or
name an external diff, ssh command, pager or exec path), ``GIT_CONFIG_NOSYSTEM=1`` and
``GIT_CONFIG_GLOBAL=/dev/null`` ignore the host's and the user's configuration, ``GIT_ATTR_NOSYSTEM=1``
the system attributes, ``--no-replace-objects`` makes ``refs/replace`` unable to swap an object's
content, ``--literal-pathspecs`` makes path names plain names, and ``LC_ALL=C`` keeps messages stable.

**The repository's own configuration cannot run code during these calls.** Command-line ``-c``
settings outrank every configuration file, so each call pins (:data:`PINNED_CONFIG`):
``core.hooksPath=/dev/null`` (no hook: ``post-checkout``, ``reference-transaction``, ``pre-auto-gc``
...), ``core.fsmonitor=false``, ``protocol.allow=never`` (no transport at all, so no lazy fetch of a
partial clone, ``ext::`` command or ssh), ``gc.auto=0``/``maintenance.auto=false``,
``submodule.recurse=false``, ``diff.external=`` (and ``--no-ext-diff``/``--no-textconv`` on every diff);
clean/smudge/process *filter* drivers are configured per driver, so the drivers the repository's
configuration defines (as seen from the worktree, includes followed) are listed first and each is
neutralised (``filter.<d>.clean=``, ``.smudge=``, ``.process=``, ``.required=false``: git runs no
filter whose command is empty). Output-shaping settings are pinned too (``core.autocrlf=false``,
``core.safecrlf=false``, ``core.eol=lf``, ``core.symlinks=true``, ``core.whitespace`` at git's
defaults, ``diff.noprefix=false``, ``diff.mnemonicPrefix=false``, ``diff.relative=false``, rename and
algorithm settings, no colour, ``apply.whitespace=nowarn``, ``apply.ignoreWhitespace=no``, no sparse
checkout, ``core.protectNTFS``/``core.protectHFS``), and diff commands spell out prefixes, context,
algorithm and order on the command line.

*What remains* (residual risk): attributes (``.gitattributes`` of the base or of the change itself)
still shape text conversion and diff output — e.g. ``-diff`` shows a text file as binary in the
evidence, ``-whitespace`` exempts a path from ``diff --check`` — though they cannot run code without a
filter or diff driver, which are neutralised; ``core.fileMode`` and ``core.ignoreCase`` are left as the
repository set them (git probed its file system); a git release adding a new code-running setting would
need a pin here; ``safe.directory`` ownership checks stay on (a repository owned by another user is
refused by git). These functions assume nothing else writes to the worktree or the source repository's
``.git`` while they run; keeping an executor away from the shared ``.git`` directory is the sandbox's job.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from contracts.errors import InvalidInput, NotFound, Refused, ServiceUnavailable
from contracts.worktree import (
    MAX_CHANGED_FILES,
    MAX_INLINE_DIFF_BYTES,
    MAX_PATCH_BYTES,
    AppliedPatch,
    ChangedFile,
    ChangeEvidence,
    ExecutionFailure,
    FileStatus,
    NumstatEntry,
    WorktreeAttempt,
    WorktreeExecutionFailed,
)

GIT_TIMEOUT_SECONDS: Final = 60.0
SOURCE_REFS_FILE: Final = "source-refs.txt"
_RUN_ID_PATTERN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_COMMIT_PATTERN: Final = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_ATTEMPT_ENTRY: Final = re.compile(r"^attempt-([1-9][0-9]{0,8})(?:\.evidence)?$")
_HUNK_HEADER: Final = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_FILE_MODES: Final = frozenset({"100644", "100755", "120000"})
_MAX_MESSAGE_ITEMS: Final = 5

# Git's default whitespace rules, spelled out so a repository setting cannot relax `diff --check`.
_DEFAULT_WHITESPACE: Final = "blank-at-eol,blank-at-eof,space-before-tab"

PINNED_CONFIG: Final[tuple[tuple[str, str], ...]] = (
    # Nothing the repository configures may run: hooks, fsmonitor, transports, external diff, gc.
    ("core.hooksPath", os.devnull),
    ("core.fsmonitor", "false"),
    ("core.untrackedCache", "false"),
    ("protocol.allow", "never"),
    ("diff.external", ""),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    # Signature checks run an external program (gpg.program & co.): never show or verify one.
    ("log.showSignature", "false"),
    ("gpg.program", os.devnull),
    ("gpg.openpgp.program", os.devnull),
    ("gpg.x509.program", os.devnull),
    ("gpg.ssh.program", os.devnull),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("submodule.recurse", "false"),
    ("core.attributesFile", os.devnull),
    ("core.excludesFile", os.devnull),
    # Content and paths exactly as stored: no line-ending conversion, real symlinks, full checkout.
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.eol", "lf"),
    ("core.symlinks", "true"),
    ("core.protectNTFS", "true"),
    ("core.protectHFS", "true"),
    ("core.sparseCheckout", "false"),
    ("core.sparseCheckoutCone", "false"),
    ("index.sparse", "false"),
    ("core.logAllRefUpdates", "true"),
    ("core.quotePath", "true"),
    ("core.whitespace", _DEFAULT_WHITESPACE),
    # Diff output in one stable shape whatever the repository prefers.
    ("diff.noprefix", "false"),
    ("diff.mnemonicPrefix", "false"),
    ("diff.relative", "false"),
    ("diff.renames", "false"),
    ("diff.algorithm", "myers"),
    ("diff.indentHeuristic", "true"),
    ("diff.suppressBlankEmpty", "false"),
    ("diff.context", "3"),
    ("diff.interHunkContext", "0"),
    ("diff.ignoreSubmodules", "none"),
    ("diff.submodule", "short"),
    ("color.ui", "never"),
    ("color.diff", "never"),
    # `git apply` exactly as asked: no whitespace fixing or leniency (`diff --check` judges later).
    ("apply.whitespace", "nowarn"),
    ("apply.ignoreWhitespace", "no"),
)

_FILTER_KEYS: Final = (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))

_DIFF_OPTIONS: Final = (
    "--no-ext-diff",
    "--no-textconv",
    "--no-color",
    "--ignore-submodules=none",
)


# --------------------------------------------------------------------------------------------------
# Running git


GIT_INHERITED_VARIABLES: Final = ("PATH", "HOME", "TMPDIR")
"""The only variables of the worker's environment git gets: anything else (keys, tokens) could reach
a program git starts."""


def git_environment() -> dict[str, str]:
    """The environment every git call here gets: ``PATH``, ``HOME`` and ``TMPDIR`` from the worker's
    environment and nothing else of it — no ``GIT_*``, no secret — plus the pins described in the
    module docstring."""
    environment = {name: os.environ[name] for name in GIT_INHERITED_VARIABLES if name in os.environ}
    environment.update(
        {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_NO_LAZY_FETCH": "1",
            "GIT_PROTOCOL_FROM_USER": "0",
            "LC_ALL": "C",
        }
    )
    return environment


@dataclass(frozen=True)
class _Git:
    """git in one directory, with the pinned configuration plus ``extra_config`` (the filter pins)."""

    cwd: Path
    extra_config: tuple[tuple[str, str], ...] = ()

    def run(self, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        config: list[str] = []
        for key, value in (*PINNED_CONFIG, *self.extra_config):
            config += ["-c", f"{key}={value}"]
        argv = [
            "git",
            "--no-pager",
            "--no-replace-objects",
            "--literal-pathspecs",
            "-C",
            str(self.cwd),
            *config,
            *args,
        ]
        try:
            return subprocess.run(
                argv,
                input=stdin,
                stdin=None if stdin is not None else subprocess.DEVNULL,
                capture_output=True,
                timeout=GIT_TIMEOUT_SECONDS,
                env=git_environment(),
                check=False,
            )
        except FileNotFoundError as exc:
            raise ServiceUnavailable("git_unavailable", "git is not installed or not on PATH") from exc
        except subprocess.TimeoutExpired as exc:
            raise ServiceUnavailable(
                "git_unavailable", f"git {args[0]} did not finish within {GIT_TIMEOUT_SECONDS:g} s"
            ) from exc

    def ok(self, *args: str, stdin: bytes | None = None) -> bytes:
        """stdout of a call that must succeed; :class:`ServiceUnavailable` ``git_failed`` otherwise."""
        result = self.run(*args, stdin=stdin)
        if result.returncode != 0:
            raise ServiceUnavailable(
                "git_failed", f"git {args[0]} failed in {self.cwd}: {_first_line(result.stderr)}"
            )
        return result.stdout

    def text(self, *args: str) -> str:
        return self.ok(*args).decode("utf-8", "backslashreplace").strip()


def _first_line(output: bytes) -> str:
    for line in output.decode("utf-8", "backslashreplace").splitlines():
        if line.strip():
            return line.strip()[:500]
    return "git gave no reason"


def _error_line(output: bytes) -> str:
    """git's first ``error:``/``fatal:`` line (else its first line)."""
    for line in output.decode("utf-8", "backslashreplace").splitlines():
        if line.startswith(("error:", "fatal:")):
            return line.strip()[:500]
    return _first_line(output)


def _split_z(output: bytes) -> list[bytes]:
    return [item for item in output.split(b"\0") if item]


def _show(path: bytes) -> str:
    return path.decode("utf-8", "backslashreplace")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------------------------------
# 1. Creating an attempt


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
    source = _Git(_repository_root(repository))
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
        source_refs_sha256=_sha256(refs),
        source_refs_count=refs.count(b"\n") - 1,
    )


def _repository_root(repository: Path) -> Path:
    resolved = repository.resolve()
    if not resolved.is_dir():
        raise InvalidInput("not_a_git_repository", f"{resolved} is not an existing directory")
    result = _Git(resolved).run("rev-parse", "--show-toplevel")
    top = result.stdout.decode("utf-8", "surrogateescape").strip()
    if result.returncode != 0 or Path(top).resolve() != resolved:
        raise InvalidInput("not_a_git_repository", f"{resolved} is not the top level of a git working tree")
    return resolved


def _next_attempt_number(run_dir: Path) -> int:
    numbers = [int(match.group(1)) for name in os.listdir(run_dir) if (match := _ATTEMPT_ENTRY.match(name))]
    return max(numbers, default=0) + 1


def _source_refs(source: _Git) -> bytes:
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
    result = _Git(tree).run("config", "-z", "--name-only", "--get-regexp", r"^filter\.")
    if result.returncode not in (0, 1):
        raise ServiceUnavailable("git_failed", f"git config failed in {tree}: {_first_line(result.stderr)}")
    drivers: set[str] = set()
    for key in _split_z(result.stdout):
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


def _worktree_git(worktree: Path) -> _Git:
    return _Git(worktree, _filter_pins(worktree))


def _check_worktree_identity(tree: _Git, worktree: Path, repository: Path) -> None:
    """The worktree's top level is ``worktree`` and it shares ``repository``'s git directory (its
    ``.git`` file was not pointed elsewhere). Fails closed with ``head_moved`` otherwise."""
    result = tree.run("rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir")
    lines = result.stdout.decode("utf-8", "surrogateescape").splitlines()
    common = _Git(repository).run("rev-parse", "--path-format=absolute", "--git-common-dir")
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
            f"{worktree} is no longer a worktree of {repository}: {_first_line(result.stderr)}",
        )


def _open_attempt(attempt: WorktreeAttempt) -> _Git:
    worktree = attempt.worktree
    if worktree.is_symlink() or not worktree.is_dir():
        raise NotFound("worktree_missing", f"the worktree of attempt {attempt.attempt} ({worktree}) is gone")
    tree = _worktree_git(worktree)
    _check_worktree_identity(tree, worktree, attempt.repository)
    return tree


# --------------------------------------------------------------------------------------------------
# 2. Applying a patch


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
    :func:`check_and_collect` judges every executor the same way, from the files against the base
    commit; ``--index`` would also write blobs into the source repository's shared object store and
    split the change between index and files. Never ``--unsafe-paths``, ``--reject``, ``--3way`` or
    ``--recount``: git checks the whole patch first and applies all of it or nothing. Whitespace is not
    fixed or warned about here — ``git diff --check`` judges it at collection. After applying, every
    touched path is resolved: a symlink the patch created that points outside the worktree fails.

    Returns the patch's sha256, size and touched paths, and where a copy was kept in the evidence
    directory. Raises :class:`WorktreeExecutionFailed`: ``patch_invalid`` (rule above),
    ``path_outside_worktree`` (absolute or ``..`` path, or a created symlink leading out),
    ``patch_does_not_apply`` (with git's first error line), ``head_moved``/``new_commit`` when the
    worktree is no longer at its base.
    """
    data = patch_text.encode("utf-8", "surrogatepass")
    header_paths, sections = _parse_patch(patch_text, len(data))
    for path in sorted(header_paths):
        _check_patch_path(path)
    tree = _open_attempt(attempt)
    _check_worktree_head(tree, attempt)

    numstat = tree.run("apply", "--numstat", "-z", "-p1", "-", stdin=data)
    if numstat.returncode != 0:
        raise _invalid(f"git cannot read the patch: {_error_line(numstat.stderr)}")
    entries = _split_z(numstat.stdout)
    if len(entries) != sections:
        raise _invalid(
            f"git reads {len(entries)} file(s) in the patch, not the {sections} 'diff --git' sections"
        )
    git_paths: set[str] = set()
    for entry in entries:
        added, _, rest = entry.partition(b"\t")
        deleted, _, name = rest.partition(b"\t")
        if added == b"-" or deleted == b"-":
            raise _invalid(f"binary patch for {_show(name)}: binary changes are not accepted")
        try:
            git_paths.add(name.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise _invalid(f"path {_show(name)} is not UTF-8") from exc
    paths = sorted(header_paths | git_paths)
    for path in paths:
        _check_patch_path(path)

    check = tree.run("apply", "--check", "-p1", "--whitespace=nowarn", "-", stdin=data)
    if check.returncode != 0:
        raise WorktreeExecutionFailed(ExecutionFailure.PATCH_DOES_NOT_APPLY, _error_line(check.stderr))
    digest = _sha256(data)
    kept = _store(attempt.evidence_dir, f"patch-{digest}.diff", data)
    applied = tree.run("apply", "-p1", "--whitespace=nowarn", "-", stdin=data)
    if applied.returncode != 0:
        raise WorktreeExecutionFailed(ExecutionFailure.PATCH_DOES_NOT_APPLY, _error_line(applied.stderr))
    for path in paths:
        _check_inside(attempt.worktree, path.encode("utf-8"))
    return AppliedPatch(patch_sha256=digest, patch_bytes=len(data), paths=paths, patch_path=kept)


def _invalid(message: str) -> WorktreeExecutionFailed:
    return WorktreeExecutionFailed(ExecutionFailure.PATCH_INVALID, message)


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
        raise _invalid("the patch is empty")
    if size > MAX_PATCH_BYTES:
        raise _invalid(f"the patch is {size} bytes, over the {MAX_PATCH_BYTES} byte limit")
    if "\0" in patch_text:
        raise _invalid("the patch contains a NUL byte")
    lines = patch_text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if not lines[0].startswith("diff --git "):
        raise _invalid("a patch must start with a 'diff --git' header: only git-style patches are accepted")
    paths: set[str] = set()
    sections = 0
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
                raise _invalid(f"line {number}: unexpected line inside a hunk")
            if remaining_old < 0 or remaining_new < 0:
                raise _invalid(f"line {number}: hunk longer than its header says")
            if remaining_old == 0 and remaining_new == 0:
                state = "between"
            continue
        if line.startswith("diff --git "):
            if not line.startswith(("diff --git a/", 'diff --git "a/')):
                raise _invalid(f"line {number}: 'diff --git' header without the a/ and b/ prefixes")
            sections += 1
            state = "header"
            has_file_lines = False
            continue
        if line.startswith("@@"):
            match = _HUNK_HEADER.match(line)
            if match is None or not has_file_lines:
                raise _invalid(f"line {number}: malformed hunk header or hunk without ---/+++ lines")
            remaining_old = int(match.group(2) or "1")
            remaining_new = int(match.group(4) or "1")
            state = "hunk" if remaining_old or remaining_new else "between"
            continue
        if state == "between" and line.startswith("\\"):
            continue
        if state != "header":
            raise _invalid(f"line {number}: text between sections: only 'diff --git' patches are accepted")
        if line.startswith("GIT binary patch") or line.startswith("Binary files "):
            raise _invalid(f"line {number}: binary patches are not accepted")
        if line.startswith(("--- ", "+++ ")):
            name = _header_name(line[4:], number)
            if name != "/dev/null":
                prefix = "a/" if line.startswith("---") else "b/"
                if not name.startswith(prefix):
                    raise _invalid(f"line {number}: path {name!r} lacks the {prefix} prefix")
                paths.add(name[2:])
            has_file_lines = has_file_lines or line.startswith("+++")
            continue
        header = next((h for h in _EXTENDED_HEADERS if line.startswith(h)), None)
        if header is None:
            raise _invalid(f"line {number}: unexpected header line")
        value = line[len(header) :]
        if header.endswith("mode "):
            if value not in _FILE_MODES:
                raise _invalid(f"line {number}: mode {value!r} (submodules and unknown modes are refused)")
        elif header == "index ":
            mode = value.rpartition(" ")[2] if " " in value else None
            if mode is not None and mode not in _FILE_MODES:
                raise _invalid(f"line {number}: mode {mode!r} (submodules and unknown modes are refused)")
        elif header.startswith(("rename ", "copy ")):
            paths.add(_header_name(value, number))
    if state == "hunk":
        raise _invalid("the patch ends inside a hunk")
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
                raise _invalid(f"line {number}: text after a quoted path")
            try:
                return out.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _invalid(f"line {number}: path is not UTF-8") from exc
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
            raise _invalid(f"line {number}: bad escape in a quoted path")
        out += char.encode("utf-8")
        index += 1
    raise _invalid(f"line {number}: unterminated quoted path")


_GIT_CONTROL_FILES: Final = frozenset({b".gitattributes", b".gitmodules"})
"""Files in the tree that change how git itself checks and shows a change (``-diff`` hides content
from the evidence, ``-whitespace`` relaxes ``diff --check``): a change may not touch them."""


def _is_git_segment(segment: bytes) -> bool:
    """``.git`` in any case, with the trailing dots/spaces Windows ignores, or its 8.3 short name; or a
    file that controls git (``.gitattributes``, ``.gitmodules``)."""
    folded = segment.rstrip(b". ").lower()
    return folded == b".git" or folded.startswith(b"git~") or folded in _GIT_CONTROL_FILES


_UNSAFE_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Characters a path may not hold: controls (C0, DEL, C1 such as NEL), format characters (bidi
overrides), line and paragraph separators — any could make a path pose as other text where it is
shown."""


def _check_patch_path(path: str) -> None:
    """Refuse a patch path that is not a plain relative path inside the worktree (see
    :func:`apply_patch`)."""
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
        raise _invalid(f"patch path {path!r} is not a plain relative path")
    if any(_is_git_segment(segment.encode("utf-8")) for segment in segments):
        raise _invalid(f"patch path {path!r} touches git's metadata (.git, .gitattributes, .gitmodules)")


# --------------------------------------------------------------------------------------------------
# 3. Checking and collecting


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
       against the base, with git's default whitespace rules, must pass → ``diff_check_failed`` with
       its first findings.

    Evidence: ``git diff --raw -M`` (status, modes, renames), ``git diff --numstat -M`` (``None``
    counts for binary files) and the full text diff (``-M``, ``--full-index``, ``a/``/``b/`` prefixes,
    3 lines of context, Myers) of the working tree against the base commit. The diff is inline up to
    :data:`MAX_INLINE_DIFF_BYTES` when it is UTF-8; otherwise it is written to
    ``diff-<sha256>.patch`` in the evidence directory and referenced. The worktree itself is left as
    it is, failed or not. :class:`ServiceUnavailable` when git fails.
    """
    tree = _open_attempt(attempt)
    _check_worktree_head(tree, attempt)
    _check_source_refs(attempt)
    base = attempt.base_commit

    tree.ok("read-tree", base)
    refresh = tree.run("update-index", "-q", "--refresh")  # stat data only; exit 1 = files differ
    if refresh.returncode > 1:
        raise ServiceUnavailable("git_failed", f"git update-index failed: {_first_line(refresh.stderr)}")
    tracked = set(_split_z(tree.ok("diff", *_DIFF_OPTIONS, "--no-renames", "--name-only", "-z", base, "--")))
    untracked = _split_z(tree.ok("ls-files", "-z", "--others"))
    changed = tracked | set(untracked)
    if len(changed) > MAX_CHANGED_FILES:
        raise WorktreeExecutionFailed(
            ExecutionFailure.TOO_MANY_FILES,
            f"{len(changed)} paths changed (tracked, untracked and deleted), over the limit of "
            f"{MAX_CHANGED_FILES}",
        )
    for path in sorted(changed):
        _check_changed_path(attempt.worktree, path)
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
            _first_line(check.stderr)
        ]
        raise WorktreeExecutionFailed(
            ExecutionFailure.DIFF_CHECK_FAILED, "git diff --check failed: " + "; ".join(findings)
        )
    return _evidence(attempt, tree)


def _check_worktree_head(tree: _Git, attempt: WorktreeAttempt) -> None:
    base = attempt.base_commit
    symbolic = tree.run("symbolic-ref", "--quiet", "HEAD")
    if symbolic.returncode == 0:
        raise WorktreeExecutionFailed(
            ExecutionFailure.HEAD_MOVED,
            f"the worktree's HEAD is attached to {_show(symbolic.stdout.strip())}, not detached at {base}",
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


def _moved(tree: _Git, base: str, commit: str, what: str) -> WorktreeExecutionFailed:
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


def _check_source_refs(attempt: WorktreeAttempt) -> None:
    current = _source_refs(_Git(attempt.repository))
    if _sha256(current) == attempt.source_refs_sha256:
        return
    recorded_file = attempt.evidence_dir / SOURCE_REFS_FILE
    recorded = recorded_file.read_bytes() if recorded_file.is_file() else b""
    if _sha256(recorded) != attempt.source_refs_sha256:
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
        names = [_show(n) for n in moved] or ["HEAD"]
        raise WorktreeExecutionFailed(
            ExecutionFailure.NEW_COMMIT,
            f"{attempt.repository} has new commits since the attempt began: {_listing(names)} moved",
        )
    if appeared or vanished:
        changes = [f"+{_show(n)}" for n in appeared] + [f"-{_show(n)}" for n in vanished]
        raise WorktreeExecutionFailed(
            ExecutionFailure.NEW_REF,
            f"refs of {attempt.repository} changed since the attempt began: {_listing(changes)}",
        )
    raise WorktreeExecutionFailed(
        ExecutionFailure.HEAD_MOVED,
        f"the HEAD of {attempt.repository} moved from {_show(head_before[1])} to {_show(head_after[1])}",
    )


def _listing(items: list[str]) -> str:
    shown = ", ".join(items[:_MAX_MESSAGE_ITEMS])
    more = len(items) - _MAX_MESSAGE_ITEMS
    return shown + (f" and {more} more" if more > 0 else "")


def _outside(message: str) -> WorktreeExecutionFailed:
    return WorktreeExecutionFailed(ExecutionFailure.PATH_OUTSIDE_WORKTREE, message)


def _check_changed_path(worktree: Path, path: bytes) -> None:
    if path.endswith(b"/"):
        raise _outside(
            f"{_show(path)} is a nested git repository: its content is outside this worktree's view"
        )
    segments = path.split(b"/")
    if path.startswith(b"/") or any(s in (b"", b".", b"..") for s in segments):
        raise _outside(f"changed path {_show(path)} is not a plain relative path")
    if any(_is_git_segment(segment) for segment in segments):
        raise _outside(f"changed path {_show(path)} is git metadata (.git, .gitattributes, .gitmodules)")
    _check_link_target(worktree, path)
    _check_inside(worktree, path)


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
        raise _outside(f"symlink {_show(path)} points to {_show(target)}, which is outside the worktree")


def _check_inside(worktree: Path, path: bytes) -> None:
    """``worktree/path``, every symlink on the way and the symlink it may be itself, resolved, stays
    inside the worktree (and off its ``.git``); ``path_outside_worktree`` otherwise."""
    root = os.path.realpath(os.fsencode(worktree))
    full = os.path.join(os.fsencode(worktree), path)
    resolved = os.path.realpath(full)
    relative = os.path.relpath(resolved, root) if resolved.startswith(root + b"/") else None
    if relative is None and resolved != root:
        target = f" (a symlink to {_show(os.readlink(full))})" if os.path.islink(full) else ""
        raise _outside(f"{_show(path)}{target} resolves outside the worktree")
    if relative is not None and _is_git_segment(relative.split(b"/")[0]):
        raise _outside(f"{_show(path)} resolves onto the worktree's git metadata")


def _evidence(attempt: WorktreeAttempt, tree: _Git) -> ChangeEvidence:
    base = attempt.base_commit
    names = _split_z(tree.ok("diff", *_DIFF_OPTIONS, "--no-renames", "--name-only", "-z", base, "--"))
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
    stored = None if inline is not None else _store(attempt.evidence_dir, f"diff-{digest}.patch", diff)
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
        first = _show(tokens[index + 1])
        renamed = letter in ("R", "C")
        second = _show(tokens[index + 2]) if renamed else None
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
            path = _show(name)
            index += 1
        else:
            old_path, path = _show(tokens[index + 1]), _show(tokens[index + 2])
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


def _store(directory: Path, name: str, data: bytes) -> Path:
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
    after :func:`check_and_collect`, so they are in it), which ``git apply`` takes at the base commit.
    Returns its path, sha256 and size. Nothing is committed."""
    tree = _open_attempt(attempt)
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
