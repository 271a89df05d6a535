"""What the Temporal UI shows of a run, its model jobs and the goal queue, on a real dev server and
worker (docs/architecture.md "What the Temporal UI shows"): the static summary set when each starts
and the current details that follow its status (the SDK's ``__temporal_workflow_metadata`` query,
which the UI reads)."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client

from contracts.enums import Tier
from contracts.runs import RunStatus
from contracts.temporal_names import QueueMessage
from contracts.ui_summaries import inert
from tests.workflows.harness import SLOW_QUERY, bench, example, within
from tests.workflows.queue_harness import SLOW_QUERY_ITEM, queue_bench

pytestmark = pytest.mark.asyncio


async def _details(client: Client, workflow_id: str) -> str:
    metadata = await client.get_workflow_handle(workflow_id).query(
        "__temporal_workflow_metadata", result_type=WorkflowMetadata
    )
    return metadata.current_details


async def _summary(client: Client, workflow_id: str) -> str | None:
    return await (await client.get_workflow_handle(workflow_id).describe()).static_summary()


@within(60)
async def test_a_run_and_its_model_jobs_say_what_they_are_and_what_the_run_waits_for(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY)
        assert (
            await _summary(temporal_client, view.run_id)
            == f"{inert(example(SLOW_QUERY).title)} · read\\_only"
        )
        details = await _details(temporal_client, view.run_id)
        assert "**status** ready" in details and "**waits for** a person's enqueue" in details
        await b.enqueue(view.run_id)
        view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION)
        details = await _details(temporal_client, view.run_id)
        assert details.splitlines()[0] == "**status** awaiting\\_decision"
        assert "**primary** database\\-optimizer" in details
        assert "a person's decision on the reviewed result" in details
        job = await _details(temporal_client, f"{view.run_id}-analysis")  # its job id
        assert job.startswith("**analysis** by database\\-optimizer · run SOR\\-")
        assert await _summary(temporal_client, f"{view.run_id}-analysis") == (
            f"analysis by database\\-optimizer · {inert(example(SLOW_QUERY).title)}"
        )


@within(60)
async def test_the_queue_shows_its_fleet_and_its_runs_show_their_item(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with queue_bench(temporal_client, task_queue, tmp_path) as q:  # started as the CLI starts it
        key = (await q.add(SLOW_QUERY_ITEM)).item.key  # type: ignore[union-attr]
        await q.move(QueueMessage.APPROVE, key)
        assert (
            await _summary(temporal_client, q.workflow_id) == f"goal queue of task queue {inert(task_queue)}"
        )
        details = await _details(temporal_client, q.workflow_id)
        assert details == "**fleet** 0/3 slots · **autopilot** off\n**items** approved 1"
        answer = await q.dispatch(key)
        assert answer.item is not None
        [run] = answer.item.runs
        expected = f"{inert(answer.item.key)} · {inert(SLOW_QUERY_ITEM['title'])} · read\\_only"
        assert await _summary(temporal_client, run.run_id) == expected
        details = await _details(temporal_client, q.workflow_id)
        assert details.startswith("**fleet** 1/3 slots")
