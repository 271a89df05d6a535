"""The run bench's baseline: a bare workflow in the shape of a ``SpecialistRun``, no-op activities.

``BenchBaselineRun`` walks a plan read from a project run's history (``bench/run_bench.py``): one
no-op activity per activity the run schedules, one ``BenchBaselineChild`` per ``ModelJob`` child,
and a ``decide`` update whose handler runs one no-op activity where the run authorises its decision
— the same timeouts and retry policy as the run's bookkeeping activities.

Imported again inside the workflow sandbox for every baseline workflow, as a run's module is: the
top level is the standard library and temporalio, written the way a small workflow module would be.
"""

import asyncio
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import RetryPolicy

AWAITING = "awaiting_decision"
_SHORT = timedelta(seconds=30)
_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(milliseconds=200))


@activity.defn(name="bench_noop")
def noop_activity(step: str) -> str:
    """Does nothing (a sync activity, in the worker's thread pool like the project's)."""
    return step


@workflow.defn(name="BenchBaselineChild")
class BaselineChildWorkflow:
    """Runs ``local`` no-op local activities side by side, then ``activities`` no-op activities one
    after another (input: ``[activities, local]``)."""

    @workflow.run
    async def run(self, shape: list[int]) -> str:
        activities, local = shape
        await asyncio.gather(
            *(
                workflow.execute_local_activity(
                    noop_activity, f"local-{index}", start_to_close_timeout=_SHORT, retry_policy=_RETRY
                )
                for index in range(local)
            )
        )
        for index in range(activities):
            await workflow.execute_activity(
                noop_activity, f"child-{index}", start_to_close_timeout=_SHORT, retry_policy=_RETRY
            )
        return "done"


@workflow.defn(name="BenchBaselineRun")
class BaselineRunWorkflow:
    """Walks a plan: ``activity``, ``child:N+L`` (a child running L local activities and N activities),
    ``decision`` (wait for the
    ``decide`` update, whose handler runs one activity)."""

    @workflow.init
    def __init__(self, plan: list[str]) -> None:
        self._status = "running"
        self._decided = False

    @workflow.run
    async def run(self, plan: list[str]) -> str:
        for index, step in enumerate(plan):
            if step == "activity":
                await workflow.execute_activity(
                    noop_activity, f"step-{index}", start_to_close_timeout=_SHORT, retry_policy=_RETRY
                )
            elif step.startswith("child:"):
                activities, _, local = step.partition(":")[2].partition("+")
                await workflow.execute_child_workflow(
                    BaselineChildWorkflow.run,
                    [int(activities), int(local or 0)],
                    id=f"{workflow.info().workflow_id}-c{index}",
                    task_queue=workflow.info().task_queue,
                )
            elif step == "decision":
                self._status = AWAITING
                await workflow.wait_condition(lambda: self._decided)
                self._status = "running"
        await workflow.wait_condition(workflow.all_handlers_finished)
        self._status = "done"
        return self._status

    @workflow.query(name="status")
    def status(self) -> str:
        return self._status

    @workflow.update(name="decide")
    async def decide(self, actor: str) -> str:
        await workflow.execute_activity(
            noop_activity, "decide", start_to_close_timeout=_SHORT, retry_policy=_RETRY
        )
        self._decided = True
        return "accepted"

    @decide.validator
    def _validate_decide(self, actor: str) -> None:
        if self._status != AWAITING or self._decided:
            raise ValueError(f"not awaiting a decision ({self._status})")
