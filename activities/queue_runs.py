"""Activity ``read_run_progress``: the status of the runs the goal queue dispatched
(docs/architecture.md "Goal queue").

The queue learns how its runs are doing by asking them: each run's ``status`` query (and, for a run
that failed, its ``view`` for the error; for one awaiting its decision, for its independent review),
through the worker's own Temporal client. A run the server
does not know is reported with no status. Read-only and idempotent; Temporal retries a failure.
"""

from __future__ import annotations

import asyncio
import datetime as dt

from temporalio import activity
from temporalio.service import RPCError, RPCStatusCode

from contracts.output import MAX_GAPS, ReviewVerdict, SpecialistOutput
from contracts.pass_records import PassOutcome
from contracts.queue_items import RoundVerdict
from contracts.queue_messages import QueueQuery, QueueView, RunIds, RunState, RunStates
from contracts.runs import QueueVerdictCheck, QueueVerdictFound, RunProgress, RunStatus, RunView
from contracts.temporal_names import ActivityName, QueueMessage, RunMessage

QUERY_TIMEOUT = dt.timedelta(seconds=5)


class QueueRunActivities:
    """``read_run_progress`` and ``check_queue_verdict``, on the worker's Temporal client."""

    @activity.defn(name=ActivityName.CHECK_QUEUE_VERDICT)
    async def check_queue_verdict(self, request: QueueVerdictCheck) -> QueueVerdictFound:
        """Whether the queue ``request.queue_workflow_id`` recorded a FAIL round of its item on the run
        (its ``view`` query): what a run its autopilot started checks before it rejects itself on the
        queue's verdict (docs/architecture.md "Goal queue"). Read-only; a queue the server does not
        know is an answer (not found), anything else Temporal raises is retried."""
        handle = activity.client().get_workflow_handle(request.queue_workflow_id)
        try:
            view: QueueView = await handle.query(
                QueueMessage.VIEW,
                QueueQuery(key=request.item_key),
                result_type=QueueView,
                rpc_timeout=QUERY_TIMEOUT,
            )
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                return QueueVerdictFound(found=False, reason=f"no queue {request.queue_workflow_id}")
            raise
        for item in view.items:
            for round_ in item.rounds:
                if round_.run_id == request.run_id and round_.verdict is RoundVerdict.FAIL:
                    reason = (
                        f"{item.key}: review round {round_.number} FAIL (score {round_.score}, "
                        f"{len(round_.material)} material findings); the queue re-dispatches it with them"
                    )
                    return QueueVerdictFound(found=True, round=round_.number, reason=reason)
        return QueueVerdictFound(
            found=False,
            reason=f"the queue holds no FAIL round of {request.item_key} on run {request.run_id}",
        )

    @activity.defn(name=ActivityName.READ_RUN_PROGRESS)
    async def read_run_progress(self, request: RunIds) -> RunStates:
        """Each run's status (``None`` for a run the server does not know), a failed or expired run's
        error message, and the review of a run awaiting its decision. Raises what Temporal raises
        otherwise (retried)."""
        client = activity.client()

        async def read(run_id: str) -> RunState:
            handle = client.get_workflow_handle(run_id)
            try:
                progress: RunProgress = await handle.query(
                    RunMessage.STATUS, result_type=RunProgress, rpc_timeout=QUERY_TIMEOUT
                )
            except RPCError as error:
                if error.status == RPCStatusCode.NOT_FOUND:
                    return RunState(run_id=run_id, status=None, error=f"no run {run_id}")
                raise
            message = None
            review = None
            if progress.status in (RunStatus.FAILED, RunStatus.EXPIRED, RunStatus.AWAITING_DECISION):
                view: RunView = await handle.query(
                    RunMessage.VIEW, result_type=RunView, rpc_timeout=QUERY_TIMEOUT
                )
                if view.error is not None:
                    message = f"{view.error.type}: {view.error.message}"
                review = _judged_review(view) if progress.status is RunStatus.AWAITING_DECISION else None
            return RunState(run_id=run_id, status=progress.status, error=message, review=review)

        # The runs are asked at once; the answer keeps the order they were asked in.
        return RunStates(states=list(await asyncio.gather(*(read(run_id) for run_id in request.run_ids))))


def _judged_review(view: RunView) -> SpecialistOutput | None:
    """The review the goal queue judges a run by: its review, or for a review wave the first pass
    that does not agree (any dissent fails the round, its findings carried to the next); a wave with
    a pass that gave no review is judged ``insufficient_evidence`` — the run's review with each such
    pass named among its gaps — since what that pass was to look at went unreviewed; else the run's
    review (docs/architecture.md "Orchestration")."""
    if view.wave is None:
        return view.review
    for wave_pass in view.wave.passes:
        output = wave_pass.output
        if output is not None and output.verdict is not ReviewVerdict.AGREE:
            return output
    unreviewed = [
        f"pass {p.index} ({p.profile} on {', '.join(p.axes)}) gave no review ({p.error_type or 'failed'})"
        for p in view.wave.passes
        if p.outcome is PassOutcome.FAILED
    ]
    if not unreviewed or view.review is None:
        return view.review
    # What the queue reasons on, not the record: the run keeps every gap its review named.
    gaps = [*unreviewed, *view.review.gaps][:MAX_GAPS]
    return view.review.model_copy(update={"verdict": ReviewVerdict.INSUFFICIENT_EVIDENCE, "gaps": gaps})
