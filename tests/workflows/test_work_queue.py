"""The ``WorkQueue`` workflow on a real dev server and worker: operator moves as protected updates
(validator refusals never enter history; the authorisation refuses a bad proof and records it), key
allocation and the rename at approval, settings, and continue-as-new carrying items in every status."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.common import SearchAttributeKey
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError
from temporalio.worker import Replayer

from contracts.constants import DEFAULT_NAMESPACE
from contracts.enums import AutomationMode, Tier
from contracts.errors import InvalidInput, NotFound, Refused
from contracts.ids import new_run_id
from contracts.policy import AutomationPolicy
from contracts.proofs import ActionProof
from contracts.queue_approval import GAP_ORDER
from contracts.queue_items import QueueRefused, QueueStatus
from contracts.queue_messages import ItemAnswer, MoveRequest, QueueAction, QueueState
from contracts.queue_priority import occupancy
from contracts.runs import RunStatus
from contracts.search_attributes import SearchAttribute
from contracts.temporal_names import QueueMessage
from control.queue import dispatch_request, queue_update
from control.queue_views import attention
from control.runs import get_view
from infra.devserver import DevServer, free_port
from tests.store.git_repository import make_working_tree
from tests.workflows.harness import ACTOR, bench, proof, until, within
from tests.workflows.queue_harness import (
    COMPLETE,
    SLOW_QUERY_ITEM,
    DisagreeingReviewer,
    QueueBench,
    items_in_every_status,
    queue_bench,
)
from worker import WORKFLOWS, sandbox_runner

pytestmark = pytest.mark.asyncio


@within(60)
async def test_a_thin_proposal_gets_a_provisional_key_and_names_every_gap(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with queue_bench(temporal_client, task_queue, tmp_path) as q:
        answer = await q.add({"title": "Look into slow orders"})
        assert answer.item is not None and answer.spec is not None
        assert answer.item.key == "Q-1"
        assert answer.item.status is QueueStatus.PROPOSAL
        assert answer.spec.complete is False
        assert answer.spec.gaps == list(GAP_ORDER)
        second = await q.add({**COMPLETE, "title": "Second"})
        assert second.item is not None and second.item.key == "ORD-1"
        assert second.spec is not None and second.spec.complete
        view = await q.view()
        assert [item.key for item in view.items] == ["Q-1", "ORD-1"]
        assert view.items[0].events[0].actor == ACTOR


@within(60)
async def test_approval_refuses_an_incomplete_item_outside_history_then_renames_it_into_its_series(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with queue_bench(temporal_client, task_queue, tmp_path) as q:
        await q.add({"title": "Orders are slow", "repo_alias": "orders"})
        assert (await q.item("ORD-1")).key == "ORD-1"
        await q.add({"title": "No repository yet"})
        accepted_before = await q.accepted_updates()
        with pytest.raises(QueueRefused) as refused:
            await q.move(QueueMessage.APPROVE, "Q-1")
        assert refused.value.code == "item_contract_incomplete"
        assert refused.value.extra["gaps"] == list(GAP_ORDER)
        assert await q.accepted_updates() == accepted_before  # the refusal never entered history

        fields = {key: value for key, value in COMPLETE.items() if key != "title"}
        updated = await q.update("Q-1", fields)
        assert updated.spec is not None and updated.spec.complete
        approved = await q.move(QueueMessage.APPROVE, "Q-1")
        assert approved.item is not None
        assert approved.previous_key == "Q-1"
        assert approved.item.key == "ORD-2"  # ORD-1 was issued already: numbers only grow
        assert approved.item.status is QueueStatus.APPROVED
        renamed = [event for event in approved.item.events if event.kind == "renamed"]
        assert [event.data for event in renamed] == [{"from": "Q-1", "to": "ORD-2"}]
        with pytest.raises(NotFound) as unknown:
            await q.move(QueueMessage.REJECT, "Q-1")
        assert unknown.value.code == "unknown_item"
        assert "renamed to ORD-2" in unknown.value.message
        assert (await q.view("Q-1")).renamed_to == "ORD-2"


@within(60)
async def test_a_move_the_table_does_not_allow_is_refused_naming_the_status_and_the_allowed_moves(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with queue_bench(temporal_client, task_queue, tmp_path) as q:
        await q.add(COMPLETE)
        await q.move(QueueMessage.APPROVE, "ORD-1")
        with pytest.raises(QueueRefused) as refused:
            await q.move(QueueMessage.REJECT, "ORD-1", reason="changed my mind")
        assert refused.value.code == "transition_refused"
        assert refused.value.extra["status"] == "approved"
        assert {row["move"] for row in refused.value.extra["allowed"]} == {"dispatch", "block"}
        with pytest.raises(QueueRefused) as again:
            await q.move(QueueMessage.APPROVE, "ORD-1")
        assert again.value.code == "transition_refused"
        with pytest.raises(QueueRefused) as not_proposal:
            await q.update("ORD-1", {"notes": "too late"})
        assert not_proposal.value.code == "not_a_proposal"
        assert (await q.item("ORD-1")).status is QueueStatus.APPROVED

        await q.add({"title": "Not wanted"})
        rejected = await q.move(QueueMessage.REJECT, "Q-1", reason="duplicate of ORD-1")
        assert rejected.item is not None and rejected.item.status is QueueStatus.REJECTED
        assert rejected.item.events[-1].data["reason"] == "duplicate of ORD-1"


@within(60)
async def test_bad_input_is_refused_before_anything_changes(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with queue_bench(temporal_client, task_queue, tmp_path) as q:
        await q.add({"title": "Thin"})
        with pytest.raises(InvalidInput) as invalid:
            await q.update("Q-1", {"title": None})
        assert invalid.value.code == "invalid_item_update"
        assert "title cannot be cleared" in invalid.value.message
        with pytest.raises(InvalidInput) as unknown_key:
            await q.update("Q-1", {"colour": "blue"})
        assert "colour: unknown key" in unknown_key.value.message
        with pytest.raises(NotFound):
            await q.update("Q-9", {"notes": "x"})
        item = await q.item("Q-1")
        assert [event.kind for event in item.events] == ["added"]


@within(60)
async def test_the_authorisation_refuses_an_unsigned_or_misbound_action_and_records_it(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with queue_bench(temporal_client, task_queue, tmp_path) as q:
        await q.add(COMPLETE)
        with pytest.raises(Refused) as unsigned:
            await q.move(QueueMessage.APPROVE, "ORD-1", signed=False)
        assert unsigned.value.code == "proof_missing"
        # A proof for another item's approval authorises nothing here.
        request = MoveRequest(actor=ACTOR, key="ORD-1")
        other = proof("ORD-2", QueueAction.APPROVE, digest=request.digest())
        with pytest.raises(Refused) as misbound:
            await queue_update(
                q.client,
                q.bench.task_queue,
                QueueMessage.APPROVE,
                request.model_copy(update={"proof": other}),
                ItemAnswer,
            )
        assert misbound.value.code == "proof_invalid"
        with pytest.raises(InvalidInput) as no_actor:
            await q.move(QueueMessage.APPROVE, "ORD-1", actor=" ")
        assert no_actor.value.code == "actor_required"
        view = await q.view()
        assert view.items[0].status is QueueStatus.PROPOSAL
        assert [(r.action, r.target, r.code) for r in view.refusals] == [
            (QueueAction.APPROVE, "ORD-1", "proof_missing"),
            (QueueAction.APPROVE, "ORD-1", "proof_invalid"),
        ]


@within(60)
async def test_capacity_and_autopilot_are_set_and_each_change_is_recorded(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with queue_bench(temporal_client, task_queue, tmp_path) as q:
        assert (await q.capacity(5)).settings.slots == 5
        assert (await q.autopilot(True)).settings.autopilot is True
        assert (await q.autopilot(True)).settings.autopilot is True  # no change, nothing recorded
        view = await q.view()
        assert (view.settings.slots, view.settings.autopilot) == (5, True)
        assert [(c.setting, c.before, c.after, c.actor) for c in view.settings_changes] == [
            ("slots", 3, 5, ACTOR),
            ("autopilot", False, True, ACTOR),
        ]


@within(120)
async def test_continue_as_new_carries_items_in_every_status_the_allocator_and_the_settings(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    at = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC)
    items, allocator = items_in_every_status(at)
    async with queue_bench(temporal_client, task_queue, tmp_path) as q:
        # Their runs were never started: the queue must not read them while this test looks.
        state = QueueState(
            items=items, allocator=allocator, continue_as_new_after_events=20, poll_seconds=3600
        )
        await q.start(state)
        await q.capacity(4)
        added = await q.add_until_continued()
        view = await q.view()
        assert {item.status for item in view.items} == set(QueueStatus)
        by_key = {item.key: item for item in view.items}
        for item in items:
            assert by_key[item.key] == item
        assert view.settings.slots == 4
        assert view.allocator.last_provisional == allocator.last_provisional + added
        assert view.allocator.last_number == allocator.last_number
        assert view.history_events < 20 + 10
        # The new execution goes on where the old one stopped.
        answer = await q.add({**COMPLETE, "title": "after continue-as-new"})
        assert answer.item is not None
        assert answer.item.key == f"ORD-{allocator.last_number['ORD'] + 1}"
        approved = await q.move(QueueMessage.APPROVE, answer.item.key)
        assert approved.item is not None and approved.item.status is QueueStatus.APPROVED


@within(120)
async def test_the_queue_survives_a_dev_server_restart_and_a_new_worker_with_nothing_lost_or_doubled(
    task_queue: str, tmp_path: Path
) -> None:
    server_dir = tmp_path / "temporal"
    server = DevServer(
        state_dir=server_dir, db_filename=server_dir / "temporal.db", port=free_port(), headless=True
    )

    async def connect() -> Client:
        return await Client.connect(
            server.address, namespace=DEFAULT_NAMESPACE, data_converter=pydantic_data_converter
        )

    try:
        await asyncio.to_thread(server.start)
        async with bench(await connect(), task_queue, tmp_path) as b:
            q = QueueBench(b)
            async with b.worker():
                await q.add(COMPLETE)
                await q.move(QueueMessage.APPROVE, "ORD-1")
                await q.add({"title": "Thin"})
                before = await q.view()

            await asyncio.to_thread(server.stop)
            await asyncio.to_thread(server.start)
            b.client = await connect()

            # A move sent while no worker runs is applied once a worker starts, and only once.
            pending = asyncio.create_task(q.move(QueueMessage.REJECT, "Q-1", reason="after a restart"))
            await asyncio.sleep(1.0)
            assert not pending.done()
            async with b.worker():
                rejected = await pending
                after = await q.view()
                await b.client.get_workflow_handle(q.workflow_id).terminate("test finished")
    finally:
        await asyncio.to_thread(server.stop)
    assert rejected.item is not None and rejected.item.status is QueueStatus.REJECTED
    assert [item.key for item in after.items] == [item.key for item in before.items] == ["ORD-1", "Q-1"]
    assert after.items[0] == before.items[0]
    assert after.allocator == before.allocator
    assert [event.kind for event in after.items[1].events] == ["added", "moved"]


@within(90)
async def test_a_dispatched_run_that_passes_its_review_goes_to_a_person_who_alone_makes_it_done(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with queue_bench(temporal_client, task_queue, tmp_path, poll_seconds=0.2) as q:
        key = (await q.add(SLOW_QUERY_ITEM)).item.key  # type: ignore[union-attr]
        await q.move(QueueMessage.APPROVE, key)
        answer = await q.dispatch(key)
        assert answer.item is not None and answer.item.status is QueueStatus.ACTIVE
        [run] = answer.item.runs
        assert (run.kind, run.cycle, run.outcome) == ("dispatch", 1, "pending")
        assert [event.kind for event in answer.item.events][-2:] == ["moved", "dispatched"]
        assert occupancy((await q.view()).items, 3).occupied == [key]
        view = await q.bench.wait(run.run_id, RunStatus.AWAITING_DECISION, timeout=45)
        assert view.tier is Tier.READ_ONLY and view.contract is not None
        assert SLOW_QUERY_ITEM["title"] in view.contract.task
        assert "Problem:\nThe nightly orders report" in view.contract.task
        assert view.contract.evidence_refs == SLOW_QUERY_ITEM["evidence"]
        # The recorded review agrees and finds nothing above medium: PASS, and a person decides.
        reviewed = await q.until_status(key, QueueStatus.HUMAN_REVIEW)
        moves = [event.data["move"] for event in reviewed.events if event.kind == "moved"]
        assert moves == ["approve", "dispatch", "review", "pass"]
        [round_] = reviewed.rounds
        assert (round_.run_id, round_.number, round_.verdict, round_.score) == (run.run_id, 1, "PASS", 0)
        assert reviewed.runs[0].outcome == "reviewed"
        assert occupancy((await q.view()).items, 3).occupied == []
        assert (await get_view(q.client, run.run_id)).status is RunStatus.AWAITING_DECISION
        # The run shows its item's status as a search attribute, told by the queue as it moves on,
        # and an operator finds it by that status.
        item_status = SearchAttributeKey.for_keyword(SearchAttribute.QUEUE_ITEM_STATUS)

        async def shows_human_review() -> bool:
            described = await q.client.get_workflow_handle(run.run_id).describe()
            return described.typed_search_attributes.get(item_status) == "human-review"

        assert await until(shows_human_review, timeout=15, every=0.2)

        async def listed() -> bool:
            query = f'QueueItemStatus = "human-review" AND WorkflowId = "{run.run_id}"'
            return [e.id async for e in q.client.list_workflows(query)] == [run.run_id]

        assert await until(listed, timeout=15, every=0.3)

        done = await q.done(key, note="reviewed and fine")
        assert done.item is not None and done.item.status is QueueStatus.DONE
        last = done.item.events[-1]
        assert (last.actor, last.data["move"], last.data["run_id"], last.data["reason"]) == (
            ACTOR,
            "done",
            run.run_id,
            "reviewed and fine",
        )
        decided = await get_view(q.client, run.run_id)
        assert decided.status is RunStatus.ACCEPTED and decided.decision is not None
        assert decided.decision.actor == ACTOR
        with pytest.raises(QueueRefused) as again:
            await q.done(key)
        assert again.value.code == "transition_refused"
        reopened = await q.move(QueueMessage.REOPEN, key, reason="the report regressed")
        assert reopened.item is not None
        assert (reopened.item.status, reopened.item.cycle) == (QueueStatus.APPROVED, 2)
        assert reopened.item.events[-1].data["reason"] == "the report regressed"


@within(120)
async def test_a_fail_round_keeps_its_findings_and_the_re_dispatch_rejects_its_run_and_carries_them(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    reviewer = DisagreeingReviewer()
    async with queue_bench(
        temporal_client,
        task_queue,
        tmp_path,
        poll_seconds=0.2,
        providers={"replay": reviewer},  # replay:demo, its reviews made to disagree
    ) as q:
        key = (await q.add(SLOW_QUERY_ITEM)).item.key  # type: ignore[union-attr]
        await q.move(QueueMessage.APPROVE, key)
        first = (await q.dispatch(key)).item.runs[0].run_id  # type: ignore[union-attr]
        failed_round = await q.until_status(key, QueueStatus.AI_REVIEW)

        async def judged() -> bool:
            return bool((await q.item(key)).rounds)

        assert await until(judged, timeout=30)
        item = await q.item(key)
        [round_] = item.rounds
        assert (round_.verdict, round_.score, round_.reviewer_verdict) == ("FAIL", 2, "disagree")
        assert [finding.title for finding in round_.material] == ["The index would double write latency"]
        assert item.status is QueueStatus.AI_REVIEW  # autopilot is off: the queue starts nothing itself
        assert failed_round.key == key
        with pytest.raises(QueueRefused) as done_refused:
            await q.done(key)
        assert done_refused.value.code == "transition_refused"

        second_answer = await q.dispatch(key)
        assert second_answer.item is not None
        second = second_answer.item.runs[-1]
        assert (second.kind, second.cycle) == ("redispatch", 1)
        assert (await get_view(q.client, first)).status is RunStatus.REJECTED
        view = await q.bench.wait(second.run_id, RunStatus.AWAITING_DECISION, timeout=45)
        assert view.contract is not None
        assert "Findings of earlier review rounds (resolve each):" in view.contract.task
        assert "- round 1 (score 2): the reviewer did not agree (disagree); high: The index would" in (
            view.contract.task
        )

        async def second_judged() -> bool:
            return len((await q.item(key)).rounds) == 2

        assert await until(second_judged, timeout=30)
        item = await q.item(key)
        assert [r.number for r in item.rounds] == [1, 2]
        assert [r.run_id for r in item.rounds] == [first, second.run_id]


@within(90)
async def test_dispatch_refuses_a_high_risk_item_without_confirmation_and_a_full_queue_without_override(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with queue_bench(temporal_client, task_queue, tmp_path, poll_seconds=0.2) as q:
        await q.capacity(1)
        risky = (await q.add({**COMPLETE, "title": "Risky change", "risk": "high"})).item.key  # type: ignore[union-attr]
        plain = (await q.add({**COMPLETE, "title": "Plain change"})).item.key  # type: ignore[union-attr]
        for key in (risky, plain):
            await q.move(QueueMessage.APPROVE, key)
        accepted = await q.accepted_updates()
        with pytest.raises(QueueRefused) as unconfirmed:
            await q.dispatch(risky)
        assert unconfirmed.value.code == "high_risk_unconfirmed"
        with pytest.raises(QueueRefused) as not_approved:
            await q.move(QueueMessage.APPROVE, risky)
        assert not_approved.value.code == "transition_refused"
        assert await q.accepted_updates() == accepted  # refused by the validator: not in history
        confirmed = await q.dispatch(risky, confirm_high_risk=True)
        assert confirmed.item is not None and confirmed.item.status is QueueStatus.ACTIVE
        with pytest.raises(QueueRefused) as full:
            await q.dispatch(plain)
        assert full.value.code == "capacity_full"
        assert full.value.extra["occupancy"] == {"occupied": [risky], "count": 1, "slots": 1, "free": 0}
        overridden = await q.dispatch(plain, override_capacity=True)
        assert overridden.item is not None and overridden.item.status is QueueStatus.ACTIVE
        # Neither title is recorded for replay:demo: both runs fail, and so do their items.
        for key in (risky, plain):
            failed = await q.until_status(key, QueueStatus.FAILED)
            assert failed.failure == "run_failed"
            [run] = failed.runs
            assert run.outcome == "failed" and run.failure
            assert failed.events[-1].data["run_status"] == "failed"
            assert failed.events[-1].data["reason"] == run.failure


@within(60)
async def test_a_dispatch_whose_run_is_not_the_one_the_item_asks_for_is_refused(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with queue_bench(temporal_client, task_queue, tmp_path) as q:
        key = (await q.add(COMPLETE)).item.key  # type: ignore[union-attr]
        await q.move(QueueMessage.APPROVE, key)
        item = await q.item(key)

        def sign(target: str, action: str, digest: str) -> ActionProof:
            return proof(target, action, digest=digest)

        request = dispatch_request(item, ACTOR, sign, run_id=new_run_id())
        other = request.run.work_item.model_copy(update={"description": "something else"})
        forged = request.model_copy(update={"run": request.run.model_copy(update={"work_item": other})})
        with pytest.raises(Refused) as refused:
            await queue_update(q.client, q.bench.task_queue, QueueMessage.DISPATCH, forged, ItemAnswer)
        assert refused.value.code == "dispatch_mismatch"
        assert (await q.item(key)).status is QueueStatus.APPROVED


@within(90)
async def test_a_run_is_followed_across_continue_as_new_and_judged_once(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with queue_bench(temporal_client, task_queue, tmp_path) as q:
        # Each poll adds some ten events: the queue continues as new while its run goes on.
        await q.start(QueueState(poll_seconds=0.1, continue_as_new_after_events=40))
        key = (await q.add(SLOW_QUERY_ITEM)).item.key  # type: ignore[union-attr]
        await q.move(QueueMessage.APPROVE, key)
        run_id = (await q.dispatch(key)).item.runs[0].run_id  # type: ignore[union-attr]
        item = await q.until_status(key, QueueStatus.HUMAN_REVIEW, timeout=45)
        assert (await q.view()).runs >= 2
        assert [r.run_id for r in item.rounds] == [run_id]
        assert [e.kind for e in item.events].count("reviewed") == 1
        assert [e.data.get("move") for e in item.events if e.kind == "moved"] == [
            "approve",
            "dispatch",
            "review",
            "pass",
        ]


@within(90)
async def test_an_item_rejected_whose_run_cannot_be_rejected_stays_rejected_and_the_error_says_how_to_finish(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    from contracts.identity import ActorKey

    stranger = ActorKey.generate()  # a key nobody holds: the run refuses the decision it signs

    def unheld(target: str, action: str, digest: str) -> ActionProof:
        return proof(target, action, actor=ACTOR, digest=digest, key=stranger)

    async with queue_bench(temporal_client, task_queue, tmp_path, poll_seconds=0.2) as q:
        key = (await q.add(SLOW_QUERY_ITEM)).item.key  # type: ignore[union-attr]
        await q.move(QueueMessage.APPROVE, key)
        await q.dispatch(key)
        run_id = (await q.until_status(key, QueueStatus.HUMAN_REVIEW, timeout=45)).runs[-1].run_id
        with pytest.raises(Refused) as refused:
            await q.reject(key, reason="not worth it", run_sign=unheld)
        # The refusal keeps the run's own code; its message says the move stands and how to finish.
        assert refused.value.code == "actor_key_unknown"
        message = refused.value.message
        assert message.startswith(f"{key} was rejected (now rejected), but its reviewed run {run_id} was not")
        assert f"reject the run itself with `specialists decide {run_id} --reject --actor {ACTOR}`" in message
        assert (await q.item(key)).status is QueueStatus.REJECTED
        assert (await get_view(q.client, run_id)).status is RunStatus.AWAITING_DECISION


@within(150)
async def test_a_reviewed_result_a_person_rejected_is_never_done_and_no_run_is_left_awaiting_its_decision(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    from contracts.runs import DecisionOutcome
    from control.runs import decide_run

    async with queue_bench(temporal_client, task_queue, tmp_path, poll_seconds=0.2) as q:
        key = (await q.add(SLOW_QUERY_ITEM)).item.key  # type: ignore[union-attr]
        await q.move(QueueMessage.APPROVE, key)
        await q.dispatch(key)
        first = (await q.until_status(key, QueueStatus.HUMAN_REVIEW, timeout=45)).runs[-1].run_id
        # A person rejects the reviewed run itself: the item cannot be done on it.
        await decide_run(
            q.client, first, ACTOR, DecisionOutcome.REJECTED, "not this", proof(first, "decide", actor=ACTOR)
        )
        with pytest.raises(Refused) as not_accepted:
            await q.done(key)
        assert not_accepted.value.code == "run_not_accepted"
        assert f"{first} is rejected" in not_accepted.value.message
        assert (await q.item(key)).status is QueueStatus.HUMAN_REVIEW

        # Sent back for another run, then rejected with its item: each reviewed run is rejected.
        await q.dispatch(key)
        item = await q.until_status(key, QueueStatus.HUMAN_REVIEW, timeout=45)
        second = item.runs[-1].run_id
        await q.dispatch(key)
        item = await q.until_status(key, QueueStatus.HUMAN_REVIEW, timeout=45)
        third = item.runs[-1].run_id
        assert len({first, second, third}) == 3
        await q.reject(key, reason="not worth it")
        assert (await q.item(key)).status is QueueStatus.REJECTED
        for run_id, why in ((second, "sent back for another run"), (third, "the item was rejected")):
            view = await get_view(q.client, run_id)
            assert view.status is RunStatus.REJECTED, run_id
            decided = [entry for entry in view.audit if entry.kind == "decided"]
            assert decided and why in str(decided[-1].data), decided


@within(90)
async def test_a_failed_item_is_parked_where_nothing_retries_it_and_released_into_a_new_cycle(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with queue_bench(temporal_client, task_queue, tmp_path, poll_seconds=0.2) as q:
        key = (await q.add({**COMPLETE, "title": "Not recorded for replay"})).item.key  # type: ignore[union-attr]
        await q.move(QueueMessage.APPROVE, key)
        with pytest.raises(QueueRefused) as not_failed:
            await q.move(QueueMessage.PARK, key, reason="too early")
        assert not_failed.value.code == "transition_refused"
        await q.dispatch(key)
        await q.until_status(key, QueueStatus.FAILED)  # its run finds no recording and fails
        parked = await q.move(QueueMessage.PARK, key, reason="needs a recording first")
        assert parked.item is not None
        assert (parked.item.status, parked.item.blocker) == (QueueStatus.BLOCKED, "parked")
        assert parked.item.events[-1].data["reason"] == "needs a recording first"
        released = await q.move(QueueMessage.RELEASE, key)
        assert released.item is not None
        assert (released.item.status, released.item.blocker, released.item.cycle) == (
            QueueStatus.APPROVED,
            None,
            2,
        )
        redispatched = await q.dispatch(key)
        assert redispatched.item is not None
        assert [(run.cycle, run.kind) for run in redispatched.item.runs] == [(1, "dispatch"), (2, "dispatch")]


@within(90)
async def test_an_edit_tier_run_waits_for_its_own_approval_which_the_queue_shows_as_the_items_attention(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with queue_bench(temporal_client, task_queue, tmp_path, poll_seconds=0.2) as q:
        q.bench.add_repository("orders-service", make_working_tree(tmp_path / "orders-service"), "main")
        key = (await q.add({**SLOW_QUERY_ITEM, "tier": "worktree"})).item.key  # type: ignore[union-attr]
        await q.move(QueueMessage.APPROVE, key)
        run_id = (await q.dispatch(key)).item.runs[0].run_id  # type: ignore[union-attr]
        run = await q.bench.wait(run_id, RunStatus.AWAITING_APPROVAL, timeout=45)
        assert run.tier is Tier.WORKTREE and run.approval is None

        async def shown() -> bool:
            return (await q.view()).run_status.get(run_id) is RunStatus.AWAITING_APPROVAL

        assert await until(shown, timeout=10)
        view = await q.view(key)
        [item] = view.items
        assert item.status is QueueStatus.ACTIVE  # never approved or executed by the queue
        assert attention(item, view.run_status) == {
            "run_id": run_id,
            "run_status": "awaiting_approval",
            "next": f"specialists approve {run_id} --actor ID --contract-sha256 H",
        }
        assert (await get_view(q.client, run_id)).status is RunStatus.AWAITING_APPROVAL


@within(150)
async def test_a_dispatched_run_survives_a_dev_server_restart_and_a_new_worker_and_is_judged_once(
    task_queue: str, tmp_path: Path
) -> None:
    server_dir = tmp_path / "temporal"
    server = DevServer(
        state_dir=server_dir, db_filename=server_dir / "temporal.db", port=free_port(), headless=True
    )

    async def connect() -> Client:
        return await Client.connect(
            server.address, namespace=DEFAULT_NAMESPACE, data_converter=pydantic_data_converter
        )

    try:
        await asyncio.to_thread(server.start)
        async with bench(await connect(), task_queue, tmp_path) as b:
            q = QueueBench(b)
            async with b.worker():
                await q.start(QueueState(poll_seconds=0.2))
                key = (await q.add(SLOW_QUERY_ITEM)).item.key  # type: ignore[union-attr]
                await q.move(QueueMessage.APPROVE, key)
                run_id = (await q.dispatch(key)).item.runs[0].run_id  # type: ignore[union-attr]
            await asyncio.to_thread(server.stop)
            await asyncio.to_thread(server.start)
            b.client = await connect()
            async with b.worker():
                item = await q.until_status(key, QueueStatus.HUMAN_REVIEW, timeout=60)
                for handle_id in (q.workflow_id, run_id):
                    with contextlib.suppress(RPCError):
                        await b.client.get_workflow_handle(handle_id).terminate("test finished")
    finally:
        await asyncio.to_thread(server.stop)
    assert [r.run_id for r in item.rounds] == [run_id]
    assert [run.run_id for run in item.runs] == [run_id]
    assert [e.kind for e in item.events].count("dispatched") == 1


@within(90)
async def test_route_next_dispatches_a_low_risk_item_as_automatic_read_only_and_recommends_a_high_risk_one(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    guarded = AutomationPolicy(mode=AutomationMode.GUARDED, maximum_automatic_tier=Tier.READ_ONLY)
    async with queue_bench(temporal_client, task_queue, tmp_path, poll_seconds=0.2) as q:
        q.bench.set_policy(AutomationMode.GUARDED, Tier.READ_ONLY)
        with pytest.raises(QueueRefused) as empty:  # nothing approved yet
            await q.route_next(guarded)
        assert empty.value.code == "nothing_to_route"
        risky_item = {**SLOW_QUERY_ITEM, "title": "Risky", "risk": "high", "value": "L", "urgency": "L"}
        risky = (await q.add(risky_item)).item.key  # type: ignore[union-attr]
        plain = (await q.add({**SLOW_QUERY_ITEM, "tier": "worktree"})).item.key  # type: ignore[union-attr]
        for key in (risky, plain):
            await q.move(QueueMessage.APPROVE, key)
        # The worktree item is next: it gets an automatic read_only run, never its edit tier,
        # followed and reviewed like any other run.
        dispatched = await q.route_next(guarded)
        assert dispatched.item is not None and dispatched.item.key == plain
        assert dispatched.item.status is QueueStatus.ACTIVE
        [run] = dispatched.item.runs
        routed = dispatched.item.events[-1]
        assert (routed.kind, routed.data["tier"], routed.data["run_id"]) == (
            "routed",
            "read_only",
            run.run_id,
        )
        view = await q.bench.wait(run.run_id, RunStatus.AWAITING_DECISION, timeout=45)
        assert view.tier is Tier.READ_ONLY and view.automatic
        assert view.contract is not None and view.contract.automatic
        reviewed = await q.until_status(plain, QueueStatus.HUMAN_REVIEW)
        assert reviewed.rounds[0].verdict == "PASS"
        # The high-risk item is next: a recommendation is recorded, no run starts, it stays approved.
        recommended = await q.route_next(guarded)
        assert recommended.item is not None and recommended.item.key == risky
        assert recommended.item.status is QueueStatus.APPROVED and recommended.item.runs == []
        routed = recommended.item.events[-1]
        assert (routed.kind, routed.actor, routed.data["tier"], routed.data["run_id"]) == (
            "routed",
            ACTOR,
            "recommend",
            None,
        )
        assert "the item's own risk high" in routed.data["reasons"][0]


@within(60)
async def test_a_run_tells_its_queue_when_it_reaches_its_decision_so_the_queue_need_not_wait_for_its_poll(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with queue_bench(temporal_client, task_queue, tmp_path, poll_seconds=3600) as q:
        key = (await q.add(SLOW_QUERY_ITEM)).item.key  # type: ignore[union-attr]
        await q.move(QueueMessage.APPROVE, key)
        answer = await q.dispatch(key)
        assert answer.item is not None
        [run] = answer.item.runs
        # The queue polls once an hour: only the run's signal can move the item on this soon.
        reviewed = await q.until_status(key, QueueStatus.HUMAN_REVIEW, timeout=40)
        assert reviewed.rounds[0].run_id == run.run_id
        history = await temporal_client.get_workflow_handle(run.run_id).fetch_history()
        patches = [
            json.loads(payload.data)["id"]
            for event in history.events
            if event.marker_recorded_event_attributes.marker_name == "core_patch"
            for payload in event.marker_recorded_event_attributes.details["patch-data"].payloads
        ]
        # Under the run's one marker (run-v6); a run recorded under run-v5 asked run-tells-its-queue
        # of its own (tests/histories/v6/queue_run.json replays).
        assert patches == ["run-v6"]
        # That history replays on the workflow code as it is.
        replayer = Replayer(
            workflows=list(WORKFLOWS),
            data_converter=pydantic_data_converter,
            workflow_runner=sandbox_runner(),
        )
        replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert replayed.replay_failure is None, replayed.replay_failure
