"""Where an intake finding came from: its vocabulary, its fingerprint and the source an item keeps
(docs/architecture.md "Goal queue", "Intake").

A finding is identified by its **fingerprint**: the sha256 of the repository alias, the kind, the
sub-kind, the path and the normalised quoted text (whitespace runs collapsed) — never a line number or
a date, so a TODO that moved is the same finding. Its **anchor** is the sha256 of the alias, kind,
sub-kind, path and locator (the line of a file finding; nothing for git state): a finding whose
fingerprint is new but whose anchor is an open item's is that item's source, changed.

Pure: no I/O.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from contracts.hashing import canonical_sha256
from contracts.work_item import EvidenceRef

MAX_QUOTE_CHARS: Final = 1_000
"""The longest quote a finding carries; a longer text is kept to this bound and the finding says so
(``quote_complete`` false, ``quote_chars`` the whole length): the fingerprint covers the whole text."""
MAX_INTAKE_PATH_CHARS: Final = 1_000
SHA256_PATTERN: Final = r"^[0-9a-f]{64}$"
COMMIT_PATTERN: Final = r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$"


class IntakeKind(StrEnum):
    """What a scanner looked at: the repository's git state, its documented plans, its code."""

    GIT_STATE = "git_state"
    PLAN = "plan"
    CODE_MARKER = "code_marker"
    BEYOND = "beyond"
    """Proposed by the beyond-source model pass (``queue scan --beyond``), its quotes checked."""


class IntakeSubKind(StrEnum):
    """The finding within its kind (each belongs to one :class:`IntakeKind`, :data:`SUB_KIND_OF`)."""

    UNCOMMITTED = "uncommitted"
    UNMERGED_BRANCH = "unmerged_branch"
    UNPUSHED_COMMITS = "unpushed_commits"
    STALE_WORKTREE = "stale_worktree"
    PLAN_SECTION = "plan_section"
    UNCHECKED_TASK = "unchecked_task"
    MARKER = "marker"
    SKIPPED_TEST = "skipped_test"
    EMPTY_TEST = "empty_test"
    COMMENTED_CODE = "commented_code"
    GAP = "gap"


SUB_KIND_OF: Final = {
    IntakeSubKind.UNCOMMITTED: IntakeKind.GIT_STATE,
    IntakeSubKind.UNMERGED_BRANCH: IntakeKind.GIT_STATE,
    IntakeSubKind.UNPUSHED_COMMITS: IntakeKind.GIT_STATE,
    IntakeSubKind.STALE_WORKTREE: IntakeKind.GIT_STATE,
    IntakeSubKind.PLAN_SECTION: IntakeKind.PLAN,
    IntakeSubKind.UNCHECKED_TASK: IntakeKind.PLAN,
    IntakeSubKind.MARKER: IntakeKind.CODE_MARKER,
    IntakeSubKind.SKIPPED_TEST: IntakeKind.CODE_MARKER,
    IntakeSubKind.EMPTY_TEST: IntakeKind.CODE_MARKER,
    IntakeSubKind.COMMENTED_CODE: IntakeKind.CODE_MARKER,
    IntakeSubKind.GAP: IntakeKind.BEYOND,
}

Sha256 = Annotated[str, StringConstraints(pattern=SHA256_PATTERN)]
CommitSha = Annotated[str, StringConstraints(pattern=COMMIT_PATTERN)]
IntakePath = Annotated[str, StringConstraints(min_length=1, max_length=MAX_INTAKE_PATH_CHARS)]
Quote = Annotated[str, StringConstraints(max_length=MAX_QUOTE_CHARS)]

_WHITESPACE = re.compile(r"\s+")


def normalise_quote(text: str) -> str:
    """``text`` with every whitespace run collapsed to one space and the ends stripped: what the
    fingerprint covers (re-indenting or re-wrapping a line is not a changed source)."""
    return _WHITESPACE.sub(" ", text).strip()


def fingerprint(alias: str, sub_kind: IntakeSubKind, path: str, text: str) -> str:
    """The finding's identity: sha256 over the alias, kind, sub-kind, path and normalised whole text."""
    kind = SUB_KIND_OF[sub_kind]
    return canonical_sha256(["intake/v1", alias, kind.value, sub_kind.value, path, normalise_quote(text)])


def anchor(alias: str, sub_kind: IntakeSubKind, path: str, line: int | None) -> str:
    """Where the finding is: sha256 over the alias, kind, sub-kind, path and line (``None`` for git
    state, whose path — a branch, a worktree, the working tree — is its place)."""
    kind = SUB_KIND_OF[sub_kind]
    return canonical_sha256(["intake-anchor/v1", alias, kind.value, sub_kind.value, path, line])


class IntakeSource(BaseModel):
    """The finding an item was proposed from (``QueueItem.intake``): its fingerprint and anchor, kind
    and sub-kind, path and line (``None`` for git state), the repository commit scanned, the evidence
    refs and the quoted text exactly as found (``quote_complete`` false when it was longer than
    :data:`MAX_QUOTE_CHARS`, ``quote_chars`` its whole length). Repository text is data."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fingerprint: Sha256
    anchor: Sha256
    kind: IntakeKind
    sub_kind: IntakeSubKind
    path: IntakePath
    line: int | None = Field(default=None, ge=1)
    commit: CommitSha
    evidence: Annotated[list[EvidenceRef], Field(min_length=1, max_length=20)]
    quote: Quote
    quote_complete: bool = True
    quote_chars: int = Field(ge=0)
