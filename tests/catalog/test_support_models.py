"""Support-model routing, captured in the contract (``catalog.capture.assign_models`` and
``contracts.runs.ModelSnapshot.for_job``): a ``support`` profile on bounded support work uses the
selection's support model; core profiles, and all security, architecture, runtime and
release-blocking work, use the primary chain; the choice and its reason are part of the contract and
its digest; contracts captured before support routing behave exactly as before."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from pydantic import ValidationError

from catalog.capture import FLAG_WORK, capture
from catalog.loaded import LoadedCatalog
from catalog.router import route
from contracts.config import PolicyRecord
from contracts.enums import FallbackMode, RiskFlag, TaskType, Tier
from contracts.hashing import canonical_sha256
from contracts.models import ModelSelection, ModelSelectionRecord
from contracts.output import JobKind
from contracts.policy import AutomationPolicy
from contracts.runs import CapturedContract, ModelAssignment, ModelSnapshot, RunInput
from contracts.work_item import WorkItem

SELECTED_AT = dt.datetime(2026, 11, 1, 9, 30, tzinfo=dt.UTC)
RUN_ID = "SOR-0123456789ABCDEF"
PRIMARY = "openai:big"
FALLBACK = "anthropic:large"
SUPPORT = "openai:mini"
DOCS_REASON = f"support profile technical-writer on documentation work: support model {SUPPORT}"

# Plain documentation work: routes to technical-writer (support), reviewed by reality-checker (core);
# no risk flag, risk low.
DOCS = WorkItem(
    title="Write the onboarding guide for the reporting API",
    description="Developers ask the same questions every week. Draft a developer guide and a FAQ from "
    "the existing docs.",
    domain="documentation",
    evidence_refs=["doc:reporting-api-reference"],
    task_type=TaskType.DOCUMENT,
)
# A product review: routes to product-manager (core), reviewed by research-synthesist (support).
PRODUCT_REVIEW = WorkItem(
    title="Plan the product roadmap for next quarter",
    domain="product",
    evidence_refs=["doc:roadmap-draft"],
    task_type=TaskType.REVIEW,
)


def _selection(support: str | None = SUPPORT, *, fallbacks: tuple[str, ...] = ()) -> ModelSelectionRecord:
    mode = FallbackMode.ORDERED if fallbacks else FallbackMode.PRIMARY_ONLY
    return ModelSelectionRecord(
        selection=ModelSelection(
            primary=PRIMARY, fallbacks=list(fallbacks), fallback_mode=mode, support=support
        ),
        selected_by="alice",
        selected_at=SELECTED_AT,
    )


def _capture(
    catalog: LoadedCatalog, item: WorkItem, selection: ModelSelectionRecord | None = None
) -> CapturedContract:
    return capture(
        RunInput(run_id=RUN_ID, work_item=item, requested_tier=Tier.READ_ONLY, request_digest="0" * 64),
        catalog,
        PolicyRecord(policy=AutomationPolicy()),
        selection if selection is not None else _selection(),
        read_only_budget_seconds=1800,
        edit_budget_seconds=3600,
    )


def _assignments(captured: CapturedContract) -> dict[JobKind, ModelAssignment]:
    snapshot = captured.contract.model
    assert snapshot is not None
    return {assignment.kind: assignment for assignment in snapshot.assignments}


def _docs(**changes: Any) -> WorkItem:
    return DOCS.model_copy(update=changes)


def test_the_example_work_items_route_as_these_tests_assume(loaded_catalog: LoadedCatalog) -> None:
    docs = route(DOCS, loaded_catalog)
    assert (docs.primary, docs.reviewer, docs.risk.value) == ("technical-writer", "reality-checker", "low")
    product = route(PRODUCT_REVIEW, loaded_catalog)
    assert (product.primary, product.reviewer, product.risk.value) == (
        "product-manager",
        "research-synthesist",
        "low",
    )


def test_without_a_support_model_both_jobs_use_the_primary_chain(loaded_catalog: LoadedCatalog) -> None:
    captured = _capture(loaded_catalog, DOCS, _selection(None, fallbacks=(FALLBACK,)))
    analysis, review = _assignments(captured).values()
    assert (analysis.kind, analysis.profile) == (JobKind.ANALYSIS, "technical-writer")
    assert (review.kind, review.profile) == (JobKind.REVIEW, "reality-checker")
    for assignment in (analysis, review):
        assert assignment.models == [PRIMARY, FALLBACK]
        assert not assignment.uses_support_model
    assert analysis.reason == "support profile technical-writer, no support model selected: primary chain"
    assert review.reason == "core profile reality-checker: primary chain"
    snapshot = captured.contract.model
    assert snapshot is not None
    assert snapshot.for_job(JobKind.ANALYSIS).chain == [PRIMARY, FALLBACK]


def test_a_support_profile_on_plain_documentation_work_uses_the_support_model(
    loaded_catalog: LoadedCatalog,
) -> None:
    captured = _capture(loaded_catalog, DOCS, _selection(fallbacks=(FALLBACK,)))
    analysis = _assignments(captured)[JobKind.ANALYSIS]
    assert analysis.models == [SUPPORT] and analysis.uses_support_model
    assert analysis.reason == DOCS_REASON
    snapshot = captured.contract.model
    assert snapshot is not None
    job = snapshot.for_job(JobKind.ANALYSIS)
    # The support model alone: it never falls back to the primary chain.
    assert (job.primary, job.fallbacks, job.fallback_mode) == (SUPPORT, [], FallbackMode.PRIMARY_ONLY)
    assert job.chain == [SUPPORT]


def test_a_core_profile_uses_the_primary_chain_even_with_a_support_model_selected(
    loaded_catalog: LoadedCatalog,
) -> None:
    captured = _capture(loaded_catalog, DOCS, _selection(fallbacks=(FALLBACK,)))
    review = _assignments(captured)[JobKind.REVIEW]
    assert review.models == [PRIMARY, FALLBACK] and not review.uses_support_model
    assert review.reason == "core profile reality-checker: primary chain"
    snapshot = captured.contract.model
    assert snapshot is not None
    assert snapshot.for_job(JobKind.REVIEW).chain == [PRIMARY, FALLBACK]


def test_a_support_reviewer_of_a_core_primary_uses_the_support_model_for_the_review_only(
    loaded_catalog: LoadedCatalog,
) -> None:
    assignments = _assignments(_capture(loaded_catalog, PRODUCT_REVIEW))
    assert assignments[JobKind.ANALYSIS].reason == "core profile product-manager: primary chain"
    assert assignments[JobKind.ANALYSIS].models == [PRIMARY]
    assert assignments[JobKind.REVIEW].models == [SUPPORT]
    assert assignments[JobKind.REVIEW].reason == (
        f"support profile research-synthesist on review work: support model {SUPPORT}"
    )


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        (
            {"risk_flags": [RiskFlag.CREDENTIALS]},
            "on security and release-blocking work (risk flag credentials; risk high)",
        ),
        ({"risk_flags": [RiskFlag.REGULATED]}, "on security work (risk flag regulated)"),
        ({"risk_flags": [RiskFlag.PRODUCTION]}, "on runtime work (risk flag production)"),
        (
            {"risk_flags": [RiskFlag.DATA_LOSS]},
            "on runtime and release-blocking work (risk flag data_loss; risk high)",
        ),
        ({"task_type": TaskType.FIX}, "on runtime work (task type fix)"),
        ({"task_type": TaskType.DESIGN}, "on architecture work (task type design)"),
        (
            {"title": "Write the customer notice about the breach"},
            "on release-blocking work (risk high)",
        ),
        (
            {"title": "Write the onboarding guide for the outage runbook"},
            "on security or runtime work (risk medium from risk terms in the text)",
        ),
    ],
    ids=[
        "credentials",
        "regulated",
        "production",
        "data_loss",
        "fix",
        "design",
        "breach_in_text",
        "outage_in_text",
    ],
)
def test_a_support_profile_on_security_architecture_runtime_or_release_blocking_work_uses_the_primary_chain(
    loaded_catalog: LoadedCatalog, changes: dict[str, Any], reason: str
) -> None:
    captured = _capture(loaded_catalog, _docs(**changes))
    assert captured.route.primary == "technical-writer"
    analysis = _assignments(captured)[JobKind.ANALYSIS]
    assert analysis.models == [PRIMARY] and not analysis.uses_support_model
    assert analysis.reason == f"support profile technical-writer {reason}: primary chain"
    snapshot = captured.contract.model
    assert snapshot is not None
    assert snapshot.for_job(JobKind.ANALYSIS).chain == [PRIMARY]


def test_every_risk_flag_names_the_kind_of_work_it_marks() -> None:
    assert set(FLAG_WORK) == set(RiskFlag)


def test_the_assignments_are_inside_the_contract_digest(loaded_catalog: LoadedCatalog) -> None:
    base = _capture(loaded_catalog, DOCS)
    other_support = _capture(loaded_catalog, DOCS, _selection("openai:tiny"))
    no_support = _capture(loaded_catalog, DOCS, _selection(None))
    for captured in (base, other_support, no_support):
        assert captured.contract_sha256 == canonical_sha256(captured.contract.model_dump(mode="json"))
    assert len({base.contract_sha256, other_support.contract_sha256, no_support.contract_sha256}) == 3
    dumped = base.contract.model_dump(mode="json")["model"]["assignments"]
    assert [a["reason"] for a in dumped] == [DOCS_REASON, "core profile reality-checker: primary chain"]


def test_capturing_twice_gives_the_same_assignments_and_digest(loaded_catalog: LoadedCatalog) -> None:
    first = _capture(loaded_catalog, DOCS)
    second = _capture(loaded_catalog, DOCS)
    assert first.contract == second.contract
    assert first.contract_sha256 == second.contract_sha256


def test_a_snapshot_recorded_before_support_routing_validates_and_runs_every_job_on_itself() -> None:
    # The shape of a model snapshot in contracts captured before assignments existed.
    snapshot = ModelSnapshot.model_validate(
        {
            "primary": PRIMARY,
            "fallbacks": [FALLBACK],
            "fallback_mode": "ordered",
            "support": SUPPORT,
            "source": "model selection by alice at 2026-11-01T09:30:00+00:00",
        }
    )
    assert snapshot.assignments == []
    for kind in JobKind:
        assert snapshot.assignment_for(kind) is None
        assert snapshot.for_job(kind) is snapshot


def test_a_job_snapshot_carries_no_assignments_so_the_review_input_never_names_the_author(
    loaded_catalog: LoadedCatalog,
) -> None:
    snapshot = _capture(loaded_catalog, DOCS).contract.model
    assert snapshot is not None
    for kind in JobKind:
        job = snapshot.for_job(kind)
        assert job.assignments == []
        assert job.for_job(kind) is job
    assert "technical-writer" not in snapshot.for_job(JobKind.REVIEW).model_dump_json()


@pytest.mark.parametrize(
    "assignment",
    [
        {"kind": "analysis", "profile": "p", "models": [PRIMARY], "uses_support_model": True, "reason": "r"},
        {"kind": "analysis", "profile": "p", "models": [SUPPORT], "uses_support_model": False, "reason": "r"},
    ],
    ids=["support_flag_on_the_primary", "primary_chain_naming_the_support_model"],
)
def test_a_snapshot_whose_assignment_differs_from_the_chain_it_claims_is_refused(
    assignment: dict[str, Any],
) -> None:
    with pytest.raises(ValidationError, match="assignment"):
        ModelSnapshot.model_validate(
            {"primary": PRIMARY, "support": SUPPORT, "source": "test", "assignments": [assignment]}
        )


def test_a_snapshot_with_two_assignments_for_one_job_is_refused() -> None:
    one = {"kind": "review", "profile": "p", "models": [PRIMARY], "uses_support_model": False, "reason": "r"}
    with pytest.raises(ValidationError, match="at most one assignment per job kind"):
        ModelSnapshot.model_validate({"primary": PRIMARY, "source": "test", "assignments": [one, one]})
