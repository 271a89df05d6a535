"""Creating the deployment's Temporal Schedules (docs/architecture.md "Schedules"): the daily case
analysis (``CaseSweep``) and the scheduled intake scan (``IntakeSweep``).

Overlap policy ``BUFFER_ONE`` for both: a sweep that fires (or is triggered) while the previous one
is still running is kept and starts when that one ends, so a trigger is never lost and never runs
beside another sweep. The case sweep's run ids are derived from each case's factual evidence, so the
later sweep finds the runs already there and attaches only what is missing; the intake sweep's
scans are diffed by the goal queue against what earlier ones proposed, so a later sweep proposes
nothing twice.
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
    ScheduleGrant,
    ScheduleKind,
    grant_digest,
    schedule_id,
    sweep_input_type,
)
from contracts.temporal_names import WorkflowType

_WORKFLOWS = {
    ScheduleKind.CASE_SWEEP: WorkflowType.CASE_SWEEP,
    ScheduleKind.INTAKE_SCAN: WorkflowType.INTAKE_SWEEP,
}


def case_sweep_schedule(signer: Signer, task_queue: str, every: dt.timedelta) -> Schedule:
    """The case sweep's schedule, carrying ``signer``'s signed grant of ``schedule_enable`` on its id."""
    return kind_schedule(ScheduleKind.CASE_SWEEP, signer, task_queue, every)


def kind_schedule(kind: ScheduleKind, signer: Signer, task_queue: str, every: dt.timedelta) -> Schedule:
    """The schedule of ``kind``, carrying ``signer``'s signed grant of ``schedule_enable`` on its id."""
    sid = schedule_id(kind, task_queue)
    seconds = int(every.total_seconds())
    digest = grant_digest(sid, kind, seconds)
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
        kind=kind,
        interval_seconds=seconds,
        granted_by=signer.actor_id,
        proof=proof,
        digest=digest,
    )
    sweep_input = sweep_input_type(kind)(grant=grant, task_queue=task_queue)
    return Schedule(
        action=ScheduleActionStartWorkflow(
            _WORKFLOWS[kind],
            sweep_input,
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
    return await enable_schedule(client, ScheduleKind.CASE_SWEEP, signer, task_queue, every)


async def enable_intake_scan(client: Client, signer: Signer, task_queue: str, every: dt.timedelta) -> str:
    """Create the intake scan's schedule (off until this is called), or replace the spec, action and
    grant of the existing one (its paused state is kept); returns its id."""
    return await enable_schedule(client, ScheduleKind.INTAKE_SCAN, signer, task_queue, every)


async def enable_schedule(
    client: Client, kind: ScheduleKind, signer: Signer, task_queue: str, every: dt.timedelta
) -> str:
    """Create the schedule of ``kind``, or replace the spec, action and grant of the existing one (its
    paused state is kept); returns its id."""
    schedule = kind_schedule(kind, signer, task_queue, every)
    sid = schedule_id(kind, task_queue)
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
