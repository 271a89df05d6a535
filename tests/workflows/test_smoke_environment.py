"""The Temporal test fixtures work: the shared dev server and the time-skipping server run a workflow
with an activity, and the custom search attributes are registered on both."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
import uuid

from pydantic import BaseModel
from temporalio import activity, workflow
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.common import SearchAttributeKey
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from contracts.constants import DEFAULT_NAMESPACE
from contracts.search_attributes import SEARCH_ATTRIBUTES

STATUS = SearchAttributeKey.for_keyword("SpecialistStatus")


class SmokeInput(BaseModel):
    marker: str
    sleep_days: int = 0


class SmokeOutput(BaseModel):
    echoed: str
    started_at: dt.datetime
    finished_at: dt.datetime


@activity.defn
async def smoke_echo(inp: SmokeInput) -> str:
    return f"echo:{inp.marker}"


@workflow.defn
class SmokeWorkflow:
    @workflow.run
    async def run(self, inp: SmokeInput) -> SmokeOutput:
        started = workflow.now()
        workflow.upsert_search_attributes([STATUS.value_set(inp.marker)])
        if inp.sleep_days:
            await workflow.sleep(dt.timedelta(days=inp.sleep_days))
        echoed = await workflow.execute_activity(
            smoke_echo, inp, start_to_close_timeout=dt.timedelta(seconds=10)
        )
        return SmokeOutput(echoed=echoed, started_at=started, finished_at=workflow.now())


async def test_dev_server_runs_workflow_and_indexes_search_attribute(
    temporal_client: Client, task_queue: str
) -> None:
    marker = f"smoke-{uuid.uuid4().hex[:12]}"
    async with Worker(
        temporal_client, task_queue=task_queue, workflows=[SmokeWorkflow], activities=[smoke_echo]
    ):
        result = await temporal_client.execute_workflow(
            SmokeWorkflow.run,
            SmokeInput(marker=marker),
            id=f"smoke-{marker}",
            task_queue=task_queue,
            execution_timeout=dt.timedelta(seconds=30),
        )
    assert result.echoed == f"echo:{marker}"

    # Visibility lags the workflow by about 100 ms.
    found = []
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        found = [wf async for wf in temporal_client.list_workflows(f'SpecialistStatus="{marker}"')]
        if found:
            break
        await asyncio.sleep(0.05)
    assert [wf.id for wf in found] == [f"smoke-{marker}"]
    assert found[0].status == WorkflowExecutionStatus.COMPLETED
    assert found[0].typed_search_attributes.get(STATUS) == marker


async def test_dev_server_has_every_custom_search_attribute(temporal_client: Client) -> None:
    listed = await temporal_client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=DEFAULT_NAMESPACE)
    )
    custom = dict(listed.custom_attributes)
    for name in SEARCH_ATTRIBUTES:
        assert custom.get(name) == IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD, name


async def test_time_skipping_env_skips_a_seven_day_sleep(
    time_skipping_env: WorkflowEnvironment, task_queue: str
) -> None:
    client = time_skipping_env.client
    marker = f"skip-{uuid.uuid4().hex[:12]}"
    wall = time.monotonic()
    async with Worker(client, task_queue=task_queue, workflows=[SmokeWorkflow], activities=[smoke_echo]):
        # Without the registration the upsert fails the workflow task over and over and time
        # stops skipping: the workflow hangs, so the wall-clock bound turns that into a failure.
        result = await asyncio.wait_for(
            client.execute_workflow(
                SmokeWorkflow.run,
                SmokeInput(marker=marker, sleep_days=7),
                id=f"smoke-{marker}",
                task_queue=task_queue,
                execution_timeout=dt.timedelta(days=30),
            ),
            timeout=15,
        )
    assert result.echoed == f"echo:{marker}"
    assert result.finished_at - result.started_at >= dt.timedelta(days=7)
    assert time.monotonic() - wall < 10
