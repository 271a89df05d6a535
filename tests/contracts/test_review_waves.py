"""A wave's consolidation (``contracts.review_waves.consolidate``): evidence, not votes — agreements
only among passes that agree, every dissent a conflict for the operator (even when no pass agrees),
failed and undispatched passes and each pass's own gaps as gaps; and the dispatch order."""

from __future__ import annotations

from contracts.enums import RiskLevel
from contracts.output import ClosureStatus, ConfidenceBand, Finding, ReviewVerdict, SpecialistOutput
from contracts.review_waves import LEFT_FOR_THE_OPERATOR, PassOutcome, WavePass, consolidate, dispatch_order


def _output(verdict: ReviewVerdict, title: str = "No index on created_at") -> SpecialistOutput:
    return SpecialistOutput(
        role="r", axis="a", inspected_evidence=[], confidence=0.7, confidence_band=ConfidenceBand.MEDIUM,
        findings=[Finding(severity=RiskLevel.MEDIUM, title=title, evidence_refs=[], detail="d")],
        gaps=["no production plan"], closure=ClosureStatus.PARTIAL, recommended_next_action="n",
        verdict=verdict,
    )  # fmt: skip


def _pass(index: int, profile: str, verdict: ReviewVerdict | None, *, size: int = 100) -> WavePass:
    done = verdict is not None
    return WavePass(
        index=index, profile=profile, axes=["overall"], questions=["q"], job_id=f"j-{index}",
        pack_sha256=str(index) * 64, pack_bytes=size,
        outcome=PassOutcome.COMPLETED if done else PassOutcome.FAILED,
        output=_output(verdict) if verdict is not None else None,
        error_type=None if done else "model_safety", message=None if done else "refused",
    )  # fmt: skip


def test_dissent_is_a_conflict_even_when_no_pass_agrees_and_titles_agree_only_among_agreeing_passes() -> None:
    passes = [_pass(1, "a", ReviewVerdict.DISAGREE), _pass(2, "b", ReviewVerdict.INSUFFICIENT_EVIDENCE)]
    consolidation = consolidate(passes)
    assert consolidation.agreements == []  # two dissenting passes repeating a title agree on nothing
    assert [c.disagreeing for c in consolidation.conflicts] == [[1], [2]]
    assert all("no pass agrees with the primary's findings" in c.about for c in consolidation.conflicts)
    assert all(c.resolution == LEFT_FOR_THE_OPERATOR for c in consolidation.conflicts)


def test_agreeing_passes_that_raise_one_finding_agree_on_it_and_a_dissent_is_set_against_them() -> None:
    passes = [
        _pass(1, "a", ReviewVerdict.AGREE),
        _pass(2, "b", ReviewVerdict.AGREE),
        _pass(3, "c", ReviewVerdict.DISAGREE),
        _pass(4, "d", None),
    ]
    consolidation = consolidate(passes)
    assert "passes 1, 2 each raise 'no index on created_at'" in consolidation.agreements
    (conflict,) = consolidation.conflicts
    assert (conflict.agreeing, conflict.disagreeing) == ([1, 2], [3])
    assert "pass 4 (d on overall): no review (model_safety: refused)" in consolidation.gaps
    assert sum("no production plan" in gap for gap in consolidation.gaps) == 3


def test_passes_are_dispatched_by_descending_pack_size_with_the_profile_id_breaking_ties() -> None:
    passes = [_pass(1, "b", None, size=10), _pass(2, "a", None, size=10), _pass(3, "z", None, size=99)]
    assert dispatch_order(passes) == [3, 2, 1]
