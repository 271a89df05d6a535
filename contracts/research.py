"""Research cases and their evidence (docs/architecture.md "Research team", "Storage").

A research case (``RSC-`` + 12) has a structured subject and evidence records. Each record has a kind,
its content, a source reference, an active flag and the sha256 of its content. Records are never
edited: a correction is a new record and the old one is deactivated. The kinds fall in two groups:

* **factual** — the original evidence: ``code``, ``source_excerpt``, ``matched_string``, ``trace``,
  ``experiment_output``;
* **interpretive** — someone's reading of it: ``summary``, ``analyst_note``, ``verdict``,
  ``confidence``, ``claim_support``, ``draft``.

The skeptical stage and every reviewer of a research team see factual records only. Model output is
never written back as evidence.

The evidence digest (:func:`evidence_digest`) is the sha256 of the canonical JSON (RFC 8785) of the
active records' ``[evidence_id, sha256]`` pairs in id order: adding, deactivating or changing any
active record changes it. A team captures it once and re-checks it before every stage.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from enum import StrEnum
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from contracts.errors import Refused
from contracts.text_rules import check_one_line

CASE_ID_PATTERN: Final = re.compile(r"^RSC-[0-9A-Z]{12}$")
EVIDENCE_ID_PATTERN: Final = re.compile(r"^EVD-[0-9A-Z]{12}$")

MAX_EVIDENCE_CONTENT_BYTES: Final = 48 * 1024
"""Largest content of one evidence record (UTF-8 bytes); a bigger one is refused, never shortened."""
MAX_EVIDENCE_PER_INPUT: Final = 100
"""Most evidence records one ``case-create`` or ``evidence-add`` input may carry."""
MAX_TEAM_EVIDENCE: Final = 25
"""Most active evidence records a research team may start with (docs/architecture.md "Research team")."""
MAX_TEAM_EVIDENCE_BYTES: Final = 16 * 1024
"""Most UTF-8 bytes of active evidence content a team may start with. Every stage's model request (at
most 60 KiB) carries the evidence in full beside the instructions and output schema (about 6 KiB), and
the writer's also carries the ten earlier results (at most 3,000 bytes each:
``contracts.research_teams.MAX_RESEARCH_OUTPUT_BYTES``): 16 KiB + 10 × 3,000 B + instructions fits.
A case over this is refused at team start and must be narrowed."""


class EvidenceKind(StrEnum):
    """What an evidence record is (module docstring: factual and interpretive kinds)."""

    CODE = "code"
    SOURCE_EXCERPT = "source_excerpt"
    MATCHED_STRING = "matched_string"
    TRACE = "trace"
    EXPERIMENT_OUTPUT = "experiment_output"
    SUMMARY = "summary"
    ANALYST_NOTE = "analyst_note"
    VERDICT = "verdict"
    CONFIDENCE = "confidence"
    CLAIM_SUPPORT = "claim_support"
    DRAFT = "draft"

    @property
    def factual(self) -> bool:
        """True for original evidence, false for an interpretation of it."""
        return self in FACTUAL_KINDS


FACTUAL_KINDS: Final = frozenset(
    {
        EvidenceKind.CODE,
        EvidenceKind.SOURCE_EXCERPT,
        EvidenceKind.MATCHED_STRING,
        EvidenceKind.TRACE,
        EvidenceKind.EXPERIMENT_OUTPUT,
    }
)


class CaseStatus(StrEnum):
    """Where a case stands (docs/architecture.md "Research team", "Schedules"). Only a person moves
    a case (:func:`check_case_transition`); the daily analysis reads the status and never changes it."""

    OPEN = "open"
    VALIDATION = "validation"
    READY_TO_PUBLISH = "ready_to_publish"
    CLOSED = "closed"


class CaseMover(StrEnum):
    """Who asks to move a case: a person (``research case-status --actor``) or the system."""

    HUMAN = "human"
    SYSTEM = "system"


CASE_TRANSITIONS: Final[dict[CaseStatus, frozenset[CaseStatus]]] = {
    CaseStatus.OPEN: frozenset({CaseStatus.VALIDATION, CaseStatus.CLOSED}),
    CaseStatus.VALIDATION: frozenset({CaseStatus.OPEN, CaseStatus.READY_TO_PUBLISH, CaseStatus.CLOSED}),
    CaseStatus.READY_TO_PUBLISH: frozenset({CaseStatus.VALIDATION, CaseStatus.CLOSED}),
    CaseStatus.CLOSED: frozenset({CaseStatus.OPEN}),
}
"""The moves a person may make: ``open ─► validation ─► ready_to_publish``, back one step, any
status but ``closed`` ─► ``closed``, and ``closed ─► open`` (re-open). The system may make none."""

SWEPT_STATUSES: Final = frozenset({CaseStatus.VALIDATION, CaseStatus.READY_TO_PUBLISH})
"""The statuses the daily case analysis routes (docs/architecture.md "Schedules")."""


def check_case_transition(current: CaseStatus, target: CaseStatus, mover: CaseMover) -> None:
    """Raise :class:`CaseTransitionRefused` unless ``mover`` may move a case from ``current`` to
    ``target``: ``case_status_system_refused`` (the system never moves a case), ``case_status_unchanged``
    (already there) or ``case_transition_refused`` (not in :data:`CASE_TRANSITIONS`)."""
    if mover is not CaseMover.HUMAN:
        raise Refused(
            "case_status_system_refused",
            f"only a person moves a research case; the system may not move it to {target.value!r}",
        )
    if current is target:
        raise Refused("case_status_unchanged", f"the case is {current.value!r} already")
    allowed = CASE_TRANSITIONS[current]
    if target not in allowed:
        names = ", ".join(sorted(status.value for status in allowed))
        raise Refused(
            "case_transition_refused",
            f"a case cannot move from {current.value!r} to {target.value!r}; from {current.value!r} "
            f"it may move to: {names}",
        )


SubjectKind = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,39}$")]
SubjectText = Annotated[str, StringConstraints(min_length=1, max_length=200, strip_whitespace=False)]
SourceRef = Annotated[str, StringConstraints(min_length=1, max_length=500)]


def _printable(value: str, field: str) -> str:
    if not value.strip():
        raise ValueError(f"{field} must not be blank")
    return check_one_line(value, field)


class CaseSubject(BaseModel):
    """What a case is about: ``kind`` (a lower-case word such as ``vulnerability`` or ``campaign``,
    up to 40 characters), ``identifier`` (e.g. a CVE or advisory id) and a one-line ``title``
    (both 1..200 characters, one line)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: SubjectKind
    identifier: SubjectText
    title: SubjectText

    @model_validator(mode="after")
    def _one_line(self) -> CaseSubject:
        _printable(self.identifier, "subject.identifier")
        _printable(self.title, "subject.title")
        return self

    @property
    def complete(self) -> bool:
        """True when every part of the subject says something (kind, identifier and title are all
        non-blank): a case "with a structured subject" (docs/architecture.md "Schedules")."""
        return all(part.strip() for part in (self.kind, self.identifier, self.title))


class EvidenceInput(BaseModel):
    """One evidence record as an operator gives it: ``kind``, then exactly one of ``content`` (the
    text itself) or ``path`` (a UTF-8 text file, read by the CLI relative to the input file's
    directory), and ``source_ref`` (where it came from: a URL, a commit and path, a trace id).
    Content is 1..48 KiB of UTF-8 once read."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: EvidenceKind
    content: str | None = None
    path: str | None = None
    source_ref: SourceRef

    @model_validator(mode="after")
    def _content_or_path(self) -> EvidenceInput:
        if (self.content is None) == (self.path is None):
            raise ValueError("give exactly one of 'content' or 'path'")
        if self.content is not None:
            check_evidence_content(self.content)
        _printable(self.source_ref, "source_ref")
        return self


def check_evidence_content(content: str) -> None:
    """Raise ``ValueError`` when ``content`` is empty, blank or over :data:`MAX_EVIDENCE_CONTENT_BYTES`."""
    if not content.strip():
        raise ValueError("evidence content must not be empty")
    size = len(content.encode("utf-8"))
    if size > MAX_EVIDENCE_CONTENT_BYTES:
        raise ValueError(
            f"evidence content is {size} bytes; the limit is {MAX_EVIDENCE_CONTENT_BYTES}: "
            "split it or keep only the relevant part"
        )


class CaseInput(BaseModel):
    """``research case-create --input FILE``: the subject and 1..100 evidence records."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    subject: CaseSubject
    evidence: Annotated[list[EvidenceInput], Field(min_length=1, max_length=MAX_EVIDENCE_PER_INPUT)]


class EvidenceAddInput(BaseModel):
    """``research evidence-add ID --input FILE``: 1..100 more evidence records."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    evidence: Annotated[list[EvidenceInput], Field(min_length=1, max_length=MAX_EVIDENCE_PER_INPUT)]


class EvidenceRecord(BaseModel):
    """A stored evidence record. ``sha256`` is the hex digest of ``content`` in UTF-8."""

    model_config = ConfigDict(frozen=True)

    evidence_id: str
    case_id: str
    kind: EvidenceKind
    content: str
    source_ref: str
    sha256: str
    active: bool
    added_by: str
    added_at: dt.datetime
    deactivated_by: str | None = None
    deactivated_at: dt.datetime | None = None


class ResearchCase(BaseModel):
    """A stored case with all its evidence records (active and not), in the order they were added,
    and its status (:class:`CaseStatus`; who last moved it and when, ``None`` while it is ``open``
    as created)."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    subject: CaseSubject
    created_by: str
    created_at: dt.datetime
    evidence: list[EvidenceRecord]
    status: CaseStatus = CaseStatus.OPEN
    status_changed_by: str | None = None
    status_changed_at: dt.datetime | None = None

    @property
    def factual_evidence_digest(self) -> str:
        """The evidence digest of the active *factual* records only: what a daily analysis is keyed
        on, so the analyst notes it attaches do not make the case look new (docs/architecture.md
        "Schedules")."""
        return evidence_digest(
            [(record.evidence_id, record.sha256) for record in self.active_evidence if record.kind.factual]
        )

    @property
    def active_evidence(self) -> list[EvidenceRecord]:
        """The active records, in the order they were added."""
        return [record for record in self.evidence if record.active]

    @property
    def evidence_digest(self) -> str:
        """The evidence digest of the active records (:func:`evidence_digest`)."""
        return evidence_digest([(record.evidence_id, record.sha256) for record in self.active_evidence])


def content_sha256(content: str) -> str:
    """The sha256 hex digest of evidence content in UTF-8."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def evidence_digest(pairs: list[tuple[str, str]]) -> str:
    """The evidence digest of active records given as ``(evidence_id, sha256)`` pairs (any order).

    The pairs are sorted by id and hashed as canonical JSON; ids and digests are plain ASCII, so
    ``json.dumps`` with sorted, compact separators is the RFC 8785 form.
    """
    ordered = sorted([evidence_id, sha] for evidence_id, sha in pairs)
    text = json.dumps(ordered, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


# ------------------------------------------------------------------------------- stored job outputs


class JobOutputRecord(BaseModel):
    """One research model job's validated output, kept in the store so that results travel by
    reference (``job_id`` + ``output_sha256``) and never sit inline in a team's history.

    ``output_sha256`` is the canonical-JSON (RFC 8785) sha256 of ``output``; ``pack`` is the context
    pack the job was given (JSON) with its sha256. Written once per job id; never edited."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    team_id: str
    kind: str
    profile_id: str
    model_id: str
    output: dict[str, object]
    output_sha256: str
    pack: dict[str, object] | None = None
    pack_sha256: str | None = None
    created_at: dt.datetime | None = None
