"""Run throughput, latency and resume after a worker crash, against a same-run baseline; prints JSON.

Everything runs on one fresh dev server started for this bench (in memory, headless, free ports, the
custom search attributes registered) and a SQLite store in a temporary directory (a registered
operator, model ``replay:demo``).

Throughput and latency. An in-process worker from ``worker.build_worker`` runs ``SpecialistRun``
workflows; a second worker with the same configuration (``Worker.config()`` of the first: sandbox,
sticky-queue timeout, executor size, shutdown) runs this module's baseline on its own task queue.
The baseline's plan is read from the history of a warm-up run of each tier: one no-op activity for
every activity the run schedules, one child workflow (with as many no-op activities) for every
``ModelJob`` child, and a ``decide`` update whose handler runs one no-op activity where the run's
``authorize_action`` runs. Both are driven the same way: start, poll the status query every
``--poll-interval`` seconds until ``awaiting_decision``, send ``decide``, wait for the result — with at
most ``--concurrency`` runs in flight. The target's ratio is the project's throughput over this plain
baseline's.

Same visibility. A third side runs the baseline on the same worker with what the run shows and
carries but does not compute: its start search attribute and memo, an upsert of the same search
attributes in the same workflow task wherever the run upserts its own, and payloads of the run's
sizes. Its difference from the plain baseline is what visibility and payload bytes cost a run; the
project against it is what is left for the workflow's own code and its activities' work. Blocks run
in the order baseline, same-visibility, project, project, same-visibility, baseline (half the runs
each) so a server that slows as closed workflows pile up favours no side.

Attribution. Both workers count, by thread CPU, where the bench process's CPU goes
(``bench/cpu_account.py``): the sandbox building each workflow instance, its activations, and each
activity's body; each side's report gives those per run beside the server's and the whole process's
CPU, and each tier ``cpu_ratio_without_activity_bodies`` — the CPU ratio with the project's activity
bodies taken out, what the ratio would be were they no-ops like the baseline's.

Resume. ``python -m worker`` runs as a subprocess; a ``read_only`` run is driven to
``awaiting_decision``, the worker is killed with SIGKILL, a new worker process is spawned, and once it
prints its ``polling`` line the decision is sent. The figure is the time from the new process's spawn
to the run's workflow closing as ``accepted``, next to the spawn-to-polling time (interpreter and
import cost) measured in the same samples.

Usage: ``python bench/run_bench.py [--runs N] [--read-only-runs N] [--concurrency C] [--quick]``
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import functools
import json
import math
import os
import secrets
import signal
import statistics
import sys
import tempfile
import time
import uuid
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from temporalio.client import Client, WorkflowHandle

    from bench.cpu_account import CpuAccount
    from infra.devserver import DevServer

TARGET_THROUGHPUT_RATIO = 0.9
TARGET_RESUME_S = 3.0
ACTOR = "bench-operator"
MODEL = "replay:demo"
PROJECT_QUEUE = "bench-project"
BASELINE_QUEUE = "bench-baseline"
SAME_VISIBILITY = "baseline_same_visibility"
TEMPLATE_QUEUE = "bench-template"
RESUME_QUEUE = "bench-resume"
AWAITING = "awaiting_decision"  # RunStatus.AWAITING_DECISION, and the baseline's status there
RUN_TIMEOUT_S = 120.0
WORKER_READY_TIMEOUT_S = 60.0

# --------------------------------------------------------------------------------------------------
# Measurements


@dataclass
class Sample:
    run_id: str
    latency_s: float
    polls: int


@dataclass
class Side:
    """One side (project or baseline) of one tier: its samples and what the blocks cost."""

    samples: list[Sample] = field(default_factory=list)
    wall_s: float = 0.0
    server_cpu_s: float = 0.0
    bench_cpu_s: float = 0.0
    places_cpu_s: dict[str, float] = field(default_factory=lambda: defaultdict(float))


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    rank = max(math.ceil(fraction * len(ordered)) - 1, 0)
    return ordered[rank]


def _process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far (Linux ``/proc``; 0 when unavailable)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Driver(ABC):
    """Starts runs of one kind and carries each to its terminal state (one subclass per side);
    ``account`` counts where its worker's CPU goes (``bench/cpu_account.py``)."""

    def __init__(self, client: Client, poll_interval: float, account: CpuAccount | None = None) -> None:
        from bench.cpu_account import CpuAccount

        self.client = client
        self.poll_interval = poll_interval
        self.account = account or CpuAccount()

    @abstractmethod
    async def start(self, tier: str, index: int) -> WorkflowHandle[Any, Any]:
        """Start run ``index`` of ``tier``; return its handle."""

    @abstractmethod
    async def status(self, handle: WorkflowHandle[Any, Any]) -> str:
        """The run's current status."""

    @abstractmethod
    async def decide(self, handle: WorkflowHandle[Any, Any]) -> None:
        """Send the run's decision."""

    @abstractmethod
    def check_result(self, tier: str, result: Any) -> None:
        """Raise if the finished run's result is not what the tier should produce."""

    async def failure(self, handle: WorkflowHandle[Any, Any]) -> str:
        return ""

    async def run_once(self, tier: str, index: int) -> Sample:
        started = time.perf_counter()
        handle = await self.start(tier, index)
        polls = 0
        if tier == "read_only":
            while True:
                status = await self.status(handle)
                polls += 1
                if status == AWAITING:
                    break
                if status in ("failed", "expired", "cancelled", "rejected"):
                    detail = await self.failure(handle)
                    raise RuntimeError(f"{handle.id} ended {status} before a decision{detail}")
                await asyncio.sleep(self.poll_interval)
            await self.decide(handle)
        self.check_result(tier, await handle.result())
        return Sample(handle.id, time.perf_counter() - started, polls)


class ProjectDriver(Driver):
    """``SpecialistRun`` started as ``create_run`` starts it; status by the ``status`` query (as
    ``control.runs.wait_for_view`` polls it)."""

    def __init__(
        self, client: Client, poll_interval: float, token: bytes, account: CpuAccount | None = None
    ) -> None:
        super().__init__(client, poll_interval, account)
        from control.demo import READ_ONLY_EXAMPLE, example_work_items

        self.token = token
        items = example_work_items()
        self.recommend_items = [item for _, item in items]
        self.read_only_items = [item for name, item in items if name == READ_ONLY_EXAMPLE]

    def run_input(self, tier: str, index: int) -> Any:
        from contracts.enums import Tier
        from contracts.ids import new_run_id
        from contracts.runs import RunInput
        from control.runs import request_digest

        items = self.recommend_items if tier == "recommend" else self.read_only_items
        draft = RunInput(
            run_id=new_run_id(),
            work_item=items[index % len(items)],
            requested_tier=Tier(tier),
            enqueue=tier == "read_only",
            request_digest="",
            created_by=ACTOR,
        )
        run_input = draft.model_copy(update={"request_digest": request_digest(draft)})
        # The CLI proves a named creator, as it proves an enqueued (protected) create.
        proof = self.proof(run_input.run_id, "create", digest=run_input.request_digest)
        return run_input.model_copy(update={"proof": proof})

    def proof(self, run_id: str, action: str, digest: str = "") -> Any:
        """The bench operator's signature of ``action``, as the CLI makes it (``control.actions``)."""
        import datetime as dt

        from contracts.identity import Signer, sign_action

        return sign_action(
            Signer(ACTOR, bench_key()),
            action=action,
            target=run_id,
            digest=digest,
            issued_at=dt.datetime.now(dt.UTC),
            nonce=secrets.token_hex(16),
        )

    async def start_input(self, run_input: Any, task_queue: str) -> WorkflowHandle[Any, Any]:
        from temporalio.common import (
            SearchAttributeKey,
            SearchAttributePair,
            TypedSearchAttributes,
            WorkflowIDConflictPolicy,
            WorkflowIDReusePolicy,
        )

        from contracts.runs import RunStatus, RunView
        from contracts.search_attributes import SearchAttribute
        from control.runs import RUN_WORKFLOW

        status_key = SearchAttributeKey.for_keyword(SearchAttribute.SPECIALIST_STATUS)
        return await self.client.start_workflow(
            RUN_WORKFLOW,
            run_input,
            id=run_input.run_id,
            task_queue=task_queue,
            result_type=RunView,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            memo={"request_digest": run_input.request_digest, "title": run_input.work_item.title},
            search_attributes=TypedSearchAttributes(
                [SearchAttributePair(status_key, RunStatus.ROUTING.value)]
            ),
        )

    async def start(self, tier: str, index: int) -> WorkflowHandle[Any, Any]:
        return await self.start_input(self.run_input(tier, index), PROJECT_QUEUE)

    async def status(self, handle: WorkflowHandle[Any, Any]) -> str:
        from contracts.runs import RunProgress
        from contracts.temporal_names import RunMessage

        progress = await handle.query(RunMessage.STATUS, result_type=RunProgress)
        return str(progress.status.value)

    async def failure(self, handle: WorkflowHandle[Any, Any]) -> str:
        from contracts.runs import RunView
        from contracts.temporal_names import RunMessage

        view = await handle.query(RunMessage.VIEW, result_type=RunView)
        return f" ({view.error.type}: {view.error.message})" if view.error else ""

    async def decide(self, handle: WorkflowHandle[Any, Any]) -> None:
        from contracts.runs import ActionResult, DecisionOutcome, DecisionRequest
        from contracts.temporal_names import RunMessage

        result = await handle.execute_update(
            RunMessage.DECIDE,
            DecisionRequest(
                actor=ACTOR,
                outcome=DecisionOutcome.ACCEPTED,
                note="bench",
                proof=self.proof(handle.id, "decide"),
            ),
            result_type=ActionResult,
        )
        if not result.accepted:
            raise RuntimeError(f"decide on {handle.id} refused: {result.code} {result.message}")

    def check_result(self, tier: str, result: Any) -> None:
        expected = "recommended" if tier == "recommend" else "accepted"
        if result.status.value != expected:
            error = f" ({result.error.type}: {result.error.message})" if result.error else ""
            raise RuntimeError(f"run {result.run_id} ended {result.status.value}{error}, not {expected}")


class BaselineDriver(Driver):
    """``BenchBaselineRun`` with a plan read from the project's warm-up histories: the plain one, or
    (``shape.same_visibility``) the one that also upserts, carries and starts as the run does."""

    def __init__(
        self,
        client: Client,
        poll_interval: float,
        shapes: dict[str, RunShape],
        account: CpuAccount | None = None,
        *,
        same_visibility: bool = False,
    ) -> None:
        super().__init__(client, poll_interval, account)
        self.shapes = shapes
        self.same_visibility = same_visibility

    def plan(self, tier: str) -> list[str]:
        shape = self.shapes[tier]
        return shape.visible_plan if self.same_visibility else shape.plan

    async def start(self, tier: str, index: int) -> WorkflowHandle[Any, Any]:
        from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes

        from bench.run_baseline import BaselineRunWorkflow

        shape = self.shapes[tier]
        options: dict[str, Any] = {}
        if self.same_visibility:
            options["memo"] = {key: "x" * size for key, size in shape.memo_bytes.items()}
            options["search_attributes"] = TypedSearchAttributes(
                [SearchAttributePair(SearchAttributeKey.for_keyword(key), "s") for key in shape.start_keys]
            )
        return await self.client.start_workflow(
            BaselineRunWorkflow.run,
            self.plan(tier),
            id=f"BENCH-{uuid.uuid4().hex[:16].upper()}",
            task_queue=BASELINE_QUEUE,
            **options,
        )

    async def status(self, handle: WorkflowHandle[Any, Any]) -> str:
        from bench.run_baseline import BaselineRunWorkflow

        return str(await handle.query(BaselineRunWorkflow.status))

    async def decide(self, handle: WorkflowHandle[Any, Any]) -> None:
        from bench.run_baseline import BaselineRunWorkflow

        await handle.execute_update(BaselineRunWorkflow.decide, ACTOR)

    def check_result(self, tier: str, result: Any) -> None:
        size = self.shapes[tier].result_bytes if self.same_visibility else 0
        if result != ("x" * size if size else "done"):
            raise RuntimeError(f"baseline run ended {str(result)[:40]!r}")


async def _bounded(count: int, concurrency: int, one: Callable[[int], Awaitable[Sample]]) -> list[Sample]:
    gate = asyncio.Semaphore(concurrency)

    async def guarded(index: int) -> Sample:
        async with gate:
            return await asyncio.wait_for(one(index), timeout=RUN_TIMEOUT_S)

    return list(await asyncio.gather(*(guarded(index) for index in range(count))))


async def _block(
    driver: Driver, tier: str, count: int, concurrency: int, server_pid: int, side: Side
) -> None:
    """``count`` runs at most ``concurrency`` at a time, added to ``side``."""
    from bench.cpu_account import since

    if count <= 0:
        return
    server_cpu = _process_cpu_s(server_pid)
    bench_cpu = time.process_time()
    places = driver.account.snapshot()
    started = time.perf_counter()
    side.samples += await _bounded(count, concurrency, lambda index: driver.run_once(tier, index))
    side.wall_s += time.perf_counter() - started
    side.server_cpu_s += _process_cpu_s(server_pid) - server_cpu
    side.bench_cpu_s += time.process_time() - bench_cpu
    for place, seconds in since(places, driver.account.snapshot()).items():
        side.places_cpu_s[place] += seconds


def _side_report(side: Side) -> dict[str, Any]:
    latencies = [sample.latency_s for sample in side.samples]
    runs = len(side.samples)
    return {
        "runs": runs,
        "runs_per_s": round(runs / side.wall_s, 2) if side.wall_s else None,
        "latency_ms_p50": _ms(statistics.median(latencies)),
        "latency_ms_p95": _ms(_percentile(latencies, 0.95)),
        "status_polls_per_run_median": statistics.median(sample.polls for sample in side.samples),
        "cpu_s_per_run": {
            "server": round(side.server_cpu_s / runs, 4),
            "bench_process": round(side.bench_cpu_s / runs, 4),
        },
        "bench_process_cpu_ms_per_run_by_place": _places_report(side),
    }


def _places_report(side: Side) -> dict[str, Any]:
    """Where the bench process's CPU went, per run (``bench/cpu_account.py``); ``elsewhere`` is the
    rest: the client and driver, payload conversion outside the sandbox, the SDK's own threads."""
    from bench.cpu_account import ACTIVATIONS, ACTIVITY_PREFIX, CREATION

    runs = len(side.samples)
    activities = {
        place.removeprefix(ACTIVITY_PREFIX): seconds / runs
        for place, seconds in sorted(side.places_cpu_s.items())
        if place.startswith(ACTIVITY_PREFIX) and seconds > 0
    }
    creation = side.places_cpu_s.get(CREATION, 0.0) / runs
    activations = side.places_cpu_s.get(ACTIVATIONS, 0.0) / runs
    bodies = sum(activities.values())
    elsewhere = side.bench_cpu_s / runs - creation - activations - bodies
    return {
        CREATION: _ms2(creation),
        ACTIVATIONS: _ms2(activations),
        "activity_bodies": {name: _ms2(seconds) for name, seconds in activities.items()},
        "activity_bodies_total": _ms2(bodies),
        "elsewhere": _ms2(elsewhere),
    }


def _ms2(seconds: float) -> float:
    return round(seconds * 1000, 2)


def _cpu_ratio_without_bodies(project: dict[str, Any], baseline: dict[str, Any]) -> float:
    """Baseline CPU per run over the project's (server + bench process), each without its activity
    bodies: what the ratio would be if the project's activities were no-ops like the baseline's."""

    def without_bodies(report: dict[str, Any]) -> float:
        cpu = report["cpu_s_per_run"]
        bodies_ms = report["bench_process_cpu_ms_per_run_by_place"]["activity_bodies_total"]
        return float(cpu["server"] + cpu["bench_process"] - bodies_ms / 1000)

    return round(without_bodies(baseline) / without_bodies(project), 3)


def _tier_report(sides: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One tier's sides and ratios: the target's (project over the plain baseline) and, against the
    same-visibility baseline, what is left once upserts and payload sizes are the same on both."""
    project, baseline, visible = sides["project"], sides["baseline"], sides[SAME_VISIBILITY]
    ratio = project["runs_per_s"] / baseline["runs_per_s"]

    def cpu_ms(side: dict[str, Any], part: str) -> float:
        return float(side["cpu_s_per_run"][part]) * 1000

    return {
        "project": project,
        "baseline": baseline,
        SAME_VISIBILITY: visible,
        "throughput_ratio": round(ratio, 3),
        "latency_p50_ratio": round(project["latency_ms_p50"] / baseline["latency_ms_p50"], 2),
        "target_ratio": TARGET_THROUGHPUT_RATIO,
        "target_met": ratio >= TARGET_THROUGHPUT_RATIO,
        "cpu_ratio_without_activity_bodies": _cpu_ratio_without_bodies(project, baseline),
        "throughput_ratio_same_visibility": round(project["runs_per_s"] / visible["runs_per_s"], 3),
        "cpu_ratio_without_activity_bodies_same_visibility": _cpu_ratio_without_bodies(project, visible),
        # What the upserts, memo and payload sizes alone cost per run: same-visibility minus plain.
        "visibility_and_payload_cpu_ms_per_run": {
            part: round(cpu_ms(visible, part) - cpu_ms(baseline, part), 1)
            for part in ("server", "bench_process")
        },
    }


def _printable(plan: list[str]) -> list[str]:
    """A plan as the report shows it: the input's padding by its size."""
    return [f"pad:<{len(step) - 4} bytes>" if step.startswith("pad:") else step for step in plan]


# --------------------------------------------------------------------------------------------------
# Histories: the plan the baseline mirrors, and where a run's time goes


def _event_s(event: Any) -> float:
    return float(event.event_time.ToNanoseconds()) / 1e9


async def _events(client: Client, workflow_id: str) -> list[Any]:
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return list(history.events)


@dataclass
class RunShape:
    """What a baseline mirrors of one tier's warm-up run (``bench/run_baseline.py``)."""

    plan: list[str]
    """Activities, children and the decision, tiny payloads, no search attributes."""
    visible_plan: list[str]
    """The same, with the run's own upserts and payload sizes."""
    memo_bytes: dict[str, int]
    start_keys: list[str]
    result_bytes: int


def _payload_bytes(payloads: Any) -> int:
    return sum(len(payload.data) for payload in payloads.payloads)


def _json_string_bytes(size: int) -> int:
    """The length of a string whose JSON encoding (quotes included) is ``size`` bytes."""
    return max(size - 2, 0)


async def _shape_from_history(client: Client, workflow_id: str) -> RunShape:
    """The run's shape: ``activity`` per activity, ``child:N+L`` per child (N activities, L local ones),
    ``decision`` for an activity scheduled by an update handler (the ``decide`` authorisation); and
    the same-visibility plan, which adds each ``upsert`` of the run's own search attributes (the
    ``TemporalChangeVersion`` that a patch marker brings is the workflow's own cost, not mirrored) and
    the sizes of every payload the run's own history carries."""
    from temporalio.api.enums.v1 import EventType

    plan: list[str] = []
    # Same-visibility steps; an activity or child step waits for its result's size, by the event id
    # that scheduled it, to be written as "<step>:<in>:<out>".
    visible: list[str | tuple[str, int]] = []
    result_sizes: dict[int, int] = {}
    updates_open = 0
    memo_bytes: dict[str, int] = {}
    start_keys: list[str] = []
    input_bytes = result_bytes = 0
    for event in await _events(client, workflow_id):
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            started = event.workflow_execution_started_event_attributes
            input_bytes = _payload_bytes(started.input)
            memo_bytes = {
                key: _json_string_bytes(len(payload.data)) for key, payload in started.memo.fields.items()
            }
            start_keys = sorted(started.search_attributes.indexed_fields)
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            completed = event.workflow_execution_completed_event_attributes
            result_bytes = _json_string_bytes(_payload_bytes(completed.result))
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            updates_open += 1
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
            updates_open = max(updates_open - 1, 0)
        elif kind == EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
            fields = event.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields
            keys = sorted(key for key in fields if key != "TemporalChangeVersion")
            if keys:
                visible.append("upsert:" + ",".join(keys))
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            step = "decision" if updates_open else "activity"
            plan.append(step)
            if step == "decision":
                visible.append(step)
            else:
                scheduled = event.activity_task_scheduled_event_attributes
                visible.append((f"activity:{_payload_bytes(scheduled.input)}", event.event_id))
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            done = event.activity_task_completed_event_attributes
            result_sizes[done.scheduled_event_id] = _json_string_bytes(_payload_bytes(done.result))
        elif kind == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
            initiated = event.start_child_workflow_execution_initiated_event_attributes
            child_events = await _events(client, initiated.workflow_id)
            activities = sum(
                1 for e in child_events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            )
            local = sum(
                1
                for e in child_events
                if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
                and e.marker_recorded_event_attributes.marker_name == "core_local_activity"
            )
            plan.append(f"child:{activities}+{local}")
            visible.append((f"child:{activities}+{local}:{_payload_bytes(initiated.input)}", event.event_id))
        elif kind == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
            child = event.child_workflow_execution_completed_event_attributes
            result_sizes[child.initiated_event_id] = _json_string_bytes(_payload_bytes(child.result))
    unresolved = [step for step in visible if isinstance(step, tuple) and step[1] not in result_sizes]
    if unresolved:
        raise RuntimeError(f"{workflow_id}: steps without a completion in its history: {unresolved}")
    steps = [step if isinstance(step, str) else f"{step[0]}:{result_sizes[step[1]]}" for step in visible]
    steps.append(f"result:{result_bytes}")
    # The run's input is its size again: the plan padded up to it.
    padding = input_bytes - len(json.dumps(steps)) - len(', "pad:"')
    if padding > 0:
        steps.append("pad:" + "x" * padding)
    return RunShape(plan, steps, memo_bytes, start_keys, result_bytes)


@dataclass
class _Timings:
    """Per-run sums and per-step durations collected from histories."""

    per_run: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    activity_queue: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    activity_exec: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    counts: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))


def _walk(events: Iterable[Any], timings: _Timings, totals: dict[str, float], label: str = "") -> list[str]:
    """Adds one history's step durations to ``timings``/``totals``; returns its child workflow ids."""
    from temporalio.api.enums.v1 import EventType as E

    scheduled: dict[int, tuple[str, float]] = {}
    started: dict[int, float] = {}
    task_scheduled: dict[int, float] = {}
    task_started: dict[int, float] = {}
    child_started: dict[int, float] = {}
    children: list[str] = []
    for event in events:
        at = _event_s(event)
        kind = event.event_type
        totals[f"{label}history_events"] += 1
        if kind == E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            scheduled[event.event_id] = (name, at)
            totals[f"activity:{name}"] += 1
        elif kind == E.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            ref = event.activity_task_started_event_attributes.scheduled_event_id
            name, when = scheduled[ref]
            timings.activity_queue[name].append(at - when)
            totals["activity_queue_s"] += at - when
            started[ref] = at
        elif kind == E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            ref = event.activity_task_completed_event_attributes.scheduled_event_id
            name, _ = scheduled[ref]
            timings.activity_exec[name].append(at - started[ref])
            totals["activity_exec_s"] += at - started[ref]
        elif kind == E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
            task_scheduled[event.event_id] = at
            totals["workflow_tasks"] += 1
        elif kind == E.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            ref = event.workflow_task_started_event_attributes.scheduled_event_id
            task_started[ref] = at
            totals["workflow_task_queue_s"] += at - task_scheduled[ref]
        elif kind == E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            ref = event.workflow_task_completed_event_attributes.scheduled_event_id
            totals["workflow_task_processing_s"] += at - task_started[ref]
        elif kind == E.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
            totals["search_attribute_upserts"] += 1
        elif kind == E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
            children.append(event.start_child_workflow_execution_initiated_event_attributes.workflow_id)
            child_started[event.event_id] = at
            totals["child_workflows"] += 1
        elif kind == E.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
            ref = event.child_workflow_execution_completed_event_attributes.initiated_event_id
            totals["child_workflow_s"] += at - child_started[ref]
    return children


async def _profile(client: Client, run_ids: list[str]) -> dict[str, Any]:
    """Where a run's time goes, from the histories of ``run_ids`` (children included)."""
    timings = _Timings()
    for run_id in run_ids:
        totals: dict[str, float] = defaultdict(float)
        children = _walk(await _events(client, run_id), timings, totals)
        for child_id in children:
            _walk(await _events(client, child_id), timings, totals, label="child_")
        for key, value in totals.items():
            timings.per_run[key].append(value)
    per_run: dict[str, Any] = {}
    for key, values in sorted(timings.per_run.items()):
        if key.endswith("_s"):
            per_run[key.removesuffix("_s") + "_ms_median"] = _ms(statistics.median(values))
        else:
            per_run[key] = statistics.median(values)
    return {
        "runs_sampled": len(run_ids),
        "per_run": per_run,
        "activity_ms_median": {
            name: {
                "queue": _ms(statistics.median(timings.activity_queue[name])),
                "exec": _ms(statistics.median(timings.activity_exec[name])),
            }
            for name in sorted(timings.activity_exec)
        },
    }


# --------------------------------------------------------------------------------------------------
# Resume after SIGKILL


@dataclass
class WorkerProcess:
    """``python -m worker`` as a subprocess; ``spawned``/``polling`` are ``perf_counter`` times."""

    process: asyncio.subprocess.Process
    spawned: float
    log: Any
    polling: float = 0.0
    drain: asyncio.Task[None] | None = None

    async def wait_polling(self) -> None:
        assert self.process.stdout is not None
        stdout = self.process.stdout

        async def read() -> None:
            while True:
                line = await stdout.readline()
                if not line:
                    raise RuntimeError(f"worker exited ({await self.process.wait()}) before polling")
                if b"polling" in line:
                    self.polling = time.perf_counter()
                    return

        await asyncio.wait_for(read(), timeout=WORKER_READY_TIMEOUT_S)

        async def drain() -> None:
            with contextlib.suppress(Exception):
                while await stdout.readline():
                    pass

        self.drain = asyncio.ensure_future(drain())

    async def stop(self, sig: int) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(sig)
            try:
                await asyncio.wait_for(self.process.wait(), timeout=10)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self.process.kill()
                await self.process.wait()
        if self.drain is not None:
            self.drain.cancel()
        self.log.close()


async def _after_decision(client: Client, run_id: str, sent_wall: float) -> dict[str, float]:
    """From the run's history, where the time between sending ``decide`` and the close went.

    ``sticky_wait``: until the new worker starts the first workflow task (the server first offers it to
    the dead worker's sticky queue); ``first_task``: that task on the new worker (sandbox load and
    replay of the whole history); ``authorize``: the ``authorize_action`` activity (the new worker's
    first store access); ``rest``: from then to the workflow's close (projection, last tasks).
    """
    from temporalio.api.enums.v1 import EventType as E

    first_started = first_completed = authorize_done = authorize_start = closed = 0.0
    for event in await _events(client, run_id):
        at = _event_s(event)
        if at < sent_wall - 0.005:
            continue
        kind = event.event_type
        if kind == E.EVENT_TYPE_WORKFLOW_TASK_STARTED and not first_started:
            first_started = at
        elif kind == E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED and first_started and not first_completed:
            first_completed = at
        elif kind == E.EVENT_TYPE_ACTIVITY_TASK_STARTED and not authorize_start:
            authorize_start = at
        elif kind == E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED and authorize_start and not authorize_done:
            authorize_done = at
        elif kind == E.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            closed = at
    return {
        "after_decision_sticky_wait_s": round(first_started - sent_wall, 3),
        "after_decision_first_task_s": round(first_completed - first_started, 3),
        "after_decision_authorize_s": round(authorize_done - authorize_start, 3),
        "after_decision_rest_s": round(closed - authorize_done, 3),
    }


def _import_worker_s() -> float:
    """Wall time of ``python -c 'import worker'`` (what a worker process imports before it connects)."""
    import subprocess

    root = Path(__file__).resolve().parent.parent
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", "import worker"], cwd=root, check=True, stdin=subprocess.DEVNULL, timeout=60
    )
    return time.perf_counter() - started


async def _idle(handle: WorkflowHandle[Any, Any], timeout: float = 30.0) -> None:
    """Wait until the run has no pending activity, child or workflow task."""
    deadline = time.perf_counter() + timeout
    while True:
        raw = (await handle.describe()).raw_description
        busy = raw.pending_activities or raw.pending_children or raw.HasField("pending_workflow_task")
        if not busy:
            return
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{handle.id} did not settle within {timeout:g} s")
        await asyncio.sleep(0.05)


async def _spawn_worker(env: dict[str, str], log_path: Path) -> WorkerProcess:
    root = Path(__file__).resolve().parent.parent
    log = log_path.open("ab")
    spawned = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "worker",
        cwd=root,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=log,
    )
    return WorkerProcess(process=process, spawned=spawned, log=log)


async def _resume(
    client: Client,
    driver: ProjectDriver,
    server: DevServer,
    state: Path,
    database_url: str,
    samples: int,
    early_samples: int,
    import_samples: int,
) -> dict[str, Any]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("SPECIALISTS_")}
    env.update(
        SPECIALISTS_TEMPORAL_ADDRESS=server.address,
        SPECIALISTS_TASK_QUEUE=RESUME_QUEUE,
        SPECIALISTS_DATABASE_URL=database_url,
        SPECIALISTS_STATE_DIR=str(state),
        SPECIALISTS_ACTION_TOKEN_FILE=str(state / "action-token"),
    )
    results: list[dict[str, float]] = []
    early: list[dict[str, float]] = []
    workers: list[WorkerProcess] = []
    try:
        current = await _spawn_worker(env, state / "worker-0.log")
        workers.append(current)
        await current.wait_polling()
        first_start = current.polling - current.spawned
        for index in range(samples + early_samples):
            decide_at_kill = index >= samples
            run_input = driver.run_input("read_only", index)
            handle = await driver.start_input(run_input, RESUME_QUEUE)
            while await driver.status(handle) != AWAITING:
                await asyncio.sleep(0.05)
            # The status turns before the last projection is written: kill an idle worker, not one
            # in the middle of a task (that costs the 10 s workflow task timeout, not the sticky one).
            await _idle(handle)
            await current.stop(signal.SIGKILL)
            sent_wall = time.time()
            decision = asyncio.ensure_future(driver.decide(handle)) if decide_at_kill else None
            current = await _spawn_worker(env, state / f"worker-{index + 1}.log")
            workers.append(current)
            await current.wait_polling()
            if decision is None:
                sent_wall = time.time()
                decision = asyncio.ensure_future(driver.decide(handle))
            await asyncio.wait_for(decision, timeout=RUN_TIMEOUT_S)
            decided = time.perf_counter()
            view = await asyncio.wait_for(handle.result(), timeout=RUN_TIMEOUT_S)
            closed = time.perf_counter()
            driver.check_result("read_only", view)
            sample = {
                "spawn_to_polling_s": round(current.polling - current.spawned, 3),
                "polling_to_decided_s": round(decided - current.polling, 3),
                "polling_to_accepted_s": round(closed - current.polling, 3),
                "spawn_to_accepted_s": round(closed - current.spawned, 3),
            }
            if decide_at_kill:
                early.append(sample)
            else:
                results.append({**sample, **await _after_decision(client, handle.id, sent_wall)})
    finally:
        for worker in workers:
            await worker.stop(signal.SIGTERM)
    import_only = [_import_worker_s() for _ in range(import_samples)]

    from worker import STICKY_QUEUE_TIMEOUT

    def median(rows: list[dict[str, float]], key: str) -> float:
        return round(statistics.median(row[key] for row in rows), 3)

    spawn_to_accepted = median(results, "spawn_to_accepted_s")
    return {
        "procedure": (
            "python -m worker as a subprocess; a read_only run driven to awaiting_decision (and idle: "
            "no pending task); SIGKILL; a new worker process spawned; decide sent once it prints its "
            "polling line; measured from the spawn to the run's workflow closing as accepted"
        ),
        "samples": results,
        "spawn_to_accepted_s_median": spawn_to_accepted,
        "spawn_to_polling_s_median": median(results, "spawn_to_polling_s"),
        "polling_to_accepted_s_median": median(results, "polling_to_accepted_s"),
        "after_decision_s_median": {
            key: median(results, key) for key in results[0] if key.startswith("after_decision_")
        },
        "first_worker_spawn_to_polling_s": round(first_start, 3),
        "worker_import_only_s_median": round(statistics.median(import_only), 3) if import_only else None,
        "sticky_queue_timeout_s": STICKY_QUEUE_TIMEOUT.total_seconds(),
        "decision_sent_at_kill": {
            "procedure": (
                "the same, but decide is sent right after the SIGKILL, while the new worker starts: "
                "the sticky-queue wait overlaps the start-up"
            ),
            "samples": early,
            "spawn_to_accepted_s_median": median(early, "spawn_to_accepted_s") if early else None,
            "polling_to_accepted_s_median": median(early, "polling_to_accepted_s") if early else None,
        },
        "target_s": TARGET_RESUME_S,
        "target_met": spawn_to_accepted <= TARGET_RESUME_S,
    }


# --------------------------------------------------------------------------------------------------
# The bench


@functools.cache
def bench_key() -> Any:
    """The bench operator's key (one per bench process)."""
    from contracts.identity import ActorKey

    return ActorKey.generate()


def _prepare_store(database_url: str, token: bytes) -> None:
    from contracts.identity import Signer, TrustAnchor
    from contracts.models import ModelSelection
    from store.database import open_store

    with open_store(database_url, anchor=TrustAnchor(token=token)) as store:
        store.bootstrap_actor(ACTOR, "Bench operator", bench_key(), token)
        store.select_models(ModelSelection(primary=MODEL), Signer(ACTOR, bench_key()))


def _log_to(path: Path) -> Any:
    """The worker's structured logs (JSON lines, INFO) into ``path``, not onto the bench's output."""
    import structlog

    from runtime.logs import configure_logging

    configure_logging()
    sink = path.open("a", encoding="utf-8")
    processors = list(structlog.get_config()["processors"])
    processors[-1] = structlog.processors.JSONRenderer()
    structlog.configure(processors=processors, logger_factory=structlog.PrintLoggerFactory(file=sink))
    return sink


def _tuning(config: dict[str, Any]) -> dict[str, Any]:
    executor = config.get("activity_executor")
    sticky = config.get("sticky_queue_schedule_to_start_timeout")
    shutdown = config.get("graceful_shutdown_timeout")
    return {
        "workflow_runner": type(config.get("workflow_runner")).__name__,
        "activity_executor_threads": getattr(executor, "_max_workers", None),
        "sticky_queue_schedule_to_start_timeout_s": sticky.total_seconds() if sticky else None,
        "graceful_shutdown_timeout_s": shutdown.total_seconds() if shutdown else None,
        "max_cached_workflows": config.get("max_cached_workflows"),
        "max_concurrent_workflow_tasks": config.get("max_concurrent_workflow_tasks"),
        "max_concurrent_activities": config.get("max_concurrent_activities"),
    }


async def _bench(args: argparse.Namespace, server: DevServer, state: Path) -> dict[str, Any]:
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.worker import Worker

    from activities.config import ActivityConfig
    from bench.cpu_account import CpuAccount, accounted
    from bench.run_baseline import BaselineChildWorkflow, BaselineRunWorkflow, noop_activity
    from store.database import default_database_url
    from worker import build_worker, compile_workflow_modules

    database_url = default_database_url(state)
    token_file = state / "action-token"
    token_text = secrets.token_urlsafe(32)
    fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token_text + "\n")
    token = token_text.encode("utf-8")
    _prepare_store(database_url, token)
    sink = _log_to(state / "bench-worker.log")
    try:
        client = await Client.connect(server.address, data_converter=pydantic_data_converter)
        # The project worker is build_worker's, built for a queue nobody polls and never run: its
        # configuration, on the bench's queue, gives both workers the same settings and both count
        # where their CPU goes (the sandbox, activity bodies) the same way.
        template = build_worker(
            client,
            task_queue=TEMPLATE_QUEUE,
            config=ActivityConfig(database_url=database_url, action_token=token),
        )
        config = {**template.config(), "task_queue": PROJECT_QUEUE}
        project_account, baseline_account = CpuAccount(), CpuAccount()
        project_worker = Worker(**accounted(config, project_account))
        threads = getattr(config.get("activity_executor"), "_max_workers", 16)
        baseline_executor = concurrent.futures.ThreadPoolExecutor(max_workers=threads)
        baseline_config = {
            **config,
            "task_queue": BASELINE_QUEUE,
            "workflows": [BaselineRunWorkflow, BaselineChildWorkflow],
            "activities": [noop_activity],
            "activity_executor": baseline_executor,
        }
        compile_workflow_modules([BaselineRunWorkflow, BaselineChildWorkflow])  # as build_worker does
        baseline_worker = Worker(**accounted(baseline_config, baseline_account))
        project = ProjectDriver(client, args.poll_interval, token, project_account)
        tiers = {"recommend": args.runs, "read_only": args.read_only_runs}
        report: dict[str, Any] = {}
        async with project_worker, baseline_worker:
            # Warm-up: opens the store (and migrates it), loads the catalog, fills the sandbox's
            # module cache; its histories give the baseline its plan.
            warm_ids = {tier: (await project.run_once(tier, 0)).run_id for tier in tiers}
            shapes = {tier: await _shape_from_history(client, run_id) for tier, run_id in warm_ids.items()}
            baseline = BaselineDriver(client, args.poll_interval, shapes, baseline_account)
            visible = BaselineDriver(
                client, args.poll_interval, shapes, baseline_account, same_visibility=True
            )
            for tier in tiers:
                await baseline.run_once(tier, 0)
                await visible.run_once(tier, 0)

            sequential: dict[str, Any] = {}
            for tier in tiers:
                row: dict[str, Any] = {}
                for name, driver in (("project", project), ("baseline", baseline)):
                    latencies = [
                        (await driver.run_once(tier, index)).latency_s for index in range(args.sequential)
                    ]
                    row[f"{name}_ms_median"] = _ms(statistics.median(latencies)) if latencies else None
                sequential[tier] = row

            throughput: dict[str, Any] = {}
            profile: dict[str, Any] = {}
            drivers: dict[str, Driver] = {
                "baseline": baseline,
                SAME_VISIBILITY: visible,
                "project": project,
            }
            for tier, runs in tiers.items():
                sides = {name: Side() for name in drivers}
                first, second = runs // 2, runs - runs // 2
                order = [*drivers, *reversed(drivers)]  # baseline, visible, project, project, ...
                for position, name in enumerate(order):
                    count = first if position < len(drivers) else second
                    await _block(drivers[name], tier, count, args.concurrency, server.pid or 0, sides[name])
                throughput[tier] = _tier_report({name: _side_report(side) for name, side in sides.items()})
                sample = args.profile_sample
                profile[tier] = {
                    name: await _profile(client, [s.run_id for s in side.samples[-sample:]])
                    for name, side in sides.items()
                }
            report.update(
                baseline={
                    "description": (
                        "BenchBaselineRun (bench/run_baseline.py, a small module of its own) on its own "
                        "task queue and worker with the project worker's configuration: for each "
                        "activity the project run schedules, one no-op sync activity (same timeouts and "
                        "retry policy); for each ModelJob child, a child workflow running the same number "
                        "of no-op activities; where the run's decide handler runs authorize_action, a "
                        "decide update whose handler runs one no-op activity. Tiny string payloads, no "
                        "search attribute upserts, no memo; the status query returns a string"
                    ),
                    "plans": {tier: shape.plan for tier, shape in shapes.items()},
                },
                baseline_same_visibility={
                    "description": (
                        "The same baseline on the same worker, plus what the run shows and carries but "
                        "does not compute: its start search attribute and memo, an upsert of the same "
                        "keyword search attributes in the same workflow task wherever the run upserts its "
                        "own (not the TemporalChangeVersion a patch marker brings), and payloads of the "
                        "run's sizes (its input and result, each activity's input and result, each "
                        "child's input and result)"
                    ),
                    "plans": {tier: _printable(shape.visible_plan) for tier, shape in shapes.items()},
                },
                sequential_latency=sequential,
                throughput=throughput,
                profile=profile,
            )
            report["worker_tuning"] = _tuning(config)
        baseline_executor.shutdown(wait=False)
        report["resume"] = await _resume(
            client,
            project,
            server,
            state,
            database_url,
            args.resume_samples,
            args.resume_early_samples,
            0 if args.quick else 3,
        )
        return report
    finally:
        sink.close()


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=100, help="recommend runs per side")
    parser.add_argument("--read-only-runs", type=int, default=50, help="read_only runs per side")
    parser.add_argument("--concurrency", type=int, default=16, help="runs in flight at most")
    parser.add_argument("--poll-interval", type=float, default=0.1, help="status poll interval (s)")
    parser.add_argument("--sequential", type=int, default=3, help="one-at-a-time runs per tier and side")
    parser.add_argument("--profile-sample", type=int, default=10, help="histories profiled per side")
    parser.add_argument("--resume-samples", type=int, default=5, help="SIGKILL/resume repetitions")
    parser.add_argument(
        "--resume-early-samples", type=int, default=3, help="repetitions with decide sent at the kill"
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.read_only_runs, args.concurrency = 2, 1, 2
        args.sequential, args.profile_sample, args.resume_samples, args.resume_early_samples = 0, 1, 1, 0
    if min(args.runs, args.read_only_runs, args.concurrency, args.resume_samples, args.profile_sample) < 1:
        parser.error(
            "--runs, --read-only-runs, --concurrency, --profile-sample and --resume-samples "
            "must be at least 1"
        )
    if min(args.sequential, args.resume_early_samples) < 0 or args.poll_interval <= 0:
        parser.error("--sequential and --resume-early-samples must not be negative, --poll-interval positive")

    from bench.report_output import report_on_stdout

    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    with report_on_stdout() as emit:
        report = _measure(args)
        emit(json.dumps(_output(args, report, started, load_before), indent=2))


def _measure(args: argparse.Namespace) -> dict[str, Any]:
    """Run the bench on a fresh dev server; returns :func:`_bench`'s measurements."""
    from contracts.search_attributes import SEARCH_ATTRIBUTES
    from infra.devserver import DevServer, free_port

    with (
        tempfile.TemporaryDirectory(prefix="run-bench-") as tmp,
        DevServer(
            state_dir=Path(tmp),
            db_filename=None,
            port=free_port(),
            headless=True,
            search_attributes=SEARCH_ATTRIBUTES,
        ) as server,
    ):
        result: dict[str, Any] = asyncio.run(_bench(args, server, Path(tmp)))
    return result


def _output(
    args: argparse.Namespace, report: dict[str, Any], started: float, load_before: float
) -> dict[str, Any]:
    """The bench's JSON: configuration, the measurements and whether each target was met."""
    throughput = report["throughput"]
    output = {
        "config": {
            "recommend_runs_per_side": args.runs,
            "read_only_runs_per_side": args.read_only_runs,
            "concurrency": args.concurrency,
            "poll_interval_s": args.poll_interval,
            "cpu_count": os.cpu_count(),
            # Other programs' load skews absolute figures; the ratios compare blocks of the same run.
            "load_average_1m": {"start": round(load_before, 2), "end": round(os.getloadavg()[0], 2)},
            "server": "fresh in-memory dev server, headless, free ports, custom search attributes",
            "store": "SQLite file in a temporary directory",
            "block_order": "baseline, project, project, baseline (half the runs each)",
        },
        **report,
        "targets": {
            "throughput_ratio_min": TARGET_THROUGHPUT_RATIO,
            "resume_s_max": TARGET_RESUME_S,
            "recommend_throughput_met": throughput["recommend"]["target_met"],
            "read_only_throughput_met": throughput["read_only"]["target_met"],
            "resume_met": report["resume"]["target_met"],
        },
        "wall_s": round(time.perf_counter() - started, 1),
    }
    return output


if __name__ == "__main__":
    main()
