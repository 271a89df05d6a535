"""What the goal queue judges a run's round by: its review, or for a review wave the first pass that
does not agree, so any dissent fails the round and its findings go to the next; a pass that gave no
review fails it too."""

from __future__ import annotations

from activities.queue_runs import _judged_review
from contracts.output import ReviewVerdict
from contracts.pass_records import PassOutcome
from contracts.queue_items import RoundVerdict
from contracts.queue_review import assess_review
from tests.control.test_untrusted_display import hostile_output, hostile_view, hostile_wave_view


def test_a_single_review_is_judged_as_it_is() -> None:
    view = hostile_view()
    assert _judged_review(view) is view.review


def test_a_wave_is_judged_by_its_first_dissenting_pass() -> None:
    view = hostile_wave_view()  # pass 1 disagrees, pass 2 failed
    assert view.wave is not None
    judged = _judged_review(view)
    assert judged is not None and judged.verdict is ReviewVerdict.DISAGREE
    assert judged == view.wave.passes[0].output


def test_a_wave_whose_passes_all_agree_is_judged_by_the_runs_review() -> None:
    view = hostile_wave_view()
    assert view.wave is not None
    agreeing = hostile_output(verdict=ReviewVerdict.AGREE)
    passes = [
        p.model_copy(update={"output": agreeing, "outcome": PassOutcome.COMPLETED, "error_type": None})
        for p in view.wave.passes
    ]
    view = view.model_copy(update={"wave": view.wave.model_copy(update={"passes": passes})})
    assert _judged_review(view) is view.review


def test_a_wave_with_a_pass_that_gave_no_review_is_judged_insufficient_evidence_naming_the_pass() -> None:
    view = hostile_wave_view()  # pass 1 disagrees, pass 2 failed
    assert view.wave is not None and view.review is not None
    agreeing = hostile_output(verdict=ReviewVerdict.AGREE)
    passes = [p.model_copy(update={"output": agreeing}) if p.output else p for p in view.wave.passes]
    view = view.model_copy(update={"wave": view.wave.model_copy(update={"passes": passes})})
    failed = view.wave.passes[1]
    assert failed.outcome is PassOutcome.FAILED
    judged = _judged_review(view)
    assert judged is not None and judged.verdict is ReviewVerdict.INSUFFICIENT_EVIDENCE
    named = f"pass {failed.index} ({failed.profile} on {', '.join(failed.axes)}) gave no review"
    assert judged.gaps[0].startswith(named) and judged.gaps[1:] == view.review.gaps
    assert judged.findings == view.review.findings  # the run's own review is what else it holds
    # The queue fails such a round: the pass's part went unreviewed.
    assert assess_review(judged).verdict is RoundVerdict.FAIL
