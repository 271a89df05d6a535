"""The goal queue's escalated round, captured in the contract (``catalog.capture.capture`` with a run
input's ``escalation_model``): the escalation model is the primary of every job's chain; the
selection's own chain follows as ordered fallbacks when the selection allows fallbacks, and not at
all under ``primary_only``; the snapshot says so; a run without it captures the selection as
before."""

from __future__ import annotations

import datetime as dt

from catalog.capture import capture
from catalog.loaded import LoadedCatalog
from contracts.config import PolicyRecord
from contracts.enums import FallbackMode, Tier
from contracts.models import ModelSelection, ModelSelectionRecord
from contracts.policy import AutomationPolicy
from contracts.runs import CapturedContract, ModelSnapshot, RunInput
from contracts.work_item import WorkItem

SELECTED_AT = dt.datetime(2026, 11, 1, 9, 30, tzinfo=dt.UTC)
ITEM = WorkItem(
    title="Orders API times out under load",
    description="p95 latency exceeds 2 s at 200 rps since the last release.",
    evidence_refs=["issue:123"],
)


def _selection(*fallbacks: str) -> ModelSelectionRecord:
    mode = FallbackMode.ORDERED if fallbacks else FallbackMode.PRIMARY_ONLY
    return ModelSelectionRecord(
        selection=ModelSelection(primary="openai:everyday", fallbacks=list(fallbacks), fallback_mode=mode),
        selected_by="alice",
        selected_at=SELECTED_AT,
    )


def _capture(
    catalog: LoadedCatalog, selection: ModelSelectionRecord, escalation_model: str | None
) -> CapturedContract:
    run = RunInput(
        run_id="SOR-0123456789ABCDEF",
        work_item=ITEM,
        requested_tier=Tier.READ_ONLY,
        request_digest="0" * 64,
        escalation_model=escalation_model,
    )
    return capture(
        run,
        catalog,
        PolicyRecord(policy=AutomationPolicy()),
        selection,
        read_only_budget_seconds=1800,
        edit_budget_seconds=3600,
    )


def _snapshot(captured: CapturedContract) -> ModelSnapshot:
    assert captured.contract.model is not None
    return captured.contract.model


def test_the_escalation_model_leads_and_the_selections_chain_follows_when_fallbacks_are_allowed(
    loaded_catalog: LoadedCatalog,
) -> None:
    selection = _selection("anthropic:large", "openai:strong")
    snapshot = _snapshot(_capture(loaded_catalog, selection, "openai:strong"))
    assert snapshot.primary == "openai:strong"
    assert snapshot.fallbacks == ["openai:everyday", "anthropic:large"]  # never twice in the chain
    assert snapshot.fallback_mode is FallbackMode.ORDERED
    assert snapshot.source.startswith("escalation model of the goal queue, then the chain of the model")
    assert all(
        a.models == ["openai:strong", "openai:everyday", "anthropic:large"] for a in snapshot.assignments
    )


def test_under_primary_only_the_escalation_model_stands_alone(loaded_catalog: LoadedCatalog) -> None:
    snapshot = _snapshot(_capture(loaded_catalog, _selection(), "anthropic:large"))
    assert (snapshot.primary, snapshot.fallbacks) == ("anthropic:large", [])
    assert snapshot.fallback_mode is FallbackMode.PRIMARY_ONLY
    assert all(a.models == ["anthropic:large"] for a in snapshot.assignments)


def test_without_an_escalation_model_the_selection_is_captured_as_before_and_the_digest_differs(
    loaded_catalog: LoadedCatalog,
) -> None:
    plain = _capture(loaded_catalog, _selection("anthropic:large"), None)
    snapshot = _snapshot(plain)
    assert (snapshot.primary, snapshot.fallbacks) == ("openai:everyday", ["anthropic:large"])
    assert snapshot.source == f"model selection by alice at {SELECTED_AT.isoformat()}"
    escalated = _capture(loaded_catalog, _selection("anthropic:large"), "anthropic:large")
    assert escalated.contract_sha256 != plain.contract_sha256
