"""The beyond-source pass's pure rules: quotes only on its findings (the output contract refuses them
on any other job, and the call activity allows them only on a beyond analysis), findings without
quotes serialise as before, a quote matches only the exact text at its line (trailing whitespace
aside), and the history summary is bounded."""

from __future__ import annotations

import pytest

from activities.models import allows_probes
from contracts.intake_beyond import MAX_HISTORY_CHARS, beyond_finding, history_summary, quote_problem
from contracts.intake_source import IntakeKind
from contracts.model_jobs import JobContext
from contracts.output import (
    JobKind,
    OutputContractViolation,
    SourceQuote,
    SpecialistOutput,
    check_output_for_job,
)

QUOTE = SourceQuote(path="README.md", line=2, text="caching  ")


def _output(**finding: object) -> SpecialistOutput:
    return SpecialistOutput.model_validate(
        {
            "role": "reality-checker",
            "axis": "claims",
            "inspected_evidence": [],
            "findings": [{"severity": "low", "title": "a gap", **finding}],
            "confidence": 0.5,
            "confidence_band": "medium",
            "closure": "partial",
            "recommended_next_action": "look",
        }
    )


def test_the_output_contract_refuses_quotes_on_any_job_but_the_beyond_pass() -> None:
    output = _output(quotes=[QUOTE.model_dump()])
    check_output_for_job(
        output, kind=JobKind.ANALYSIS, profile_id="reality-checker", evidence_ids=[], allows_quotes=True
    )
    with pytest.raises(OutputContractViolation, match="quotes"):
        check_output_for_job(output, kind=JobKind.ANALYSIS, profile_id="reality-checker", evidence_ids=[])
    review = output.model_copy(update={"verdict": "agree"})
    with pytest.raises(OutputContractViolation, match="quotes"):
        check_output_for_job(review, kind=JobKind.REVIEW, profile_id="reality-checker", evidence_ids=[])


def test_a_finding_without_quotes_and_a_context_without_beyond_dump_as_before() -> None:
    assert "quotes" not in _output().findings[0].model_dump()
    assert "beyond" not in JobContext(title="t", task="x", evidence_refs=[]).model_dump()
    assert JobContext(title="t", task="x", evidence_refs=[], beyond=True).model_dump()["beyond"] is True


def test_a_beyond_job_may_not_ask_for_probes() -> None:
    from contracts.model_jobs import ModelCallRequest

    fields = ModelCallRequest.model_fields
    assert "context" in fields and "kind" in fields
    request = ModelCallRequest.model_construct(
        kind=JobKind.ANALYSIS, context=JobContext(title="t", task="x", evidence_refs=[], beyond=True)
    )
    assert not allows_probes(request)


def test_a_quote_matches_only_the_exact_text_at_its_line() -> None:
    lines = ["# demo", "- add caching to the report query   "]
    assert quote_problem(QUOTE, lines) is None
    assert quote_problem(QUOTE.model_copy(update={"line": 1}), lines) is not None
    assert quote_problem(QUOTE.model_copy(update={"line": 3}), lines) == "the file has 2 lines"
    assert quote_problem(QUOTE.model_copy(update={"text": "Caching"}), lines) is not None
    assert quote_problem(QUOTE, None) == "no such text file at the scanned commit"


def test_a_checked_proposal_becomes_a_beyond_finding_anchored_at_its_claim_not_its_line() -> None:
    finding = _output(quotes=[QUOTE.model_dump()]).findings[0]
    made = beyond_finding("demo", "a" * 40, finding)
    assert made is not None and made.kind is IntakeKind.BEYOND and made.line == 2
    moved = finding.model_copy(update={"quotes": [QUOTE.model_copy(update={"line": 9})]})
    other = beyond_finding("demo", "a" * 40, moved)
    assert other is not None and other.anchor == made.anchor


def test_the_history_summary_is_bounded_and_says_what_it_left_out() -> None:
    text, listed = history_summary([(f"{n:07x}", "x" * 500) for n in range(100)])
    assert len(text) <= MAX_HISTORY_CHARS + 40
    assert listed < 100 and text.endswith("more commits not listed)")


def test_a_proposal_whose_evidence_ref_would_be_over_the_bound_makes_no_finding() -> None:
    long = QUOTE.model_copy(update={"path": "d/" * 120 + "README.md"})
    assert beyond_finding("demo", "a" * 40, _output(quotes=[long.model_dump()]).findings[0]) is None
