"""The run bench's baselines: a bare workflow in the shape of a ``SpecialistRun``, no-op activities.

``BenchBaselineRun`` walks a plan read from a project run's history (``bench/run_bench.py``): one
no-op activity per activity the run schedules, one ``BenchBaselineChild`` per ``ModelJob`` child,
and a ``decide`` update whose handler runs one no-op activity where the run authorises its decision
— the same timeouts and retry policy as the run's bookkeeping activities.

The same-visibility plan adds what the run shows and carries, but not what it computes: an
``upsert:<keys>`` step where the run upserted its own search attributes (values of the same type,
in the same workflow task as the step after it), and payloads of the run's sizes — an activity's
``activity:<in>:<out>`` bytes, a child's ``child:N+L:<in>:<out>``, the result's ``result:<bytes>``
and the input's padding ``pad:<text>``.

Imported again inside the workflow sandbox for every baseline workflow, as a run's module is: the
top level is the standard library and temporalio, written the way a small workflow module would be.
"""

import asyncio
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import RetryPolicy, SearchAttributeKey

AWAITING = "awaiting_decision"
_SHORT = timedelta(seconds=30)
_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(milliseconds=200))


@activity.defn(name="bench_noop")
def noop_activity(step: str) -> str:
    """Does nothing (a sync activity, in the worker's thread pool like the project's): returns its
    input, or ``out`` bytes for an input ``label|out|padding``."""
    out = _output(step)
    return step if out is None else out


def _output(sized: str) -> str | None:
    """The ``out`` bytes an input ``label|out|padding`` asks for (``None`` for one without sizes)."""
    _, bar, rest = sized.partition("|")
    return "x" * int(rest.partition("|")[0]) if bar else None


def _sized(label: str, sizes: str) -> str:
    """The no-op's input for ``in:out`` bytes (``label`` alone when no sizes are given)."""
    if not sizes:
        return label
    size_in, _, size_out = sizes.partition(":")
    return f"{label}|{size_out}|{'x' * int(size_in)}"


@workflow.defn(name="BenchBaselineChild")
class BaselineChildWorkflow:
    """Runs ``L`` no-op local activities side by side, then ``N`` no-op activities one after another;
    input ``N+L`` (optionally ``N+L|out|padding``: returns ``out`` bytes)."""

    @workflow.run
    async def run(self, shape: str) -> str:
        activities, _, local = shape.partition("|")[0].partition("+")
        await asyncio.gather(
            *(
                workflow.execute_local_activity(
                    noop_activity, f"local-{index}", start_to_close_timeout=_SHORT, retry_policy=_RETRY
                )
                for index in range(int(local or 0))
            )
        )
        for index in range(int(activities)):
            await workflow.execute_activity(
                noop_activity, f"child-{index}", start_to_close_timeout=_SHORT, retry_policy=_RETRY
            )
        out = _output(shape)
        return "done" if out is None else out


@workflow.defn(name="BenchBaselineRun")
class BaselineRunWorkflow:
    """Walks a plan: ``activity[:in:out]``, ``child:N+L[:in:out]`` (a child running L local activities
    and N activities), ``decision`` (wait for the ``decide`` update, whose handler runs one activity),
    ``upsert:K1,K2`` (set those keyword search attributes), ``result:<bytes>``, ``pad:<text>``."""

    @workflow.init
    def __init__(self, plan: list[str]) -> None:
        self._status = "running"
        self._decided = False

    @workflow.run
    async def run(self, plan: list[str]) -> str:
        result = "done"
        for index, step in enumerate(plan):
            kind, _, rest = step.partition(":")
            if kind == "activity":
                await workflow.execute_activity(
                    noop_activity,
                    _sized(f"step-{index}", rest),
                    start_to_close_timeout=_SHORT,
                    retry_policy=_RETRY,
                )
            elif kind == "child":
                counts, _, sizes = rest.partition(":")
                await workflow.execute_child_workflow(
                    BaselineChildWorkflow.run,
                    _sized(counts, sizes),
                    id=f"{workflow.info().workflow_id}-c{index}",
                    task_queue=workflow.info().task_queue,
                )
            elif kind == "decision":
                self._status = AWAITING
                await workflow.wait_condition(lambda: self._decided)
                self._status = "running"
            elif kind == "upsert":
                workflow.upsert_search_attributes(
                    [SearchAttributeKey.for_keyword(key).value_set(f"s{index}") for key in rest.split(",")]
                )
            elif kind == "result":
                result = "x" * int(rest)
        await workflow.wait_condition(workflow.all_handlers_finished)
        self._status = "done"
        return result

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
