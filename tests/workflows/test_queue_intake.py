"""The queue's ``intake`` update on the shared dev server with an in-process worker: a scan enters its
findings as proposals (never approved), a rejected item's finding is not proposed again, an unsigned
scan is refused and recorded, an unknown alias is refused (exit 3), and the execution records the
intake patch."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import Client

from contracts.errors import NotFound, Refused
from contracts.intake import IntakeAnswer, IntakeRequest
from contracts.queue_items import QueueStatus
from contracts.queue_messages import QueueAction, QueueState
from contracts.temporal_names import QueueMessage
from control.queue import queue_update
from tests.activities.intake_repository import make_intake_repository
from tests.workflows.harness import ACTOR, proof, within
from tests.workflows.queue_harness import QueueBench, queue_bench
from workflows.queue_intake import PATCH_INTAKE


async def scan(q: QueueBench, alias: str = "demo", *, signed: bool = True) -> IntakeAnswer:
    request = IntakeRequest(actor=ACTOR, repo_alias=alias)
    if signed:
        signature = proof(q.workflow_id, QueueAction.INTAKE, actor=ACTOR, digest=request.digest())
        request = request.model_copy(update={"proof": signature})
    return await queue_update(q.client, q.bench.task_queue, QueueMessage.INTAKE, request, IntakeAnswer)


pytestmark = pytest.mark.asyncio


@within(90)
async def test_a_scan_proposes_never_approves_and_a_rejected_finding_stays_rejected(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    (tmp_path / "git").mkdir()
    repo = make_intake_repository(tmp_path / "git")
    async with queue_bench(temporal_client, task_queue, tmp_path) as q:
        q.bench.add_repository("demo", repo)
        await q.start(QueueState(poll_seconds=3600))
        first = await scan(q)
        assert first.proposed and not first.already_queued
        view = await q.view()
        assert {item.status for item in view.items} == {QueueStatus.PROPOSAL}
        assert all(
            item.intake is not None and item.events[0].data["intake"] == item.intake.fingerprint
            for item in view.items
        )
        key = first.proposed[0].key
        assert key is not None
        await q.move(QueueMessage.REJECT, key, reason="not worth it")
        second = await scan(q)
        assert second.proposed == []
        assert [(row.key, row.status) for row in second.not_reproposed] == [(key, QueueStatus.REJECTED)]
        assert len(second.already_queued) == len(first.proposed) - 1
        with pytest.raises(Refused) as refused:
            await scan(q, signed=False)
        assert refused.value.code == "proof_missing"
        assert (await q.view()).refusals[-1].action is QueueAction.INTAKE
        with pytest.raises(NotFound) as unknown:
            await scan(q, "nope")
        assert unknown.value.code == "unknown_repository"
        history = await q.client.get_workflow_handle(q.workflow_id).fetch_history()
        markers = [
            event.marker_recorded_event_attributes
            for event in history.events
            if event.HasField("marker_recorded_event_attributes")
        ]
        assert any(PATCH_INTAKE.encode() in attributes.SerializeToString() for attributes in markers)
