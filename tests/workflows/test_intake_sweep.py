"""The scheduled intake scan on a real dev server with real git repositories (docs/architecture.md
"Schedules"): the schedule does not exist until enabled; triggered twice it proposes each finding once
across both sweeps, skips a deactivated repository and reports one that fails to scan without
stopping the others; the queue refuses (and records) a scheduled scan under another schedule's grant,
a forged grant or a sweep that is not running."""

from __future__ import annotations

import asyncio
import datetime as dt
import secrets
import shutil
from pathlib import Path

import pytest
from temporalio.client import Client, ScheduleHandle
from temporalio.service import RPCError, RPCStatusCode

from contracts.errors import OperatorError
from contracts.identity import sign_action
from contracts.intake import IntakeAnswer, IntakeRequest
from contracts.queue_items import QueueStatus
from contracts.queue_messages import QueueAction, QueueState
from contracts.schedules import (
    SCHEDULE_ENABLE_ACTION,
    IntakeSweepResult,
    ScheduledIntake,
    ScheduleGrant,
    ScheduleKind,
    grant_digest,
    schedule_id,
)
from contracts.temporal_names import QueueMessage
from control.queue import queue_update
from control.schedule_setup import enable_intake_scan
from tests.activities.intake_repository import make_intake_repository
from tests.identity import signer
from tests.workflows.harness import ACTOR, within
from tests.workflows.queue_harness import QueueBench, queue_bench

pytestmark = pytest.mark.asyncio


async def trigger_and_wait(
    client: Client, handle: ScheduleHandle, seen: list[str]
) -> tuple[list[str], IntakeSweepResult]:
    """Trigger the schedule, wait for the sweep it started and return its result."""
    await handle.trigger()
    ids = seen
    for _ in range(120):
        described = await handle.describe()
        ids = [action.action.workflow_id for action in described.info.recent_actions]  # type: ignore[attr-defined]
        if len(ids) > len(seen):
            break
        await asyncio.sleep(0.5)
    result = await client.get_workflow_handle(ids[-1], result_type=IntakeSweepResult).result()
    return ids, result


@within(120)
async def test_the_intake_schedule_exists_only_once_enabled_and_two_sweeps_propose_each_finding_once(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    (tmp_path / "demo").mkdir()
    (tmp_path / "old").mkdir()
    (tmp_path / "gone").mkdir()
    demo = make_intake_repository(tmp_path / "demo")
    old = make_intake_repository(tmp_path / "old")
    gone = make_intake_repository(tmp_path / "gone")
    sid = schedule_id(ScheduleKind.INTAKE_SCAN, task_queue)
    async with queue_bench(temporal_client, task_queue, tmp_path / "bench") as q:
        q.bench.add_repository("demo", demo)
        q.bench.add_repository("old", old)
        q.bench.add_repository("broken", gone)
        q.bench.store.deactivate_repository("old", signer(ACTOR))
        shutil.rmtree(gone)  # registered, but no longer there: its scan fails
        handle = temporal_client.get_schedule_handle(sid)
        with pytest.raises(RPCError) as missing:
            await handle.describe()
        assert missing.value.status == RPCStatusCode.NOT_FOUND  # off by default: not created

        await enable_intake_scan(temporal_client, signer(ACTOR), task_queue, dt.timedelta(days=1))
        try:
            seen, first = await trigger_and_wait(temporal_client, handle, [])
            await asyncio.sleep(1.1)  # a sweep's id names its second
            seen, second = await trigger_and_wait(temporal_client, handle, seen)
            assert len(seen) == 2, seen
        finally:
            await handle.delete()
        view = await q.view()

    assert first.refused == "" and second.refused == ""
    # The deactivated repository is skipped, never scanned.
    assert [(skip.repo_alias, skip.reason) for skip in first.skipped] == [("old", "deactivated")]
    assert [outcome.repo_alias for outcome in first.scanned] == ["broken", "demo"]
    # The broken one is reported with its reason and the next one is scanned all the same.
    broken, scanned = first.scanned
    assert (
        not broken.accepted and broken.code == "git_failed" and "cannot change to" in (broken.message or "")
    )
    assert scanned.accepted and scanned.proposed and scanned.already_queued == 0
    # The second sweep finds every finding already queued: nothing proposed twice, nothing updated.
    again = second.scanned[1]
    assert again.accepted and again.proposed == [] and again.updated == []
    assert again.already_queued == len(scanned.proposed)
    # Every proposal is one finding of demo, each once, none approved; granted by the enabling actor.
    assert sorted(item.key for item in view.items) == sorted(scanned.proposed)
    assert {item.status for item in view.items} == {QueueStatus.PROPOSAL}
    fingerprints = [item.intake.fingerprint for item in view.items if item.intake is not None]
    assert len(fingerprints) == len(set(fingerprints)) == len(view.items)
    assert all(item.repo_alias == "demo" for item in view.items)
    assert all(item.events[0].actor == ACTOR for item in view.items)
    # ... and each proposal's event names the sweep that made it (the first: the second proposed none).
    assert {item.events[0].data["sweep"] for item in view.items} == {seen[0]}


def _grant(task_queue: str, kind: ScheduleKind, *, signed_target: str | None = None) -> ScheduleGrant:
    """The grant ``alice`` gives enabling ``kind`` (signed on ``signed_target`` instead, a forgery)."""
    sid = schedule_id(kind, task_queue)
    digest = grant_digest(sid, kind, 86400)
    proof = sign_action(
        signer(ACTOR),
        action=SCHEDULE_ENABLE_ACTION,
        target=signed_target or sid,
        digest=digest,
        issued_at=dt.datetime.now(dt.UTC),
        nonce=secrets.token_hex(16),
    )
    return ScheduleGrant(
        schedule_id=sid, kind=kind, interval_seconds=86400, granted_by=ACTOR, proof=proof, digest=digest
    )


async def _scheduled_scan(q: QueueBench, grant: ScheduleGrant, sweep_id: str) -> OperatorError:
    request = IntakeRequest(
        actor=ACTOR, repo_alias="demo", scheduled=ScheduledIntake(grant=grant, sweep_workflow_id=sweep_id)
    )
    with pytest.raises(OperatorError) as refused:
        await queue_update(q.client, q.bench.task_queue, QueueMessage.INTAKE, request, IntakeAnswer)
    return refused.value


@within(90)
async def test_a_scan_under_another_grant_a_forged_grant_or_no_running_sweep_is_refused_and_recorded(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    (tmp_path / "git").mkdir()
    repo = make_intake_repository(tmp_path / "git")
    intake_sid = schedule_id(ScheduleKind.INTAKE_SCAN, task_queue)
    case_sid = schedule_id(ScheduleKind.CASE_SWEEP, task_queue)
    async with queue_bench(temporal_client, task_queue, tmp_path / "bench") as q:
        q.bench.add_repository("demo", repo)
        await q.start(QueueState(poll_seconds=3600))
        sweep_id = f"{intake_sid}-2027-01-01T00:00:00Z"
        # The case sweep's (valid) grant authorises no intake scan.
        other = await _scheduled_scan(q, _grant(task_queue, ScheduleKind.CASE_SWEEP), f"{case_sid}-x")
        # An intake grant whose signature is of something else does not verify with alice's key.
        forged = await _scheduled_scan(
            q, _grant(task_queue, ScheduleKind.INTAKE_SCAN, signed_target=case_sid), sweep_id
        )
        # A genuine grant, but the sweep it names is not running: a grant copied out of a history
        # authorises nothing by itself.
        no_sweep = await _scheduled_scan(q, _grant(task_queue, ScheduleKind.INTAKE_SCAN), sweep_id)
        view = await q.view()

    assert [other.code, forged.code, no_sweep.code] == ["proof_invalid"] * 3
    assert "only the" in other.message and "does not match" in forged.message
    assert "no sweep" in no_sweep.message
    recorded = [refusal for refusal in view.refusals if refusal.action is QueueAction.INTAKE]
    assert [refusal.code for refusal in recorded] == ["proof_invalid"] * 3
    assert view.items == []  # nothing scanned, nothing proposed
