"""What a ``SpecialistRun`` knows — its state and its audit trail — and how it shows it: its
``view``, its projection summary and its search attributes (docs/architecture.md "Run lifecycle").
Deterministic: no I/O; imported by ``workflows/specialist_run.py`` and the modules of its phases.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeKey, SearchAttributeUpdate

from contracts.audit import AuditKind
from contracts.errors import ErrorType
from contracts.execution import ExecutionRecord
from contracts.metric_names import RUN_STATUS_CHANGES
from contracts.output import SpecialistOutput
from contracts.pass_records import PassRecord
from contracts.probes import ProbeRecord
from contracts.review_waves import WaveRecord
from contracts.runs import (
    Approval,
    CancelRequest,
    CapturedContract,
    ContextPackRecord,
    Decision,
    ExecuteRequest,
    ExecutionContract,
    RunError,
    RunInput,
    RunStatus,
    RunSummary,
    RunView,
)
from contracts.search_attributes import SearchAttribute
from contracts.ui_summaries import run_details
from workflows.audit import AuditTrail
from workflows.patches import Behaviours

STATUS_KEY = SearchAttributeKey.for_keyword(SearchAttribute.SPECIALIST_STATUS)
TIER_KEY = SearchAttributeKey.for_keyword(SearchAttribute.SPECIALIST_TIER)
PROFILE_KEY = SearchAttributeKey.for_keyword(SearchAttribute.SPECIALIST_PROFILE)
REVIEWER_KEY = SearchAttributeKey.for_keyword(SearchAttribute.SPECIALIST_REVIEWER)
RISK_KEY = SearchAttributeKey.for_keyword(SearchAttribute.RISK_LEVEL)
REPO_KEY = SearchAttributeKey.for_keyword(SearchAttribute.REPO_ALIAS)
QUEUE_ITEM_STATUS_KEY = SearchAttributeKey.for_keyword(SearchAttribute.QUEUE_ITEM_STATUS)


@dataclass
class RunState:
    """What the run knows: the story and the handlers change it, :meth:`view` shows it."""

    run_input: RunInput
    created_at: dt.datetime
    behaviours: Behaviours
    """Which patched behaviours this run has (``workflows/patches.py``)."""
    audit: AuditTrail = field(default_factory=AuditTrail)
    status: RunStatus = RunStatus.ROUTING
    captured: CapturedContract | None = None
    result: SpecialistOutput | None = None
    review: SpecialistOutput | None = None
    decision: Decision | None = None
    approval: Approval | None = None
    error: RunError | None = None
    enqueued: bool = False
    cancel: CancelRequest | None = None
    execute: ExecuteRequest | None = None
    execution: ExecutionRecord | None = None
    packs: list[ContextPackRecord] = field(default_factory=list)
    wave: WaveRecord | None = None
    """A review wave's passes as they go (``workflows/review_wave.py``)."""
    passes: list[PassRecord] = field(default_factory=list)
    """The record of every other model job (analysis, change, single review)."""
    probes: list[ProbeRecord] = field(default_factory=list)
    """The analysis's probe requests and what became of each (``workflows/probes.py``)."""
    probe_running: bool = False
    """A probe's activity is running: a cancel waits for it to stop (``cancel_requested``)."""
    model_job_running: bool = False
    executing: bool = False
    """From the worktree attempt's start a cancel waits for it (``cancel_requested``)."""
    projected_seq: int = 0
    """The last audit event written to the projection."""
    one_upsert_per_task: bool = False
    """Search-attribute changes wait in ``pending_attributes`` until :meth:`publish_attributes`,
    which the run calls once in a workflow task (runs started with ``PATCH_ONE_UPSERT_PER_TASK``):
    every task that upserts costs the server a visibility write. Otherwise each change is upserted
    at once, as recorded histories did."""
    pending_attributes: dict[str, SearchAttributeUpdate[Any]] = field(default_factory=dict)

    @property
    def contract(self) -> ExecutionContract:
        """The captured contract (every phase after capture has one)."""
        assert self.captured is not None
        return self.captured.contract

    @property
    def contract_sha256(self) -> str:
        assert self.captured is not None
        return self.captured.contract_sha256

    def set_status(self, status: RunStatus) -> None:
        """Move to ``status``: audited, and the ``SpecialistStatus`` search attribute follows."""
        if status is self.status:
            return
        previous, self.status = self.status, status
        self.audit.record(AuditKind.STATUS_CHANGED, data={"from": previous.value, "to": status.value})
        self.update_attributes([STATUS_KEY.value_set(status.value)])
        tier = self.captured.contract.tier.value if self.captured is not None else "none"
        workflow.metric_meter().create_counter(RUN_STATUS_CHANGES, "runs moved to a status").add(
            1, {"status": status.value, "tier": tier}
        )
        self.show_details()

    def show_details(self) -> None:
        """The run's current details in the Temporal UI: status, tier, primary, what it waits for
        and who may act (:func:`contracts.ui_summaries.run_details`; metadata, not history)."""
        contract = self.captured.contract if self.captured else None
        requested = self.run_input.requested_tier
        tier = contract.tier.value if contract else requested.value if requested else None
        workflow.set_current_details(
            run_details(self.status.value, tier, contract.primary if contract else None)
        )

    def update_attributes(self, updates: list[SearchAttributeUpdate[Any]]) -> None:
        """Set search attributes: at once, or (``one_upsert_per_task``) at the next
        :meth:`publish_attributes`, a later value of an attribute replacing an earlier one."""
        if not self.one_upsert_per_task:
            workflow.upsert_search_attributes(updates)
            return
        for update in updates:
            self.pending_attributes[update.key.name] = update

    def publish_attributes(self) -> None:
        """Upsert the pending search attributes, all in one command."""
        if self.pending_attributes:
            workflow.upsert_search_attributes(list(self.pending_attributes.values()))
            self.pending_attributes.clear()

    def fail(self, error_type: str, message: str) -> None:
        """End ``failed`` with this error."""
        self.error = RunError(type=error_type, message=message)
        self.set_status(RunStatus.FAILED)

    def expire(self, budget: dict[str, Any]) -> None:
        """The runtime budget ran out during ``budget`` (what was running, how long it had): the run
        ends ``expired``."""
        self.audit.record(AuditKind.BUDGET_EXHAUSTED, data=budget)
        self.error = RunError(type=ErrorType.RUNTIME_BUDGET_EXHAUSTED, message="the runtime budget ran out")
        self.set_status(RunStatus.EXPIRED)

    def view(self) -> RunView:
        """The run as ``show`` presents it."""
        captured = self.captured
        return RunView(
            run_id=self.run_input.run_id,
            status=self.status,
            tier=captured.contract.tier if captured else self.run_input.requested_tier,
            automatic=self.run_input.automatic,
            route=captured.route if captured else None,
            contract=captured.contract if captured else None,
            contract_sha256=captured.contract_sha256 if captured else None,
            result=self.result,
            review=self.review,
            decision=self.decision,
            approval=self.approval,
            error=self.error,
            request_digest=self.run_input.request_digest,
            created_at=self.created_at,
            audit=list(self.audit.events),
            context_packs=list(self.packs),
            execution=self.execution,
            follows=self.run_input.follows,
            wave=self.wave,
            passes=list(self.passes),
            probes=list(self.probes),
        )

    def summary(self, now: dt.datetime) -> RunSummary:
        """The listable facts the projection keeps."""
        captured = self.captured
        contract = captured.contract if captured else None
        return RunSummary(
            run_id=self.run_input.run_id,
            status=self.status,
            tier=contract.tier if contract else self.run_input.requested_tier,
            automatic=self.run_input.automatic,
            primary=contract.primary if contract else None,
            reviewer=contract.reviewer if contract else None,
            risk=contract.risk if contract else None,
            repo_alias=self.run_input.work_item.repo_alias,
            title=self.run_input.work_item.title,
            contract_sha256=captured.contract_sha256 if captured else None,
            request_id=self.run_input.request_id,
            created_at=self.created_at,
            updated_at=now,
        )


def route_attributes(contract: ExecutionContract) -> list[SearchAttributeUpdate[Any]]:
    """The search attributes the captured route sets: tier, profile, reviewer, risk, repository."""
    updates: list[SearchAttributeUpdate[Any]] = [
        TIER_KEY.value_set(contract.tier.value),
        PROFILE_KEY.value_set(contract.primary),
        REVIEWER_KEY.value_set(contract.reviewer),
        RISK_KEY.value_set(contract.risk.value),
    ]
    if contract.repo_alias:
        updates.append(REPO_KEY.value_set(contract.repo_alias))
    return updates
