"""Activity ``scan_repository``: an intake scan of one allow-listed repository
(docs/architecture.md "Goal queue", "Intake").

The plain core is :func:`scan_repository_at` (no Temporal): every git call goes through the one
hardened runner (:class:`runtime.git.Git`: an argument vector, a pinned environment without the
caller's ``GIT_*``, bounded output). It reads:

* **git state** — ``git status --porcelain=v1 -z`` (one finding for the working tree's uncommitted
  changes), local branches not merged into the base branch (``for-each-ref --no-merged``), local
  branches with commits on no remote-tracking branch (only when the repository has a remote), and
  prunable (stale) worktrees (``worktree list --porcelain -z``);
* **plans and code markers** — the files of the scanned commit's tree, read from git objects
  (``ls-tree`` then one ``cat-file --batch``), never from the working tree, so each quote is the
  text at the commit it cites. At most ``max_files`` files of at most ``max_file_bytes`` each are
  read; binary files (a NUL byte, or not UTF-8), symlinks and submodules are skipped and reported.

Findings over ``max_findings`` are counted, not returned. Read-only: the scan writes nothing (no
index refresh: ``GIT_OPTIONAL_LOCKS=0``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from temporalio import activity

from activities.errors import refusal
from activities.intake_text import Hit, is_plan_file, marker_hits, plan_hits
from activities.store_access import SharedStore
from contracts.errors import OperatorError, Refused
from contracts.intake import (
    MAX_BRANCHES,
    MAX_SKIPS_LISTED,
    MAX_UNCOMMITTED_LISTED,
    IntakeBounds,
    IntakeFinding,
    IntakeSkip,
    ScanRequest,
    ScanResult,
    SkipReason,
    evidence_ref,
)
from contracts.intake_source import (
    MAX_QUOTE_CHARS,
    SUB_KIND_OF,
    IntakeSubKind,
    anchor,
    fingerprint,
)
from contracts.temporal_names import ActivityName
from runtime.git import Git, split_z
from store.repositories import require_active

MAX_SCAN_BYTES = 64 * 1024 * 1024
"""The most file content one scan reads (further files are skipped and reported)."""


class _Collector:
    """Findings (unique by fingerprint; a repeat adds its evidence to the first) and skips, bounded."""

    def __init__(self, alias: str, commit: str, bounds: IntakeBounds) -> None:
        self.alias, self.commit, self.bounds = alias, commit, bounds
        self.findings: dict[str, IntakeFinding] = {}
        self.over = 0
        self.skipped: list[IntakeSkip] = []
        self.skipped_total = 0

    def skip(self, path: str, reason: SkipReason, detail: str = "") -> None:
        self.skipped_total += 1
        if len(self.skipped) < MAX_SKIPS_LISTED:
            self.skipped.append(IntakeSkip(path=path, reason=reason, detail=detail))

    def add(
        self, sub_kind: IntakeSubKind, path: str, line: int | None, text: str, refs: Sequence[str | None]
    ) -> None:
        if any(ref is None for ref in refs):
            self.skip(
                path,
                SkipReason.EVIDENCE_TOO_LONG,
                f"{sub_kind.value} at line {line}: an evidence ref is over 200 characters",
            )
            return
        evidence = [ref for ref in refs if ref is not None]
        print_ = fingerprint(self.alias, sub_kind, path, text)
        held = self.findings.get(print_)
        if held is not None:  # the same text again in the same file: one finding, more evidence
            more = [ref for ref in evidence if ref not in held.evidence]
            if more and len(held.evidence) < 20:
                self.findings[print_] = held.model_copy(update={"evidence": [*held.evidence, *more][:20]})
            return
        if len(self.findings) >= self.bounds.max_findings:
            self.over += 1
            return
        quote = text[:MAX_QUOTE_CHARS]
        self.findings[print_] = IntakeFinding(
            fingerprint=print_,
            anchor=anchor(self.alias, sub_kind, path, line),
            kind=SUB_KIND_OF[sub_kind],
            sub_kind=sub_kind,
            path=path,
            line=line,
            commit=self.commit,
            evidence=evidence,
            quote=quote,
            quote_complete=len(text) <= MAX_QUOTE_CHARS,
            quote_chars=len(text),
        )


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")


def scan_repository_at(
    path: Path, alias: str, base_branch: str, bounds: IntakeBounds | None = None
) -> ScanResult:
    """Scan the git working tree ``path`` (registered as ``alias``) at its ``HEAD``; see the module
    docstring. Raises ``ServiceUnavailable`` (``git_failed``/``git_unavailable``) when git fails."""
    bounds = bounds or IntakeBounds()
    git = Git(path)
    commit = git.text("rev-parse", "--verify", "HEAD^{commit}")
    found = _Collector(alias, commit, bounds)
    _git_state(git, found, base_branch)
    files = _read_files(git, commit, found)
    return ScanResult(
        repo_alias=alias,
        commit=commit,
        base_branch=base_branch,
        findings=list(found.findings.values()),
        files_scanned=files,
        skipped=found.skipped,
        skipped_total=found.skipped_total,
        findings_over_limit=found.over,
    )


# ---------------------------------------------------------------------------------------- git state


def _git_state(git: Git, found: _Collector, base: str) -> None:
    status = split_z(git.ok("status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"))
    entries = sorted(_decode(entry) for entry in status if len(entry) > 3)
    if entries:
        listed = entries[:MAX_UNCOMMITTED_LISTED]
        more = len(entries) - len(listed)
        text = "\n".join([*listed, *([f"... and {more} more paths (not listed)"] if more else [])])
        refs = [ref for entry in listed[:10] if (ref := evidence_ref("file", entry[3:])) is not None]
        found.add(IntakeSubKind.UNCOMMITTED, ".", None, text, refs or ["file:."])
    if git.run("rev-parse", "--verify", "--quiet", f"refs/heads/{base}^{{commit}}").returncode != 0:
        found.skip(
            base,
            SkipReason.NO_BASE_BRANCH,
            "the base branch does not resolve: unmerged branches not measured",
        )
        unmerged: list[tuple[str, str, str]] = []
    else:
        unmerged = _branches(git, "--no-merged", f"refs/heads/{base}")
    for name, sha, subject in unmerged[:MAX_BRANCHES]:
        count = git.text("rev-list", "--count", f"refs/heads/{base}..refs/heads/{name}")
        text = f"branch {name} has {count} commits not merged into {base} (tip {sha} {subject})"
        found.add(
            IntakeSubKind.UNMERGED_BRANCH,
            name,
            None,
            text,
            [evidence_ref("branch", name), evidence_ref("commit", sha)],
        )
    if len(unmerged) > MAX_BRANCHES:
        found.skip(
            "refs/heads",
            SkipReason.OVER_MAX_BRANCHES,
            f"{len(unmerged) - MAX_BRANCHES} unmerged branches not read",
        )
    if not git.text("remote"):
        found.skip(
            "refs/remotes",
            SkipReason.NO_REMOTE,
            "the repository has no remote: unpushed commits not measured",
        )
    else:
        for name, sha, subject in _branches(git)[:MAX_BRANCHES]:
            count = git.text("rev-list", "--count", f"refs/heads/{name}", "--not", "--remotes")
            if count != "0":
                text = f"branch {name} has {count} commits on no remote-tracking branch (tip {sha} {subject})"
                found.add(
                    IntakeSubKind.UNPUSHED_COMMITS,
                    name,
                    None,
                    text,
                    [evidence_ref("branch", name), evidence_ref("commit", sha)],
                )
    _stale_worktrees(git, found)


def _branches(git: Git, *filters: str) -> list[tuple[str, str, str]]:
    output = git.ok(
        "for-each-ref", "--format=%(refname:lstrip=2)%00%(objectname)%00%(subject)%00", *filters, "refs/heads"
    )
    fields = [_decode(field) for field in output.split(b"\0")]
    rows = []
    for index in range(0, len(fields) - 2, 3):
        name = fields[index].lstrip("\n")
        if name:
            rows.append((name, fields[index + 1], fields[index + 2]))
    return rows


def _stale_worktrees(git: Git, found: _Collector) -> None:
    """Every worktree git calls prunable (its directory or gitdir is gone)."""
    record: dict[str, str] = {}
    for item in [*git.ok("worktree", "list", "--porcelain", "-z").split(b"\0"), b""]:
        if item:
            key, _, value = _decode(item).partition(" ")
            record[key] = value
            continue
        if "prunable" in record and "worktree" in record:
            place = record["worktree"]
            branch = record.get("branch", "(detached)").removeprefix("refs/heads/")
            head = record.get("HEAD", "?")
            text = f"worktree {place} (branch {branch}, HEAD {head}) is prunable: {record['prunable']}"
            refs = [evidence_ref("worktree", place)] + (
                [evidence_ref("commit", record["HEAD"])] if "HEAD" in record else []
            )
            found.add(IntakeSubKind.STALE_WORKTREE, place, None, text, refs)
        record = {}


# ---------------------------------------------------------------------------------------- files


def _read_files(git: Git, commit: str, found: _Collector) -> int:
    """Read the commit's files within the bounds and run the text scanners; the number read."""
    listing = split_z(git.ok("ls-tree", "-r", "-z", "--long", "--full-tree", commit))
    wanted: list[tuple[str, str]] = []
    budget = MAX_SCAN_BYTES
    for entry in listing:
        meta, _, raw_path = entry.partition(b"\t")
        mode, kind, raw_oid, raw_size = meta.split()
        path = _decode(raw_path)
        if kind != b"blob" or mode == b"120000":  # only a blob has a size (a submodule's is "-")
            found.skip(path, SkipReason.NOT_A_FILE, f"{kind.decode()} of mode {mode.decode()}")
        elif len(wanted) >= found.bounds.max_files:
            found.skip(path, SkipReason.OVER_MAX_FILES, f"more than {found.bounds.max_files} files")
        elif int(raw_size) > found.bounds.max_file_bytes:
            found.skip(path, SkipReason.TOO_LARGE, f"{int(raw_size)} bytes > {found.bounds.max_file_bytes}")
        elif int(raw_size) > budget:
            found.skip(path, SkipReason.TOO_LARGE, f"the scan's budget of {MAX_SCAN_BYTES} bytes is spent")
        else:
            budget -= int(raw_size)
            wanted.append((path, raw_oid.decode()))
    if not wanted:
        return 0
    stdin = "".join(f"{oid}\n" for _, oid in wanted).encode()
    output = git.ok("cat-file", "--batch", stdin=stdin)
    position = 0
    read = 0
    for path, oid in wanted:
        header_end = output.index(b"\n", position)
        header = output[position:header_end].split()
        if len(header) != 3 or header[0].decode() != oid:
            raise Refused("git_output_unexpected", f"git cat-file answered {header!r} for {oid}")
        size = int(header[2])
        blob = output[header_end + 1 : header_end + 1 + size]
        position = header_end + 1 + size + 1
        if b"\0" in blob:
            found.skip(path, SkipReason.BINARY, "a NUL byte")
            continue
        try:
            text = blob.decode("utf-8")
        except UnicodeDecodeError:
            found.skip(path, SkipReason.BINARY, "not UTF-8 text")
            continue
        read += 1
        text = text.replace("\r\n", "\n")
        hits = plan_hits(text) if is_plan_file(path) else marker_hits(path, text)
        for hit in hits:
            _add_hit(found, path, hit)
    return read


def _add_hit(found: _Collector, path: str, hit: Hit) -> None:
    refs = [evidence_ref("file", f"{path}:{hit.line}"), evidence_ref("commit", found.commit)]
    found.add(hit.sub_kind, path, hit.line, hit.quote, refs)


# ---------------------------------------------------------------------------------------- activity


class IntakeActivities:
    """``scan_repository``, reading the repository registered under an alias in the store."""

    def __init__(self, store: SharedStore) -> None:
        self._store = store

    @activity.defn(name=ActivityName.SCAN_REPOSITORY)
    def scan_repository(self, request: ScanRequest) -> ScanResult:
        """Scan the allow-listed, active repository ``request.repo_alias``. Raises a non-retryable
        ``ApplicationError`` typed ``unknown_repository``, ``repository_deactivated`` or
        ``configuration_unverified``; retryable when git or the store cannot be reached."""
        try:
            record = require_active(self._store.get().get_repository(request.repo_alias))
            return scan_repository_at(Path(record.path), record.alias, record.default_branch, request.bounds)
        except OperatorError as error:
            raise refusal(error) from None
