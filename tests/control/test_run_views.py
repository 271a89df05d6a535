"""What ``show`` prints of a run (``control.run_views.render_run``), on views made here (no server):
what the run was asked to do — its title, the task its contract gives the specialist, the evidence
refs — and why it was routed where it was, as Mission Control's run page shows them."""

from __future__ import annotations

import datetime as dt
import io

import pytest
from rich.console import Console

from catalog.capture import capture
from catalog.loaded import LoadedCatalog
from catalog.loader import load_catalog
from contracts.audit import AuditKind
from contracts.config import PolicyRecord
from contracts.enums import RiskLevel, Tier
from contracts.models import ModelSelection, ModelSelectionRecord
from contracts.output import ClosureStatus, ConfidenceBand, Finding, ReviewVerdict, SpecialistOutput
from contracts.policy import AutomationPolicy
from contracts.review_waves import PassOutcome, WavePass, WaveRecord
from contracts.runs import AuditEvent, CapturedContract, RunError, RunStatus, RunView
from control import run_views
from tests.workflows.harness import SLOW_QUERY, example, run_input

AT = dt.datetime(2026, 11, 1, 9, 30, tzinfo=dt.UTC)
RUN_ID = "SOR-0123456789ABCDEF"


@pytest.fixture(scope="module")
def catalog() -> LoadedCatalog:
    return load_catalog()


def captured(catalog: LoadedCatalog) -> CapturedContract:
    item = example(SLOW_QUERY).model_copy(update={"description": "Line one.\nLine two of the task."})
    return capture(
        run_input(item, tier=Tier.READ_ONLY, run_id=RUN_ID),
        catalog,
        PolicyRecord(policy=AutomationPolicy()),
        ModelSelectionRecord(
            selection=ModelSelection(primary="replay:demo"), selected_by="alice", selected_at=AT
        ),
        read_only_budget_seconds=1800,
        edit_budget_seconds=3600,
        approval_window_seconds=3600,
        base_commit=None,
    )


def created(title: str) -> AuditEvent:
    return AuditEvent(seq=1, at=AT, kind=AuditKind.RUN_CREATED, actor="alice", data={"title": title})


def rendered(view: RunView) -> str:
    buffer = io.StringIO()
    run_views.render_run(Console(file=buffer, width=250, force_terminal=False, color_system=None), view, {})
    return buffer.getvalue()


def test_show_prints_the_title_the_task_and_the_evidence_refs_the_contract_gives_the_specialist(
    catalog: LoadedCatalog,
) -> None:
    capture_ = captured(catalog)
    view = RunView(
        run_id=RUN_ID,
        status=RunStatus.AWAITING_DECISION,
        tier=Tier.READ_ONLY,
        automatic=False,
        route=capture_.route,
        contract=capture_.contract,
        contract_sha256=capture_.contract_sha256,
        result=None,
        review=None,
        decision=None,
        request_digest="0" * 64,
        created_at=AT,
        audit=[created(example(SLOW_QUERY).title)],
    )
    out = rendered(view)
    assert f"title           │ {example(SLOW_QUERY).title}" in out
    assert "task (the contract's, as the specialist is given it)" in out
    assert "Line two of the task." in out
    assert ", ".join(capture_.contract.evidence_refs) in out
    assert capture_.contract.evidence_refs


def test_show_prints_why_the_run_was_routed_to_its_primary(catalog: LoadedCatalog) -> None:
    capture_ = captured(catalog)
    view = RunView(
        run_id=RUN_ID,
        status=RunStatus.AWAITING_DECISION,
        tier=Tier.READ_ONLY,
        automatic=False,
        route=capture_.route,
        contract=capture_.contract,
        contract_sha256=capture_.contract_sha256,
        result=None,
        review=None,
        decision=None,
        request_digest="0" * 64,
        created_at=AT,
        audit=[],
    )
    out = rendered(view)
    assert capture_.route.reasons
    for reason in capture_.route.reasons:
        assert f"route reason    │ {reason}" in out


def test_show_of_a_run_refused_at_capture_still_names_its_title() -> None:
    view = RunView(
        run_id=RUN_ID,
        status=RunStatus.FAILED,
        tier=Tier.WORKTREE,
        automatic=False,
        route=None,
        contract=None,
        contract_sha256=None,
        result=None,
        review=None,
        decision=None,
        error=RunError(type="repo_alias_required", message="the work item needs the repo_alias"),
        request_digest="0" * 64,
        created_at=AT,
        audit=[created("Fix the flaky release gate")],
    )
    out = rendered(view)
    assert "title     │ Fix the flaky release gate" in out
    assert "task (the contract's" not in out


def bare_view(status: RunStatus, tier: Tier) -> RunView:
    return RunView(
        run_id=RUN_ID,
        status=status,
        tier=tier,
        automatic=False,
        route=None,
        contract=None,
        contract_sha256=None,
        result=None,
        review=None,
        decision=None,
        request_digest="0" * 64,
        created_at=AT,
        audit=[],
    )


def rendered_with_packs(view: RunView) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=250, force_terminal=False, color_system=None)
    run_views.render_run(console, view, {"context_packs": []})
    return buffer.getvalue()


def test_show_pack_of_a_recommend_run_says_it_makes_no_model_job_rather_than_none_yet() -> None:
    out = rendered_with_packs(bare_view(RunStatus.RECOMMENDED, Tier.RECOMMEND))
    assert "context packs: none (a recommend run makes no model job)" in out
    assert "none yet" not in out


def test_show_pack_of_a_run_that_ended_without_a_model_job_says_it_ended() -> None:
    out = rendered_with_packs(bare_view(RunStatus.FAILED, Tier.WORKTREE))
    assert "context packs: none (the run ended failed before any model job finished)" in out
    assert "none yet" not in out


def test_show_pack_of_a_run_still_going_says_none_yet() -> None:
    out = rendered_with_packs(bare_view(RunStatus.RUNNING, Tier.READ_ONLY))
    assert "context packs: none yet (a pack is shown once its model job has ended)" in out


def review(verdict: ReviewVerdict, title: str) -> SpecialistOutput:
    return SpecialistOutput(
        role="reviewer",
        axis="overall",
        inspected_evidence=["log:1"],
        findings=[Finding(severity=RiskLevel.MEDIUM, title=title, evidence_refs=["log:1"], detail="d")],
        confidence=0.7,
        confidence_band=ConfidenceBand.MEDIUM,
        gaps=[],
        closure=ClosureStatus.PARTIAL,
        recommended_next_action="decide",
        verdict=verdict,
    )


def test_the_review_of_a_wave_run_is_labelled_as_one_pass_not_the_waves_verdict() -> None:
    agreeing = review(ReviewVerdict.AGREE, "holds")
    dissenting = review(ReviewVerdict.DISAGREE, "does not hold")
    wave = WaveRecord(
        passes=[
            WavePass(
                index=1, profile="backend-architect", axes=["overall"], questions=["q"], job_id="j-1",
                pack_sha256="0" * 64, pack_bytes=10, outcome=PassOutcome.COMPLETED, output=agreeing,
            ),
            WavePass(
                index=2, profile="code-reviewer", axes=["code"], questions=["q"], job_id="j-2",
                pack_sha256="1" * 64, pack_bytes=9, outcome=PassOutcome.COMPLETED, output=dissenting,
            ),
        ],
        max_in_flight=2,
    )  # fmt: skip
    view = bare_view(RunStatus.AWAITING_DECISION, Tier.READ_ONLY).model_copy(
        update={"review": agreeing, "wave": wave}
    )
    out = " ".join(rendered(view).split())  # a table's title wraps at the table's width
    assert "review (pass 1, backend-architect, of the wave's 2: every pass under 'review wave')" in out
    assert "review: confidence" not in out


def test_the_review_of_a_single_review_run_keeps_its_plain_label() -> None:
    view = bare_view(RunStatus.AWAITING_DECISION, Tier.READ_ONLY).model_copy(
        update={"review": review(ReviewVerdict.AGREE, "holds")}
    )
    assert "review: confidence 0.70 (medium), verdict agree" in " ".join(rendered(view).split())
