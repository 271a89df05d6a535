"""Review waves in a ``SpecialistRun`` (docs/architecture.md "Orchestration"), on a real dev server:
the contract's frozen roster runs as blinded review passes — packs frozen first, dispatched in
descending pack size with at most four in flight and each finished slot refilled — every pass joined
before the decision, and the consolidation lists agreements, conflicts left for the operator and
gaps (a failed pass among them). A run whose contract decides a single review is unchanged. Each
run's history replays against the current code; a wave run's carries the ``review-waves`` marker."""

from __future__ import annotations

import base64
import copy
import json
import threading
import time
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from activities.providers.base import CompletionRequest, ProviderError
from contracts.enums import Tier
from contracts.errors import ErrorType
from contracts.hashing import canonical_sha256
from contracts.model_classes import ModelClass, ReasoningEffort
from contracts.models import ModelSelection
from contracts.orchestration import AdvisoryTopic, ReviewShape
from contracts.output import JobKind
from contracts.review_waves import LEFT_FOR_THE_OPERATOR, MAX_PASSES_IN_FLIGHT, PassOutcome
from contracts.runs import DecisionOutcome, RunStatus
from contracts.work_item import WorkItem
from tests.workflows.harness import (
    ACTOR,
    SLOW_QUERY,
    bench,
    events,
    example,
    recorded_response,
    signer,
    within,
)
from worker import WORKFLOWS, sandbox_runner
from workflows.review_wave import CAPACITY_BACKOFF
from workflows.specialist_run import PATCH_RUN_V6

TEMPLATE = recorded_response("analysis", "database-optimizer", example(SLOW_QUERY).title)
CODE = ["file:src/export.py", "file:tests/test_export.py", "file:.ci/run"]
SEVEN = [*CODE, "file:docs/export.md", "file:src/auth/tokens.py", "file:web/a11y/export.css"]


class WaveProvider:
    """Answers every job for whoever asks: an analysis, or a review that agrees — except the
    profiles in ``disagree`` (which disagree), ``fail`` (whose calls fail) and ``rate_limit`` (whose
    first N calls are refused with a rate limit). Each call takes ``delay`` seconds, and the most
    calls ever in flight at once is kept."""

    def __init__(
        self,
        *,
        disagree: tuple[str, ...] = (),
        fail: tuple[str, ...] = (),
        rate_limit: dict[str, int] | None = None,
        delay: float = 0.4,
    ) -> None:
        self.disagree, self.fail, self.delay = set(disagree), set(fail), delay
        self.rate_limit = dict(rate_limit or {})
        self.reviews: list[CompletionRequest] = []
        self.in_flight = self.most = 0
        self._lock = threading.Lock()

    def complete(self, request: CompletionRequest) -> str:
        identity = request.identity
        with self._lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            if identity.kind is JobKind.REVIEW:
                self.reviews.append(request)
        try:
            time.sleep(self.delay)
            if identity.profile_id in self.fail:
                raise ProviderError(ErrorType.MODEL_SAFETY, f"{identity.profile_id} refuses")
            with self._lock:
                refuse = self.rate_limit.get(identity.profile_id, 0) > 0
                if refuse:
                    self.rate_limit[identity.profile_id] -= 1
            if refuse:
                raise ProviderError(ErrorType.MODEL_RATE_LIMITED, "429: slow down")
            answer: dict[str, Any] = copy.deepcopy(TEMPLATE)
            answer["role"] = identity.profile_id
            answer["inspected_evidence"] = []
            for finding in answer["findings"]:
                finding["evidence_refs"] = []
            answer["findings"] = answer["findings"][:1]
            answer["findings"][0]["title"] = "The export query has no index on created_at"
            answer["gaps"] = [f"{identity.profile_id} saw no production plan"]
            if identity.kind is JobKind.REVIEW:
                answer["verdict"] = "disagree" if identity.profile_id in self.disagree else "agree"
            return json.dumps(answer)
        finally:
            with self._lock:
                self.in_flight -= 1


async def _replays(client: Client, run_id: str) -> list[str]:
    """Replay the run's history against the current workflow code; return its patch markers."""
    history = await client.get_workflow_handle(run_id).fetch_history()
    replayer = Replayer(
        workflows=list(WORKFLOWS), data_converter=pydantic_data_converter, workflow_runner=sandbox_runner()
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure
    found = []
    for event in json.loads(history.to_json())["events"]:
        marker = event.get("markerRecordedEventAttributes")
        if marker and marker["markerName"] == "core_patch":
            payloads = marker["details"]["patch-data"]["payloads"]
            found += [json.loads(base64.b64decode(payload["data"]))["id"] for payload in payloads]
    return found


async def _wave_run(
    client: Client, task_queue: str, tmp_path: Path, refs: list[str], provider: WaveProvider
) -> Any:
    item = WorkItem(title="Harden the report export", evidence_refs=refs)
    async with (
        bench(client, task_queue, tmp_path, providers={"test": provider}, model="test:m") as b,
        b.worker(),
    ):
        view = await b.create(item, tier=Tier.READ_ONLY, enqueue=True, review_wave=True)
        view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION, timeout=60)
        decided = await b.decide(view.run_id, DecisionOutcome.ACCEPTED)
        assert decided.accepted, decided
        final = await b.terminal(view.run_id, timeout=30)
    # The wave runs under the run's one marker (run-v6); a run recorded under run-v5 asked
    # review-waves of its own (tests/histories/v6/review_wave.json replays).
    assert await _replays(client, view.run_id) == [PATCH_RUN_V6]
    return view, final


@within(90)
async def test_a_wave_of_seven_passes_runs_four_at_a_time_refills_and_joins_all_before_the_decision(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    provider = WaveProvider()
    view, final = await _wave_run(temporal_client, task_queue, tmp_path, SEVEN, provider)
    assert view.contract is not None and view.contract.orchestration is not None
    roster = view.contract.orchestration.roster
    assert view.contract.orchestration.shape is ReviewShape.WAVE and len(roster) == 7
    wave = view.wave
    assert wave is not None and wave.consolidation is not None
    assert [p.profile for p in wave.passes] == [p.profile for p in roster]
    assert all(p.outcome is PassOutcome.COMPLETED for p in wave.passes)
    assert wave.max_in_flight == MAX_PASSES_IN_FLIGHT == provider.most
    # Dispatched in descending frozen pack size, the profile id breaking ties.
    by_dispatch = sorted(wave.passes, key=lambda p: p.dispatched or 0)
    assert [(-p.pack_bytes, p.profile) for p in by_dispatch] == sorted(
        (-p.pack_bytes, p.profile) for p in wave.passes
    )
    # Refill: the fifth pass started no later than the last of the first four finished (in the same
    # workflow task as a freed slot, both carry that task's time).
    first_four_end = max(p.finished_at for p in by_dispatch[:4] if p.finished_at)
    assert by_dispatch[4].started_at is not None and by_dispatch[4].started_at <= first_four_end
    # Every pass was joined before the decision; each reviewer saw its own axes, never the author.
    assert all(p.finished_at is not None and p.finished_at <= final.decision.at for p in wave.passes)
    assert len(provider.reviews) == 7
    for request, wave_pass in zip(
        sorted(provider.reviews, key=lambda r: r.identity.profile_id),
        sorted(wave.passes, key=lambda p: p.profile),
        strict=True,
    ):
        assert request.identity.profile_id == wave_pass.profile
        assert all(axis in request.identity.task for axis in wave_pass.axes)
        assert "general-orchestrator" not in request.context
    assert all(p.pack_sha256 in {pack.sha256 for pack in final.context_packs} for p in wave.passes)
    assert len([e for e in events(final, "model_job_completed") if "pass" in e]) == 7
    assert len([e for e in events(final, "model_attempt") if e["kind"] == "review"]) == 7  # every call
    assert f"passes {', '.join(str(p.index) for p in wave.passes)} each raise" in " ".join(
        wave.consolidation.agreements
    )
    assert final.status is RunStatus.ACCEPTED


@within(90)
async def test_a_wave_of_four_consolidates_a_conflict_for_the_operator_and_a_failed_pass_as_a_gap(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    provider = WaveProvider(disagree=("code-reviewer",), fail=("devops-automator",))
    view, final = await _wave_run(temporal_client, task_queue, tmp_path, CODE, provider)
    wave = view.wave
    assert wave is not None and wave.consolidation is not None and len(wave.passes) == 4
    outcomes = {p.profile: p.outcome for p in wave.passes}
    assert outcomes["devops-automator"] is PassOutcome.FAILED
    assert sum(outcome is PassOutcome.COMPLETED for outcome in outcomes.values()) == 3
    (conflict,) = wave.consolidation.conflicts
    code = next(p for p in wave.passes if p.profile == "code-reviewer")
    assert conflict.disagreeing == [code.index] and conflict.resolution == LEFT_FOR_THE_OPERATOR
    assert len(conflict.agreeing) == 2
    assert any("devops-automator on ci): no review (model_safety" in gap for gap in wave.consolidation.gaps)
    assert any("saw no production plan" in gap for gap in wave.consolidation.gaps)
    (failed,) = [e for e in events(final, "model_job_failed") if e.get("pass") is not None]
    assert failed["profile"] == "devops-automator"
    assert view.review is not None and view.review.role == wave.passes[0].profile  # the overall pass
    # Each pass's record: what it was given and did, and independence only where it is proven.
    primary = view.contract.primary if view.contract else ""
    for wave_pass in wave.passes:
        assert wave_pass.models_requested == ["test:m"]
        assert [a.model_id for a in wave_pass.attempts] and all(
            a.model_id == "test:m" for a in wave_pass.attempts
        )
        if wave_pass.outcome is PassOutcome.COMPLETED:
            assert wave_pass.independent and wave_pass.output is not None
            assert wave_pass.output_sha256 == canonical_sha256(wave_pass.output.model_dump(mode="json"))
            pack = next(p.pack for p in final.context_packs if p.sha256 == wave_pass.pack_sha256)
            assert wave_pass.guidance_sha256 == pack.profile_guidance_sha256
            assert f"made by {wave_pass.profile}, not the primary {primary}" in wave_pass.independence
        else:
            assert not wave_pass.independent and wave_pass.output_sha256 is None
            assert [a.outcome for a in wave_pass.attempts] == ["failed"]


@within(60)
async def test_a_wave_of_one_pass_and_a_single_review_stay_one_reviewer(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    provider = WaveProvider(delay=0.0)
    item = example(SLOW_QUERY)
    async with (
        bench(temporal_client, task_queue, tmp_path, providers={"test": provider}, model="test:m") as b,
        b.worker(),
    ):
        waved = await b.create(item, tier=Tier.READ_ONLY, enqueue=True, review_wave=True)
        waved = await b.wait(waved.run_id, RunStatus.AWAITING_DECISION, timeout=30)
        single = await b.create(item, tier=Tier.READ_ONLY, enqueue=True)
        single = await b.wait(single.run_id, RunStatus.AWAITING_DECISION, timeout=30)
    # The slow query's data axis would go to its primary: it folds into the overall pass.
    assert waved.wave is not None and [(p.profile, p.axes) for p in waved.wave.passes] == [
        ("backend-architect", ["overall", "data"])
    ]
    # The data axis names the primary's profile: its reviewer takes it in line, and the record says so.
    assert waved.wave.passes[0].substitutes == {"data": "database-optimizer"}
    assert single.contract is not None and single.contract.orchestration is not None
    assert single.contract.orchestration.shape is ReviewShape.SINGLE and single.wave is None
    assert single.review is not None and single.review.role == "backend-architect"
    # Both under the run's one marker; each replays.
    assert await _replays(temporal_client, waved.run_id) == [PATCH_RUN_V6]
    assert await _replays(temporal_client, single.run_id) == [PATCH_RUN_V6]


@within(90)
async def test_a_pass_refused_for_capacity_is_kept_queued_and_runs_again_once_another_pass_finished(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    # Two refusals use up the job's two attempts: the pass's job fails with model_rate_limited.
    provider = WaveProvider(rate_limit={"test-automation-engineer": 2})
    view, final = await _wave_run(temporal_client, task_queue, tmp_path, CODE, provider)
    wave = view.wave
    assert wave is not None and wave.consolidation is not None
    tests_pass = next(p for p in wave.passes if p.profile == "test-automation-engineer")
    assert tests_pass.outcome is PassOutcome.COMPLETED and tests_pass.requeued == 1
    assert tests_pass.job_id.endswith("-review-" + str(tests_pass.index) + "-r1")
    others = [p for p in wave.passes if p is not tests_pass]
    assert tests_pass.started_at is not None
    assert tests_pass.started_at >= min(p.finished_at for p in others if p.finished_at)
    (refused,) = [e for e in events(final, "model_job_failed") if e.get("requeued_for_capacity")]
    assert refused["profile"] == "test-automation-engineer" and refused["error_type"] == "model_rate_limited"
    assert not wave.consolidation.gaps or all("no review" not in gap for gap in wave.consolidation.gaps)


@within(90)
async def test_passes_refused_for_capacity_do_not_release_each_other_they_wait_for_the_backoff(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    every = {"reality-checker": 2, "code-reviewer": 2, "test-automation-engineer": 2, "devops-automator": 2}
    provider = WaveProvider(rate_limit=every, delay=0.05)
    view, final = await _wave_run(temporal_client, task_queue, tmp_path, CODE, provider)
    assert view.wave is not None and all(p.requeued == 1 for p in view.wave.passes)
    assert all(p.outcome is PassOutcome.COMPLETED for p in view.wave.passes)
    refused = [e for e in final.audit if e.kind == "model_job_failed" and e.data.get("requeued_for_capacity")]
    again = [e for e in final.audit if e.kind == "model_job_started" and e.data.get("pass")][4:]
    assert len(refused) == 4 and len(again) == 4
    # No pass came back in between: every pass waited for the backoff after the last refusal.
    waited = min(e.at for e in again) - max(e.at for e in refused)
    assert waited.total_seconds() >= CAPACITY_BACKOFF.total_seconds() - 0.5


@within(90)
async def test_a_cancel_during_a_wave_dispatches_nothing_more_and_joins_the_passes_in_flight(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    provider = WaveProvider(delay=1.5)
    item = WorkItem(title="Harden the report export", evidence_refs=SEVEN)
    async with (
        bench(temporal_client, task_queue, tmp_path, providers={"test": provider}, model="test:m") as b,
        b.worker(),
    ):
        view = await b.create(item, tier=Tier.READ_ONLY, enqueue=True, review_wave=True)
        await b.wait(view.run_id, lambda v: v.wave is not None and v.wave.max_in_flight == 4, timeout=60)
        await b.cancel(view.run_id, reason="enough")
        final = await b.terminal(view.run_id, timeout=60)
    assert final.status is RunStatus.CANCELLED
    wave = final.wave
    assert wave is not None
    dispatched = [p for p in wave.passes if p.dispatched is not None]
    assert len(dispatched) == 4 and all(p.outcome is not None for p in dispatched)  # joined
    undispatched = [p for p in wave.passes if p.dispatched is None]
    assert len(undispatched) == 3
    assert all(p.message == "not dispatched: the run was cancelled" for p in undispatched)
    assert len(provider.reviews) == 4
    assert "cancel_requested" in [e.kind for e in final.audit]


@within(60)
async def test_an_advisory_pass_asked_for_runs_on_the_advisory_model_in_its_class_and_is_recorded(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    provider = WaveProvider(delay=0.0)
    item = example(SLOW_QUERY)
    async with (
        bench(temporal_client, task_queue, tmp_path, providers={"test": provider}, model=None) as b,
        b.worker(),
    ):
        selection = ModelSelection(
            primary="test:m", advisory="test:adviser", efforts={ModelClass.ADVISORY: ReasoningEffort.HIGH}
        )
        b.store.select_models(selection, signer(ACTOR))
        view = await b.create(item, tier=Tier.READ_ONLY, enqueue=True, advisory=AdvisoryTopic.SECURITY)
        view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION, timeout=30)
    assert view.contract is not None and view.contract.model is not None
    assert view.contract.model.advisory == "test:adviser"
    assert view.wave is not None
    overall, advisory = view.wave.passes
    assert (overall.profile, overall.model_class, overall.model_id) == (
        "backend-architect",
        ModelClass.CORE,
        "test:m",
    )
    assert (advisory.profile, advisory.axes) == ("application-security-engineer", ["advisory-security"])
    assert (advisory.model_class, advisory.models_requested, advisory.model_id) == (
        ModelClass.ADVISORY, ["test:adviser"], "test:adviser",
    )  # fmt: skip
    assert [a.effort_requested for a in advisory.attempts] == ["high"]
    assert advisory.outcome is PassOutcome.COMPLETED and advisory.independent
    calls = {(r.identity.profile_id, r.model_name, r.effort) for r in provider.reviews}
    assert calls == {("backend-architect", "m", None), ("application-security-engineer", "adviser", "high")}
    started = {
        e.data["pass"]: e.data for e in view.audit if e.kind == "model_job_started" and "pass" in e.data
    }
    assert (started[2]["model_class"], started[2]["effort"], started[2]["models"]) == (
        "advisory", "high", ["test:adviser"],
    )  # fmt: skip
    assert started[2]["controls_requested"]["approval"] == "not_required"
    assert await _replays(temporal_client, view.run_id) == [PATCH_RUN_V6]
