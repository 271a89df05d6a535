"""The ``WorkQueue``'s autopilot on a real dev server and worker (docs/architecture.md "Goal queue"):
off starts nothing; on fills exactly the free slots in priority order and never with a high-risk item;
the runs it starts carry the operator's standing grant, which a run accepts only from its queue and
only while the granting actor is active."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from pathlib import Path

import pytest
from temporalio.client import Client

from contracts.enums import Tier
from contracts.errors import ErrorType
from contracts.queue_items import QueueItem, QueueSettings, QueueStatus
from contracts.queue_messages import QueueState, queue_workflow_id
from contracts.runs import QueueGrant, QueueVerdict, RunStatus, RunView
from contracts.temporal_names import QueueMessage, RunMessage
from control.runs import create_run, get_view
from tests.store.git_repository import make_working_tree
from tests.workflows.harness import (
    ACTOR,
    FailingProvider,
    SlowProvider,
    bench,
    events,
    example,
    register_actor,
    run_input,
    signer,
    until,
    within,
)
from tests.workflows.queue_harness import SLOW_QUERY_ITEM, DisagreeingReviewer, QueueBench, queue_bench

pytestmark = pytest.mark.asyncio


async def _approved(q: QueueBench, **fields: str) -> str:
    key = (await q.add({**SLOW_QUERY_ITEM, **fields})).item.key  # type: ignore[union-attr]
    await q.move(QueueMessage.APPROVE, key)
    return key


def _run_of(item: QueueItem) -> str:
    [run] = item.runs
    return run.run_id


def _creator(run: RunView) -> str | None:
    return next(event.actor for event in run.audit if event.kind == "run_created")


@within(90)
async def test_autopilot_off_starts_nothing_and_on_fills_exactly_the_free_slots_in_priority_order(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with queue_bench(temporal_client, task_queue, tmp_path, poll_seconds=0.2) as q:
        # Edit-tier runs wait for their own approval, so the slots they take stay taken.
        q.bench.add_repository("orders-service", make_working_tree(tmp_path / "orders-service"), "main")
        await q.capacity(2)
        keys = {
            name: await _approved(q, tier="worktree", value=value, urgency=urgency, risk=risk)
            for name, value, urgency, risk in [
                ("least", "L", "L", "low"),
                ("first", "H", "H", "low"),
                ("risky", "H", "H", "high"),
                ("second", "M", "M", "medium"),
            ]
        }
        await asyncio.sleep(1.0)
        view = await q.view()
        assert [(item.status, item.runs) for item in view.items] == [(QueueStatus.APPROVED, [])] * 4
        assert view.autopilot_grant is None

        await q.autopilot(True)
        first = await q.until_status(keys["first"], QueueStatus.ACTIVE)
        second = await q.until_status(keys["second"], QueueStatus.ACTIVE)
        run_ids = [_run_of(first), _run_of(second)]
        q.bench.started.extend(run_ids)
        await asyncio.sleep(1.0)
        view = await q.view()
        assert view.autopilot_grant is not None and view.autopilot_grant.granted_by == ACTOR
        status = {name: next(i for i in view.items if i.key == key).status for name, key in keys.items()}
        assert status == {
            "least": QueueStatus.APPROVED,
            "first": QueueStatus.ACTIVE,
            "risky": QueueStatus.APPROVED,  # high risk: only an operator's --confirm-high-risk
            "second": QueueStatus.ACTIVE,
        }
        moved = [event for event in first.events if event.kind == "moved"][-1]
        assert (moved.data["move"], moved.data["by"], moved.actor) == ("dispatch", "system", ACTOR)
        for run_id in run_ids:
            run = await q.bench.wait(run_id, RunStatus.AWAITING_APPROVAL, timeout=45)
            assert run.tier is Tier.WORKTREE and run.approval is None  # never approved by the queue
            [created] = events(run, "run_created")
            assert created["by"] == "queue_autopilot"
            assert created["queue_grant"]["granted_by"] == ACTOR

        # Off stops everything the queue would start by itself: a freed slot stays free.
        await q.autopilot(False)
        assert (await q.view()).autopilot_grant is None
        await q.bench.cancel(run_ids[0])
        await q.until_status(keys["first"], QueueStatus.FAILED)
        await asyncio.sleep(1.0)
        assert (await q.item(keys["least"])).status is QueueStatus.APPROVED
        assert (await q.item(keys["risky"])).runs == []


@within(90)
async def test_a_read_only_run_the_autopilot_starts_is_created_under_the_grant_and_reviewed(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with queue_bench(temporal_client, task_queue, tmp_path, poll_seconds=0.2) as q:
        await q.autopilot(True)
        key = await _approved(q)
        item = await q.until_status(key, QueueStatus.HUMAN_REVIEW, timeout=60)
        run_id = _run_of(item)
        q.bench.started.append(run_id)
        run = await q.bench.wait(run_id, RunStatus.AWAITING_DECISION)
        assert run.tier is Tier.READ_ONLY and _creator(run) == ACTOR
        [created] = events(run, "run_created")
        assert (created["by"], created["queue_grant"]["item_key"]) == ("queue_autopilot", key)
        assert events(run, "action_refused") == []

        # A verdict anyone may signal is believed only when the queue holds it: this run PASSed.
        forged = QueueVerdict(queue_workflow_id=q.workflow_id, item_key=key, round=1)
        await q.client.get_workflow_handle(run_id).signal(RunMessage.QUEUE_VERDICT, forged)

        async def refused() -> bool:
            return bool(events(await get_view(q.client, run_id), "action_refused"))

        assert await until(refused, timeout=10)
        run = await get_view(q.client, run_id)
        [refusal] = events(run, "action_refused")
        assert refusal["code"] == "forbidden" and "holds no FAIL round" in refusal["message"]
        assert run.status is RunStatus.AWAITING_DECISION and run.decision is None


@within(150)
async def test_after_a_fail_the_autopilot_rejects_the_run_on_its_verdict_and_re_dispatches_with_the_findings(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    reviewer = DisagreeingReviewer()  # every review disagrees with a high finding: every round FAILs
    async with queue_bench(
        temporal_client, task_queue, tmp_path, poll_seconds=0.2, providers={"replay": reviewer}
    ) as q:
        await q.autopilot(True)
        key = await _approved(q)

        async def settled() -> bool:
            item = await q.item(key)
            q.bench.started.extend(run.run_id for run in item.runs if run.run_id not in q.bench.started)
            return item.status in (QueueStatus.BLOCKED, QueueStatus.FAILED)

        assert await until(settled, timeout=130, every=0.5)
        item = await q.item(key)
        kinds = [run.kind for run in item.runs]
        assert kinds[0] == "dispatch" and set(kinds[1:]) == {"redispatch"} and 2 <= len(kinds) <= 5
        assert all(run.autopilot for run in item.runs)
        assert [r.verdict for r in item.rounds] == ["FAIL"] * len(item.runs)
        for number, run in enumerate(item.runs[:-1], start=1):  # each FAILed run rejected by the queue
            view = await get_view(q.client, run.run_id)
            assert view.status is RunStatus.REJECTED
            assert view.decision is not None and view.decision.actor == ACTOR
            [decided] = events(view, "decided")
            assert (decided["by"], decided["round"], decided["item_key"]) == ("queue_autopilot", number, key)
            assert f"review round {number} FAIL" in decided["note"]
        # The last round handed the item to a person: its run still awaits their decision.
        last = await get_view(q.client, item.runs[-1].run_id)
        assert last.status is RunStatus.AWAITING_DECISION
        assert last.contract is not None
        assert "Findings of earlier review rounds (resolve each):" in last.contract.task
        assert "- round 1 (score 2): the reviewer did not agree (disagree)" in last.contract.task


@within(150)
async def test_an_escalated_round_runs_on_the_escalation_model_and_each_run_follows_the_previous_one(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    reviewer = DisagreeingReviewer()  # the same score every round: no progress, so the cycle escalates
    async with queue_bench(
        temporal_client,
        task_queue,
        tmp_path,
        poll_seconds=0.2,
        providers={"replay": reviewer},
        model="replay:everyday",
    ) as q:
        answer = await q.escalation_model("replay:demo")
        assert answer.accepted and answer.settings.escalation_model == "replay:demo"
        await q.autopilot(True)
        key = await _approved(q)

        async def handed_over() -> bool:
            item = await q.item(key)
            q.bench.started.extend(run.run_id for run in item.runs if run.run_id not in q.bench.started)
            return item.status is QueueStatus.BLOCKED

        assert await until(handed_over, timeout=130, every=0.5)
        item = await q.item(key)
        assert item.blocker == "decision"
        [escalation] = item.escalations
        assert escalation.model == "replay:demo" and escalation.outcome == "no_progress"
        escalated = [run for run in item.runs if run.escalated]
        assert [run.model for run in escalated] == ["replay:demo"]
        previous: str | None = None
        for run in item.runs:
            view = await get_view(q.client, run.run_id)
            assert view.follows == previous
            previous = run.run_id
            assert view.contract is not None and view.contract.model is not None
            if run.escalated:  # the escalation model first, the selection's chain never reached
                assert view.contract.model.primary == "replay:demo"
                assert view.contract.model.source.startswith("escalation model of the goal queue")
            else:
                assert view.contract.model.primary == "replay:everyday"


@within(120)
async def test_a_failed_item_is_recovered_by_the_queue_after_the_delay_at_most_twice(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    failing = FailingProvider(ErrorType.MODEL_OUTPUT_SCHEMA)  # every run fails at its analysis
    async with queue_bench(temporal_client, task_queue, tmp_path, providers={"replay": failing}) as q:
        settings = QueueSettings(recovery_delay_seconds=1)
        await q.start(QueueState(poll_seconds=0.2, settings=settings))
        await q.autopilot(True)
        key = await _approved(q)

        async def recovered_twice() -> bool:
            item = await q.item(key)
            q.bench.started.extend(run.run_id for run in item.runs if run.run_id not in q.bench.started)
            return item.status is QueueStatus.FAILED and len(item.runs) == 3

        assert await until(recovered_twice, timeout=100, every=0.3)
        await asyncio.sleep(2.5)  # past the delay again: no third recovery
        item = await q.item(key)
        assert [run.kind for run in item.runs] == ["dispatch", "recovery", "recovery"]
        assert [run.outcome for run in item.runs] == ["failed"] * 3
        follows = [(await get_view(q.client, run.run_id)).follows for run in item.runs]
        assert follows == [None, item.runs[0].run_id, item.runs[1].run_id]
        assert item.status is QueueStatus.FAILED
        ended = [run.ended_at for run in item.runs]
        started = [run.at for run in item.runs]
        for previous_end, start in zip(ended, started[1:], strict=False):
            assert previous_end is not None and start - previous_end >= dt.timedelta(seconds=1)


@within(90)
async def test_an_item_whose_run_a_person_cancelled_is_not_recovered_by_the_autopilot(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    slow = SlowProvider(3)  # the run is still analysing when the person cancels it
    async with queue_bench(temporal_client, task_queue, tmp_path, providers={"replay": slow}) as q:
        await q.start(QueueState(poll_seconds=0.2, settings=QueueSettings(recovery_delay_seconds=0)))
        await q.autopilot(True)
        key = await _approved(q)
        active = await q.until_status(key, QueueStatus.ACTIVE, timeout=30)
        run_id = _run_of(active)
        q.bench.started.append(run_id)
        assert await asyncio.to_thread(slow.started.wait, 30)
        await q.bench.cancel(run_id, "wrong repository")
        failed = await q.until_status(key, QueueStatus.FAILED, timeout=60)
        assert failed.events[-1].data["run_status"] == "cancelled"
        await asyncio.sleep(2.0)  # far past the delay of 0 s: nothing recovers it
        item = await q.item(key)
        assert item.status is QueueStatus.FAILED and [run.run_id for run in item.runs] == [run_id]
        # The queue's history, which asked patch queue-cancelled-run-not-recovered, replays.
        from temporalio.contrib.pydantic import pydantic_data_converter
        from temporalio.worker import Replayer

        from worker import WORKFLOWS, sandbox_runner

        handle = q.client.get_workflow_handle(q.workflow_id)
        await handle.terminate("replayed below")
        replayer = Replayer(
            workflows=list(WORKFLOWS),
            data_converter=pydantic_data_converter,
            workflow_runner=sandbox_runner(),
        )
        history = await handle.fetch_history()
        patches = [
            json.loads(payload.data)["id"]
            for event in history.events
            if event.marker_recorded_event_attributes.marker_name == "core_patch"
            for payload in event.marker_recorded_event_attributes.details["patch-data"].payloads
        ]
        assert "queue-cancelled-run-not-recovered" in patches
        replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert replayed.replay_failure is None, replayed.replay_failure


@within(90)
async def test_a_shorter_recovery_delay_rearms_the_wait_of_an_item_already_failed(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    failing = FailingProvider(ErrorType.MODEL_OUTPUT_SCHEMA)
    async with queue_bench(
        temporal_client, task_queue, tmp_path, poll_seconds=0.2, providers={"replay": failing}
    ) as q:
        await q.autopilot(True)  # the default delay: ten minutes
        key = await _approved(q)
        failed = await q.until_status(key, QueueStatus.FAILED, timeout=60)
        q.bench.started.extend(run.run_id for run in failed.runs)
        await asyncio.sleep(1.0)
        assert len((await q.item(key)).runs) == 1  # still waiting for its ten minutes
        answer = await q.recovery_delay(3)  # not due yet when set: the queue's timer must be re-armed
        assert answer.accepted and answer.settings.recovery_delay_seconds == 3

        async def recovered() -> bool:
            item = await q.item(key)
            q.bench.started.extend(run.run_id for run in item.runs if run.run_id not in q.bench.started)
            return len(item.runs) >= 2

        assert await until(recovered, timeout=30, every=0.3)
        view = await q.view()
        [change] = [c for c in view.settings_changes if c.setting == "recovery_delay_seconds"]
        assert (change.before, change.after, change.actor) == (600, 3, ACTOR)
        first, second = (await q.item(key)).runs[:2]
        assert first.ended_at is not None and second.at - first.ended_at >= dt.timedelta(seconds=3)


@within(60)
async def test_a_run_with_a_forged_queue_grant_started_by_a_client_fails_with_the_refusal(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        grant = QueueGrant(
            queue_workflow_id=queue_workflow_id(task_queue),
            item_key="ORD-1",
            granted_by=ACTOR,
            granted_at=dt.datetime.now(dt.UTC),
        )
        unsigned = run_input(example("03-slow-query.json"), enqueue=True, signed=False)
        forged = unsigned.model_copy(update={"queue_grant": grant})
        b.started.append(forged.run_id)
        await create_run(temporal_client, forged, task_queue=task_queue)
        run = await b.terminal(forged.run_id)
        assert run.status is RunStatus.FAILED
        assert run.error is not None and run.error.type == "forbidden"
        [refused] = events(run, "action_refused")
        assert refused["action"] == "create" and "only on a run its queue" in refused["message"]
        assert run.result is None


@within(90)
async def test_the_grant_of_a_deactivated_actor_is_refused_by_the_run_and_the_item_fails(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with queue_bench(temporal_client, task_queue, tmp_path, poll_seconds=0.2) as q:
        register_actor(q.bench.store, "erin", "Erin Operator")
        await q.autopilot(True, actor="erin")
        q.bench.store.deactivate_actor("erin", signer(ACTOR))
        key = await _approved(q)
        item = await q.until_status(key, QueueStatus.FAILED, timeout=45)
        run_id = _run_of(item)
        q.bench.started.append(run_id)
        run = await q.bench.terminal(run_id)
        assert run.status is RunStatus.FAILED and _creator(run) == "erin"
        assert run.error is not None and run.error.type == "actor_deactivated"
        assert run.result is None
