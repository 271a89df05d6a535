"""The goal queue's review verdicts, escalation ledger and recovery (docs/architecture.md "Goal queue").

Pure functions over an item's runs and rounds, each returning a decision and its reason:

* **Verdict** (:func:`assess_review`): the run's independent review decides. A material finding is
  one of severity high or critical; the reviewer not agreeing (``disagree`` or
  ``insufficient_evidence``) is material too. ``agree`` with no material finding is PASS, anything else
  FAIL.
* **Progress score** (:func:`progress_score`): the open material findings of a round, weighted — high
  1, critical 2 — plus 1 when the reviewer did not agree. A PASS scores 0. A round makes progress when
  its score is strictly below the previous round's; the first round of a cycle sets the baseline.
* **Review cycle.** The rounds, the escalation and the recoveries count within one cycle; an
  operator's release, re-open or send-back starts the next one (the workflow raises ``cycle``).
* **After a round** (:func:`decide_after_review`), in order: PASS → ``human-review``; FAIL of the
  escalated round without progress → ``blocked`` (``decision``), handed to a person with the ledger;
  FAIL of round 5 → ``failed`` (``review_cap_reached``); FAIL when the escalation trigger holds — the
  last two rounds both without progress, or three failed attempts (FAIL rounds without progress and
  failed runs) since the last progress — and the cycle has not escalated yet → re-dispatch with the
  escalation model (the escalation fires once per cycle, recorded with its trigger, the ledger and the
  closure condition); any other FAIL → re-dispatch carrying the findings.
* **Recovery** (:func:`recovery_decision`): a failed item whose run failed (not one at the review cap,
  not a parked one, not one whose run a person cancelled) is re-dispatched after the recovery delay,
  at most twice per cycle.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Final

from pydantic import BaseModel, ConfigDict

from contracts.enums import RiskLevel
from contracts.output import ReviewVerdict, SpecialistOutput
from contracts.queue_items import (
    DispatchedRun,
    DispatchKind,
    Escalation,
    EscalationOutcome,
    EscalationTrigger,
    ItemFailure,
    MaterialFinding,
    QueueBlocker,
    QueueEventKind,
    QueueItem,
    QueueStatus,
    ReviewRound,
    RoundVerdict,
    RunOutcome,
)
from contracts.queue_transitions import Mover, QueueMove, apply_move
from contracts.runs import RunStatus

REVIEW_ROUND_CAP: Final = 5
"""At most this many review rounds per cycle; a FAIL of the last one fails the item."""
MAX_RECOVERIES: Final = 2
"""At most this many recoveries (re-dispatches after a failed run) per cycle."""
SEVERITY_WEIGHTS: Final = {RiskLevel.HIGH: 1, RiskLevel.CRITICAL: 2}
"""The weight of a material finding in the progress score, by severity."""
NOT_AGREED_WEIGHT: Final = 1
"""The weight of a review whose reviewer did not agree."""
STALLED_ROUNDS: Final = 2
FAILED_ATTEMPTS: Final = 3


class ReviewAssessment(BaseModel):
    """What a run's independent review says for the queue: the verdict, the reviewer's own verdict, the
    material findings, the progress score and the reasons (one sentence each)."""

    model_config = ConfigDict(frozen=True)

    verdict: RoundVerdict
    reviewer_verdict: ReviewVerdict | None
    material: list[MaterialFinding]
    score: int
    reasons: list[str]


def progress_score(material: list[MaterialFinding], reviewer_verdict: ReviewVerdict | None) -> int:
    """The sum of the material findings' severity weights, plus 1 unless the reviewer agreed."""
    score = sum(SEVERITY_WEIGHTS[finding.severity] for finding in material)
    if reviewer_verdict is not ReviewVerdict.AGREE:
        score += NOT_AGREED_WEIGHT
    return score


def assess_review(review: SpecialistOutput) -> ReviewAssessment:
    """The queue's verdict on a run's independent review (a review job's output). Pure."""
    material = [
        MaterialFinding(severity=finding.severity, title=finding.title)
        for finding in review.findings
        if finding.severity in SEVERITY_WEIGHTS
    ]
    reasons: list[str] = []
    if review.verdict is not ReviewVerdict.AGREE:
        said = review.verdict.value if review.verdict is not None else "no verdict"
        reasons.append(f"the reviewer did not agree ({said})")
    for finding in material:
        reasons.append(f"{finding.severity.value} finding: {finding.title}")
    verdict = RoundVerdict.FAIL if reasons else RoundVerdict.PASS
    if not reasons:
        reasons.append("the reviewer agreed and found nothing of high or critical severity")
    return ReviewAssessment(
        verdict=verdict,
        reviewer_verdict=review.verdict,
        material=material,
        score=progress_score(material, review.verdict),
        reasons=reasons,
    )


def record_round(item: QueueItem, run_id: str, assessment: ReviewAssessment, at: dt.datetime) -> QueueItem:
    """``item`` with the round of run ``run_id`` appended (numbered within the cycle, marked escalated
    when the run was), that run marked reviewed, and a ``reviewed`` event ``{"run_id", "cycle",
    "round", "verdict", "score", "reasons"}`` by the queue (the move that follows is its own event).

    Raises ``ValueError`` when ``run_id`` is not a pending run of the item's current cycle.
    """
    run = _pending_run(item, run_id)
    number = len(item.cycle_rounds()) + 1
    round_ = ReviewRound(
        run_id=run_id,
        cycle=item.cycle,
        number=number,
        verdict=assessment.verdict,
        reviewer_verdict=assessment.reviewer_verdict,
        material=assessment.material,
        score=assessment.score,
        escalated=run.escalated,
        at=at,
    )
    ended = run.model_copy(update={"outcome": RunOutcome.REVIEWED, "ended_at": at})
    runs = [ended if r.run_id == run_id else r for r in item.runs]
    data = {
        "run_id": run_id,
        "cycle": item.cycle,
        "round": number,
        "verdict": assessment.verdict.value,
        "score": assessment.score,
        "reasons": assessment.reasons,
    }
    return item.with_event(QueueEventKind.REVIEWED, at, None, data, runs=runs, rounds=[*item.rounds, round_])


def record_run_failure(item: QueueItem, run_id: str, failure: str, at: dt.datetime) -> QueueItem:
    """``item`` with run ``run_id`` marked failed (``failure``: the run's error) at ``at``.

    Raises ``ValueError`` when ``run_id`` is not a pending run of the item's current cycle.
    """
    run = _pending_run(item, run_id)
    failed = DispatchedRun.model_validate(
        {**run.model_dump(), "outcome": RunOutcome.FAILED, "ended_at": at, "failure": failure}
    )
    return item.model_copy(update={"runs": [failed if r.run_id == run_id else r for r in item.runs]})


def _pending_run(item: QueueItem, run_id: str) -> DispatchedRun:
    for run in item.cycle_runs():
        if run.run_id == run_id and run.outcome is RunOutcome.PENDING:
            return run
    raise ValueError(f"{run_id} is not a pending run of {item.key} in cycle {item.cycle}")


# ------------------------------------------------------------------------------------------ ledger


def ledger(item: QueueItem) -> list[int]:
    """The progress scores of the current cycle's rounds, in order."""
    return [round_.score for round_ in item.cycle_rounds()]


def made_progress(scores: list[int], index: int) -> bool:
    """True when round ``index`` (0-based) of ``scores`` scored strictly below the round before it; the
    first round is the baseline and makes none."""
    return index > 0 and scores[index] < scores[index - 1]


def failed_attempts_since_progress(item: QueueItem) -> int:
    """Failed attempts of the current cycle after its last round with progress: each FAIL round without
    progress (the baseline round included) and each failed run."""
    scores = ledger(item)
    rounds = {round_.run_id: index for index, round_ in enumerate(item.cycle_rounds())}
    count = 0
    for run in item.cycle_runs():
        if run.outcome is RunOutcome.FAILED:
            count += 1
        elif run.run_id in rounds:
            index = rounds[run.run_id]
            if made_progress(scores, index):
                count = 0
            elif item.cycle_rounds()[index].verdict is RoundVerdict.FAIL:
                count += 1
    return count


def escalation_trigger(item: QueueItem) -> EscalationTrigger | None:
    """The trigger that holds for the current cycle after its last round, or ``None``: the last two
    rounds both without progress (checked first), or three failed attempts since the last progress."""
    scores = ledger(item)
    last = len(scores) - 1
    if len(scores) > STALLED_ROUNDS and not any(
        made_progress(scores, index) for index in range(last - STALLED_ROUNDS + 1, last + 1)
    ):
        return EscalationTrigger.TWO_ROUNDS_WITHOUT_PROGRESS
    if failed_attempts_since_progress(item) >= FAILED_ATTEMPTS:
        return EscalationTrigger.THREE_FAILED_ATTEMPTS
    return None


def escalated_dispatch(item: QueueItem) -> bool:
    """True when the item's next dispatch must use the escalation model: its cycle escalated and the
    escalated round has not been reviewed yet (a recovery of an escalated run stays escalated)."""
    escalation = item.cycle_escalation()
    return escalation is not None and escalation.outcome is EscalationOutcome.PENDING


class ReviewAction(StrEnum):
    """What the queue does after a review round."""

    HUMAN_REVIEW = "human_review"
    REDISPATCH = "redispatch"
    REDISPATCH_ESCALATED = "redispatch_escalated"
    FAIL_AT_CAP = "fail_at_cap"
    HAND_OFF = "hand_off"


class ReviewDecision(BaseModel):
    """The decision after a round: the action, the status the item moves to (and the blocker or
    failure it records), the reason, the cycle's ledger, and the escalation record as it must be stored
    now (new when the escalation fires, updated when the escalated round is judged; ``None`` when it
    does not change)."""

    model_config = ConfigDict(frozen=True)

    action: ReviewAction
    target: QueueStatus
    blocker: QueueBlocker | None = None
    failure: ItemFailure | None = None
    reason: str
    ledger: list[int]
    escalation: Escalation | None = None


def decide_after_review(
    item: QueueItem, *, escalation_model: str | None = None, cap: int = REVIEW_ROUND_CAP
) -> ReviewDecision:
    """The decision after the current cycle's last round (recorded with :func:`record_round`), in the
    order of the module docstring. ``escalation_model``: the operator's configured escalation model,
    recorded in a new escalation. Raises ``ValueError`` when the cycle has no round."""
    rounds = item.cycle_rounds()
    if not rounds:
        raise ValueError(f"{item.key} has no review round in cycle {item.cycle}")
    last = rounds[-1]
    scores = ledger(item)
    progress = made_progress(scores, len(scores) - 1)
    escalation = item.cycle_escalation()
    judged: Escalation | None = None
    if last.escalated and escalation is not None and escalation.outcome is EscalationOutcome.PENDING:
        outcome = (
            EscalationOutcome.PROGRESS if last.score < escalation.threshold else EscalationOutcome.NO_PROGRESS
        )
        judged = escalation.model_copy(update={"outcome": outcome})
    if last.verdict is RoundVerdict.PASS:
        return ReviewDecision(
            action=ReviewAction.HUMAN_REVIEW,
            target=QueueStatus.HUMAN_REVIEW,
            reason=f"round {last.number} PASS: the reviewed result waits for a person",
            ledger=scores,
            escalation=judged,
        )
    if judged is not None and judged.outcome is EscalationOutcome.NO_PROGRESS:
        return ReviewDecision(
            action=ReviewAction.HAND_OFF,
            target=QueueStatus.BLOCKED,
            blocker=QueueBlocker.DECISION,
            reason=(
                f"the escalated round {last.number} scored {last.score}, not below {judged.threshold}: "
                f"a person decides (ledger {_ledger_text(scores)})"
            ),
            ledger=scores,
            escalation=judged,
        )
    if last.number >= cap:
        return ReviewDecision(
            action=ReviewAction.FAIL_AT_CAP,
            target=QueueStatus.FAILED,
            failure=ItemFailure.REVIEW_CAP_REACHED,
            reason=f"round {last.number} FAIL at the cap of {cap} rounds (ledger {_ledger_text(scores)})",
            ledger=scores,
            escalation=judged,
        )
    trigger = escalation_trigger(item) if escalation is None else None
    if trigger is not None:
        fired = Escalation(
            cycle=item.cycle,
            trigger=trigger,
            after_round=last.number,
            ledger=scores,
            threshold=last.score,
            closure=(f"the escalated round must score below {last.score}, else the item goes to a person"),
            model=escalation_model,
        )
        return ReviewDecision(
            action=ReviewAction.REDISPATCH_ESCALATED,
            target=QueueStatus.ACTIVE,
            reason=(
                f"round {last.number} FAIL and {_trigger_text(trigger)}: the next run uses the escalation "
                f"model {escalation_model or '(none configured)'} (ledger {_ledger_text(scores)})"
            ),
            ledger=scores,
            escalation=fired,
        )
    change = "progress" if progress else "no progress"
    return ReviewDecision(
        action=ReviewAction.REDISPATCH,
        target=QueueStatus.ACTIVE,
        reason=f"round {last.number} FAIL ({change}, score {last.score}): a new run carries the findings",
        ledger=scores,
        escalation=judged,
    )


_MOVE_BY_ACTION: Final = {
    ReviewAction.HUMAN_REVIEW: QueueMove.PASS,
    ReviewAction.HAND_OFF: QueueMove.BLOCK,
    ReviewAction.FAIL_AT_CAP: QueueMove.FAIL,
}


def apply_review_decision(item: QueueItem, decision: ReviewDecision, *, at: dt.datetime) -> QueueItem:
    """``item`` (in ``ai-review``) after ``decision``, by the queue: the escalation stored when it fires
    or its round is judged (an ``escalated`` event ``{"trigger", "after_round", "ledger", "threshold",
    "closure", "model", "outcome"}``), then the move — ``pass``, ``block`` (``decision``) or ``fail``
    (``review_cap_reached``), with the reason. A re-dispatch leaves the item in ``ai-review`` until the
    queue (or an operator) dispatches it (:func:`contracts.queue_priority.record_dispatch`). Raises as
    :func:`contracts.queue_transitions.apply_move`."""
    if decision.escalation is not None:
        record = decision.escalation
        escalations = [*(e for e in item.escalations if e.cycle != record.cycle), record]
        data = {
            "trigger": record.trigger.value,
            "after_round": record.after_round,
            "ledger": record.ledger,
            "threshold": record.threshold,
            "closure": record.closure,
            "model": record.model,
            "outcome": record.outcome.value,
        }
        item = item.with_event(QueueEventKind.ESCALATED, at, None, data, escalations=escalations)
    move = _MOVE_BY_ACTION.get(decision.action)
    if move is None:
        return item
    return apply_move(
        item, move, Mover.SYSTEM, at=at, actor=None, blocker=decision.blocker, reason=decision.reason
    )


def _ledger_text(scores: list[int]) -> str:
    return " → ".join(str(score) for score in scores)


def _trigger_text(trigger: EscalationTrigger) -> str:
    if trigger is EscalationTrigger.TWO_ROUNDS_WITHOUT_PROGRESS:
        return "two rounds in a row made no progress"
    return "three attempts failed since the last progress"


# ------------------------------------------------------------------------------------------ recovery


class RecoveryAction(StrEnum):
    """What the queue does with a failed item: re-dispatch it now, wait for the delay, or nothing."""

    RECOVER = "recover"
    WAIT = "wait"
    NONE = "none"


class RecoveryDecision(BaseModel):
    """The recovery decision: the action, when the recovery is due (``wait`` and ``recover``), why."""

    model_config = ConfigDict(frozen=True)

    action: RecoveryAction
    due_at: dt.datetime | None = None
    reason: str


def recoveries_used(item: QueueItem) -> int:
    """The recoveries dispatched in the current cycle."""
    return sum(1 for run in item.cycle_runs() if run.kind is DispatchKind.RECOVERY)


def run_cancelled(item: QueueItem) -> bool:
    """Whether the failed ``item`` failed because its run was cancelled — by a person: only a person
    cancels a run — as the ``fail`` move that failed it records (``run_status``)."""
    if item.status is not QueueStatus.FAILED:
        return False
    for event in reversed(item.events):
        if event.kind is QueueEventKind.MOVED and event.data.get("move") == QueueMove.FAIL.value:
            return bool(event.data.get("run_status") == RunStatus.CANCELLED.value)
    return False


def recovery_decision(
    item: QueueItem,
    *,
    now: dt.datetime,
    delay_seconds: int,
    max_recoveries: int = MAX_RECOVERIES,
    cancelled_stays: bool = True,
) -> RecoveryDecision:
    """Whether the queue re-dispatches the failed ``item``, reading only its status, failure and runs:
    only a ``failed`` item whose run failed; at most ``max_recoveries`` per cycle; due ``delay_seconds``
    after its last run ended (``wait`` until then); never one whose run a person cancelled (unless not
    ``cancelled_stays``: queue executions recorded before that rule). The caller still applies
    :func:`contracts.queue_priority.system_dispatch_block` (autopilot, risk, a free slot)."""
    if item.status is not QueueStatus.FAILED:
        return RecoveryDecision(
            action=RecoveryAction.NONE, reason=f"{item.key} is {item.status.value}, not failed"
        )
    if item.failure is ItemFailure.REVIEW_CAP_REACHED:
        return RecoveryDecision(
            action=RecoveryAction.NONE, reason=f"{item.key} failed at the review cap: a person decides"
        )
    if cancelled_stays and run_cancelled(item):
        return RecoveryDecision(
            action=RecoveryAction.NONE,
            reason=f"a person cancelled {item.key}'s run: a person dispatches it again or parks it",
        )
    used = recoveries_used(item)
    if used >= max_recoveries:
        return RecoveryDecision(
            action=RecoveryAction.NONE,
            reason=f"{item.key} was recovered {used} times in this cycle (at most {max_recoveries})",
        )
    ended = [run.ended_at for run in item.cycle_runs() if run.ended_at is not None]
    failed_at = max(ended) if ended else item.updated_at
    due_at = failed_at + dt.timedelta(seconds=delay_seconds)
    attempt = f"recovery {used + 1} of {max_recoveries}"
    if now < due_at:
        return RecoveryDecision(
            action=RecoveryAction.WAIT, due_at=due_at, reason=f"{attempt} is due at {due_at}"
        )
    return RecoveryDecision(action=RecoveryAction.RECOVER, due_at=due_at, reason=f"{attempt}: re-dispatch")
