"""``BenchBaselineModelCall``: the model bench's baseline workflow — one plain activity, nothing else.

Input :class:`~bench.baseline_call.BaselineCall`, output :class:`~bench.baseline_call.BaselineReply`:
the workflow runs activity ``bench_baseline_model_call`` once (one attempt, the same start-to-close
timeout a leased ``call_model`` gets for a model with the default 60 s timeout) and returns its reply.

Imported again inside the workflow sandbox for every run: the top level is the standard library and
temporalio, and the message types are imported passed through.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from bench.baseline_call import BASELINE_ACTIVITY, BaselineCall, BaselineReply

CALL_TIMEOUT = timedelta(seconds=90)


@workflow.defn(name="BenchBaselineModelCall")
class BaselineCallWorkflow:
    """Make the call and return its reply."""

    @workflow.run
    async def run(self, call: BaselineCall) -> BaselineReply:
        reply: BaselineReply = await workflow.execute_activity(
            BASELINE_ACTIVITY,
            call,
            result_type=BaselineReply,
            start_to_close_timeout=CALL_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=1),
        )
        return reply
