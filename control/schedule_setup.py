"""Creating the daily case analysis's Temporal Schedule (docs/architecture.md "Schedules").

Overlap policy ``BUFFER_ONE``: a sweep that fires (or is triggered) while the previous one still
waits for its runs is kept and starts when that one ends, so a trigger is never lost and never runs
beside another sweep; the run ids are derived from each case's factual evidence, so the later sweep
finds the runs already there and attaches only what is missing.
"""

from __future__ import annotations

import datetime as dt
import secrets

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
    ScheduleUpdate,
    ScheduleUpdateInput,
)

from contracts.identity import Signer, sign_action
from contracts.schedules import (
    SCHEDULE_ENABLE_ACTION,
    CaseSweepInput,
    ScheduleGrant,
    ScheduleKind,
    grant_digest,
    schedule_id,
)
from contracts.temporal_names import WorkflowType


def case_sweep_schedule(signer: Signer, task_queue: str, every: dt.timedelta) -> Schedule:
    """The schedule, carrying ``signer``'s signed grant of ``schedule_enable`` on its id."""
    sid = schedule_id(ScheduleKind.CASE_SWEEP, task_queue)
    seconds = int(every.total_seconds())
    digest = grant_digest(sid, ScheduleKind.CASE_SWEEP, seconds)
    proof = sign_action(
        signer,
        action=SCHEDULE_ENABLE_ACTION,
        target=sid,
        digest=digest,
        issued_at=dt.datetime.now(dt.UTC),
        nonce=secrets.token_hex(16),
    )
    grant = ScheduleGrant(
        schedule_id=sid,
        kind=ScheduleKind.CASE_SWEEP,
        interval_seconds=seconds,
        granted_by=signer.actor_id,
        proof=proof,
        digest=digest,
    )
    return Schedule(
        action=ScheduleActionStartWorkflow(
            WorkflowType.CASE_SWEEP,
            CaseSweepInput(grant=grant, task_queue=task_queue),
            id=sid,
            task_queue=task_queue,
            execution_timeout=dt.timedelta(hours=2),
        ),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)]),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.BUFFER_ONE),
        state=ScheduleState(note=f"enabled by {signer.actor_id}"),
    )


async def enable_case_sweep(client: Client, signer: Signer, task_queue: str, every: dt.timedelta) -> str:
    """Create the case sweep's schedule, or replace the spec, action and grant of the existing one
    (its paused state is kept); returns its id."""
    schedule = case_sweep_schedule(signer, task_queue, every)
    sid = schedule_id(ScheduleKind.CASE_SWEEP, task_queue)
    try:
        await client.create_schedule(sid, schedule)
    except ScheduleAlreadyRunningError:

        def replace(current: ScheduleUpdateInput) -> ScheduleUpdate:
            state = current.description.schedule.state
            return ScheduleUpdate(
                schedule=Schedule(
                    action=schedule.action,
                    spec=schedule.spec,
                    policy=schedule.policy,
                    state=ScheduleState(note=schedule.state.note, paused=state.paused),
                )
            )

        await client.get_schedule_handle(sid).update(replace)
    return sid
