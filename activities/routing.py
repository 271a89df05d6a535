"""Activity ``capture_contract``: route the work item and freeze the execution contract.

Reads the catalog, the automation policy and the model selection, so all three enter workflow history
through this activity's result; later changes to any of them never alter a captured contract. Every
configuration record it reads is verified by the store (docs/architecture.md "Configuration"): an
unverified one refuses the run (``configuration_unverified``), as do a deactivated repository
(``repository_deactivated``) and a deactivated model the contract would call (``model_deactivated``).
"""

from __future__ import annotations

from temporalio import activity

from activities.config import ActivityConfig
from activities.errors import refusal
from activities.store_access import SharedStore
from catalog.capture import capture
from catalog.loader import load_catalog
from contracts.enums import Tier
from contracts.errors import OperatorError
from contracts.policy import APPROVAL_TIERS
from contracts.refusal_detail import RefusalDetail
from contracts.runs import CapturedContract, ModelSnapshot, RunInput
from contracts.temporal_names import ActivityName
from runtime.git_repository import base_commit_of
from runtime.logs import run_logger
from store.repositories import require_active


class RoutingActivities:
    """``capture_contract`` bound to a deployment's configuration."""

    def __init__(self, config: ActivityConfig, store: SharedStore) -> None:
        self._config = config
        self._store = store

    @activity.defn(name=ActivityName.CAPTURE_CONTRACT)
    def capture_contract(self, run_input: RunInput) -> CapturedContract:
        """Route, apply the policy, snapshot the model selection, freeze and hash the contract.

        A refusal is a non-retryable ``ApplicationError`` whose type is the refusal code and whose
        detail (:class:`RefusalDetail`) is its exit code: a create refused here leaves a failed run,
        and the CLI reports the refusal as the operator error it is.
        """
        log = run_logger(run_input.run_id, activity="capture_contract")
        try:
            catalog = load_catalog(self._config.catalog_path)
            store = self._store.get()
            alias = run_input.work_item.repo_alias
            policy, selection, record = store.capture_reads(alias)
            if run_input.escalation_model is not None:  # set by the goal queue, checked as selected
                store.require_registered_models([run_input.escalation_model])
            if record is not None:
                require_active(record)
            base_commit = None
            repository_config = None
            if run_input.requested_tier in APPROVAL_TIERS and alias is not None:
                # Resolved now and frozen in the contract: the run uses this commit even if the
                # branch moves while it waits for approval; so is the repository's configuration
                # (executor, commands, grants), which approval then covers.
                if record is None:
                    record = store.get_repository(alias)  # raises unknown_repository
                base_commit = base_commit_of(record)
                repository_config = record.config
            elif record is not None:
                # Any other run on an allow-listed repository freezes its commit too, so its context
                # packs read file evidence at a commit the contract names.
                base_commit = base_commit_of(record)
            captured = capture(
                run_input,
                catalog,
                policy,
                selection,
                read_only_budget_seconds=self._config.read_only_budget_seconds,
                edit_budget_seconds=self._config.edit_budget_seconds,
                approval_window_seconds=self._config.approval_window_seconds,
                base_commit=base_commit,
                repository_config=repository_config,
            )
            if captured.contract.model is not None and captured.contract.tier is not Tier.RECOMMEND:
                store.require_usable_models(models_called(captured.contract.model))
        except OperatorError as error:
            log.warning("capture_refused", code=error.code, message=error.message)
            raise refusal(error, RefusalDetail.of(error)) from error
        contract = captured.contract
        log.info(
            "contract_captured",
            tier=contract.tier.value,
            primary=contract.primary,
            reviewer=contract.reviewer,
            contract_sha256=captured.contract_sha256,
            base_commit=contract.base_commit,
        )
        return captured


def models_called(snapshot: ModelSnapshot) -> list[str | None]:
    """The models a contract's jobs would call: each assignment's chain (the snapshot's chain for a
    contract without assignments), then the advisory model when an advisory pass was asked for."""
    advisory = [snapshot.advisory] if snapshot.advisory is not None else []
    if not snapshot.assignments:
        return [*snapshot.chain, *advisory]
    return [*(model for assignment in snapshot.assignments for model in assignment.models), *advisory]
