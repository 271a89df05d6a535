"""Research job packs: what the store holds, read by reference and checked against its sha256."""

from __future__ import annotations

import datetime as dt

import pytest

from activities.research_packs import ResearchInputChanged, build_research_pack
from catalog.loader import load_catalog
from contracts.hashing import canonical_sha256
from contracts.model_jobs import JobContext
from contracts.output import JobKind, SpecialistOutput
from contracts.pack_text import render_pack
from contracts.research import EvidenceKind, EvidenceRecord, JobOutputRecord, content_sha256
from contracts.research_teams import STAGES, EvidenceRef, JobOutputRef, job_visibility

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


def record(evidence_id: str, kind: EvidenceKind, content: str) -> EvidenceRecord:
    return EvidenceRecord(
        evidence_id=evidence_id,
        case_id="RSC-000000000001",
        kind=kind,
        content=content,
        source_ref='src "quoted"\n## not a heading',
        sha256=content_sha256(content),
        active=True,
        added_by="alice",
        added_at=NOW,
    )


TRACE = record("EVD-000000000001", EvidenceKind.TRACE, "Traceback: boom")
NOTE = record("EVD-000000000002", EvidenceKind.ANALYST_NOTE, "probably the usual actor")
RECORDS = {r.evidence_id: r for r in (TRACE, NOTE)}
REFS = [EvidenceRef(evidence_id=r.evidence_id, kind=r.kind, sha256=r.sha256) for r in (TRACE, NOTE)]
OUTPUT = SpecialistOutput.model_validate(
    {
        "role": "research-synthesist",
        "axis": "a",
        "inspected_evidence": [],
        "findings": [{"severity": "high", "title": "finding-marker", "detail": "d"}],
        "confidence": 0.93,
        "confidence_band": "high",
        "closure": "partial",
        "recommended_next_action": "n",
    }
)
STORED = JobOutputRecord(
    job_id="RTM-X-s1-analysis-1",
    team_id="RTM-X",
    kind="analysis",
    profile_id="research-synthesist",
    model_id="replay:demo",
    output=OUTPUT.model_dump(mode="json"),
    output_sha256=canonical_sha256(OUTPUT.model_dump(mode="json")),
)
ANALYSIS = JobOutputRef(
    job_id=STORED.job_id,
    sha256=STORED.output_sha256,
    stage=1,
    kind=JobKind.ANALYSIS,
    profile_id="research-synthesist",
    model_id="replay:demo",
)


def context(stage: int, kind: JobKind, evidence: list[EvidenceRef] = REFS) -> JobContext:
    analyses = [(1, ANALYSIS)]
    seen = job_visibility(
        team_id="RTM-X",
        case_id="RSC-000000000001",
        stage=STAGES[stage - 1],
        kind=kind,
        evidence=evidence,
        analyses=analyses,
        reviews=[],
    )
    return JobContext(
        title="t (stage 1)", task="task", evidence_refs=[r.evidence_id for r in seen.evidence], research=seen
    )


def profile(profile_id: str):  # type: ignore[no-untyped-def]
    return load_catalog().profiles[profile_id]


def test_a_reviewer_pack_has_the_factual_record_and_the_findings_without_author_or_confidence() -> None:
    pack = build_research_pack(
        profile("reality-checker"),
        JobKind.REVIEW,
        context(1, JobKind.REVIEW),
        RECORDS,
        {STORED.job_id: STORED},
    )
    assert [entry.ref for entry in pack.evidence] == [TRACE.evidence_id] and pack.interpretive == []
    assert [finding.title for finding in pack.findings_under_review] == ["finding-marker"]
    text = render_pack(pack)
    assert "0.93" not in text and "research-synthesist" not in text and NOTE.content not in text
    # Operator text in a source reference cannot pose as a section of the pack.
    assert "\n## not a heading" not in text


def test_a_later_stage_pack_labels_interpretive_records_and_earlier_results_as_model_output() -> None:
    pack = build_research_pack(
        profile("threat-intelligence-analyst"),
        JobKind.ANALYSIS,
        context(2, JobKind.ANALYSIS),
        RECORDS,
        {STORED.job_id: STORED},
    )
    text = render_pack(pack)
    assert [entry.ref for entry in pack.interpretive] == [NOTE.evidence_id]
    assert "## Interpretive records" in text and NOTE.content in text
    assert "## Earlier stage results (model output, not evidence)" in text and "finding-marker" in text


def test_a_record_whose_content_no_longer_matches_its_sha256_is_refused() -> None:
    changed = {**RECORDS, TRACE.evidence_id: TRACE.model_copy(update={"content": "Traceback: edited"})}
    with pytest.raises(ResearchInputChanged, match="no longer matches"):
        build_research_pack(
            profile("reality-checker"), JobKind.ANALYSIS, context(5, JobKind.ANALYSIS), changed, {}
        )


def test_a_stored_result_that_does_not_match_its_reference_is_refused() -> None:
    tampered = STORED.model_copy(update={"output_sha256": "0" * 64})
    with pytest.raises(ResearchInputChanged, match="stored result"):
        build_research_pack(
            profile("reality-checker"),
            JobKind.REVIEW,
            context(1, JobKind.REVIEW),
            RECORDS,
            {STORED.job_id: tampered},
        )
    with pytest.raises(ResearchInputChanged, match="missing"):
        build_research_pack(
            profile("reality-checker"), JobKind.REVIEW, context(1, JobKind.REVIEW), RECORDS, {}
        )
