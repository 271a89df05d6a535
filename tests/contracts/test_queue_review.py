"""The goal queue's review loop, case by case: the verdict of a run's independent review, the progress
score, the round cap, the one escalation and the hand-off to a person, and recovery of failed runs."""

from __future__ import annotations

import datetime as dt

import pytest

from contracts.enums import RiskLevel
from contracts.output import ClosureStatus, ConfidenceBand, Finding, ReviewVerdict, SpecialistOutput
from contracts.queue_items import (
    DispatchedRun,
    DispatchKind,
    EscalationOutcome,
    EscalationTrigger,
    ItemFailure,
    QueueBlocker,
    QueueEventKind,
    QueueItem,
    QueueStatus,
    RoundVerdict,
    RunOutcome,
)
from contracts.queue_review import (
    REVIEW_ROUND_CAP,
    RecoveryAction,
    ReviewAction,
    ReviewDecision,
    apply_review_decision,
    assess_review,
    decide_after_review,
    escalated_dispatch,
    failed_attempts_since_progress,
    ledger,
    record_round,
    record_run_failure,
    recovery_decision,
)
from contracts.queue_transitions import Mover, QueueMove, apply_move

AT = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)
MODEL = "anthropic:escalation-model"
SOURCES = {
    QueueStatus.APPROVED: DispatchKind.DISPATCH,
    QueueStatus.HUMAN_REVIEW: DispatchKind.DISPATCH,
    QueueStatus.AI_REVIEW: DispatchKind.REDISPATCH,
    QueueStatus.FAILED: DispatchKind.RECOVERY,
}


def review(verdict: ReviewVerdict | None, *severities: RiskLevel) -> SpecialistOutput:
    return SpecialistOutput(
        role="code-reviewer",
        axis="correctness",
        inspected_evidence=[],
        findings=[Finding(severity=s, title=f"{s.value} finding {n}") for n, s in enumerate(severities)],
        confidence=0.8,
        confidence_band=ConfidenceBand.HIGH,
        closure=ClosureStatus.CLOSED,
        recommended_next_action="decide",
        verdict=verdict,
    )


def scored(score: int) -> SpecialistOutput:
    """A review scoring ``score``: 0 is a PASS, n > 0 an agreeing review with n high findings."""
    return review(ReviewVerdict.AGREE, *([RiskLevel.HIGH] * score))


def approved() -> QueueItem:
    return QueueItem(
        key="ORD-1",
        status=QueueStatus.APPROVED,
        title="Orders API times out",
        repo_alias="orders",
        created_at=AT,
        updated_at=AT,
    )


class Loop:
    """Drives one item through dispatches, reviews and run failures with the pure functions."""

    def __init__(self, item: QueueItem | None = None) -> None:
        self.item = item or approved()
        self.clock = AT
        self.decisions: list[ReviewDecision] = []

    def tick(self) -> dt.datetime:
        self.clock += dt.timedelta(minutes=1)
        return self.clock

    def dispatch(self, mover: Mover = Mover.SYSTEM) -> str:
        kind = SOURCES[self.item.status]
        moved = apply_move(self.item, QueueMove.DISPATCH, mover, at=self.tick(), actor=None)
        run_id = f"SOR-{len(moved.runs) + 1:016d}"
        run = DispatchedRun(
            run_id=run_id, cycle=moved.cycle, kind=kind, escalated=escalated_dispatch(moved), at=self.clock
        )
        self.item = moved.model_copy(update={"runs": [*moved.runs, run]})
        return run_id

    def pending(self) -> str:
        return next(run.run_id for run in self.item.runs if run.outcome is RunOutcome.PENDING)

    def review(self, output: SpecialistOutput) -> ReviewDecision:
        run_id = self.pending()
        item = apply_move(self.item, QueueMove.REVIEW, Mover.SYSTEM, at=self.tick(), actor=None)
        item = record_round(item, run_id, assess_review(output), self.clock)
        decision = decide_after_review(item, escalation_model=MODEL)
        self.item = apply_review_decision(item, decision, at=self.clock)
        self.decisions.append(decision)
        return decision

    def run_fails(self) -> None:
        item = record_run_failure(self.item, self.pending(), "model_timeout: no answer", self.tick())
        self.item = apply_move(item, QueueMove.FAIL, Mover.SYSTEM, at=self.clock, actor=None)

    def play(self, script: list[int | str]) -> list[ReviewAction]:
        """Dispatch, then for each step review with that score (``"x"``: the run fails), dispatching
        again after every FAIL and failed run, as the queue would."""
        self.dispatch()
        for step in script:
            if step == "x":
                self.run_fails()
            else:
                assert isinstance(step, int)
                self.review(scored(step))
            recoverable = self.item.failure is ItemFailure.RUN_FAILED
            if self.item.status is QueueStatus.AI_REVIEW or recoverable:
                self.dispatch()
        return [decision.action for decision in self.decisions]


# ------------------------------------------------------------------------------------------ verdicts


def test_an_agreeing_review_without_high_or_critical_findings_is_a_pass_scoring_zero() -> None:
    assessment = assess_review(review(ReviewVerdict.AGREE, RiskLevel.LOW, RiskLevel.MEDIUM))
    assert (assessment.verdict, assessment.score, assessment.material) == (RoundVerdict.PASS, 0, [])
    assert assessment.reasons == ["the reviewer agreed and found nothing of high or critical severity"]


@pytest.mark.parametrize(
    ("verdict", "severities", "score"),
    [
        (ReviewVerdict.AGREE, [RiskLevel.HIGH], 1),
        (ReviewVerdict.AGREE, [RiskLevel.CRITICAL], 2),
        (ReviewVerdict.AGREE, [RiskLevel.HIGH, RiskLevel.CRITICAL, RiskLevel.LOW], 3),
        (ReviewVerdict.DISAGREE, [], 1),
        (ReviewVerdict.INSUFFICIENT_EVIDENCE, [RiskLevel.MEDIUM], 1),
        (ReviewVerdict.DISAGREE, [RiskLevel.HIGH, RiskLevel.CRITICAL], 4),
        (None, [], 1),
    ],
)
def test_a_material_finding_or_a_reviewer_who_does_not_agree_fails_the_round(
    verdict: ReviewVerdict | None, severities: list[RiskLevel], score: int
) -> None:
    assessment = assess_review(review(verdict, *severities))
    assert assessment.verdict is RoundVerdict.FAIL
    assert assessment.score == score
    assert [finding.severity for finding in assessment.material] == [
        s for s in severities if s in (RiskLevel.HIGH, RiskLevel.CRITICAL)
    ]


def test_the_reasons_name_the_disagreement_and_each_material_finding() -> None:
    assessment = assess_review(review(ReviewVerdict.DISAGREE, RiskLevel.CRITICAL, RiskLevel.LOW))
    assert assessment.reasons == [
        "the reviewer did not agree (disagree)",
        "critical finding: critical finding 0",
    ]


# ------------------------------------------------------------------------------------------ rounds


def test_a_round_is_numbered_in_its_cycle_marks_its_run_reviewed_and_is_an_event() -> None:
    loop = Loop()
    run_id = loop.dispatch()
    loop.review(scored(2))
    [round_] = loop.item.rounds
    assert (round_.run_id, round_.cycle, round_.number, round_.score, round_.escalated) == (
        run_id,
        1,
        1,
        2,
        False,
    )
    assert loop.item.runs[0].outcome is RunOutcome.REVIEWED
    reviewed = [event for event in loop.item.events if event.kind is QueueEventKind.REVIEWED]
    assert reviewed[0].data["round"] == 1
    assert reviewed[0].data["verdict"] == "FAIL"


def test_a_round_for_a_run_that_is_not_pending_is_refused() -> None:
    loop = Loop()
    loop.dispatch()
    with pytest.raises(ValueError, match="not a pending run"):
        record_round(loop.item, "SOR-ZZZZZZZZZZZZZZZZ", assess_review(scored(0)), AT)


def test_a_decision_needs_a_round() -> None:
    with pytest.raises(ValueError, match="no review round"):
        decide_after_review(approved())


def test_a_pass_goes_to_human_review() -> None:
    loop = Loop()
    assert loop.play([0]) == [ReviewAction.HUMAN_REVIEW]
    assert loop.item.status is QueueStatus.HUMAN_REVIEW
    assert loop.item.events[-1].data["reason"] == "round 1 PASS: the reviewed result waits for a person"


def test_a_fail_is_re_dispatched_and_the_next_round_counts_on() -> None:
    loop = Loop()
    assert loop.play([3, 0]) == [ReviewAction.REDISPATCH, ReviewAction.HUMAN_REVIEW]
    assert [r.number for r in loop.item.rounds] == [1, 2]
    assert [run.kind for run in loop.item.runs] == [DispatchKind.DISPATCH, DispatchKind.REDISPATCH]
    assert loop.decisions[0].reason == "round 1 FAIL (no progress, score 3): a new run carries the findings"


def test_a_redispatch_decision_leaves_the_item_in_ai_review_until_it_is_dispatched() -> None:
    loop = Loop()
    loop.dispatch()
    assert loop.review(scored(3)).target is QueueStatus.ACTIVE
    assert loop.item.status is QueueStatus.AI_REVIEW


def test_five_failed_rounds_with_progress_fail_the_item_at_the_cap() -> None:
    loop = Loop()
    actions = loop.play([9, 7, 5, 3, 1])
    assert actions == [ReviewAction.REDISPATCH] * 4 + [ReviewAction.FAIL_AT_CAP]
    assert (loop.item.status, loop.item.failure) == (QueueStatus.FAILED, ItemFailure.REVIEW_CAP_REACHED)
    assert loop.decisions[-1].reason == "round 5 FAIL at the cap of 5 rounds (ledger 9 → 7 → 5 → 3 → 1)"
    assert REVIEW_ROUND_CAP == 5
    assert loop.item.escalations == []


def test_a_pass_at_the_fifth_round_still_goes_to_human_review() -> None:
    assert Loop().play([9, 7, 5, 3, 0])[-1] is ReviewAction.HUMAN_REVIEW


# ------------------------------------------------------------------------------------------ escalation


def test_two_rounds_in_a_row_without_progress_escalate_once_with_the_ledger_and_closure() -> None:
    loop = Loop()
    actions = loop.play([3, 3, 3])
    assert actions == [ReviewAction.REDISPATCH, ReviewAction.REDISPATCH, ReviewAction.REDISPATCH_ESCALATED]
    [escalation] = loop.item.escalations
    assert escalation.trigger is EscalationTrigger.TWO_ROUNDS_WITHOUT_PROGRESS
    assert (escalation.after_round, escalation.ledger, escalation.threshold) == (3, [3, 3, 3], 3)
    assert escalation.model == MODEL
    assert escalation.outcome is EscalationOutcome.PENDING
    assert escalation.closure == "the escalated round must score below 3, else the item goes to a person"
    event = next(e for e in loop.item.events if e.kind is QueueEventKind.ESCALATED)
    assert event.data["trigger"] == "two_rounds_without_progress"
    assert event.data["ledger"] == [3, 3, 3]
    assert loop.item.runs[-1].escalated


def test_a_rising_score_is_no_progress_either() -> None:
    assert Loop().play([2, 3, 4])[-1] is ReviewAction.REDISPATCH_ESCALATED


def test_one_stalled_round_after_progress_does_not_escalate() -> None:
    assert Loop().play([5, 3, 3]) == [ReviewAction.REDISPATCH] * 3


def test_three_failed_attempts_since_the_last_progress_escalate_counting_failed_runs() -> None:
    loop = Loop()
    actions = loop.play([3, "x", 3])
    assert actions == [ReviewAction.REDISPATCH, ReviewAction.REDISPATCH_ESCALATED]
    assert loop.item.escalations[0].trigger is EscalationTrigger.THREE_FAILED_ATTEMPTS


def test_progress_resets_the_count_of_failed_attempts() -> None:
    loop = Loop()
    assert loop.play([3, "x", 2, "x"]) == [ReviewAction.REDISPATCH, ReviewAction.REDISPATCH]
    assert failed_attempts_since_progress(loop.item) == 1
    assert loop.item.escalations == []


def test_the_escalated_round_without_progress_hands_the_item_to_a_person_with_the_ledger() -> None:
    loop = Loop()
    actions = loop.play([3, 3, 3, 3])
    assert actions[-1] is ReviewAction.HAND_OFF
    assert (loop.item.status, loop.item.blocker) == (QueueStatus.BLOCKED, QueueBlocker.DECISION)
    assert loop.item.escalations[0].outcome is EscalationOutcome.NO_PROGRESS
    assert loop.item.rounds[-1].escalated
    assert loop.decisions[-1].reason == (
        "the escalated round 4 scored 3, not below 3: a person decides (ledger 3 → 3 → 3 → 3)"
    )
    assert loop.decisions[-1].ledger == [3, 3, 3, 3]


def test_an_escalated_round_with_progress_continues_and_the_escalation_never_fires_again() -> None:
    loop = Loop()
    actions = loop.play([3, 3, 3, 2, 2])
    assert actions == [
        ReviewAction.REDISPATCH,
        ReviewAction.REDISPATCH,
        ReviewAction.REDISPATCH_ESCALATED,
        ReviewAction.REDISPATCH,
        ReviewAction.FAIL_AT_CAP,
    ]
    [escalation] = loop.item.escalations
    assert escalation.outcome is EscalationOutcome.PROGRESS
    assert [run.escalated for run in loop.item.runs] == [False, False, False, True, False]


def test_an_escalated_round_that_passes_goes_to_human_review_as_progress() -> None:
    loop = Loop()
    assert loop.play([3, 3, 3, 0])[-1] is ReviewAction.HUMAN_REVIEW
    assert loop.item.escalations[0].outcome is EscalationOutcome.PROGRESS


def test_the_hand_off_of_an_escalated_fifth_round_comes_before_the_cap() -> None:
    loop = Loop()
    actions = loop.play([5, 4, 4, 4, 4])
    assert actions[-2:] == [ReviewAction.REDISPATCH_ESCALATED, ReviewAction.HAND_OFF]


def test_a_trigger_at_the_fifth_round_fails_at_the_cap_instead_of_escalating() -> None:
    loop = Loop()
    assert loop.play([5, 4, 3, 3, 3])[-1] is ReviewAction.FAIL_AT_CAP
    assert loop.item.escalations == []


def test_a_failed_escalated_run_keeps_the_escalation_for_its_recovery() -> None:
    loop = Loop()
    loop.play([3, 3, 3, "x"])
    assert [run.escalated for run in loop.item.runs] == [False, False, False, True, True]
    assert loop.item.runs[-1].kind is DispatchKind.RECOVERY
    assert escalated_dispatch(loop.item)


def test_a_new_cycle_may_escalate_again() -> None:
    loop = Loop()
    loop.play([3, 3, 3, 3])
    assert loop.item.status is QueueStatus.BLOCKED
    loop.item = apply_move(loop.item, QueueMove.RELEASE, Mover.OPERATOR, at=loop.tick(), actor="alice")
    assert loop.item.cycle == 2
    assert ledger(loop.item) == []
    actions = loop.play([3, 3, 3])
    assert actions[-1] is ReviewAction.REDISPATCH_ESCALATED
    assert [e.cycle for e in loop.item.escalations] == [1, 2]
    assert [r.number for r in loop.item.rounds] == [1, 2, 3, 4, 1, 2, 3]


# ------------------------------------------------------------------------------------------ recovery


def failed_loop(script: list[int | str]) -> Loop:
    loop = Loop()
    loop.dispatch()
    for step in script:
        if step == "x":
            loop.run_fails()
        else:
            assert isinstance(step, int)
            loop.review(scored(step))
            loop.dispatch()
    return loop


def test_a_failed_run_is_recovered_after_the_delay() -> None:
    loop = failed_loop(["x"])
    failed_at = loop.item.runs[-1].ended_at
    assert failed_at is not None
    waiting = recovery_decision(loop.item, now=failed_at + dt.timedelta(seconds=599), delay_seconds=600)
    assert (waiting.action, waiting.due_at) == (RecoveryAction.WAIT, failed_at + dt.timedelta(seconds=600))
    due = recovery_decision(loop.item, now=failed_at + dt.timedelta(seconds=600), delay_seconds=600)
    assert due.action is RecoveryAction.RECOVER
    assert due.reason == "recovery 1 of 2: re-dispatch"


def test_an_item_whose_run_a_person_cancelled_is_left_to_a_person_not_recovered() -> None:
    from contracts.queue_dispatch import apply_run_state
    from contracts.queue_messages import RunState
    from contracts.queue_review import run_cancelled
    from contracts.runs import RunStatus

    def ended(status: RunStatus) -> QueueItem:
        loop = Loop()
        loop.dispatch()
        state = RunState(run_id=loop.pending(), status=status, error=f"the run was {status.value}")
        item = apply_run_state(loop.item, state, loop.tick())
        assert item is not None and item.status is QueueStatus.FAILED
        return item

    later = AT + dt.timedelta(days=2)
    cancelled = ended(RunStatus.CANCELLED)
    assert run_cancelled(cancelled)
    decision = recovery_decision(cancelled, now=later, delay_seconds=0)
    assert decision.action is RecoveryAction.NONE
    assert decision.reason == "a person cancelled ORD-1's run: a person dispatches it again or parks it"
    # Queue executions recorded before the rule recover it as they did.
    before = recovery_decision(cancelled, now=later, delay_seconds=0, cancelled_stays=False)
    assert before.action is RecoveryAction.RECOVER
    expired = ended(RunStatus.EXPIRED)
    assert not run_cancelled(expired)
    assert recovery_decision(expired, now=later, delay_seconds=0).action is RecoveryAction.RECOVER


def test_at_most_two_recoveries_per_cycle() -> None:
    loop = failed_loop(["x"])
    for _ in range(2):
        loop.dispatch()
        loop.run_fails()
    decision = recovery_decision(loop.item, now=loop.clock + dt.timedelta(days=1), delay_seconds=600)
    assert decision.action is RecoveryAction.NONE
    assert decision.reason == "ORD-1 was recovered 2 times in this cycle (at most 2)"


def test_an_item_failed_at_the_review_cap_is_not_recovered() -> None:
    loop = Loop()
    loop.play([9, 7, 5, 3, 1])
    decision = recovery_decision(loop.item, now=loop.clock + dt.timedelta(days=1), delay_seconds=0)
    assert decision.action is RecoveryAction.NONE
    assert "review cap" in decision.reason


def test_a_parked_item_is_not_recovered() -> None:
    loop = failed_loop(["x"])
    parked = apply_move(
        loop.item, QueueMove.PARK, Mover.OPERATOR, at=loop.tick(), actor="alice", blocker=QueueBlocker.PARKED
    )
    assert recovery_decision(parked, now=loop.clock + dt.timedelta(days=1), delay_seconds=0).action is (
        RecoveryAction.NONE
    )


def test_a_release_starts_a_cycle_with_its_own_two_recoveries() -> None:
    loop = failed_loop(["x"])
    for _ in range(2):
        loop.dispatch()
        loop.run_fails()
    loop.item = apply_move(
        loop.item, QueueMove.PARK, Mover.OPERATOR, at=loop.tick(), actor="alice", blocker=QueueBlocker.PARKED
    )
    loop.item = apply_move(loop.item, QueueMove.RELEASE, Mover.OPERATOR, at=loop.tick(), actor="alice")
    loop.dispatch()
    loop.run_fails()
    decision = recovery_decision(loop.item, now=loop.clock + dt.timedelta(days=1), delay_seconds=600)
    assert decision.action is RecoveryAction.RECOVER


def test_the_delay_counts_from_when_the_last_run_ended() -> None:
    loop = failed_loop([3, "x"])
    ended = loop.item.runs[-1].ended_at
    assert ended is not None
    decision = recovery_decision(loop.item, now=ended, delay_seconds=60)
    assert decision.due_at == ended + dt.timedelta(seconds=60)
