"""Dispatching a goal-queue item as a specialist run, and what the queue makes of the run's progress
(docs/architecture.md "Goal queue").

* **The run's work item** (:func:`dispatch_work_item`) is built from the item alone: its title, its
  scope as the description (each non-empty section under its heading) followed by the findings of
  the review cycle's FAIL rounds (:func:`findings_text`), its repository and its evidence refs. When
  scope and findings no longer fit a description it is refused (``work_item_too_large``), never cut.
* **The run's input** must be exactly the run the item asks for (:func:`dispatch_run_problem`): that
  work item, the item's tier, no automatic tier and no route override, created by the operator
  dispatching it, enqueued at once when it is a read_only run (an edit tier's run waits for its
  digest-bound approval and execute, like any other), and a run id the item has not used.
* **One run at a time** (:func:`check_no_pending_run`): an item whose run has not been judged yet
  (in ``ai-review`` before its round is recorded) is not dispatched again — the table's re-dispatch
  from ``ai-review`` follows a FAIL verdict, which names the run it judged.
* **Progress** (:func:`apply_run_state`): the queue reads the status of the run of each active item;
  ``awaiting_decision`` moves the item to ``ai-review`` and the run's independent review is judged
  at once (:func:`judge_review`: PASS to ``human-review``; FAIL recorded with its findings); a run
  that ended without reaching it (failed, expired, cancelled, rejected, or gone) fails the item
  (``run_failed``) with the run's error; any other status is the item's attention (``ready``,
  ``awaiting_approval``, ``approved``: a person must act on the run).

Pure: no I/O.
"""

from __future__ import annotations

import datetime as dt
from typing import Final

from contracts.constants import MAX_DESCRIPTION_CHARS
from contracts.enums import Tier
from contracts.ids import RUN_ID_PATTERN
from contracts.output import ReviewVerdict, SpecialistOutput
from contracts.queue_items import (
    MAX_EVENT_REASON_CHARS,
    QueueItem,
    QueueRefusalCode,
    QueueRefused,
    QueueStatus,
    RoundVerdict,
    RunOutcome,
    scope_description,
)
from contracts.queue_messages import RunState
from contracts.queue_review import (
    apply_review_decision,
    assess_review,
    decide_after_review,
    escalated_dispatch,
    record_round,
    record_run_failure,
)
from contracts.queue_transitions import Mover, QueueMove, allowed_moves, apply_move
from contracts.runs import QueueGrant, RunInput, RunStatus, run_request_digest
from contracts.work_item import WorkItem

ENDED_WITHOUT_DECISION: Final = frozenset(
    {
        RunStatus.FAILED,
        RunStatus.EXPIRED,
        RunStatus.CANCELLED,
        RunStatus.REJECTED,
        RunStatus.ACCEPTED,
        RunStatus.RECOMMENDED,
    }
)
"""Run statuses that end an active item's run without the queue's review: the item fails. (An
``accepted`` run was decided by a person outside the queue before its review; the queue does not count
it as reviewed. A ``recommended`` run is a route-next run whose capture found the policy changed
since the route-next was decided: it reviewed nothing.)"""


FINDINGS_HEADING: Final = "Findings of earlier review rounds (resolve each):"


def findings_text(item: QueueItem) -> str:
    """The findings the current cycle's FAIL rounds left, one line per round (``""`` when none): what
    a re-dispatched run's task carries, so the next run knows what to fix."""
    lines = []
    for round_ in item.cycle_rounds():
        if round_.verdict is not RoundVerdict.FAIL:
            continue
        parts = []
        if round_.reviewer_verdict is not ReviewVerdict.AGREE:
            said = round_.reviewer_verdict.value if round_.reviewer_verdict is not None else "no verdict"
            parts.append(f"the reviewer did not agree ({said})")
        parts += [f"{finding.severity.value}: {finding.title}" for finding in round_.material]
        lines.append(f"- round {round_.number} (score {round_.score}): " + "; ".join(parts))
    return f"{FINDINGS_HEADING}\n" + "\n".join(lines) if lines else ""


def dispatch_work_item(item: QueueItem) -> WorkItem:
    """The work item of a run dispatched for ``item``: its scope, then the findings of the cycle's FAIL
    rounds. Raises :class:`QueueRefused` ``work_item_too_large`` when they no longer fit a work item's
    description together — refused, never cut."""
    parts = [part for part in (scope_description(item.scope), findings_text(item)) if part]
    description = "\n\n".join(parts)
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise QueueRefused(
            QueueRefusalCode.WORK_ITEM_TOO_LARGE,
            f"the work item of {item.key} would need a description of {len(description)} characters "
            f"(its scope and the findings of its review rounds); at most {MAX_DESCRIPTION_CHARS} fit: "
            "shorten the scope in a new proposal, or park the item",
            key=item.key,
            characters=len(description),
            limit=MAX_DESCRIPTION_CHARS,
        )
    return WorkItem(
        title=item.title,
        description=description,
        repo_alias=item.repo_alias,
        evidence_refs=list(item.evidence),
    )


def dispatch_lineage(item: QueueItem) -> tuple[str | None, str | None]:
    """What the next run of ``item`` carries besides its work item: the escalation model when the
    dispatch is escalated (the model its cycle's escalation recorded; ``None`` when none was
    configured then, or the dispatch is not escalated) and the item's previous run, which the new one
    re-dispatches, recovers or sends back (``None`` for its first run)."""
    escalation = item.cycle_escalation()
    model = escalation.model if escalated_dispatch(item) and escalation is not None else None
    return model, item.runs[-1].run_id if item.runs else None


def dispatch_run_input(
    item: QueueItem,
    *,
    run_id: str,
    actor: str,
    queue_grant: QueueGrant | None = None,
) -> RunInput:
    """The run dispatched for ``item``, created by ``actor`` (the operator dispatching it, or the
    actor whose autopilot grant ``queue_grant`` the queue starts it under): its work item
    (:func:`dispatch_work_item`), the item's tier, enqueued at once when read_only, the escalation
    model of an escalated dispatch and the run it follows (:func:`dispatch_lineage`), and its request
    digest. A read_only run dispatched by hand still needs ``actor``'s proof of its create; the CLI and
    the queue use this same function, so :func:`dispatch_run_problem` finds nothing in it."""
    escalation_model, follows = dispatch_lineage(item)
    draft = RunInput(
        run_id=run_id,
        work_item=dispatch_work_item(item),
        requested_tier=item.tier,
        enqueue=item.tier is Tier.READ_ONLY,
        request_digest="",
        created_by=actor,
        queue_grant=queue_grant,
        escalation_model=escalation_model,
        follows=follows,
    )
    return draft.model_copy(update={"request_digest": run_request_digest(draft)})


def judge_review(
    item: QueueItem, run_id: str, review: SpecialistOutput, at: dt.datetime, escalation_model: str | None
) -> QueueItem:
    """``item`` (in ``ai-review``) after the queue judged run ``run_id``'s independent review: the round
    recorded (:func:`contracts.queue_review.record_round`) and the decision after it applied — PASS to
    ``human-review``, the hand-off to ``blocked`` (``decision``), the cap to ``failed``; a FAIL to be
    re-dispatched leaves the item in ``ai-review`` with its findings for the next run."""
    assessment = assess_review(review)
    judged = record_round(item, run_id, assessment, at)
    decision = decide_after_review(judged, escalation_model=escalation_model)
    return apply_review_decision(judged, decision, at=at)


def dispatch_run_problem(item: QueueItem, run: RunInput, actor: str) -> str | None:
    """Why ``run`` is not the run ``actor`` may dispatch for ``item``, or ``None`` when it is."""
    if RUN_ID_PATTERN.fullmatch(run.run_id) is None:
        return f"run id {run.run_id!r} is not SOR- and 16 characters of [0-9A-Z]"
    if any(dispatched.run_id == run.run_id for dispatched in item.runs):
        return f"run {run.run_id} was dispatched for {item.key} already"
    if run.work_item != dispatch_work_item(item):
        return f"the run's work item is not the one {item.key} asks for (its title, scope and evidence)"
    if run.requested_tier is not item.tier or run.automatic or run.override is not None:
        return f"the run must be of the item's tier {item.tier.value}, neither automatic nor overridden"
    if run.created_by != actor:
        return f"the run must be created by {actor}, who dispatches it"
    if run.enqueue != (item.tier is Tier.READ_ONLY):
        return "a read_only run is created enqueued; an edit tier's run waits for its approval"
    if run.request_id is not None:
        return "a dispatched run carries no request id"
    escalation_model, follows = dispatch_lineage(item)
    if run.escalation_model != escalation_model:
        expected = escalation_model or "none"
        return f"the run's escalation model must be {expected}, as {item.key}'s review cycle says"
    if run.follows != follows:
        return f"the run must follow {follows or 'no run'}, {item.key}'s previous run"
    return None


def check_no_pending_run(item: QueueItem) -> None:
    """Raise :class:`QueueRefused` ``transition_refused`` when a run of ``item``'s cycle is still
    pending (dispatched and not yet reviewed or failed): another dispatch waits for its verdict."""
    pending = [run.run_id for run in item.cycle_runs() if run.outcome is RunOutcome.PENDING]
    if pending:
        raise QueueRefused(
            QueueRefusalCode.TRANSITION_REFUSED,
            f"{item.key} is {item.status.value}: its run {pending[-1]} has not been judged yet, so it "
            "cannot be dispatched again until its review round is recorded",
            key=item.key,
            status=item.status.value,
            attempted=QueueMove.DISPATCH.value,
            pending_run=pending[-1],
            allowed=[
                row.to_json() for row in allowed_moves(item.status) if row.move is not QueueMove.DISPATCH
            ],
        )


def tracked_run(item: QueueItem) -> str | None:
    """The run whose progress the queue reads for ``item``: the pending run of an active item."""
    if item.status is not QueueStatus.ACTIVE:
        return None
    for run in reversed(item.cycle_runs()):
        if run.outcome is RunOutcome.PENDING:
            return run.run_id
    return None


def apply_run_state(
    item: QueueItem, state: RunState, at: dt.datetime, escalation_model: str | None = None
) -> QueueItem | None:
    """``item`` after its run reached ``state``, or ``None`` when that changes nothing (see the module
    docstring). A run awaiting its decision moves the item to ``ai-review`` and, with its review, is
    judged at once (:func:`judge_review`)."""
    if tracked_run(item) != state.run_id:
        return None
    if state.status is RunStatus.AWAITING_DECISION:
        reviewing = apply_move(
            item, QueueMove.REVIEW, Mover.SYSTEM, at=at, actor=None, data={"run_id": state.run_id}
        )
        if state.review is None:
            return reviewing
        return judge_review(reviewing, state.run_id, state.review, at, escalation_model)
    if state.status is None or state.status in ENDED_WITHOUT_DECISION:
        status = state.status.value if state.status is not None else "missing"
        failure = state.error or f"the run ended {status}"
        if len(failure) > MAX_EVENT_REASON_CHARS:  # named by reference, never cut
            failure = f"the run ended {status}; its error is in `specialists show {state.run_id}`"
        failed = record_run_failure(item, state.run_id, failure, at)
        data = {"run_id": state.run_id, "run_status": status}
        return apply_move(failed, QueueMove.FAIL, Mover.SYSTEM, at=at, actor=None, reason=failure, data=data)
    return None
