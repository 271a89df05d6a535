"""What each research job may see (``job_visibility``) and which cases a team may start with."""

from __future__ import annotations

import datetime as dt

import pytest

from contracts.enums import RiskLevel
from contracts.errors import Refused
from contracts.output import JobKind
from contracts.research import (
    MAX_TEAM_EVIDENCE_BYTES,
    CaseSubject,
    EvidenceKind,
    EvidenceRecord,
    ResearchCase,
    content_sha256,
    evidence_digest,
)
from contracts.research_teams import (
    STAGES,
    EvidenceRef,
    JobOutputRef,
    ResearchJobContext,
    check_team_evidence,
    highest_severity,
    job_visibility,
)

FACT = EvidenceRef(evidence_id="EVD-FACT00000001", kind=EvidenceKind.TRACE, sha256="a" * 64)
CODE = EvidenceRef(evidence_id="EVD-FACT00000002", kind=EvidenceKind.CODE, sha256="b" * 64)
NOTE = EvidenceRef(evidence_id="EVD-NOTE00000001", kind=EvidenceKind.ANALYST_NOTE, sha256="c" * 64)
EVIDENCE = [FACT, NOTE, CODE]


def ref(stage: int, kind: JobKind) -> JobOutputRef:
    return JobOutputRef(
        job_id=f"RTM-X-s{stage}-{kind.value}",
        sha256="d" * 64,
        stage=stage,
        kind=kind,
        profile_id="p",
        model_id="m",
    )


ANALYSES = [(n, ref(n, JobKind.ANALYSIS)) for n in range(1, 7)]
REVIEWS = [(n, ref(n, JobKind.REVIEW)) for n in range(1, 7)]


def visibility(stage: int, kind: JobKind) -> ResearchJobContext:
    return job_visibility(
        team_id="RTM-X",
        case_id="RSC-X",
        stage=STAGES[stage - 1],
        kind=kind,
        evidence=EVIDENCE,
        analyses=[(n, r) for n, r in ANALYSES if n < stage or (n == stage and kind is JobKind.REVIEW)],
        reviews=[(n, r) for n, r in REVIEWS if n < stage],
    )


@pytest.mark.parametrize("stage", [1, 2, 3, 4])
def test_stages_one_to_four_see_every_record_and_the_earlier_analyses_but_not_reviews(stage: int) -> None:
    seen = visibility(stage, JobKind.ANALYSIS)
    assert seen.evidence == EVIDENCE
    assert seen.prior_results == [r for n, r in ANALYSES if n < stage]
    assert seen.under_review is None
    assert len(seen.omitted) == stage - 1  # each earlier review, with why


def test_the_skeptical_stage_sees_factual_records_only_and_no_stage_output() -> None:
    seen = visibility(5, JobKind.ANALYSIS)
    assert seen.evidence == [FACT, CODE]
    assert seen.prior_results == [] and seen.under_review is None
    assert any(NOTE.evidence_id in item and "interpretive" in item for item in seen.omitted)
    assert sum("another stage's output" in item for item in seen.omitted) == 8


@pytest.mark.parametrize("stage", [1, 2, 3, 4, 5, 6])
def test_every_reviewer_sees_factual_records_and_only_its_own_stage_findings(stage: int) -> None:
    seen = visibility(stage, JobKind.REVIEW)
    assert seen.evidence == [FACT, CODE]
    assert seen.prior_results == []
    assert seen.under_review == ANALYSES[stage - 1][1]
    assert any("blinded review" in item for item in seen.omitted)
    assert any(NOTE.evidence_id in item for item in seen.omitted)


def test_the_writer_sees_every_record_and_every_earlier_analysis_and_review_in_stage_order() -> None:
    seen = visibility(6, JobKind.ANALYSIS)
    assert seen.evidence == EVIDENCE
    assert [r.job_id for r in seen.prior_results] == [
        r.job_id for n in range(1, 6) for r in (ANALYSES[n - 1][1], REVIEWS[n - 1][1])
    ]


def test_a_review_without_its_stage_analysis_is_an_error() -> None:
    with pytest.raises(ValueError, match="needs the stage's analysis"):
        job_visibility(
            team_id="T",
            case_id="C",
            stage=STAGES[0],
            kind=JobKind.REVIEW,
            evidence=EVIDENCE,
            analyses=[],
            reviews=[],
        )


def test_the_highest_severity_orders_low_medium_high_critical() -> None:
    assert highest_severity([RiskLevel.MEDIUM, RiskLevel.CRITICAL, RiskLevel.HIGH]) is RiskLevel.CRITICAL
    assert highest_severity([]) is None


def case_with(contents: list[str], *, inactive: int = 0) -> ResearchCase:
    now = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    records = [
        EvidenceRecord(
            evidence_id=f"EVD-{n:012d}",
            case_id="RSC-000000000001",
            kind=EvidenceKind.TRACE,
            content=text,
            source_ref="s",
            sha256=content_sha256(text),
            active=n >= inactive,
            added_by="alice",
            added_at=now,
        )
        for n, text in enumerate(contents)
    ]
    subject = CaseSubject(kind="vulnerability", identifier="X-1", title="t")
    return ResearchCase(
        case_id="RSC-000000000001", subject=subject, created_by="alice", created_at=now, evidence=records
    )


def test_a_team_starts_with_1_to_25_active_records_within_the_size_bound() -> None:
    assert len(check_team_evidence(case_with(["x"] * 25))) == 25
    # Inactive records do not count.
    assert len(check_team_evidence(case_with(["x"] * 30, inactive=5))) == 25


@pytest.mark.parametrize(
    ("case", "code"),
    [
        (case_with(["x"] * 26), "team_evidence_limit"),
        (case_with(["x"], inactive=1), "team_evidence_empty"),
        (case_with(["y" * (MAX_TEAM_EVIDENCE_BYTES // 2 + 1)] * 2), "team_evidence_too_large"),
    ],
)
def test_a_case_that_does_not_fit_is_refused_with_a_request_to_narrow_it(
    case: ResearchCase, code: str
) -> None:
    with pytest.raises(Refused) as refused:
        check_team_evidence(case)
    assert refused.value.code == code and refused.value.exit_code == 4


def test_the_evidence_digest_ignores_order_and_changes_with_any_record() -> None:
    pairs = [("EVD-A", "1" * 64), ("EVD-B", "2" * 64)]
    assert evidence_digest(pairs) == evidence_digest(list(reversed(pairs)))
    assert evidence_digest(pairs) != evidence_digest(pairs[:1])
    assert evidence_digest(pairs) != evidence_digest([("EVD-A", "1" * 64), ("EVD-B", "3" * 64)])
