"""Activity ``read_run_progress``: the status of the runs the goal queue dispatched
(docs/architecture.md "Goal queue").

The queue learns how its runs are doing by asking them: each run's ``status`` query (and, for a run
that failed, its ``view`` for the error; for one awaiting its decision, for its independent review),
through the worker's own Temporal client. A run the server
does not know is reported with no status. Read-only and idempotent; Temporal retries a failure.
"""

from __future__ import annotations

import datetime as dt

from temporalio import activity
from temporalio.service import RPCError, RPCStatusCode

from contracts.queue_messages import RunIds, RunState, RunStates
from contracts.runs import RunProgress, RunStatus, RunView
from contracts.temporal_names import ActivityName, RunMessage

QUERY_TIMEOUT = dt.timedelta(seconds=5)


class QueueRunActivities:
    """``read_run_progress``, on the worker's Temporal client."""

    @activity.defn(name=ActivityName.READ_RUN_PROGRESS)
    async def read_run_progress(self, request: RunIds) -> RunStates:
        """Each run's status (``None`` for a run the server does not know), a failed or expired run's
        error message, and the review of a run awaiting its decision. Raises what Temporal raises
        otherwise (retried)."""
        client = activity.client()
        states = []
        for run_id in request.run_ids:
            handle = client.get_workflow_handle(run_id)
            try:
                progress: RunProgress = await handle.query(
                    RunMessage.STATUS, result_type=RunProgress, rpc_timeout=QUERY_TIMEOUT
                )
            except RPCError as error:
                if error.status == RPCStatusCode.NOT_FOUND:
                    states.append(RunState(run_id=run_id, status=None, error=f"no run {run_id}"))
                    continue
                raise
            message = None
            review = None
            if progress.status in (RunStatus.FAILED, RunStatus.EXPIRED, RunStatus.AWAITING_DECISION):
                view: RunView = await handle.query(
                    RunMessage.VIEW, result_type=RunView, rpc_timeout=QUERY_TIMEOUT
                )
                if view.error is not None:
                    message = f"{view.error.type}: {view.error.message}"
                review = view.review if progress.status is RunStatus.AWAITING_DECISION else None
            states.append(RunState(run_id=run_id, status=progress.status, error=message, review=review))
        return RunStates(states=states)
