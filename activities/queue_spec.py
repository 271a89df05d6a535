"""The goal queue's spec pass capture (docs/architecture.md "Goal queue", "Spec pass"): the catalog
sha256, the model selection's snapshot and the repository's base-branch head, read once so the pass's
model job reads the proposal's evidence at that commit."""

from __future__ import annotations

from pathlib import Path

from temporalio import activity

from activities.config import ActivityConfig
from activities.errors import refusal
from activities.store_access import SharedStore
from catalog.loader import load_catalog
from contracts.enums import FallbackMode
from contracts.errors import OperatorError, Refused
from contracts.queue_spec import SPEC_PROFILE, SpecCapture, SpecCaptureRequest
from contracts.runs import ModelSnapshot
from contracts.temporal_names import ActivityName
from runtime.git_repository import branch_commit


class SpecActivities:
    """Activities of the queue's spec pass."""

    def __init__(self, config: ActivityConfig, store: SharedStore) -> None:
        self._config = config
        self._store = store

    @activity.defn(name=ActivityName.CAPTURE_SPEC)
    def capture_spec(self, request: SpecCaptureRequest) -> SpecCapture:
        """Freeze what a spec pass runs on. Raises non-retryable ``ApplicationError`` typed by the
        refusal code: ``unknown_repository``, ``repository_deactivated``, ``no_model_selected``,
        ``catalog_changed`` (the spec profile is not in the catalog), a git failure's code."""
        try:
            catalog = load_catalog(self._config.catalog_path)
            if SPEC_PROFILE not in catalog.profiles:
                raise Refused("catalog_changed", f"profile {SPEC_PROFILE!r} is not in the catalog")
            store = self._store.get()
            record = store.get_repository(request.repo_alias)
            if not record.active:
                raise Refused("repository_deactivated", f"repository {record.alias!r} is deactivated")
            selection = store.get_model_selection()
            if selection is None:
                raise Refused(
                    "no_model_selected",
                    "a spec pass calls a model: select one first (specialists models select)",
                )
            chain: list[str | None] = [selection.selection.primary]
            if selection.selection.fallback_mode is FallbackMode.ORDERED:
                chain += list(selection.selection.fallbacks)
            store.require_usable_models(chain)
            commit = branch_commit(Path(record.path), record.default_branch)
        except OperatorError as error:
            raise refusal(error) from error
        return SpecCapture(
            catalog_sha256=catalog.sha256,
            model=ModelSnapshot.from_selection(selection),
            branch=record.default_branch,
            commit=commit,
        )
