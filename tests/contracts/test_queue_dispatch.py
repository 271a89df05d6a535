"""The dispatch contract: the run's work item built from the item alone, the run input that must be
exactly the one the item asks for, one pending run at a time, and what a run's status does to its
item."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from contracts.enums import Tier
from contracts.hashing import canonical_sha256
from contracts.ids import new_run_id
from contracts.output import SpecialistOutput
from contracts.queue_approval import approve
from contracts.queue_dispatch import (
    apply_run_state,
    check_no_pending_run,
    dispatch_lineage,
    dispatch_run_input,
    dispatch_run_problem,
    dispatch_work_item,
    findings_text,
    tracked_run,
)
from contracts.queue_items import (
    MAX_EVENT_REASON_CHARS,
    ItemProposal,
    QueueItem,
    QueueRefused,
    QueueStatus,
    new_item,
)
from contracts.queue_keys import KeyAllocator
from contracts.queue_messages import RunState
from contracts.queue_priority import record_dispatch
from contracts.queue_transitions import Mover
from contracts.routing import RouteOverride
from contracts.runs import QueueGrant, RunInput, RunStatus, run_request_digest

AT = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC)
RECORDINGS = Path(__file__).resolve().parents[2] / "examples" / "recordings" / "demo.json"
REVIEW = next(
    entry["response"]
    for entry in json.loads(RECORDINGS.read_text(encoding="utf-8"))["recordings"]
    if entry["kind"] == "review"
)
ITEM = {
    "title": "Orders API times out under load",
    "repo_alias": "orders",
    "scope": {
        "problem": "p95 latency exceeds 2 s",
        "evidence": "load test",
        "change": "find the cause",
        "judgment_calls": "which index",
        "tests": "load test under 500 ms",
        "constraints": "no schema change",
    },
    "evidence": ["issue:123", "log:slow-1"],
    "value": "H",
    "urgency": "M",
    "risk": "low",
}


def approved(**changes: object) -> QueueItem:
    proposal = ItemProposal.model_validate({**ITEM, **changes})
    allocator, key = KeyAllocator().allocate(proposal.repo_alias)
    item, _ = approve(new_item(proposal, key=key, at=AT, actor="alice"), allocator, actor="alice", at=AT)
    return item


def run_for(item: QueueItem, **changes: object) -> RunInput:
    data: dict[str, object] = {
        "run_id": new_run_id(),
        "work_item": dispatch_work_item(item),
        "requested_tier": item.tier,
        "enqueue": item.tier is Tier.READ_ONLY,
        "request_digest": "0" * 64,
        "created_by": "alice",
    }
    return RunInput.model_validate({**data, **changes})


def active(item: QueueItem) -> tuple[QueueItem, str]:
    run_id = new_run_id()
    return record_dispatch(item, run_id=run_id, mover=Mover.OPERATOR, actor="alice", at=AT), run_id


def test_the_work_item_is_the_title_the_scope_under_its_headings_the_repository_and_the_evidence() -> None:
    work_item = dispatch_work_item(approved())
    assert work_item.title == ITEM["title"]
    assert work_item.repo_alias == "orders"
    assert work_item.evidence_refs == ["issue:123", "log:slow-1"]
    assert work_item.description.startswith("Problem:\np95 latency exceeds 2 s\n\nEvidence:\nload test")
    assert work_item.description.endswith("Constraints:\nno schema change")


def test_the_run_the_item_asks_for_passes_and_every_departure_from_it_is_named() -> None:
    item = approved()
    assert dispatch_run_problem(item, run_for(item), "alice") is None
    other_item = dispatch_work_item(item).model_copy(update={"title": "something else"})
    cases = {
        "work item": run_for(item, work_item=other_item),
        "tier": run_for(item, requested_tier=Tier.WORKTREE),
        "automatic": run_for(item, automatic=True),
        "overridden": run_for(item, override=RouteOverride(profile="code-reviewer", reason="asked")),
        "created by alice": run_for(item, created_by="bob"),
        "enqueued": run_for(item, enqueue=False),
        "request id": run_for(item, request_id="r-1"),
        "SOR-": run_for(item, run_id="not-a-run"),
    }
    for words, run in cases.items():
        problem = dispatch_run_problem(item, run, "alice")
        assert problem is not None and words in problem, (words, problem)
    dispatched, run_id = active(item)
    problem = dispatch_run_problem(dispatched, run_for(item, run_id=run_id), "alice")
    assert problem is not None and "already" in problem


def test_an_edit_tier_run_is_not_created_enqueued() -> None:
    item = approved(tier="worktree")
    assert dispatch_run_problem(item, run_for(item), "alice") is None
    assert dispatch_run_problem(item, run_for(item, enqueue=True), "alice") is not None


def test_an_item_whose_run_awaits_its_verdict_is_not_dispatched_again() -> None:
    check_no_pending_run(approved())
    item, run_id = active(approved())
    reviewed = apply_run_state(item, RunState(run_id=run_id, status=RunStatus.AWAITING_DECISION), AT)
    assert reviewed is not None and reviewed.status is QueueStatus.AI_REVIEW
    with pytest.raises(QueueRefused) as refused:
        check_no_pending_run(reviewed)
    assert refused.value.code == "transition_refused"
    assert refused.value.extra["pending_run"] == reviewed.runs[0].run_id
    assert "dispatch" not in [row["move"] for row in refused.value.extra["allowed"]]


def test_awaiting_decision_moves_the_item_to_ai_review_by_the_queue() -> None:
    item, run_id = active(approved())
    assert tracked_run(item) == run_id
    moved = apply_run_state(item, RunState(run_id=run_id, status=RunStatus.AWAITING_DECISION), AT)
    assert moved is not None and moved.status is QueueStatus.AI_REVIEW
    event = moved.events[-1]
    assert (event.actor, event.data["move"], event.data["run_id"]) == (None, "review", run_id)
    assert tracked_run(moved) is None  # only an active item's run is read


@pytest.mark.parametrize(
    "status", [RunStatus.FAILED, RunStatus.EXPIRED, RunStatus.CANCELLED, RunStatus.REJECTED, None]
)
def test_a_run_that_ended_without_reaching_a_decision_fails_its_item_with_its_error(
    status: RunStatus | None,
) -> None:
    item, run_id = active(approved())
    failed = apply_run_state(item, RunState(run_id=run_id, status=status, error="boom"), AT)
    assert failed is not None and failed.status is QueueStatus.FAILED
    assert failed.failure == "run_failed"
    assert (failed.runs[0].outcome, failed.runs[0].failure) == ("failed", "boom")
    assert failed.events[-1].data["run_status"] == (status.value if status else "missing")
    assert failed.events[-1].data["reason"] == "boom"


def test_an_error_too_long_for_an_event_is_referred_to_not_cut() -> None:
    item, run_id = active(approved())
    error = "x" * (MAX_EVENT_REASON_CHARS + 1)
    failed = apply_run_state(item, RunState(run_id=run_id, status=RunStatus.FAILED, error=error), AT)
    assert failed is not None
    assert failed.runs[0].failure == f"the run ended failed; its error is in `specialists show {run_id}`"


@pytest.mark.parametrize(
    "status", [RunStatus.ROUTING, RunStatus.READY, RunStatus.RUNNING, RunStatus.AWAITING_APPROVAL]
)
def test_a_run_still_on_its_way_changes_nothing(status: RunStatus) -> None:
    item, run_id = active(approved())
    assert apply_run_state(item, RunState(run_id=run_id, status=status), AT) is None
    assert apply_run_state(item, RunState(run_id=new_run_id(), status=RunStatus.FAILED), AT) is None


def _review(verdict: str, *severities: str) -> SpecialistOutput:
    data = json.loads(json.dumps(REVIEW))
    data["verdict"] = verdict
    data["findings"] = [{**data["findings"][0], "severity": s, "title": f"{s} finding"} for s in severities]
    return SpecialistOutput.model_validate(data)


def test_a_passing_review_is_judged_at_once_and_sends_the_item_to_human_review() -> None:
    item, run_id = active(approved())
    state = RunState(run_id=run_id, status=RunStatus.AWAITING_DECISION, review=_review("agree", "medium"))
    judged = apply_run_state(item, state, AT)
    assert judged is not None and judged.status is QueueStatus.HUMAN_REVIEW
    [round_] = judged.rounds
    assert (round_.verdict, round_.score, round_.number) == ("PASS", 0, 1)
    assert judged.runs[0].outcome == "reviewed"
    assert findings_text(judged) == ""


def test_a_failing_review_stays_in_ai_review_and_its_findings_go_into_the_next_work_item() -> None:
    item, run_id = active(approved())
    state = RunState(run_id=run_id, status=RunStatus.AWAITING_DECISION, review=_review("disagree", "high"))
    judged = apply_run_state(item, state, AT)
    assert judged is not None and judged.status is QueueStatus.AI_REVIEW
    assert judged.rounds[0].score == 2
    check_no_pending_run(judged)  # judged: it may be dispatched again
    text = findings_text(judged)
    assert text == (
        "Findings of earlier review rounds (resolve each):\n"
        "- round 1 (score 2): the reviewer did not agree (disagree); high: high finding"
    )
    assert dispatch_work_item(judged).description.endswith(text)


def test_findings_that_no_longer_fit_the_work_item_are_refused_not_cut() -> None:
    section = "x" * 1_000
    scope = {name: section for name in ITEM["scope"]}  # type: ignore[attr-defined]
    item, run_id = active(approved(scope=scope))
    review = _review("disagree", *(["critical"] * 8))
    findings = [
        finding.model_copy(update={"title": f"{'y' * 250} {n}"}) for n, finding in enumerate(review.findings)
    ]
    state = RunState(
        run_id=run_id,
        status=RunStatus.AWAITING_DECISION,
        review=review.model_copy(update={"findings": findings}),
    )
    judged = apply_run_state(item, state, AT)
    assert judged is not None
    with pytest.raises(QueueRefused) as refused:
        dispatch_work_item(judged)
    assert refused.value.code == "work_item_too_large"
    assert refused.value.extra["limit"] == 8_000


def test_the_run_built_by_the_queue_or_the_cli_is_the_one_the_item_asks_for_its_grant_undigested() -> None:
    for tier in (Tier.READ_ONLY, Tier.WORKTREE):
        item = approved(tier=tier.value)
        run = dispatch_run_input(item, run_id=new_run_id(), actor="alice")
        assert dispatch_run_problem(item, run, "alice") is None
        assert run.enqueue is (tier is Tier.READ_ONLY) and run.proof is None and run.queue_grant is None
        grant = QueueGrant(
            queue_workflow_id="work-queue@q", item_key=item.key, granted_by="alice", granted_at=AT
        )
        granted = dispatch_run_input(item, run_id=run.run_id, actor="alice", queue_grant=grant)
        assert granted.queue_grant == grant
        assert granted.request_digest == run.request_digest == run_request_digest(run)
        another = approved(tier=tier.value, title="Another")
        other = dispatch_run_input(another, run_id=run.run_id, actor="alice")
        assert other.request_digest != run.request_digest


def _fail_round(item: QueueItem, run_id: str, escalation_model: str | None = None) -> QueueItem:
    state = RunState(run_id=run_id, status=RunStatus.AWAITING_DECISION, review=_review("disagree", "high"))
    judged = apply_run_state(item, state, AT, escalation_model)
    assert judged is not None and judged.status is QueueStatus.AI_REVIEW
    return judged


def _redispatch(item: QueueItem) -> tuple[QueueItem, str]:
    run_id = new_run_id()
    return record_dispatch(item, run_id=run_id, mover=Mover.SYSTEM, actor="alice", at=AT), run_id


def test_each_run_follows_the_previous_one_and_only_the_escalated_dispatch_names_the_escalation_model() -> (
    None
):
    item = approved()
    assert dispatch_lineage(item) == (None, None)
    runs = []
    for _ in range(3):  # three FAILs with the same score: two rounds without progress escalate
        previous = item.runs[-1].run_id if item.runs else None
        run = dispatch_run_input(item, run_id=new_run_id(), actor="alice")
        assert (run.escalation_model, run.follows) == (None, previous)
        item, run_id = _redispatch(item) if item.runs else active(item)
        runs.append(run_id)
        item = _fail_round(item, run_id, escalation_model="replay:strong")
    [escalation] = item.escalations
    assert escalation.model == "replay:strong"
    escalated = dispatch_run_input(item, run_id=new_run_id(), actor="alice")
    assert (escalated.escalation_model, escalated.follows) == ("replay:strong", runs[-1])
    assert dispatch_run_problem(item, escalated, "alice") is None
    plain = escalated.model_copy(update={"escalation_model": None})
    problem = dispatch_run_problem(item, plain, "alice")
    assert problem is not None and "escalation model must be replay:strong" in problem
    orphan = escalated.model_copy(update={"follows": None})
    problem = dispatch_run_problem(item, orphan, "alice")
    assert problem is not None and f"must follow {runs[-1]}" in problem
    # The escalated run's record names the model; after its round the next dispatch is plain again.
    item, run_id = _redispatch(item)
    assert item.runs[-1].escalated and item.runs[-1].model == "replay:strong"


def test_the_request_digest_leaves_out_lineage_that_is_not_set_and_covers_it_when_set() -> None:
    item = approved()
    run = dispatch_run_input(item, run_id=new_run_id(), actor="alice")
    # The digest of a request without lineage is what it was before lineage existed.
    old_shape = run.model_dump(
        mode="json",
        exclude={
            "run_id",
            "request_digest",
            "created_by",
            "proof",
            "queue_grant",
            "escalation_model",
            "follows",
            "review_wave",
            "advisory",
            "analysis_only",
            "case_grant",
        },
    )
    assert run_request_digest(run) == canonical_sha256(old_shape)
    follows = run.model_copy(update={"follows": new_run_id()})
    escalated = run.model_copy(update={"escalation_model": "replay:strong"})
    wave = run.model_copy(update={"review_wave": True})
    assert len({run_request_digest(r) for r in (run, follows, escalated, wave)}) == 4
    with pytest.raises(ValueError, match="follows"):
        RunInput.model_validate({**run.model_dump(), "follows": "not-a-run"})
