"""Where a bench worker's CPU goes: thread CPU time summed by place, for the run bench's attribution.

Two places are counted, on any ``Worker`` built with :func:`accounted`:

- ``workflow_instance_creation``: the sandbox building a workflow instance — a fresh import of the
  workflow's module (its class, handlers and their type hints) — once per workflow run;
- ``workflow_activations``: every activation of those instances (workflow code, payload conversion
  inside the sandbox);
- ``activity:<name>``: the body of each synchronous activity (local ones included), in its thread.

Thread CPU (``time.thread_time``) excludes waiting: a body blocked on SQLite's write lock or a
thread waiting for the GIL counts only what it computed. The sums are cumulative; a block's share
is the difference of two :meth:`CpuAccount.snapshot` calls.
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from temporalio import activity
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
    WorkflowInstance,
    WorkflowInstanceDetails,
)
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

CREATION = "workflow_instance_creation"
ACTIVATIONS = "workflow_activations"
ACTIVITY_PREFIX = "activity:"


class CpuAccount:
    """Thread-safe sums of thread CPU seconds by place."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seconds: dict[str, float] = defaultdict(float)

    def add(self, place: str, seconds: float) -> None:
        with self._lock:
            self._seconds[place] += seconds

    def snapshot(self) -> dict[str, float]:
        with self._lock:
            return dict(self._seconds)

    def timed(self, place: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn``, with the CPU its calling thread spends in it added to ``place``."""

        def call(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.add(place, time.thread_time() - started)

        return call


def since(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """What ``after`` added to ``before``, by place."""
    return {place: after[place] - before.get(place, 0.0) for place in after}


@dataclasses.dataclass(frozen=True)
class _AccountedSandbox(SandboxedWorkflowRunner):
    """The same sandbox (same restrictions), counting instance creation and activations."""

    account: CpuAccount = dataclasses.field(default_factory=CpuAccount)

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        started = time.thread_time()
        try:
            instance = super().create_instance(det)
        finally:
            self.account.add(CREATION, time.thread_time() - started)
        # The worker calls ``activate`` on the instance object; counting it there keeps the sandbox's
        # own code unchanged.
        instance.activate = self.account.timed(ACTIVATIONS, instance.activate)  # type: ignore[method-assign]
        return instance


class _ActivityBodies(Interceptor):
    def __init__(self, account: CpuAccount) -> None:
        self._account = account

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _ActivityBody(next, self._account)


class _ActivityBody(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, account: CpuAccount) -> None:
        super().__init__(next)
        self._account = account

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        if inspect.iscoroutinefunction(input.fn):  # runs on the event loop: not counted
            return await super().execute_activity(input)
        # A synchronous body runs in the executor's thread: count it there.
        place = ACTIVITY_PREFIX + activity.info().activity_type
        return await super().execute_activity(
            dataclasses.replace(input, fn=self._account.timed(place, input.fn))
        )


def accounted(config: dict[str, Any], account: CpuAccount) -> dict[str, Any]:
    """``Worker`` keyword arguments ``config`` (from ``Worker.config()``) with its sandbox and
    activities counted into ``account``."""
    runner = config["workflow_runner"]
    if not isinstance(runner, SandboxedWorkflowRunner):
        raise TypeError(f"the bench expects the sandboxed runner, not {type(runner).__name__}")
    return {
        **config,
        "workflow_runner": _AccountedSandbox(
            restrictions=runner.restrictions, runner_class=runner.runner_class, account=account
        ),
        "interceptors": [*config.get("interceptors", ()), _ActivityBodies(account)],
    }
