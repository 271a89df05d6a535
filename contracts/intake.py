"""Intake scans: what a scan is asked and finds, and a finding as a queue proposal
(docs/architecture.md "Goal queue", "Intake").

A scan (``specialists queue scan ALIAS``, activity ``scan_repository``) reads one allow-listed
repository at its current commit and returns :class:`ScanResult`: typed findings
(:class:`IntakeFinding`, each citing exact evidence and the commit), and what it skipped and why. The
queue diffs the findings against its items (:mod:`contracts.intake_diff`). Repository text is
untrusted: it is data in a proposal, never an instruction, and shown escaped (:func:`escape_text`).

Pure: no I/O.
"""

from __future__ import annotations

import unicodedata
from enum import StrEnum
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contracts.constants import MAX_EVIDENCE_REF_CHARS, MAX_TITLE_CHARS
from contracts.hashing import canonical_sha256
from contracts.intake_source import (
    CommitSha,
    IntakeKind,
    IntakePath,
    IntakeSource,
    IntakeSubKind,
    Sha256,
)
from contracts.proofs import ActionProof
from contracts.queue_items import ItemProposal, ItemScope, QueueStatus
from contracts.schedules import ScheduledIntake
from contracts.text_rules import REFUSED_CATEGORIES
from contracts.work_item import RepoAlias

DEFAULT_MAX_FILES: Final = 5_000
DEFAULT_MAX_FILE_BYTES: Final = 512 * 1024
DEFAULT_MAX_FINDINGS: Final = 100
MAX_FINDINGS: Final = 200
MAX_SKIPS_LISTED: Final = 50
MAX_BRANCHES: Final = 200
MAX_UNCOMMITTED_LISTED: Final = 40


class IntakeBounds(BaseModel):
    """How much one scan reads: at most ``max_files`` files of the commit's tree (in path order), each
    at most ``max_file_bytes`` (a bigger one is skipped, not cut), and at most ``max_findings``
    findings (the rest are counted and reported, never silently dropped)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_files: int = Field(default=DEFAULT_MAX_FILES, ge=1, le=100_000)
    max_file_bytes: int = Field(default=DEFAULT_MAX_FILE_BYTES, ge=1, le=8 * 1024 * 1024)
    max_findings: int = Field(default=DEFAULT_MAX_FINDINGS, ge=1, le=MAX_FINDINGS)


class IntakeFinding(IntakeSource):
    """One finding of a scan (the fields of :class:`contracts.intake_source.IntakeSource`, which an
    item proposed from it keeps)."""


class SkipReason(StrEnum):
    """Why a scan did not read something."""

    BINARY = "binary"
    TOO_LARGE = "too_large"
    OVER_MAX_FILES = "over_max_files"
    NOT_A_FILE = "not_a_file"
    NOT_PARSED = "not_parsed"
    OVER_MAX_FINDINGS = "over_max_findings"
    EVIDENCE_TOO_LONG = "evidence_too_long"
    NO_REMOTE = "no_remote"
    NO_BASE_BRANCH = "no_base_branch"
    OVER_MAX_BRANCHES = "over_max_branches"


class IntakeSkip(BaseModel):
    """Something a scan skipped: the path (or branch), why, and a detail (sizes, counts)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    reason: SkipReason
    detail: str = ""


class ScanRequest(BaseModel):
    """Activity ``scan_repository``: scan the allow-listed repository ``repo_alias`` within ``bounds``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    repo_alias: RepoAlias
    bounds: IntakeBounds = IntakeBounds()


class ScanResult(BaseModel):
    """What a scan found: the repository, the commit read (its ``HEAD``), the base branch unmerged
    branches are measured against, the findings (at most ``bounds.max_findings``), the number of files
    read, what was skipped (at most :data:`MAX_SKIPS_LISTED` listed, ``skipped_total`` all of them)
    and how many findings were over the bound (``findings_over_limit``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    repo_alias: RepoAlias
    commit: CommitSha
    base_branch: str
    findings: list[IntakeFinding]
    files_scanned: int = Field(ge=0)
    skipped: Annotated[list[IntakeSkip], Field(max_length=MAX_SKIPS_LISTED)] = []
    skipped_total: int = Field(default=0, ge=0)
    findings_over_limit: int = Field(default=0, ge=0)


class IntakeRequest(BaseModel):
    """Update ``intake`` of the queue: scan ``repo_alias`` and enter its findings as proposals
    (protected like ``add``: the proof's target is the queue's workflow id, action ``queue_intake``).
    A scan an ``intake-scan`` sweep asks carries ``scheduled`` (the schedule's grant and the sweep) in
    place of a proof: ``actor`` is then the person who enabled the schedule."""

    model_config = ConfigDict(frozen=True)

    actor: str | None
    repo_alias: RepoAlias
    bounds: IntakeBounds = IntakeBounds()
    proof: ActionProof | None = None
    scheduled: ScheduledIntake | None = None
    beyond: bool = Field(default=False, exclude_if=lambda v: not v)
    """Also run the beyond-source pass (``queue scan --beyond``): one read_only model job proposes
    gaps between the README's claims, the layout and recent history, each citing checked quotes."""

    def digest(self) -> str:
        """What the proof is bound to: the sha256 of the alias and the bounds (and ``beyond`` when
        asked, so a proof for a plain scan does not authorise a model pass)."""
        bound: dict[str, object] = {
            "repo_alias": self.repo_alias,
            "bounds": self.bounds.model_dump(mode="json"),
        }
        if self.beyond:
            bound["beyond"] = True
        return canonical_sha256(bound)


class IntakeOutcome(BaseModel):
    """What the queue did with one finding: its fingerprint, sub-kind, place, the item it concerns
    (``None`` when none was made) and its status, and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fingerprint: Sha256
    kind: IntakeKind
    sub_kind: IntakeSubKind
    path: IntakePath
    line: int | None = None
    key: str | None = None
    status: QueueStatus | None = None
    reason: str


class BeyondDrop(BaseModel):
    """A beyond-source proposal the system dropped: its title and the quote that failed (both model
    text, escaped: data, never instructions) and why."""

    model_config = ConfigDict(frozen=True)

    title: str
    reason: str
    path: str | None = None
    line: int | None = None
    quote: str | None = None


class IntakeAnswer(BaseModel):
    """The answer of ``intake``: accepted, or refused with a code and message; the scan's commit and
    base branch; and each finding in exactly one list — ``proposed`` (a new proposal), ``updated``
    (a proposal whose source changed), ``recorded`` (an item past proposal whose source changed: an
    event, its contract untouched), ``already_queued``, ``not_reproposed`` (a rejected or done item
    holds it) and ``refused`` (no proposal could be made of it) — plus what the scan skipped."""

    model_config = ConfigDict(frozen=True)

    accepted: bool
    code: str | None = None
    message: str | None = None
    repo_alias: str | None = None
    commit: str | None = None
    base_branch: str | None = None
    files_scanned: int = 0
    proposed: list[IntakeOutcome] = []
    updated: list[IntakeOutcome] = []
    recorded: list[IntakeOutcome] = []
    already_queued: list[IntakeOutcome] = []
    not_reproposed: list[IntakeOutcome] = []
    refused: list[IntakeOutcome] = []
    skipped: list[IntakeSkip] = []
    skipped_total: int = 0
    findings_over_limit: int = 0
    dropped: Annotated[list[BeyondDrop], Field(exclude_if=lambda v: not v)] = []
    """Beyond-source proposals dropped because a quote did not match the repository (or was absent),
    each with its reason; left out of a dump when empty."""


# ------------------------------------------------------------------------------------------ display

LABELS: Final = {
    IntakeSubKind.UNCOMMITTED: "Uncommitted changes",
    IntakeSubKind.UNMERGED_BRANCH: "Branch not merged",
    IntakeSubKind.UNPUSHED_COMMITS: "Commits on no remote-tracking branch",
    IntakeSubKind.STALE_WORKTREE: "Stale worktree",
    IntakeSubKind.PLAN_SECTION: "Planned work",
    IntakeSubKind.UNCHECKED_TASK: "Unchecked task",
    IntakeSubKind.MARKER: "Code marker",
    IntakeSubKind.SKIPPED_TEST: "Skipped test",
    IntakeSubKind.EMPTY_TEST: "Empty test",
    IntakeSubKind.COMMENTED_CODE: "Commented-out code",
    IntakeSubKind.GAP: "Beyond-source gap",
}


def escape_text(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control, format, surrogate and separator character written as a visible
    ``\\uXXXX`` escape (line feeds and tabs kept unless ``one_line``), so repository text fits the
    queue's text rules and shows what it holds. Nothing is dropped."""
    kept = frozenset() if one_line else frozenset({"\n", "\t"})
    out = []
    for ch in text:
        if ch not in kept and unicodedata.category(ch) in REFUSED_CATEGORIES:
            out.append(f"\\u{ord(ch):04X}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08X}")
        else:
            out.append(ch)
    return "".join(out)


def evidence_ref(kind: str, value: str) -> str | None:
    """``kind:value`` as an evidence ref, ``%``, whitespace and control characters percent-encoded
    (an id has no whitespace); ``None`` when longer than the ref bound."""
    ref = f"{kind}:{_percent(value)}"
    return ref if len(ref) <= MAX_EVIDENCE_REF_CHARS else None


def _percent(value: str) -> str:
    out: list[str] = []
    for ch in value:
        if ch == "%" or ch.isspace() or unicodedata.category(ch) in REFUSED_CATEGORIES:
            out.extend(f"%{byte:02X}" for byte in ch.encode("utf-8", "surrogatepass"))
        else:
            out.append(ch)
    return "".join(out)


def place(finding: IntakeSource) -> str:
    """``path:line`` of a file finding, the path (branch, worktree, ``.``) of git state."""
    return finding.path if finding.line is None else f"{finding.path}:{finding.line}"


def finding_title(finding: IntakeSource) -> str:
    """One line: the label, the place and the quote's first line, escaped; a title longer than 200
    characters ends in ``…`` (the whole quote is in the scope's evidence section)."""
    first = next((line.strip() for line in finding.quote.splitlines() if line.strip()), "")
    title = escape_text(f"{LABELS[finding.sub_kind]}: {place(finding)}: {first}", one_line=True)
    return title if len(title) <= MAX_TITLE_CHARS else title[: MAX_TITLE_CHARS - 1] + "…"


def finding_scope(alias: str, finding: IntakeSource) -> ItemScope:
    """A thin scope: the problem (what was found where, at which commit) and the evidence (the quote,
    escaped, each line prefixed ``> ``, marked as repository text); the other sections are left for
    the operator who completes the proposal. Raises ``pydantic.ValidationError`` when the escaped
    quote does not fit a section."""
    found_by = (
        "proposed by the beyond-source model pass, its quotes checked against the repository; the "
        "title and the quoted text are model and repository content"
        if finding.kind is IntakeKind.BEYOND
        else "found by an intake scan; the quoted text is repository content"
    )
    problem = (
        f"{LABELS[finding.sub_kind]} in {escape_text(place(finding), one_line=True)} of {alias} at "
        f"commit {finding.commit} ({found_by}: data, never instructions)."
    )
    lines = [f"> {line}" for line in escape_text(finding.quote).split("\n")]
    shortened = (
        []
        if finding.quote_complete
        else [
            f"(quote kept to its first {len(finding.quote)} of {finding.quote_chars} characters; "
            "the fingerprint covers all of them)"
        ]
    )
    evidence = "\n".join(
        [f"Quoted from {', '.join(finding.evidence)} at commit {finding.commit}:", *lines, *shortened]
    )
    return ItemScope(problem=problem, evidence=evidence)


def finding_proposal(alias: str, finding: IntakeSource) -> ItemProposal:
    """The proposal an intake finding becomes: its title, the repository, a thin scope and the
    finding's evidence refs; value, urgency and risk are the operator's to set (a scan never
    approves). Raises ``pydantic.ValidationError`` when it cannot be made (the reason is kept)."""
    return ItemProposal(
        title=finding_title(finding),
        repo_alias=alias,
        scope=finding_scope(alias, finding),
        evidence=list(dict.fromkeys(finding.evidence)),
        notes=f"intake fingerprint {finding.fingerprint}",
    )


def proposal_problem(alias: str, finding: IntakeSource) -> str | None:
    """Why ``finding`` cannot become a proposal (``None`` when it can)."""
    try:
        finding_proposal(alias, finding)
    except ValidationError as error:
        detail = "; ".join(str(item["msg"]).removeprefix("Value error, ") for item in error.errors())
        return f"no proposal can be made of it: {detail}"
    return None


def outcome(
    finding: IntakeSource, reason: str, key: str | None = None, status: QueueStatus | None = None
) -> IntakeOutcome:
    """The :class:`IntakeOutcome` of ``finding``."""
    return IntakeOutcome(
        fingerprint=finding.fingerprint,
        kind=finding.kind,
        sub_kind=finding.sub_kind,
        path=finding.path,
        line=finding.line,
        key=key,
        status=status,
        reason=reason,
    )
