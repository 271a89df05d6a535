"""Research cases, their evidence records, and the stored outputs of research model jobs
(docs/architecture.md "Research team", "Storage"; the contracts are in :mod:`contracts.research`).

A case is created with its first evidence records; more are added later, and a record is deactivated,
never edited or deleted. The store computes each record's sha256 from its content (an input carries no
digest) and numbers the records of a case in the order they were added (``seq``).

Job outputs are written once per job id: the insert itself decides (a savepoint catches the primary
key's refusal), so a retried write of the same output returns the stored record and a different output
for the same job is refused. Nothing here turns a job output into evidence: model output is never
evidence.

The functions take an open session and write nothing on a refusal when the caller's transaction is
rolled back (the :class:`store.store.Store` methods do that).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import Any, Final

from pydantic import ValidationError
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from contracts.errors import InvalidInput, NotFound, OperatorError, Refused
from contracts.hashing import CanonicalJsonError, canonical_sha256
from contracts.ids import new_case_id, new_evidence_id
from contracts.research import (
    CASE_ID_PATTERN,
    EVIDENCE_ID_PATTERN,
    MAX_EVIDENCE_PER_INPUT,
    CaseInput,
    CaseMover,
    CaseStatus,
    CaseSubject,
    EvidenceInput,
    EvidenceKind,
    EvidenceRecord,
    JobOutputRecord,
    ResearchCase,
    check_case_transition,
    check_evidence_content,
    content_sha256,
)
from store.actors import require_actor
from store.schema import (
    ENUM_LENGTH,
    JOB_ID_LENGTH,
    MODEL_ID_LENGTH,
    PROFILE_ID_LENGTH,
    TEAM_ID_LENGTH,
    ResearchCaseRow,
    ResearchEvidenceRow,
    ResearchJobOutputRow,
)

SHA256_PATTERN: Final = re.compile(r"[0-9a-f]{64}")


# ------------------------------------------------------------------------------------------ validation


def check_case_id(case_id: str) -> str:
    """Return ``case_id`` if it is ``RSC-`` + 12 of ``[0-9A-Z]``, else raise ``invalid_case_id``."""
    if not isinstance(case_id, str) or not CASE_ID_PATTERN.fullmatch(case_id):
        raise InvalidInput("invalid_case_id", f"case id {case_id!r} must be 'RSC-' and 12 of [0-9A-Z]")
    return case_id


def check_evidence_id(evidence_id: str) -> str:
    """Return ``evidence_id`` if it is ``EVD-`` + 12 of ``[0-9A-Z]``, else raise ``invalid_evidence_id``."""
    if not isinstance(evidence_id, str) or not EVIDENCE_ID_PATTERN.fullmatch(evidence_id):
        raise InvalidInput(
            "invalid_evidence_id", f"evidence id {evidence_id!r} must be 'EVD-' and 12 of [0-9A-Z]"
        )
    return evidence_id


def check_resolved_evidence(evidence: Sequence[EvidenceInput]) -> None:
    """Check evidence inputs about to be stored; nothing is read or written.

    Each must carry its ``content`` (a ``path`` is resolved by the CLI before the store sees it) of
    1..48 KiB of UTF-8 without NUL characters, and there must be 1..100 of them. Raises
    :class:`InvalidInput`: ``evidence_path_unresolved`` (an input still has a ``path`` or has no
    content), ``invalid_evidence`` (blank or oversize content, content with NUL; no records; more
    than 100 records).
    """
    if not 1 <= len(evidence) <= MAX_EVIDENCE_PER_INPUT:
        raise InvalidInput(
            "invalid_evidence",
            f"give 1..{MAX_EVIDENCE_PER_INPUT} evidence records at a time, not {len(evidence)}",
        )
    for index, item in enumerate(evidence):
        if item.path is not None or item.content is None:
            raise InvalidInput(
                "evidence_path_unresolved",
                f"evidence[{index}] has no content (path {item.path!r} not read): the store takes "
                "content only; read the file first",
            )
        try:
            check_evidence_content(item.content)
        except ValueError as error:
            raise InvalidInput("invalid_evidence", f"evidence[{index}]: {error}") from None
        if "\x00" in item.content:
            # PostgreSQL text cannot hold NUL, and text evidence has none: refused on every backend.
            raise InvalidInput(
                "invalid_evidence", f"evidence[{index}]: content must not contain NUL characters"
            )


def check_job_output(record: JobOutputRecord) -> None:
    """Check a job output about to be stored; nothing is read or written.

    Raises :class:`InvalidInput`: ``invalid_job_output`` (a job id of other than 1..120 characters, a
    team id of other than 1..20, a kind, profile or model id empty or too long, a digest that is not 64
    lower-case hex digits, a pack without its digest or a digest without a pack, a value with no
    canonical JSON form) or ``job_output_digest_mismatch`` (``output_sha256`` or ``pack_sha256`` is
    not the RFC 8785 canonical-JSON sha256 of ``output`` or ``pack``).
    """
    _check_text(record.job_id, "job_id", JOB_ID_LENGTH)
    _check_text(record.team_id, "team_id", TEAM_ID_LENGTH)
    _check_text(record.kind, "kind", ENUM_LENGTH)
    _check_text(record.profile_id, "profile_id", PROFILE_ID_LENGTH)
    _check_text(record.model_id, "model_id", MODEL_ID_LENGTH)
    _check_digest(record.output, record.output_sha256, "output")
    if (record.pack is None) != (record.pack_sha256 is None):
        raise InvalidInput(
            "invalid_job_output",
            f"job {record.job_id!r}: give both pack and pack_sha256, or neither",
        )
    if record.pack is not None and record.pack_sha256 is not None:
        _check_digest(record.pack, record.pack_sha256, "pack")


# ----------------------------------------------------------------------------------------------- cases


def create_case(session: Session, case: CaseInput, actor: str, at: dt.datetime) -> ResearchCase:
    """Store a new case with ``case.subject`` and the records of ``case.evidence`` (in that order),
    created and added by ``actor`` at ``at``; returns the stored case.

    Raises ``evidence_path_unresolved``/``invalid_evidence`` (invalid input, see
    :func:`check_resolved_evidence`) or ``unknown_actor`` (not found).
    """
    check_resolved_evidence(case.evidence)
    require_actor(session, actor)
    row = ResearchCaseRow(
        case_id=new_case_id(),
        subject_kind=case.subject.kind,
        subject_identifier=case.subject.identifier,
        subject_title=case.subject.title,
        created_by=actor,
        created_at=at,
    )
    session.add(row)
    session.flush()
    _insert_evidence(session, row.case_id, case.evidence, actor, at, first_seq=1)
    return get_case(session, row.case_id)


def get_case(session: Session, case_id: str) -> ResearchCase:
    """The case ``case_id`` with all its evidence records (active or not) in the order they were added.

    Raises ``invalid_case_id`` (invalid input) or ``unknown_case`` (not found).
    """
    row = _case_row(session, case_id)
    evidence = session.scalars(
        select(ResearchEvidenceRow)
        .where(ResearchEvidenceRow.case_id == case_id)
        .order_by(ResearchEvidenceRow.seq)
    )
    return _case(row, [evidence_record(item) for item in evidence])


def list_cases(session: Session) -> list[ResearchCase]:
    """Every case with its evidence records, newest first (ties by case id)."""
    cases = list(
        session.scalars(
            select(ResearchCaseRow).order_by(ResearchCaseRow.created_at.desc(), ResearchCaseRow.case_id)
        )
    )
    by_case: dict[str, list[EvidenceRecord]] = {row.case_id: [] for row in cases}
    rows = session.scalars(
        select(ResearchEvidenceRow).order_by(ResearchEvidenceRow.case_id, ResearchEvidenceRow.seq)
    )
    for item in rows:
        by_case.setdefault(item.case_id, []).append(evidence_record(item))
    return [_case(row, by_case[row.case_id]) for row in cases]


def add_evidence(
    session: Session, case_id: str, evidence: Sequence[EvidenceInput], actor: str, at: dt.datetime
) -> list[EvidenceRecord]:
    """Add the records of ``evidence`` (in that order) to the case ``case_id`` as ``actor`` at ``at``;
    returns the new records. All are added or none (the caller's transaction).

    Raises ``invalid_case_id``/``evidence_path_unresolved``/``invalid_evidence`` (invalid input),
    ``unknown_actor`` or ``unknown_case`` (not found).
    """
    check_case_id(case_id)
    check_resolved_evidence(evidence)
    require_actor(session, actor)
    _case_row(session, case_id)
    last = session.scalar(
        select(func.max(ResearchEvidenceRow.seq)).where(ResearchEvidenceRow.case_id == case_id)
    )
    return _insert_evidence(session, case_id, evidence, actor, at, first_seq=(last or 0) + 1)


def deactivate_evidence(
    session: Session, case_id: str, evidence_id: str, actor: str, at: dt.datetime
) -> EvidenceRecord:
    """Mark the record ``evidence_id`` of the case ``case_id`` inactive, as ``actor`` at ``at``;
    returns the record as it now is. Its content and digest stay as they were.

    Raises ``invalid_case_id``/``invalid_evidence_id`` (invalid input), ``unknown_actor``,
    ``unknown_case`` or ``unknown_evidence`` (not found; also when the record belongs to another
    case), or ``evidence_inactive`` (refused: deactivated already).
    """
    check_case_id(case_id)
    check_evidence_id(evidence_id)
    require_actor(session, actor)
    _case_row(session, case_id)
    row = session.get(ResearchEvidenceRow, evidence_id)
    if row is None or row.case_id != case_id:
        raise NotFound("unknown_evidence", f"case {case_id} has no evidence record {evidence_id}")
    if not row.active:
        raise Refused(
            "evidence_inactive",
            f"evidence record {evidence_id} of case {case_id} was deactivated already "
            f"(by {row.deactivated_by} at {_iso(row.deactivated_at)})",
        )
    row.active = False
    row.deactivated_by = actor
    row.deactivated_at = at
    session.flush()
    return evidence_record(row)


def set_case_status(
    session: Session, case_id: str, status: CaseStatus, actor: str, at: dt.datetime
) -> ResearchCase:
    """Move the case ``case_id`` to ``status`` as the person ``actor`` at ``at`` (the transition table
    :data:`contracts.research.CASE_TRANSITIONS` decides); returns the case as it now is.

    Raises ``invalid_case_id`` (invalid input), ``unknown_actor``/``unknown_case`` (not found), or
    ``case_status_unchanged``/``case_transition_refused`` (refused)."""
    check_case_id(case_id)
    require_actor(session, actor)
    row = _case_row(session, case_id)
    check_case_transition(CaseStatus(row.status), status, CaseMover.HUMAN)
    row.status = status.value
    row.status_changed_by = actor
    row.status_changed_at = at
    session.flush()
    return get_case(session, case_id)


def attach_note(
    session: Session,
    case_id: str,
    evidence_id: str,
    content: str,
    source_ref: str,
    actor: str,
    at: dt.datetime,
) -> tuple[EvidenceRecord, bool]:
    """Attach ``content`` as an ``analyst_note`` under the caller's deterministic ``evidence_id``
    unless that record exists; returns the record and whether it was added now.

    The insert runs in a savepoint and the primary key decides, so of two writers racing for one id
    exactly one inserts and the other gets the stored record (docs/architecture.md "Schedules").
    Raises ``invalid_evidence`` (invalid input), ``unknown_actor``/``unknown_case`` (not found), or
    ``note_conflict`` (refused: the id holds a record of another case)."""
    check_case_id(case_id)
    check_evidence_id(evidence_id)
    check_resolved_evidence(
        [EvidenceInput(kind=EvidenceKind.ANALYST_NOTE, content=content, source_ref=source_ref)]
    )
    stored = session.get(ResearchEvidenceRow, evidence_id)
    if stored is not None:
        return _existing_note(stored, case_id), False
    require_actor(session, actor)
    _case_row(session, case_id)
    last = session.scalar(
        select(func.max(ResearchEvidenceRow.seq)).where(ResearchEvidenceRow.case_id == case_id)
    )
    row = ResearchEvidenceRow(
        evidence_id=evidence_id,
        case_id=case_id,
        seq=(last or 0) + 1,
        kind=EvidenceKind.ANALYST_NOTE.value,
        content=content,
        source_ref=source_ref,
        sha256=content_sha256(content),
        active=True,
        added_by=actor,
        added_at=at,
        deactivated_by=None,
        deactivated_at=None,
    )
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError:
        stored = session.get(ResearchEvidenceRow, evidence_id)
        if stored is None:
            raise
        return _existing_note(stored, case_id), False
    return evidence_record(row), True


def _existing_note(stored: ResearchEvidenceRow, case_id: str) -> EvidenceRecord:
    if stored.case_id != case_id:
        raise Refused(
            "note_conflict",
            f"evidence id {stored.evidence_id} belongs to case {stored.case_id}, not {case_id}",
        )
    return evidence_record(stored)


def evidence_record(row: ResearchEvidenceRow) -> EvidenceRecord:
    """The contract record of a stored evidence record."""
    return EvidenceRecord(
        evidence_id=row.evidence_id,
        case_id=row.case_id,
        kind=EvidenceKind(row.kind),
        content=row.content,
        source_ref=row.source_ref,
        sha256=row.sha256,
        active=row.active,
        added_by=row.added_by,
        added_at=row.added_at,
        deactivated_by=row.deactivated_by,
        deactivated_at=row.deactivated_at,
    )


# ----------------------------------------------------------------------------------------- job outputs


def save_job_output(session: Session, record: JobOutputRecord, at: dt.datetime) -> JobOutputRecord:
    """Store ``record`` (``created_at`` is set to ``at``; any given one is ignored) unless its job id
    is stored already; returns the stored record.

    The insert runs in a savepoint and the primary key decides, so of two writers racing for one job
    id exactly one inserts. When the job id is stored already with the same output, team, kind,
    profile, model and pack digests (a retried write), the stored record is returned unchanged.
    Raises ``invalid_job_output``/``job_output_digest_mismatch`` (invalid input, see
    :func:`check_job_output`) or ``job_output_conflict`` (refused: the job id holds something else).
    """
    check_job_output(record)
    row = ResearchJobOutputRow(
        job_id=record.job_id,
        team_id=record.team_id,
        kind=record.kind,
        profile_id=record.profile_id,
        model_id=record.model_id,
        output=record.output,
        output_sha256=record.output_sha256,
        pack=record.pack,
        pack_sha256=record.pack_sha256,
        created_at=at,
    )
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError:
        stored = session.get(ResearchJobOutputRow, record.job_id)
        if stored is None:  # Not the key (inputs are checked): let the database's reason through.
            raise
        differences = _differences(stored, record)
        if differences:
            raise Refused(
                "job_output_conflict",
                f"job {record.job_id!r} already has a stored output that differs in "
                f"{', '.join(differences)}: a job's output is written once",
            ) from None
        return job_output_record(stored)
    return job_output_record(row)


def get_job_output(session: Session, job_id: str) -> JobOutputRecord:
    """The stored output of ``job_id``. Raises ``unknown_job_output`` (not found)."""
    row = session.get(ResearchJobOutputRow, job_id) if isinstance(job_id, str) else None
    if row is None:
        raise NotFound("unknown_job_output", f"no output is stored for job {job_id!r}")
    return job_output_record(row)


def team_job_outputs(session: Session, team_id: str) -> list[JobOutputRecord]:
    """The stored outputs of the jobs of ``team_id``, in the order they were stored (ties by job id);
    empty when there are none."""
    rows = session.scalars(
        select(ResearchJobOutputRow)
        .where(ResearchJobOutputRow.team_id == team_id)
        .order_by(ResearchJobOutputRow.created_at, ResearchJobOutputRow.job_id)
    )
    return [job_output_record(row) for row in rows]


def job_output_record(row: ResearchJobOutputRow) -> JobOutputRecord:
    """The contract record of a stored job output."""
    return JobOutputRecord(
        job_id=row.job_id,
        team_id=row.team_id,
        kind=row.kind,
        profile_id=row.profile_id,
        model_id=row.model_id,
        output=row.output,
        output_sha256=row.output_sha256,
        pack=row.pack,
        pack_sha256=row.pack_sha256,
        created_at=row.created_at,
    )


# ---------------------------------------------------------------------------------------------- helpers


def _insert_evidence(
    session: Session,
    case_id: str,
    evidence: Sequence[EvidenceInput],
    actor: str,
    at: dt.datetime,
    *,
    first_seq: int,
) -> list[EvidenceRecord]:
    rows = []
    for offset, item in enumerate(evidence):
        assert item.content is not None  # check_resolved_evidence ran
        rows.append(
            ResearchEvidenceRow(
                evidence_id=new_evidence_id(),
                case_id=case_id,
                seq=first_seq + offset,
                kind=item.kind.value,
                content=item.content,
                source_ref=item.source_ref,
                sha256=content_sha256(item.content),
                active=True,
                added_by=actor,
                added_at=at,
                deactivated_by=None,
                deactivated_at=None,
            )
        )
    session.add_all(rows)
    session.flush()
    return [evidence_record(row) for row in rows]


def _case_row(session: Session, case_id: str) -> ResearchCaseRow:
    check_case_id(case_id)
    row = session.get(ResearchCaseRow, case_id)
    if row is None:
        raise NotFound("unknown_case", f"no research case {case_id}")
    return row


def _case(row: ResearchCaseRow, evidence: list[EvidenceRecord]) -> ResearchCase:
    try:
        subject = CaseSubject(
            kind=row.subject_kind, identifier=row.subject_identifier, title=row.subject_title
        )
    except ValidationError:
        raise OperatorError(
            "stored_case_invalid", f"the stored subject of research case {row.case_id} is not valid"
        ) from None
    return ResearchCase(
        case_id=row.case_id,
        subject=subject,
        created_by=row.created_by,
        created_at=row.created_at,
        evidence=evidence,
        status=CaseStatus(row.status or CaseStatus.OPEN.value),
        status_changed_by=row.status_changed_by,
        status_changed_at=row.status_changed_at,
    )


def _check_text(value: Any, field: str, limit: int) -> None:
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise InvalidInput(
            "invalid_job_output", f"job output {field} must be 1..{limit} characters, not {value!r}"
        )


def _check_digest(value: dict[str, Any], digest: str, field: str) -> None:
    if not SHA256_PATTERN.fullmatch(digest):
        raise InvalidInput(
            "invalid_job_output",
            f"job output {field}_sha256 must be 64 lower-case hex digits, not {digest!r}",
        )
    try:
        actual = canonical_sha256(value)
    except CanonicalJsonError as error:
        raise InvalidInput("invalid_job_output", f"job output {field}: {error}") from None
    if actual != digest:
        raise InvalidInput(
            "job_output_digest_mismatch",
            f"job output {field}_sha256 {digest} is not the canonical-JSON sha256 of the {field} ({actual})",
        )


def _differences(stored: ResearchJobOutputRow, record: JobOutputRecord) -> list[str]:
    fields = ("output_sha256", "team_id", "kind", "profile_id", "model_id", "pack_sha256")
    return [field for field in fields if getattr(stored, field) != getattr(record, field)]


def _iso(value: dt.datetime | None) -> str:
    return "an unknown time" if value is None else value.isoformat().replace("+00:00", "Z")
