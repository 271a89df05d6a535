"""What the goal queue judges a run's round by: its review, or for a review wave the first pass that
does not agree, so any dissent fails the round and its findings go to the next."""

from __future__ import annotations

from activities.queue_runs import _judged_review
from contracts.output import ReviewVerdict
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
    passes = [p.model_copy(update={"output": agreeing}) if p.output else p for p in view.wave.passes]
    view = view.model_copy(update={"wave": view.wave.model_copy(update={"passes": passes})})
    assert _judged_review(view) is view.review
