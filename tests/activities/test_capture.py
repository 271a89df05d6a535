"""Contract capture (``catalog.capture.capture`` and the ``capture_contract`` activity): the digest
is the RFC 8785 sha256 of the contract, stable for the same input, and moves with the model
selection; policy and tier refusals are raised, never captured."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.config import ActivityConfig
from activities.routing import RoutingActivities
from activities.store_access import SharedStore
from catalog.capture import capture
from catalog.hashing import canonical_sha256
from catalog.loaded import LoadedCatalog
from catalog.loader import load_catalog
from contracts.config import PolicyRecord
from contracts.enums import AutomationMode, FallbackMode, Tier
from contracts.errors import Refused
from contracts.models import ModelSelection, ModelSelectionRecord
from contracts.policy import AutomationPolicy
from contracts.runs import CapturedContract, RunInput
from tests.workflows.harness import AUTH_REVIEW, SLOW_QUERY, example, run_input

SELECTED_AT = dt.datetime(2026, 11, 1, 9, 30, tzinfo=dt.UTC)
RUN_ID = "SOR-0123456789ABCDEF"


@pytest.fixture(scope="module")
def catalog() -> LoadedCatalog:
    return load_catalog()


def _selection(primary: str = "replay:demo", *fallbacks: str) -> ModelSelectionRecord:
    mode = FallbackMode.ORDERED if fallbacks else FallbackMode.PRIMARY_ONLY
    return ModelSelectionRecord(
        selection=ModelSelection(primary=primary, fallbacks=list(fallbacks), fallback_mode=mode),
        selected_by="alice",
        selected_at=SELECTED_AT,
    )


def _policy(mode: AutomationMode = AutomationMode.RECOMMEND, ceiling: Tier = Tier.RECOMMEND) -> PolicyRecord:
    return PolicyRecord(policy=AutomationPolicy(mode=mode, maximum_automatic_tier=ceiling))


def _capture(
    catalog: LoadedCatalog,
    inp: RunInput | None = None,
    *,
    policy: PolicyRecord | None = None,
    selection: ModelSelectionRecord | None = None,
) -> CapturedContract:
    return capture(
        inp or run_input(example(SLOW_QUERY), tier=Tier.READ_ONLY, run_id=RUN_ID),
        catalog,
        policy or _policy(),
        selection if selection is not None else _selection(),
        read_only_budget_seconds=1800,
        edit_budget_seconds=3600,
    )


def test_contract_digest_is_the_canonical_sha256_of_the_contract(catalog: LoadedCatalog) -> None:
    captured = _capture(catalog)
    assert captured.contract_sha256 == canonical_sha256(captured.contract.model_dump(mode="json"))
    assert len(captured.contract_sha256) == 64


def test_capturing_the_same_input_twice_gives_the_same_contract_and_digest(catalog: LoadedCatalog) -> None:
    first = _capture(catalog)
    second = _capture(catalog)
    assert first.contract == second.contract
    assert first.contract_sha256 == second.contract_sha256


@pytest.mark.parametrize(
    "other",
    [
        _selection("replay:other"),
        _selection("replay:demo", "replay:backup"),
        ModelSelectionRecord(
            selection=ModelSelection(primary="replay:demo"),
            selected_by="alice",
            selected_at=SELECTED_AT + dt.timedelta(minutes=1),
        ),
    ],
    ids=["other_primary", "with_fallback", "selected_again"],
)
def test_digest_changes_with_the_model_selection(catalog: LoadedCatalog, other: ModelSelectionRecord) -> None:
    base = _capture(catalog)
    changed = _capture(catalog, selection=other)
    assert changed.contract_sha256 != base.contract_sha256
    assert changed.contract.model != base.contract.model


def test_contract_freezes_route_catalog_model_chain_and_read_only_budget(catalog: LoadedCatalog) -> None:
    captured = _capture(catalog, selection=_selection("replay:demo", "replay:backup"))
    contract = captured.contract
    item = example(SLOW_QUERY)
    assert contract.run_id == RUN_ID
    assert contract.task == f"{item.title}\n\n{item.description}"
    assert contract.evidence_refs == item.evidence_refs
    assert (contract.primary, contract.reviewer) == (captured.route.primary, captured.route.reviewer)
    assert (contract.catalog_sha256, contract.catalog_version) == (catalog.sha256, catalog.version)
    assert contract.model is not None
    assert contract.model.chain == ["replay:demo", "replay:backup"]
    assert "alice" in contract.model.source and SELECTED_AT.isoformat() in contract.model.source
    assert contract.budgets.runtime_seconds == 1800
    assert contract.budgets.max_changed_files == 40
    assert contract.tier is Tier.READ_ONLY and not contract.automatic


def test_capture_refuses_an_automatic_run_when_the_policy_mode_is_off(catalog: LoadedCatalog) -> None:
    inp = run_input(example(SLOW_QUERY), automatic=True, run_id=RUN_ID)
    with pytest.raises(Refused) as refused:
        _capture(catalog, inp, policy=_policy(AutomationMode.OFF))
    assert refused.value.code == "automation_off"
    assert refused.value.exit_code == 4


def test_capture_applies_guarded_policy_ceiling_and_drops_high_risk_to_recommend(
    catalog: LoadedCatalog,
) -> None:
    guarded = _policy(AutomationMode.GUARDED, Tier.READ_ONLY)
    low = _capture(catalog, run_input(example(SLOW_QUERY), automatic=True, run_id=RUN_ID), policy=guarded)
    high = _capture(catalog, run_input(example(AUTH_REVIEW), automatic=True, run_id=RUN_ID), policy=guarded)
    assert low.contract.tier is Tier.READ_ONLY and low.contract.automatic
    assert high.contract.tier is Tier.RECOMMEND and high.contract.risk.value == "high"


@pytest.mark.parametrize("tier", [Tier.WORKTREE, Tier.PR_READY])
def test_capture_refuses_worktree_and_pr_ready_as_not_available(catalog: LoadedCatalog, tier: Tier) -> None:
    with pytest.raises(Refused) as refused:
        _capture(catalog, run_input(example(SLOW_QUERY), tier=tier, run_id=RUN_ID))
    assert refused.value.code == "tier_not_available"


def test_capture_refuses_a_read_only_run_without_a_model_selection(catalog: LoadedCatalog) -> None:
    with pytest.raises(Refused) as refused:
        capture(
            run_input(example(SLOW_QUERY), tier=Tier.READ_ONLY, run_id=RUN_ID),
            catalog,
            _policy(),
            None,
            read_only_budget_seconds=1800,
            edit_budget_seconds=3600,
        )
    assert refused.value.code == "no_model_selected"


def test_a_recommend_run_needs_no_model_selection(catalog: LoadedCatalog) -> None:
    captured = capture(
        run_input(example(SLOW_QUERY), tier=Tier.RECOMMEND, run_id=RUN_ID),
        catalog,
        _policy(),
        None,
        read_only_budget_seconds=1800,
        edit_budget_seconds=3600,
    )
    assert captured.contract.model is None and captured.contract.tier is Tier.RECOMMEND


def _activity(tmp_path: Path, *, budget: int = 900) -> tuple[RoutingActivities, SharedStore]:
    url = f"sqlite:///{tmp_path / 'state' / 'specialists.db'}"
    shared = SharedStore(url)
    shared.get().register_actor("alice", "Alice Operator", None)
    return RoutingActivities(
        ActivityConfig(database_url=url, read_only_budget_seconds=budget), shared
    ), shared


def test_capture_contract_activity_reads_selection_and_policy_from_the_store(tmp_path: Path) -> None:
    routing, shared = _activity(tmp_path, budget=900)
    try:
        shared.get().select_models(ModelSelection(primary="replay:demo"), "alice")
        inp = run_input(example(SLOW_QUERY), tier=Tier.READ_ONLY, run_id=RUN_ID)
        captured = ActivityEnvironment().run(routing.capture_contract, inp)
    finally:
        shared.close()
    assert captured.contract.model is not None and captured.contract.model.primary == "replay:demo"
    assert captured.contract.budgets.runtime_seconds == 900
    assert captured.contract_sha256 == canonical_sha256(captured.contract.model_dump(mode="json"))


def test_capture_contract_activity_raises_a_refusal_as_a_non_retryable_error_of_that_type(
    tmp_path: Path,
) -> None:
    routing, shared = _activity(tmp_path)
    try:
        shared.get().set_policy(AutomationPolicy(mode=AutomationMode.OFF), "alice")
        inp = run_input(example(SLOW_QUERY), automatic=True, run_id=RUN_ID)
        with pytest.raises(ApplicationError) as raised:
            ActivityEnvironment().run(routing.capture_contract, inp)
    finally:
        shared.close()
    assert raised.value.type == "automation_off"
    assert raised.value.non_retryable
