"""Activity ``project_run``: write a run's summary and new audit events to the SQL projection.

Idempotent: the summary is an upsert keyed by run id and events are keyed by (run id, seq), so a
retried or replayed call writes nothing twice. Temporal holds the truth; this makes runs listable.
"""

from __future__ import annotations

from temporalio import activity

from activities.config import ActivityConfig
from activities.errors import refusal
from activities.store_access import SharedStore
from contracts.errors import OperatorError
from contracts.runs import ProjectRunRequest
from contracts.temporal_names import ActivityName
from runtime.logs import run_logger


class ProjectionActivities:
    """``project_run`` bound to the store."""

    def __init__(self, config: ActivityConfig, store: SharedStore) -> None:
        self._config = config
        self._store = store

    @activity.defn(name=ActivityName.PROJECT_RUN)
    def project_run(self, request: ProjectRunRequest) -> None:
        """Upsert the run summary and insert the audit events not yet stored."""
        log = run_logger(request.summary.run_id, activity="project_run")
        try:
            self._store.get().project_run(request.summary, request.events)
        except OperatorError as error:
            log.warning("projection_failed", code=error.code, message=error.message)
            raise refusal(error) from error
        log.info("run_projected", status=request.summary.status.value, events=len(request.events))
