"""``SpecialistRun`` on the shared dev server: a real worker in-process (holding the deployment's
action token), a real SQLite store in ``tmp_path``, the replay provider and small test providers
(docs/architecture.md "Run lifecycle"). Protected actions carry proofs of the token, as the CLI sends them;
approvals of worktree and pr_ready runs are in ``test_approvals.py``."""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from temporalio import activity
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker

from activities.config import DEFAULT_RECORDINGS_DIR, ActivityConfig
from activities.providers.base import CompletionRequest, ModelProvider
from contracts.enums import AutomationMode, TaskType, Tier
from contracts.errors import ErrorType, OperatorError, Refused
from contracts.hashing import canonical_sha256
from contracts.model_classes import ModelClass
from contracts.models import ModelSelection
from contracts.output import JobKind
from contracts.pass_records import PRIMARY_PASS
from contracts.runs import (
    ActionResult,
    AuthorizeRequest,
    AuthorizeResult,
    CancelRequest,
    DecisionOutcome,
    DecisionRequest,
    RunProgress,
    RunStatus,
)
from contracts.work_item import WorkItem
from control.runs import decide_run, enqueue_run, get_progress, get_view
from tests.identity import signer
from tests.store.git_repository import git, make_working_tree
from tests.workflows.harness import (
    ACTOR,
    AUTH_REVIEW,
    DASHBOARD,
    REPLAY_MODEL,
    SLOW_QUERY,
    FailingProvider,
    RecordingProvider,
    SlowProvider,
    TextProvider,
    audit_kinds,
    bench,
    events,
    example,
    proof,
    run_input,
    transitions,
    until,
    within,
)
from worker import activities_for, build_worker, sandbox_runner
from workflows.model_job import ModelJobWorkflow
from workflows.specialist_run import SpecialistRunWorkflow

READ_ONLY_PATH = [
    ("routing", "ready"),
    ("ready", "queued"),
    ("queued", "running"),
    ("running", "reviewing"),
    ("reviewing", "awaiting_decision"),
]


def _recorded(kind: str, profile: str) -> dict[str, Any]:
    """The ``replay:demo`` response recorded for the slow-query example."""
    data = json.loads((DEFAULT_RECORDINGS_DIR / "demo.json").read_text(encoding="utf-8"))
    title = example(SLOW_QUERY).title
    for entry in data["recordings"]:
        if (entry["kind"], entry["profile"], entry["title"]) == (kind, profile, title):
            return dict(entry["response"])
    raise AssertionError(f"no recording for {profile} {kind}")


# ------------------------------------------------------------------------------------------ recommend


@within(30)
async def test_recommend_run_ends_recommended_with_route_contract_and_digest_and_runs_no_model(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        view = await b.create(SLOW_QUERY, tier=Tier.RECOMMEND)
        view = await b.terminal(view.run_id)

        assert view.status is RunStatus.RECOMMENDED
        assert view.tier is Tier.RECOMMEND
        assert view.route is not None and view.route.primary == "database-optimizer"
        assert view.contract is not None and view.contract.tier is Tier.RECOMMEND
        assert view.contract_sha256 == canonical_sha256(view.contract.model_dump(mode="json"))
        assert view.result is None and view.review is None and view.decision is None
        kinds = audit_kinds(view)
        assert "model_job_started" not in kinds
        assert kinds[:2] == ["run_created", "contract_captured"]
        assert transitions(view) == [("routing", "recommended")]

        # The projection lists it, with every audit event.
        assert await b.projected(view.run_id, "recommended")
        assert [e.kind for e in b.store.run_events(view.run_id)] == kinds

        # The search attribute is visible to operators (visibility lags about 100 ms).
        query = f'WorkflowId="{view.run_id}" AND SpecialistStatus="recommended"'

        async def listed() -> bool:
            found = [wf async for wf in temporal_client.list_workflows(query)]
            return [wf.id for wf in found] == [view.run_id]

        assert await until(listed)
        found = [wf async for wf in temporal_client.list_workflows(query)]
        assert found[0].status == WorkflowExecutionStatus.COMPLETED


# ----------------------------------------------------------------------------------------- read_only


@within(40)
async def test_read_only_run_waits_ready_until_enqueued_then_is_reviewed_and_accepted(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY)
        assert view.status is RunStatus.READY
        assert await b.projected(view.run_id, "ready")
        await asyncio.sleep(0.3)
        assert (await get_view(temporal_client, view.run_id)).status is RunStatus.READY

        enqueued = await b.enqueue(view.run_id)
        assert enqueued.accepted and enqueued.status is RunStatus.QUEUED

        view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION)
        assert view.result is not None and view.result.role == "database-optimizer"
        assert view.review is not None and view.review.role == "backend-architect"
        assert view.review.verdict is not None and view.review.verdict.value == "agree"
        assert view.decision is None
        assert await b.projected(view.run_id, "awaiting_decision")
        # Query status answers what a poller compares: the status and how many audit events.
        progress = await get_progress(temporal_client, view.run_id)
        assert progress == RunProgress(status=RunStatus.AWAITING_DECISION, audit_events=len(view.audit))

        decided = await b.decide(view.run_id, DecisionOutcome.ACCEPTED, "index proposal accepted")
        assert decided.accepted and decided.status is RunStatus.ACCEPTED
        view = await b.terminal(view.run_id)

    assert view.status is RunStatus.ACCEPTED
    assert transitions(view) == [*READ_ONLY_PATH, ("awaiting_decision", "accepted")]
    assert view.decision is not None
    assert (view.decision.actor, view.decision.outcome, view.decision.note) == (
        ACTOR,
        DecisionOutcome.ACCEPTED,
        "index proposal accepted",
    )
    kinds = [k for k in audit_kinds(view) if k != "status_changed"]
    assert kinds == [
        "run_created",
        "contract_captured",
        "enqueued",
        "model_job_started",
        "model_attempt",
        "model_job_completed",
        "model_job_started",
        "model_attempt",
        "model_job_completed",
        "decided",
    ]
    assert [e["kind"] for e in events(view, "model_job_started")] == ["analysis", "review"]
    assert [(a["kind"], a["model"], a["attempt"], a["outcome"]) for a in events(view, "model_attempt")] == [
        ("analysis", REPLAY_MODEL, 1, "ok"),
        ("review", REPLAY_MODEL, 1, "ok"),
    ]
    completed = events(view, "model_job_completed")
    assert [c["model"] for c in completed] == [REPLAY_MODEL, REPLAY_MODEL]
    assert completed[1]["verdict"] == "agree"
    assert events(view, "decided") == [{"outcome": "accepted", "note": "index proposal accepted"}]
    assert [e.seq for e in view.audit] == list(range(1, len(view.audit) + 1))
    assert await b.projected(view.run_id, "accepted")
    assert [e.kind for e in b.store.run_events(view.run_id)] == audit_kinds(view)


@within(40)
async def test_read_only_run_created_enqueued_skips_ready_and_a_rejection_ends_it_rejected(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY, enqueue=True)
        view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION)
        decided = await b.decide(view.run_id, DecisionOutcome.REJECTED, "needs pg_stats first")
        assert decided.status is RunStatus.REJECTED
        view = await b.terminal(view.run_id)

    assert view.status is RunStatus.REJECTED
    assert transitions(view) == [
        ("routing", "queued"),
        ("queued", "running"),
        ("running", "reviewing"),
        ("reviewing", "awaiting_decision"),
        ("awaiting_decision", "rejected"),
    ]
    assert "enqueued" not in audit_kinds(view)
    assert view.decision is not None and view.decision.outcome is DecisionOutcome.REJECTED
    assert view.decision.note == "needs pg_stats first"
    assert view.result is not None and view.review is not None
    assert await b.projected(view.run_id, "rejected")


@within(40)
async def test_review_job_sees_task_evidence_and_findings_but_not_the_authors_profile_model_or_confidence(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    capture = RecordingProvider()
    providers = {"capture": capture}
    async with (
        bench(temporal_client, task_queue, tmp_path, providers=providers, model="capture:demo") as b,
        b.worker(),
    ):
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY, enqueue=True)
        view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION)

        # The child workflow's input carries the findings and nothing about their author.
        review_history = await temporal_client.get_workflow_handle(f"{view.run_id}-review").fetch_history()

    assert view.result is not None
    analysis_request, review_request = capture.requests
    assert analysis_request.identity.kind is JobKind.ANALYSIS
    assert review_request.identity.kind is JobKind.REVIEW
    assert review_request.identity.profile_id == "backend-architect"

    seen = review_request.instructions + review_request.context
    findings = [f.model_dump(mode="json") for f in view.result.findings]
    assert json.dumps(findings, indent=1, sort_keys=True) in review_request.context
    for finding in view.result.findings:
        assert finding.title in review_request.context
    # The original task and evidence come first, then the findings.
    context = review_request.context
    assert context.index(example(SLOW_QUERY).title) < context.index("Findings under review")
    assert context.index("log:pg-slow-2026-11-27") < context.index("Findings under review")
    # Never the author's profile, model, confidence or closure.
    assert "database-optimizer" not in seen
    assert "Database Optimizer" not in seen
    assert "capture:demo" not in seen
    assert view.result.axis not in seen
    assert str(view.result.confidence) not in seen
    assert view.result.recommended_next_action not in seen
    # The analysis request has no findings section at all.
    assert "Findings under review" not in analysis_request.context

    started = review_history.events[0].workflow_execution_started_event_attributes
    payload = json.loads(started.input.payloads[0].data)
    assert payload["kind"] == "review"
    assert payload["profile_id"] == "backend-architect"
    assert payload["context"]["findings_under_review"] == findings
    assert set(payload["context"]) == {
        "title",
        "task",
        "evidence_refs",
        "findings_under_review",
        "expects_patch",
        "change",
        "research",
    }
    # A read_only run changes nothing: no patch is asked for and there is no change to review; it is
    # no research team's job either.
    assert (payload["context"]["expects_patch"], payload["context"]["change"]) == (False, None)
    assert payload["context"]["research"] is None
    assert "database-optimizer" not in json.dumps(payload["context"])


# ---------------------------------------------------------------------------------------- automatic


@within(30)
async def test_automatic_run_is_refused_when_policy_mode_is_off(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        b.set_policy(AutomationMode.OFF)
        view = await b.create(SLOW_QUERY, automatic=True)
        view = await b.terminal(view.run_id)
    assert view.status is RunStatus.FAILED
    assert view.error is not None and view.error.type == "automation_off"
    assert view.contract is None
    assert events(view, "step_failed") == [
        {"step": "capture_contract", "error_type": "automation_off", "message": view.error.message}
    ]
    assert "model_job_started" not in audit_kinds(view)
    assert await b.projected(view.run_id, "failed")


@within(30)
async def test_automatic_run_in_policy_mode_recommend_gets_the_recommend_tier(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        b.set_policy(AutomationMode.RECOMMEND, Tier.READ_ONLY)
        view = await b.create(SLOW_QUERY, automatic=True)
        view = await b.terminal(view.run_id)
    assert view.status is RunStatus.RECOMMENDED
    assert view.automatic and view.contract is not None and view.contract.automatic
    assert view.contract.tier is Tier.RECOMMEND
    assert "model_job_started" not in audit_kinds(view)


@within(30)
async def test_guarded_automatic_low_risk_run_gets_the_read_only_ceiling_and_high_risk_drops_to_recommend(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        b.set_policy(AutomationMode.GUARDED, Tier.READ_ONLY)
        low = await b.create(SLOW_QUERY, automatic=True)
        high = await b.create(AUTH_REVIEW, automatic=True)
        high = await b.terminal(high.run_id)

    assert low.status is RunStatus.READY
    assert low.contract is not None and low.contract.tier is Tier.READ_ONLY
    assert low.contract.risk.value == "low" and low.contract.automatic
    assert low.contract.model is not None and low.contract.model.primary == REPLAY_MODEL

    assert high.status is RunStatus.RECOMMENDED
    assert high.contract is not None and high.contract.tier is Tier.RECOMMEND
    assert high.contract.risk.value == "high"
    (captured,) = events(high, "contract_captured")
    assert any("reduces an automatic run to recommend" in reason for reason in captured["tier_reasons"])


# ---------------------------------------------------------------------------------- capture refusals


@pytest.mark.parametrize("tier", [Tier.WORKTREE, Tier.PR_READY])
@within(30)
async def test_worktree_and_pr_ready_runs_without_a_repo_alias_fail_with_repo_alias_required(
    temporal_client: Client, task_queue: str, tmp_path: Path, tier: Tier
) -> None:
    # Worktree and pr_ready runs are offered now (they wait for approval, see test_approvals.py),
    # but only for an allow-listed repository: a work item without repo_alias is refused at capture.
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        item = example(SLOW_QUERY).model_copy(update={"repo_alias": None})
        view = await b.create(item, tier=tier)
        view = await b.terminal(view.run_id)
    assert view.status is RunStatus.FAILED
    assert view.error is not None and view.error.type == "repo_alias_required"
    assert view.contract is None and "model_job_started" not in audit_kinds(view)
    assert events(view, "step_failed")[0]["error_type"] == "repo_alias_required"


@within(30)
async def test_read_only_run_without_a_model_selection_fails_with_no_model_selected(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path, model=None) as b, b.worker():
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY, enqueue=True)
        view = await b.terminal(view.run_id)
    assert view.status is RunStatus.FAILED
    assert view.error is not None and view.error.type == "no_model_selected"
    assert "model_job_started" not in audit_kinds(view)


# ----------------------------------------------------------------------------------- refused actions


@within(30)
async def test_decide_on_a_run_not_awaiting_a_decision_is_rejected_by_the_validator_and_not_audited(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY)
        assert view.status is RunStatus.READY
        before = await get_view(temporal_client, view.run_id)
        handle = temporal_client.get_workflow_handle(view.run_id)
        with pytest.raises(WorkflowUpdateFailedError) as raised:
            await handle.execute_update(
                "decide",
                DecisionRequest(actor=ACTOR, outcome=DecisionOutcome.ACCEPTED),
                result_type=ActionResult,
            )
        cause = raised.value.cause
        assert isinstance(cause, ApplicationError) and cause.type == "not_awaiting_decision"

        # Through the client helper, with a valid proof, the same refusal is an operator error (exit 4).
        with pytest.raises(Refused) as refused:
            await b.decide(view.run_id, DecisionOutcome.ACCEPTED)
        assert refused.value.code == "not_awaiting_decision"

        after = await get_view(temporal_client, view.run_id)
        assert after.status is RunStatus.READY
        assert after.audit == before.audit
        history = await handle.fetch_history()
        accepted = "workflow_execution_update_accepted_event_attributes"
        assert not [e for e in history.events if e.HasField(accepted)]


@within(40)
async def test_decide_by_an_unregistered_actor_is_refused_audited_and_changes_nothing(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY, enqueue=True)
        view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION)
        handle = temporal_client.get_workflow_handle(view.run_id)
        result = await handle.execute_update(
            "decide",
            DecisionRequest(actor="mallory", outcome=DecisionOutcome.ACCEPTED, note="let me in"),
            result_type=ActionResult,
        )
        assert not result.accepted
        assert result.code == "unknown_actor" and result.status is RunStatus.AWAITING_DECISION

        view = await get_view(temporal_client, view.run_id)
        assert view.status is RunStatus.AWAITING_DECISION and view.decision is None
        refused = [e for e in view.audit if e.kind == "action_refused"]
        assert len(refused) == 1
        assert refused[0].actor == "mallory"
        assert refused[0].data["action"] == "decide" and refused[0].data["code"] == "unknown_actor"
        assert audit_kinds(view)[-1] == "action_refused"

        # The run still takes a decision from a registered actor with a valid proof.
        await b.decide(view.run_id, DecisionOutcome.ACCEPTED)
        view = await b.terminal(view.run_id)
    assert view.status is RunStatus.ACCEPTED and view.decision is not None
    assert view.decision.actor == ACTOR


@within(30)
async def test_enqueue_needs_a_registered_actor_and_a_proof_and_each_refusal_is_audited_while_run_stays_ready(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY)
        run_id = view.run_id
        attempts = [
            (None, None, "actor_required", 4),
            (ACTOR, None, "proof_missing", 4),
            (ACTOR, proof(run_id, "decide"), "proof_invalid", 4),  # made for another action
            ("mallory", proof(run_id, "enqueue", actor="mallory"), "unknown_actor", 3),
        ]
        for actor, signature, code, exit_code in attempts:
            with pytest.raises(OperatorError) as raised:
                await enqueue_run(temporal_client, run_id, actor, signature)
            assert (raised.value.code, raised.value.exit_code) == (code, exit_code)

        view = await get_view(temporal_client, run_id)
        assert view.status is RunStatus.READY
        refused = [
            (e.actor, e.data["action"], e.data["code"]) for e in view.audit if e.kind == "action_refused"
        ]
        assert refused == [
            (None, "enqueue", "actor_required"),
            (ACTOR, "enqueue", "proof_missing"),
            (ACTOR, "enqueue", "proof_invalid"),
            ("mallory", "enqueue", "unknown_actor"),
        ]
        assert "enqueued" not in audit_kinds(view) and "model_job_started" not in audit_kinds(view)

        # A registered actor with a valid proof enqueues it.
        assert (await b.enqueue(run_id)).accepted
        view = await b.wait(run_id, RunStatus.AWAITING_DECISION)
    (enqueued,) = [e for e in view.audit if e.kind == "enqueued"]
    assert enqueued.actor == ACTOR


@within(30)
async def test_decide_and_cancel_without_a_valid_proof_are_refused_audited_and_change_nothing(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY, enqueue=True)
        run_id = view.run_id
        view = await b.wait(run_id, RunStatus.AWAITING_DECISION)

        with pytest.raises(Refused) as refused:
            await decide_run(temporal_client, run_id, ACTOR, DecisionOutcome.ACCEPTED, "no proof")
        assert refused.value.code == "proof_missing"

        # Cancel is a signal: its refusal is seen in the audit trail only.
        handle = temporal_client.get_workflow_handle(run_id)
        stale = proof(run_id, "cancel", issued_at=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=20))
        for count, request in enumerate(
            [
                CancelRequest(actor=ACTOR, reason="no proof"),
                CancelRequest(actor=ACTOR, reason="stale proof", proof=stale),
            ],
            start=2,
        ):
            await handle.signal("cancel", request)

            async def refused(count: int = count) -> bool:
                current = await get_view(temporal_client, run_id)
                return len(events(current, "action_refused")) == count

            assert await until(refused)
        view = await get_view(temporal_client, run_id)
        assert view.status is RunStatus.AWAITING_DECISION and view.decision is None
        assert [(e["action"], e["code"]) for e in events(view, "action_refused")] == [
            ("decide", "proof_missing"),
            ("cancel", "proof_missing"),
            ("cancel", "proof_expired"),
        ]
        assert "cancel_requested" not in audit_kinds(view) and "decided" not in audit_kinds(view)

        assert (await b.decide(run_id, DecisionOutcome.ACCEPTED, "with a proof")).accepted
        view = await b.terminal(run_id)
    assert view.status is RunStatus.ACCEPTED


@activity.defn(name="authorize_action")
def failing_authorization(request: AuthorizeRequest) -> AuthorizeResult:
    """An authorisation check that cannot be made (as when the store stays unreachable)."""
    raise ApplicationError("the store is unreachable", type="store_unavailable", non_retryable=True)


@within(40)
async def test_an_authorisation_check_that_fails_refuses_the_action_and_never_fails_the_run(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b:
        async with b.worker():
            view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY)
            run_id = view.run_id
        activities = [a for a in activities_for(b.config) if a.__name__ != "authorize_action"]
        broken = Worker(
            temporal_client,
            task_queue=task_queue,
            workflows=[SpecialistRunWorkflow, ModelJobWorkflow],
            activities=[*activities, failing_authorization],
            activity_executor=concurrent.futures.ThreadPoolExecutor(max_workers=4),
            workflow_runner=sandbox_runner(),
        )
        async with broken:
            # A signal: a failed check must not fail the run.
            await temporal_client.get_workflow_handle(run_id).signal(
                "cancel", CancelRequest(actor=ACTOR, reason="check fails", proof=proof(run_id, "cancel"))
            )
            with pytest.raises(Refused) as refused:
                await b.enqueue(run_id)
            assert refused.value.code == "authorization_unavailable"
            view = await get_view(temporal_client, run_id)
            assert view.status is RunStatus.READY
            assert [(e["action"], e["code"]) for e in events(view, "action_refused")] == [
                ("cancel", "authorization_unavailable"),
                ("enqueue", "authorization_unavailable"),
            ]
            description = await temporal_client.get_workflow_handle(run_id).describe()
            assert description.status == WorkflowExecutionStatus.RUNNING

        # Once the check can be made again, the run goes on.
        async with b.worker():
            assert (await b.enqueue(run_id)).accepted
            view = await b.wait(run_id, RunStatus.AWAITING_DECISION)
    assert "cancel_requested" not in audit_kinds(view)


@within(30)
async def test_cancel_of_a_finished_run_is_refused_as_run_finished(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        view = await b.create(SLOW_QUERY, tier=Tier.RECOMMEND)
        view = await b.terminal(view.run_id)
        with pytest.raises(Refused) as refused:
            await b.cancel(view.run_id, "too late")
        assert refused.value.code == "run_finished"
        assert (await get_view(temporal_client, view.run_id)).status is RunStatus.RECOMMENDED


# -------------------------------------------------------------------------------------------- cancel


@within(30)
async def test_cancel_of_a_ready_run_ends_it_cancelled_without_a_model_job(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY)
        assert view.status is RunStatus.READY
        view = await b.cancel(view.run_id, "not needed")
        view = await b.terminal(view.run_id)
    assert view.status is RunStatus.CANCELLED
    assert transitions(view) == [("routing", "ready"), ("ready", "cancelled")]
    (cancelled,) = [e for e in view.audit if e.kind == "cancel_requested"]
    assert cancelled.actor == ACTOR and cancelled.data == {"reason": "not needed"}
    assert "model_job_started" not in audit_kinds(view)
    assert view.result is None and view.review is None
    assert await b.projected(view.run_id, "cancelled")


@within(30)
async def test_cancel_sent_before_any_worker_polled_ends_the_run_cancelled_before_capture(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b:
        inp = run_input(example(SLOW_QUERY), tier=Tier.READ_ONLY, enqueue=True)
        b.started.append(inp.run_id)
        handle = await temporal_client.start_workflow(
            "SpecialistRun",
            inp,
            id=inp.run_id,
            task_queue=task_queue,
            execution_timeout=dt.timedelta(seconds=60),
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        cancel = CancelRequest(actor=ACTOR, reason="changed my mind", proof=proof(inp.run_id, "cancel"))
        await handle.signal("cancel", cancel)
        async with b.worker():
            view = await b.terminal(inp.run_id)
            history = await handle.fetch_history()

    assert view.status is RunStatus.CANCELLED
    assert transitions(view) == [("routing", "cancelled")]
    assert audit_kinds(view) == ["run_created", "cancel_requested", "status_changed"]
    assert view.contract is None and view.result is None
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert "capture_contract" not in scheduled
    assert "call_model" not in scheduled
    assert scheduled[0] == "authorize_action"


@within(40)
async def test_cancel_while_the_model_job_runs_waits_for_it_keeps_the_result_and_skips_the_review(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    slow = SlowProvider(2.0)
    async with (
        bench(temporal_client, task_queue, tmp_path, providers={"slow": slow}, model="slow:demo") as b,
        b.worker(),
    ):
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY, enqueue=True)
        assert await asyncio.to_thread(slow.started.wait, 10)
        view = await b.cancel(view.run_id, "stop after this")
        assert view.status is RunStatus.CANCEL_REQUESTED
        assert not slow.finished.is_set()
        view = await b.terminal(view.run_id)

    assert view.status is RunStatus.CANCELLED
    assert transitions(view) == [
        ("routing", "queued"),
        ("queued", "running"),
        ("running", "cancel_requested"),
        ("cancel_requested", "cancelled"),
    ]
    assert view.result is not None and view.result.role == "database-optimizer"
    assert view.review is None
    assert [e["kind"] for e in events(view, "model_job_started")] == ["analysis"]
    assert slow.calls == 1
    assert await b.projected(view.run_id, "cancelled")


# -------------------------------------------------------------------------------- worker not running


@within(60)
async def test_a_decision_sent_while_no_worker_runs_completes_once_a_worker_starts(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b:
        async with b.worker():
            view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY, enqueue=True)
            view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION)

        handle = temporal_client.get_workflow_handle(view.run_id)
        pending = asyncio.create_task(
            handle.execute_update(
                "decide",
                DecisionRequest(
                    actor=ACTOR,
                    outcome=DecisionOutcome.ACCEPTED,
                    note="decided offline",
                    proof=proof(view.run_id, "decide"),
                ),
                result_type=ActionResult,
            )
        )
        await asyncio.sleep(1.0)
        assert not pending.done()

        async with b.worker():
            result = await asyncio.wait_for(pending, timeout=20)
            assert result.accepted and result.status is RunStatus.ACCEPTED
            view = await b.terminal(view.run_id)
    assert view.status is RunStatus.ACCEPTED
    assert view.decision is not None and view.decision.note == "decided offline"


# -------------------------------------------------------------------------------------------- budget


@within(40)
async def test_a_model_job_outliving_the_runtime_budget_ends_the_run_expired(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    slow = SlowProvider(30.0)
    async with (
        bench(
            temporal_client,
            task_queue,
            tmp_path,
            providers={"slow": slow},
            model="slow:demo",
            read_only_budget_seconds=2,
        ) as b,
        b.worker(),
    ):
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY, enqueue=True)
        assert view.contract is not None and view.contract.budgets.runtime_seconds == 2
        view = await b.terminal(view.run_id, timeout=20)

    assert view.status is RunStatus.EXPIRED
    assert view.error is not None and view.error.type == "runtime_budget_exhausted"
    assert view.result is None and view.review is None
    (exhausted,) = events(view, "budget_exhausted")
    assert exhausted["kind"] == "analysis"
    assert transitions(view)[-1] == ("running", "expired")
    assert await b.projected(view.run_id, "expired")


@within(40)
async def test_the_runtime_budget_starts_when_the_run_starts_running_not_while_it_waits_ready(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with (
        bench(temporal_client, task_queue, tmp_path, read_only_budget_seconds=2) as b,
        b.worker(),
    ):
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY)
        assert view.status is RunStatus.READY
        await asyncio.sleep(2.5)  # longer than the whole budget
        await b.enqueue(view.run_id)
        view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION)
    assert view.error is None and "budget_exhausted" not in audit_kinds(view)


@within(40)
async def test_a_model_selection_changed_after_capture_does_not_change_the_runs_contract(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    quota = FailingProvider(ErrorType.MODEL_QUOTA)
    async with bench(temporal_client, task_queue, tmp_path, providers={"quota": quota}) as b, b.worker():
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY)
        captured = (view.contract, view.contract_sha256)
        b.select("quota:broken")
        await b.enqueue(view.run_id)
        view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION)
    assert (view.contract, view.contract_sha256) == captured
    assert view.contract is not None and view.contract.model is not None
    assert view.contract.model.primary == REPLAY_MODEL
    assert quota.calls == 0


# -------------------------------------------------------------------------------------- model errors


_AWS_KEY = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example key id


@within(30)
async def test_an_answer_holding_a_credential_fails_the_run_and_the_key_is_nowhere_in_its_view_or_history(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    leaked = {**_recorded("analysis", "database-optimizer"), "summary": f"the key {_AWS_KEY} is live"}
    provider = TextProvider(lambda request: json.dumps(leaked))
    async with (
        bench(temporal_client, task_queue, tmp_path, providers={"test": provider}, model="test:m") as b,
        b.worker(),
    ):
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY, enqueue=True)
        view = await b.terminal(view.run_id)
        history = await temporal_client.get_workflow_handle(view.run_id).fetch_history()
    assert view.status is RunStatus.FAILED
    assert view.error is not None and view.error.type == ErrorType.SECRET_IN_OUTPUT
    (failed,) = events(view, "model_job_failed")
    assert failed["error_type"] == ErrorType.SECRET_IN_OUTPUT
    assert view.result is None
    assert _AWS_KEY not in view.model_dump_json()
    assert _AWS_KEY not in history.to_json()


@pytest.mark.parametrize(
    ("provider", "expected"),
    [
        (FailingProvider(ErrorType.MODEL_OUTPUT_SCHEMA), ErrorType.MODEL_OUTPUT_SCHEMA),
        (TextProvider(lambda request: "I think the index is missing."), ErrorType.MODEL_OUTPUT_SCHEMA),
        (
            TextProvider(
                lambda request: json.dumps(
                    {
                        **_recorded("analysis", "database-optimizer"),
                        "inspected_evidence": ["log:pg-slow-2026-11-27", "log:invented"],
                    }
                )
            ),
            ErrorType.MODEL_OUTPUT_INVALID,
        ),
    ],
    ids=["provider_schema_error", "not_json", "unknown_evidence"],
)
@within(30)
async def test_bad_model_output_fails_the_run_with_its_error_type(
    temporal_client: Client, task_queue: str, tmp_path: Path, provider: object, expected: str
) -> None:
    async with (
        bench(temporal_client, task_queue, tmp_path, providers={"test": provider}, model="test:m") as b,
        b.worker(),
    ):
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY, enqueue=True)
        view = await b.terminal(view.run_id)
    assert view.status is RunStatus.FAILED
    assert view.error is not None and view.error.type == expected
    (failed,) = events(view, "model_job_failed")
    assert failed["kind"] == "analysis" and failed["error_type"] == expected
    assert [a["model_id"] for a in failed["attempts"]] == ["test:m"]
    assert view.result is None
    assert await b.projected(view.run_id, "failed")


@within(30)
async def test_replay_without_a_recording_fails_the_run_with_replay_no_recording(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        view = await b.create(DASHBOARD, tier=Tier.READ_ONLY, enqueue=True)
        view = await b.terminal(view.run_id)
    assert view.status is RunStatus.FAILED
    assert view.error is not None and view.error.type == ErrorType.REPLAY_NO_RECORDING
    assert "frontend-developer" in view.error.message
    assert example(DASHBOARD).title in view.error.message


@within(30)
async def test_ordered_fallback_moves_past_a_quota_failure_and_audits_the_fallback_step(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    quota = FailingProvider(ErrorType.MODEL_QUOTA)
    async with bench(temporal_client, task_queue, tmp_path, providers={"quota": quota}) as b, b.worker():
        b.select("quota:big", REPLAY_MODEL)
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY, enqueue=True)
        view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION)
    assert view.contract is not None and view.contract.model is not None
    assert view.contract.model.chain == ["quota:big", REPLAY_MODEL]
    analysis, review = events(view, "model_job_completed")
    assert analysis["model"] == REPLAY_MODEL
    assert [(a["model_id"], a["outcome"], a["error_type"], a["fallback"]) for a in analysis["attempts"]] == [
        ("quota:big", "failed", ErrorType.MODEL_QUOTA, True),
        (REPLAY_MODEL, "ok", None, False),
    ]
    assert review["model"] == REPLAY_MODEL
    # model_quota is not retryable: one call per job.
    assert quota.calls == 2
    # Every call is its own audit event, the failed one with its class and the fallback step.
    assert [
        (a["kind"], a["model"], a["outcome"], a["error_type"], a["fallback"])
        for a in events(view, "model_attempt")
    ] == [
        ("analysis", "quota:big", "failed", ErrorType.MODEL_QUOTA, True),
        ("analysis", REPLAY_MODEL, "ok", None, False),
        ("review", "quota:big", "failed", ErrorType.MODEL_QUOTA, True),
        ("review", REPLAY_MODEL, "ok", None, False),
    ]
    assert all(a["latency_ms"] is not None for a in events(view, "model_attempt"))


@within(30)
async def test_primary_only_quota_failure_fails_the_run_without_fallback(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    quota = FailingProvider(ErrorType.MODEL_QUOTA)
    async with (
        bench(temporal_client, task_queue, tmp_path, providers={"quota": quota}, model="quota:big") as b,
        b.worker(),
    ):
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY, enqueue=True)
        view = await b.terminal(view.run_id)
    assert view.status is RunStatus.FAILED
    assert view.error is not None and view.error.type == ErrorType.MODEL_QUOTA
    (failed,) = events(view, "model_job_failed")
    assert [(a["model_id"], a["fallback"]) for a in failed["attempts"]] == [("quota:big", False)]
    assert quota.calls == 1


@within(30)
async def test_a_schema_error_never_falls_back_even_in_ordered_mode(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    bad = TextProvider(lambda request: "{not json")
    async with bench(temporal_client, task_queue, tmp_path, providers={"bad": bad}) as b, b.worker():
        b.select("bad:model", REPLAY_MODEL)
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY, enqueue=True)
        view = await b.terminal(view.run_id)
    assert view.status is RunStatus.FAILED
    assert view.error is not None and view.error.type == ErrorType.MODEL_OUTPUT_SCHEMA
    (failed,) = events(view, "model_job_failed")
    assert [(a["model_id"], a["error_type"], a["fallback"]) for a in failed["attempts"]] == [
        ("bad:model", ErrorType.MODEL_OUTPUT_SCHEMA, False)
    ]
    assert "model_job_completed" not in audit_kinds(view)


# -------------------------------------------------------------------------------------------- worker


@within(20)
async def test_build_worker_accepts_every_workflow_under_the_raising_sandbox(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Worker construction validates each workflow module in the sandbox, which raises on any
    # import that is not passed through on purpose: constructing it proves the modules are clean.
    config = ActivityConfig(database_url=f"sqlite:///{tmp_path / 's.db'}")
    built = build_worker(temporal_client, task_queue=task_queue, config=config)
    assert isinstance(built, Worker)


@within(20)
async def test_a_workflow_module_importing_sqlalchemy_outside_passthrough_fails_worker_construction(
    temporal_client: Client, task_queue: str
) -> None:
    from tests.workflows.unsafe_workflow import UnsafeImportWorkflow

    with pytest.raises(RuntimeError, match="UnsafeImportWorkflow") as raised:
        Worker(
            temporal_client,
            task_queue=task_queue,
            workflows=[UnsafeImportWorkflow],
            workflow_runner=sandbox_runner(),
        )
    assert "sqlalchemy" in repr(raised.value.__cause__)
    assert "not intentionally passed through" in str(raised.value.__cause__)


# ------------------------------------------------------------------------------------ support model


@within(40)
async def test_a_support_profile_on_plain_documentation_work_calls_the_support_model_and_audits_why(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Routes to technical-writer (support) with reviewer reality-checker (core), risk low.
    item = WorkItem(
        title="Write the onboarding guide for the reporting API",
        description="Developers ask the same questions every week. Draft a developer guide and a FAQ "
        "from the existing docs.",
        domain="documentation",
        evidence_refs=["doc:reporting-api-reference"],
        task_type=TaskType.DOCUMENT,
    )

    def answer(request: CompletionRequest) -> str:
        """A valid result for whichever profile and job the request is for."""
        review = request.identity.kind is JobKind.REVIEW
        return json.dumps(
            {
                "role": request.identity.profile_id,
                "axis": "onboarding guide coverage",
                "inspected_evidence": ["doc:reporting-api-reference"],
                "findings": [],
                "confidence": 0.6,
                "confidence_band": "medium",
                "closure": "partial",
                "recommended_next_action": "Draft the guide from the API reference.",
                **({"verdict": "agree"} if review else {}),
            }
        )

    calls: dict[str, list[CompletionRequest]] = {"primary": [], "support": []}

    def provider(name: str) -> TextProvider:
        """Records each request sent to provider ``name``, then answers it."""

        def record(request: CompletionRequest) -> str:
            calls[name].append(request)
            return answer(request)

        return TextProvider(record)

    providers: dict[str, ModelProvider] = {name: provider(name) for name in calls}
    async with bench(temporal_client, task_queue, tmp_path, providers=providers) as b, b.worker():
        b.store.select_models(ModelSelection(primary="primary:big", support="support:mini"), signer(ACTOR))
        view = await b.create(item, tier=Tier.READ_ONLY, enqueue=True)
        view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION)

    assert view.contract is not None
    assert (view.contract.primary, view.contract.reviewer) == ("technical-writer", "reality-checker")
    # The analysis by the support profile went to the support model, the core review to the primary.
    assert [(r.identity.kind, r.identity.profile_id, r.model_name) for r in calls["support"]] == [
        (JobKind.ANALYSIS, "technical-writer", "mini")
    ]
    assert [(r.identity.kind, r.identity.profile_id, r.model_name) for r in calls["primary"]] == [
        (JobKind.REVIEW, "reality-checker", "big")
    ]
    # Each job's calls draw on its class's pool, and the record of each pass says which.
    assert [(record.kind, record.model_class) for record in view.passes] == [
        (JobKind.ANALYSIS, ModelClass.SUPPORT),
        (JobKind.REVIEW, ModelClass.CORE),
    ]
    assert [e["model"] for e in events(view, "model_job_completed")] == ["support:mini", "primary:big"]
    analysis, review = events(view, "model_job_started")
    assert analysis["models"] == ["support:mini"] and analysis["uses_support_model"] is True
    assert analysis["model_reason"] == (
        "support profile technical-writer on documentation work: support model support:mini"
    )
    assert review["models"] == ["primary:big"] and review["uses_support_model"] is False
    assert review["model_reason"] == "core profile reality-checker: primary chain"


@within(40)
async def test_a_read_only_run_on_an_allow_listed_repository_gives_each_job_a_pack_read_at_the_frozen_commit(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    tree = make_working_tree(tmp_path / "orders-service")
    (tree / "db").mkdir()
    (tree / "db" / "report.sql").write_text("SELECT * FROM orders ORDER BY total;\n")
    git(tree, "add", ".")
    git(tree, "commit", "--quiet", "--no-gpg-sign", "-m", "report")
    base = git(tree, "rev-parse", "HEAD")
    item = example(SLOW_QUERY)
    item = item.model_copy(update={"evidence_refs": [*item.evidence_refs, "file:db/report.sql"]})
    recording = RecordingProvider()
    async with (
        bench(temporal_client, task_queue, tmp_path, providers={"rec": recording}, model="rec:demo") as b,
        b.worker(),
    ):
        b.add_repository("orders-service", tree, "main")
        view = await b.create(item, tier=Tier.READ_ONLY, enqueue=True)
        view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION)
    assert view.contract is not None and view.contract.base_commit == base
    analysis, review = view.context_packs
    assert (analysis.pack.job_kind, review.pack.job_kind) == (JobKind.ANALYSIS, JobKind.REVIEW)
    files = [entry for entry in analysis.pack.evidence if entry.ref == "file:db/report.sql"]
    assert [entry.content for entry in files] == ["SELECT * FROM orders ORDER BY total;\n"]
    completed = events(view, "model_job_completed")
    assert [event["pack_sha256"] for event in completed] == [analysis.sha256, review.sha256]
    assert all(len(event["pack_sha256"]) == 64 for event in completed)
    # What the model was sent is the rendered pack: the file's text, the stop rule, the exclusions.
    sent = recording.requests[0].context
    assert "SELECT * FROM orders ORDER BY total;" in sent and "## Stop rule" in sent
    assert analysis.pack.objective in sent


@within(30)
async def test_every_pass_is_recorded_and_independence_is_claimed_only_where_the_record_proves_it(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY, enqueue=True)
        view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION)
    analysis, review = view.passes
    assert (analysis.kind, analysis.profile, review.kind, review.profile) == (
        JobKind.ANALYSIS,
        "database-optimizer",
        JobKind.REVIEW,
        "backend-architect",
    )
    assert not analysis.independent and analysis.independence == [PRIMARY_PASS]
    assert review.independent
    assert review.independence[:2] == [
        "made by backend-architect, not the primary database-optimizer",
        f"its own job {review.job_id}",
    ]
    for record, output in ((analysis, view.result), (review, view.review)):
        assert output is not None and record.output_sha256 == canonical_sha256(output.model_dump(mode="json"))
        pack = next(p.pack for p in view.context_packs if p.sha256 == record.pack_sha256)
        assert record.guidance_sha256 == pack.profile_guidance_sha256
        assert record.models_requested == [REPLAY_MODEL] and [a.outcome for a in record.attempts] == ["ok"]
        # A read_only run's passes change nothing: no approval is asked for, none is seen.
        assert record.controls_requested == record.controls_observed
        assert record.controls_observed is not None
        assert record.controls_observed.approval.value == "not_required"
        assert record.controls_observed.approved_by is None
        assert record.started_at <= (record.finished_at or record.started_at)
