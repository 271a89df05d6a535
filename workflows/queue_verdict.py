"""A run the goal queue's autopilot started rejects itself on the queue's FAIL verdict
(docs/architecture.md "Goal queue").

The queue cannot sign anything and a signal names no sender, so the run takes nothing on the
signal's word: it applies the "reject on the queue's FAIL verdict" its creator's standing grant
gave the queue only when the run carries that queue's grant for that item, it awaits its decision,
the ``check_queue_verdict`` activity finds the FAIL round of this run recorded in the queue, and the
granting actor is still registered and active. Then the decision is recorded as the granting
actor's, by the queue's autopilot, with the round; anything else is an ``action_refused`` event.

Deterministic: no I/O of its own; imported by workflow modules.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from contracts.audit import AuditKind
    from contracts.refusals import RefusalCode
    from contracts.runs import (
        Decision,
        DecisionOutcome,
        QueueVerdict,
        QueueVerdictCheck,
        QueueVerdictFound,
        RunStatus,
    )
    from contracts.temporal_names import ActivityName
    from workflows.authorization import ProtectedActions
    from workflows.run_state import RunState

CHECK_TIMEOUT = timedelta(seconds=30)
CHECK_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(milliseconds=500))
ACTION = "decide"


def _awaiting(state: RunState) -> bool:
    return state.status is RunStatus.AWAITING_DECISION and state.decision is None


async def apply_queue_verdict(state: RunState, actions: ProtectedActions[Any], verdict: QueueVerdict) -> None:
    """Reject the run on its queue's verified FAIL verdict, or record why not (see the module
    docstring)."""
    grant = state.run_input.queue_grant
    if grant is None or (verdict.queue_workflow_id, verdict.item_key) != (
        grant.queue_workflow_id,
        grant.item_key,
    ):
        actions.refuse(
            ACTION,
            None,
            RefusalCode.FORBIDDEN,
            "a queue's verdict applies only to a run that queue's autopilot started for that item",
        )
        return
    if not _awaiting(state):
        actions.refuse(ACTION, grant.granted_by, RefusalCode.NOT_AWAITING_DECISION, state.status.value)
        return
    check = QueueVerdictCheck(
        queue_workflow_id=grant.queue_workflow_id, item_key=grant.item_key, run_id=state.run_input.run_id
    )
    try:
        found: QueueVerdictFound = await workflow.execute_activity(
            ActivityName.CHECK_QUEUE_VERDICT,
            check,
            result_type=QueueVerdictFound,
            start_to_close_timeout=CHECK_TIMEOUT,
            retry_policy=CHECK_RETRY,
        )
    except ActivityError as error:
        actions.refuse(
            ACTION,
            grant.granted_by,
            RefusalCode.AUTHORIZATION_UNAVAILABLE,
            f"the verdict check failed: {error}",
        )
        return
    if not found.found:
        actions.refuse(ACTION, grant.granted_by, RefusalCode.FORBIDDEN, found.reason)
        return
    if await actions.authorize(ACTION, grant.granted_by, standing_grant=True) is not None:
        return  # the refusal is recorded
    if not _awaiting(state):
        actions.refuse(ACTION, grant.granted_by, RefusalCode.NOT_AWAITING_DECISION, state.status.value)
        return
    state.decision = Decision(
        actor=grant.granted_by, outcome=DecisionOutcome.REJECTED, note=found.reason, at=workflow.now()
    )
    state.audit.record(
        AuditKind.DECIDED,
        actor=grant.granted_by,
        data={
            "outcome": DecisionOutcome.REJECTED.value,
            "note": found.reason,
            "by": "queue_autopilot",
            "queue_workflow_id": grant.queue_workflow_id,
            "item_key": grant.item_key,
            "round": found.round,
        },
    )
