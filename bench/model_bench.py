"""Model-job latency through the full path against a plain one-activity baseline, same run; prints JSON.

Everything runs on one fresh dev server started for this bench (in memory, headless, free ports), a
SQLite store in a temporary directory, and the scripted loopback model server of the provider tests
(``tests/activities/providers/wire_server.py``) answering every chat completion after ``--delay-ms``
(a stand-in for model latency) with the recorded ``replay:demo`` analysis of the slow-query example,
which passes output validation.

Full path. An ``openai:`` model is registered in the store (base URL: the wire server; key variable
``MODEL_BENCH_API_KEY``, set in this process; ceiling ``--ceiling``). An in-process worker from
``worker.build_worker`` runs ``ModelJob`` workflows started directly, as the ceiling tests start them.
A job runs whatever ``workflows/model_job.py`` does; at the time of writing, in its first workflow
task, two local activities side by side: ``build_context_pack`` (the pack) and
``request_model_lease`` (store lookup, update ``try_acquire`` on the model's ``ModelCeiling``, which
grants a free slot in its answer; a request that must wait is granted by signal ``lease_granted``)
→ ``call_model`` (catalog, rendering, store lookup, the HTTP call through the openai SDK on a helper
thread, output validation, ``release`` signal).

Baseline. ``BenchBaselineModelCall`` (``bench/baseline_workflow.py``) runs one plain activity
(``bench/baseline_call.py``) that makes the same HTTP POST through the openai SDK and returns the
text. "The same": the first request a warm-up full-path job sends is captured from the wire server and
the baseline sends its model name, messages and ``response_format`` (so the body is byte for byte the
same size; each side's median is reported). It runs on a second in-process worker with the full-path
worker's configuration (``Worker.config()``: sandbox, sticky-queue timeout, executor size, shutdown)
on its own task queue.

Both sides: ``--jobs`` jobs each, at most ``--concurrency`` in flight (default: the ceiling), in blocks
of ``--block-size`` run in the order baseline, full, full, baseline, baseline, … so load from other
programs and a server slowing as closed workflows pile up hit both alike. Latency is measured client
side: from just before the start request to the result. ``--warmup`` jobs per side run first and are
not counted. Afterwards ``--burst`` full-path jobs are started at once (more than the ceiling) to
check the ceiling under contention. Where a job's time goes is read from every measured job's history
(event timestamps; the client's and the server's clock are the same host clock).

Output: one JSON object (see :func:`_report`); exit 0 whether or not the target (full-path p50 at most
1.5 × the baseline's) is met — the figures are reported, not asserted.

Usage: ``python bench/model_bench.py [--jobs N] [--concurrency C] [--block-size B] [--delay-ms D]
[--warmup W] [--burst K] [--ceiling C]``
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import itertools
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:
    from temporalio.client import Client

    from contracts.model_jobs import ModelJobInput
    from tests.activities.providers.wire_server import WireServer

TARGET_P50_RATIO = 1.5
MODEL = "openai:bench-model"
KEY_ENV = "MODEL_BENCH_API_KEY"
ACTOR = "bench-operator"
BENCH_TOKEN = b"model-bench-action-token-0001"
"""The bench deployment's action token: it bootstraps the operator and anchors the worker's trust."""
FULL_QUEUE = "model-bench-full"
BASELINE_QUEUE = "model-bench-baseline"
ITEM_FILE = "03-slow-query.json"  # recorded in replay:demo (analysis)
PROFILE = "database-optimizer"
JOB_TIMEOUT_S = 60.0
EXECUTION_TIMEOUT = timedelta(minutes=3)


# --------------------------------------------------------------------------------------------------
# Measurements


@dataclass
class Sample:
    """One job: its workflow id, client-side wall times (``time.time()``) around it, its latency and the
    HTTP call's own latency as the call reported it."""

    workflow_id: str
    client_start: float
    client_end: float
    latency_s: float
    http_ms: int


@dataclass
class Side:
    """One side's samples, what its blocks cost, and what the wire server saw during them."""

    samples: list[Sample] = field(default_factory=list)
    wall_s: float = 0.0
    server_cpu_s: float = 0.0
    bench_cpu_s: float = 0.0
    wire_max_in_flight: int = 0
    wire_requests: int = 0
    request_bytes: list[int] = field(default_factory=list)


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def _percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile (as ``bench/run_bench.py``)."""
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


def _side_report(side: Side) -> dict[str, Any]:
    """Latency percentiles (ms), throughput, CPU per job and the wire server's view of one side."""
    latencies = [sample.latency_s for sample in side.samples]
    jobs = len(side.samples)
    return {
        "jobs": jobs,
        "latency_ms_p50": _ms(statistics.median(latencies)),
        "latency_ms_p95": _ms(_percentile(latencies, 0.95)),
        "latency_ms_min": _ms(min(latencies)),
        "latency_ms_max": _ms(max(latencies)),
        "http_call_ms_p50": statistics.median(sample.http_ms for sample in side.samples),
        "jobs_per_s": round(jobs / side.wall_s, 2) if side.wall_s else None,
        "cpu_ms_per_job": {
            "bench_process": round(side.bench_cpu_s / jobs * 1000, 1),
            "temporal_server": round(side.server_cpu_s / jobs * 1000, 1),
        },
        "wire_max_in_flight": side.wire_max_in_flight,
        "wire_requests": side.wire_requests,
        "request_body_bytes_median": statistics.median(side.request_bytes) if side.request_bytes else None,
    }


# --------------------------------------------------------------------------------------------------
# Setup: store, model answer, job inputs


def _answer() -> str:
    """The recorded ``replay:demo`` analysis for the slow-query example (valid output for the job)."""
    from activities.config import DEFAULT_RECORDINGS_DIR
    from contracts.work_item import WorkItem

    item = WorkItem.model_validate_json(
        (ROOT / "examples" / "work-items" / ITEM_FILE).read_text(encoding="utf-8")
    )
    data = json.loads((DEFAULT_RECORDINGS_DIR / "demo.json").read_text(encoding="utf-8"))
    for entry in data["recordings"]:
        if (entry["kind"], entry["profile"], entry["title"]) == ("analysis", PROFILE, item.title):
            return json.dumps(entry["response"])
    raise RuntimeError(f"no replay:demo analysis recording for {ITEM_FILE}")


@dataclass(frozen=True)
class CapturedRequest:
    """The chat completion a full-path job sent, as the wire server received it: the baseline sends
    the same model name, messages and response format."""

    model_name: str
    instructions: str
    context: str
    response_format: dict[str, Any]

    @classmethod
    def from_body(cls, body: Any) -> CapturedRequest:
        """Parse a received JSON body; raises ``RuntimeError`` unless it is ``[system, user]`` messages
        with a response format."""
        try:
            system, user = body["messages"]
            if (system["role"], user["role"]) != ("system", "user"):
                raise ValueError(f"message roles {system['role']}, {user['role']}")
            return cls(body["model"], system["content"], user["content"], dict(body["response_format"]))
        except (KeyError, TypeError, ValueError) as error:
            raise RuntimeError(f"unexpected chat completion request from the full path: {error}") from None


class Jobs:
    """Builds the full path's ``ModelJobInput`` and the baseline's ``BaselineCall`` for one work item."""

    def __init__(self) -> None:
        from catalog.loader import load_catalog
        from contracts.model_jobs import JobContext
        from contracts.output import JobKind
        from contracts.work_item import WorkItem

        item = WorkItem.model_validate_json(
            (ROOT / "examples" / "work-items" / ITEM_FILE).read_text(encoding="utf-8")
        )
        catalog = load_catalog()
        self.catalog_sha256 = catalog.sha256
        self.kind = JobKind.ANALYSIS
        self.context = JobContext(
            title=item.title, task=f"{item.title}\n\n{item.description}", evidence_refs=item.evidence_refs
        )
        self.captured: CapturedRequest | None = None

    def model_job(self) -> ModelJobInput:
        from contracts.enums import FallbackMode
        from contracts.model_jobs import ModelJobInput
        from contracts.runs import ModelSnapshot

        run_id = f"SOR-BENCH{uuid.uuid4().hex[:12].upper()}"
        return ModelJobInput(
            job_id=f"{run_id}-analysis",
            run_id=run_id,
            kind=self.kind,
            profile_id=PROFILE,
            catalog_sha256=self.catalog_sha256,
            context=self.context,
            model=ModelSnapshot(primary=MODEL, fallback_mode=FallbackMode.PRIMARY_ONLY, source="bench"),
        )

    def baseline_call(self) -> Any:
        """The baseline's input: the captured request's model name and user message."""
        from bench.baseline_call import BaselineCall

        if self.captured is None:
            raise RuntimeError("no full-path request captured yet")
        return BaselineCall(
            job_id=f"BENCH-BASE-{uuid.uuid4().hex[:16].upper()}",
            model_name=self.captured.model_name,
            context=self.captured.context,
        )


def _prepare_store(database_url: str, wire: WireServer, ceiling: int) -> None:
    """A fresh store with the bench operator and the model registered (key variable, ceiling)."""
    from contracts.identity import ActorKey, Signer, TrustAnchor
    from contracts.models import ModelRegistration
    from store.database import open_store

    key = ActorKey.generate()
    with open_store(database_url, create=True, anchor=TrustAnchor(token=BENCH_TOKEN)) as store:
        store.bootstrap_actor(ACTOR, "Bench operator", key, BENCH_TOKEN)
        store.register_model(
            ModelRegistration(id=MODEL, base_url=wire.base_url, api_key_env=KEY_ENV, ceiling=ceiling),
            Signer(ACTOR, key),
        )


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


# --------------------------------------------------------------------------------------------------
# Driving jobs


class Runner:
    """Runs one job of either side to its result and returns its :class:`Sample`."""

    def __init__(self, client: Client, jobs: Jobs) -> None:
        self.client = client
        self.jobs = jobs

    async def full(self) -> Sample:
        from workflows.model_job import ModelJobWorkflow

        job = self.jobs.model_job()
        wall, started = time.time(), time.perf_counter()
        handle = await self.client.start_workflow(
            ModelJobWorkflow.run,
            job,
            id=job.job_id,
            task_queue=FULL_QUEUE,
            execution_timeout=EXECUTION_TIMEOUT,
        )
        result = await handle.result()
        latency = time.perf_counter() - started
        attempts = result.attempts
        if result.model_id != MODEL or len(attempts) != 1 or attempts[0].outcome != "ok":
            raise RuntimeError(f"model job {job.job_id} ended on {result.model_id} after {attempts}")
        http_ms = attempts[0].usage.latency_ms or 0
        return Sample(handle.id, wall, wall + latency, latency, http_ms)

    async def baseline(self) -> Sample:
        from bench.baseline_workflow import BaselineCallWorkflow

        call = self.jobs.baseline_call()
        wall, started = time.time(), time.perf_counter()
        handle = await self.client.start_workflow(
            BaselineCallWorkflow.run,
            call,
            id=call.job_id,
            task_queue=BASELINE_QUEUE,
            execution_timeout=EXECUTION_TIMEOUT,
        )
        reply = await handle.result()
        latency = time.perf_counter() - started
        if not reply.text.startswith("{"):
            raise RuntimeError(f"baseline {call.job_id} got {reply.text[:80]!r}")
        return Sample(handle.id, wall, wall + latency, latency, reply.latency_ms)


async def _bounded(count: int, concurrency: int, one: Callable[[], Awaitable[Sample]]) -> list[Sample]:
    """``count`` jobs, a new one started as soon as one of ``concurrency`` in flight finishes."""
    gate = asyncio.Semaphore(concurrency)

    async def guarded() -> Sample:
        async with gate:
            return await asyncio.wait_for(one(), timeout=JOB_TIMEOUT_S)

    return list(await asyncio.gather(*(guarded() for _ in range(count))))


def _rearm(wire: WireServer, answer: str, delay_s: float) -> None:
    """Clear the wire server's log and maximum, and answer every request after ``delay_s``."""
    from tests.activities.providers.wire_server import Scripted, openai_completion

    wire.reset()
    wire.default = Scripted(200, openai_completion(answer), delay_s=delay_s)


async def _block(
    one: Callable[[], Awaitable[Sample]],
    count: int,
    concurrency: int,
    side: Side,
    wire: WireServer,
    answer: str,
    delay_s: float,
    server_pid: int,
) -> None:
    """One block of ``count`` jobs of one side, added to ``side`` with what the wire server saw."""
    _rearm(wire, answer, delay_s)
    server_cpu, bench_cpu, started = _process_cpu_s(server_pid), time.process_time(), time.perf_counter()
    side.samples += await _bounded(count, concurrency, one)
    side.wall_s += time.perf_counter() - started
    side.server_cpu_s += _process_cpu_s(server_pid) - server_cpu
    side.bench_cpu_s += time.process_time() - bench_cpu
    side.wire_max_in_flight = max(side.wire_max_in_flight, wire.max_in_flight)
    side.wire_requests += len(wire.received)
    side.request_bytes += [int(request.headers.get("content-length", 0)) for request in wire.received]


# --------------------------------------------------------------------------------------------------
# Histories: where a job's time goes


def _event_s(event: Any) -> float:
    return float(event.event_time.ToNanoseconds()) / 1e9


async def _events(client: Client, workflow_id: str, run_id: str | None = None) -> list[Any]:
    history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
    return list(history.events)


def _payload_field(payloads: Any, name: str) -> str:
    """``name`` of the first JSON payload (``""`` when absent or not JSON)."""
    try:
        value = json.loads(payloads.payloads[0].data).get(name, "")
    except (IndexError, ValueError, AttributeError):
        return ""
    return str(value)


ACTIVITY_STEPS = {
    "build_context_pack": "pack",
    "request_model_lease": "lease",
    "call_model": "call",
    "bench_baseline_model_call": "call",
}
"""Activity name → the step it marks in a history (any other activity is ``other``)."""

MILESTONES = [
    "client_start",
    "started",
    "pack_scheduled",
    "pack_started",
    "pack_completed",
    "lease_scheduled",
    "lease_started",
    "lease_completed",
    "call_scheduled",
    "call_started",
    "call_completed",
    "closed",
    "client_end",
]
"""The order of a job's steps; a history has a subset (the baseline: no pack, no lease). Consecutive
milestones present in a history make its segments, which add up to the job's latency."""

SEGMENT_LABELS = {
    ("client_start", "started"): "client_start_to_workflow_started",
    ("pack_scheduled", "pack_started"): "build_context_pack_queue",
    ("pack_started", "pack_completed"): "build_context_pack_run",
    ("pack_completed", "lease_scheduled"): "pack_completed_to_lease_scheduled",
    ("pack_completed", "call_scheduled"): "pack_completed_to_call_scheduled",
    ("lease_scheduled", "lease_started"): "request_model_lease_queue",
    ("lease_started", "lease_completed"): "request_model_lease_run",
    ("lease_completed", "call_scheduled"): "lease_completed_to_call_scheduled",
    ("call_scheduled", "call_started"): "call_activity_queue",
    ("call_started", "call_completed"): "call_activity_run",
    ("call_completed", "closed"): "call_completed_to_close",
    ("closed", "client_end"): "closed_to_client_result",
}
"""Names of the segments; the segment from ``started`` to the first activity is ``first_workflow_task``."""

# (label, from, to): points inside the segments, not part of their sum; over the jobs that have
# them (a job whose lease was granted in the ceiling's answer receives no grant signal).
FULL_DETAILS = [
    ("call_scheduled_after_lease_granted_signal", "signal_lease_granted", "call_scheduled"),
]


def _milestones(
    events: list[Any], task_s: dict[str, list[float]] | None = None
) -> tuple[dict[str, float], dict[str, int]]:
    """The first time of each step of a ``ModelJob`` or baseline history, by name, and counts
    (workflow tasks, events, activities by name). Adds each workflow task's schedule-to-start and
    start-to-complete seconds to ``task_s`` when given."""
    from temporalio.api.enums.v1 import EventType as E

    scheduled: dict[int, str] = {}
    marks: dict[str, float] = {}
    counts: dict[str, int] = defaultdict(int)
    counts["history_events"] = len(events)
    counts["local_activities"] = 0
    counts["lease_granted_signals"] = 0
    task_scheduled: dict[int, float] = {}
    task_started: dict[int, float] = {}

    def mark(name: str, at: float) -> None:
        marks.setdefault(name, at)

    for event in events:
        at = _event_s(event)
        kind = event.event_type
        if kind == E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            mark("started", at)
        elif kind == E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
            task_scheduled[event.event_id] = at
        elif kind == E.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            task_started[event.event_id] = at
            ref = event.workflow_task_started_event_attributes.scheduled_event_id
            if task_s is not None and ref in task_scheduled:
                task_s["schedule_to_start"].append(at - task_scheduled[ref])
        elif kind == E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            counts["workflow_tasks"] += 1
            ref = event.workflow_task_completed_event_attributes.started_event_id
            if task_s is not None and ref in task_started:
                task_s["start_to_complete"].append(at - task_started[ref])
        elif kind == E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            step = ACTIVITY_STEPS.get(name, "other")
            scheduled[event.event_id] = step
            counts[f"activity:{name}"] += 1
            mark(f"{step}_scheduled", at)
        elif kind == E.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            mark(f"{scheduled[event.activity_task_started_event_attributes.scheduled_event_id]}_started", at)
        elif kind == E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            ref = event.activity_task_completed_event_attributes.scheduled_event_id
            mark(f"{scheduled[ref]}_completed", at)
        elif kind == E.EVENT_TYPE_MARKER_RECORDED:
            if event.marker_recorded_event_attributes.marker_name == "core_local_activity":
                counts["local_activities"] += 1
        elif kind == E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            name = event.workflow_execution_signaled_event_attributes.signal_name
            mark(f"signal_{name}", at)
            if name == "lease_granted":
                counts["lease_granted_signals"] += 1
        elif kind == E.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            mark("closed", at)
    return marks, counts


def _segments(marks: dict[str, float]) -> list[tuple[str, float]]:
    """(label, seconds) between the consecutive :data:`MILESTONES` present in ``marks``."""
    present = [name for name in MILESTONES if name in marks]
    segments: list[tuple[str, float]] = []
    for begin, end in itertools.pairwise(present):
        label = SEGMENT_LABELS.get((begin, end))
        if label is None:
            label = "first_workflow_task" if begin == "started" else f"{begin}_to_{end}"
        segments.append((label, marks[end] - marks[begin]))
    return segments


async def _breakdown(
    client: Client, samples: list[Sample], details: list[tuple[str, str, str]]
) -> dict[str, Any]:
    """Where a side's time goes, over ``samples``: the median of each segment (ms; they add up to about
    the median latency), the HTTP call inside the call activity's run, ``details`` and counts."""
    values: dict[str, list[float]] = defaultdict(list)
    order: list[str] = []
    counts: dict[str, list[int]] = defaultdict(list)
    task_s: dict[str, list[float]] = defaultdict(list)
    for sample in samples:
        marks, history_counts = _milestones(await _events(client, sample.workflow_id), task_s)
        marks["client_start"], marks["client_end"] = sample.client_start, sample.client_end
        for label, seconds in _segments(marks):
            values[label].append(seconds)
            if label not in order:
                order.append(label)
        for label, begin, end in details:
            if begin in marks and end in marks:
                values[label].append(marks[end] - marks[begin])
        if "call_started" in marks and "call_completed" in marks:
            run_s = marks["call_completed"] - marks["call_started"]
            values["http_call"].append(sample.http_ms / 1000)
            values["outside_http_call"].append(run_s - sample.http_ms / 1000)
        for key, count in history_counts.items():
            counts[key].append(count)
    medians = {label: _ms(statistics.median(v)) for label, v in values.items()}
    return {
        "jobs_sampled": len(samples),
        "segments_ms_median": {label: medians[label] for label in order},
        "segments_sum_ms": round(sum(medians[label] for label in order), 1),
        "latency_ms_median": _ms(statistics.median(sample.latency_s for sample in samples)),
        "inside_call_activity_run_ms_median": {
            "http_call": medians.get("http_call"),
            "outside_http_call": medians.get("outside_http_call"),
        },
        "details_ms_median": {label: medians.get(label) for label, _, _ in details},
        "workflow_task_ms_median": {key: _ms(statistics.median(v)) for key, v in sorted(task_s.items())},
        "per_job_median": {key: statistics.median(v) for key, v in sorted(counts.items())},
    }


async def _ceiling_history(client: Client, workflow_id: str) -> dict[str, Any]:
    """The ``ModelCeiling`` workflow's work over all its runs (continue-as-new followed back): workflow
    tasks, their median schedule-to-completion, the ``try_acquire`` updates and ``acquire`` signals
    it received, and per lease that waited the time from its request to the ``lease_granted`` signal
    being sent."""
    from temporalio.api.enums.v1 import EventType as E

    runs, run_id = 0, None
    events: list[Any] = []
    while True:
        run_events = await _events(client, workflow_id, run_id)
        events = run_events + events
        runs += 1
        started = run_events[0].workflow_execution_started_event_attributes
        run_id = started.continued_execution_run_id or None
        if run_id is None:
            break
    task_scheduled: dict[int, float] = {}
    task_started: dict[int, int] = {}
    task_s: list[float] = []
    acquired: dict[str, float] = {}
    grant_s: list[float] = []
    received = {"try_acquire_updates": 0, "acquire_signals": 0, "release_signals": 0}
    for event in events:
        at, kind = _event_s(event), event.event_type
        if kind == E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
            task_scheduled[event.event_id] = at
        elif kind == E.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            task_started[event.event_id] = event.workflow_task_started_event_attributes.scheduled_event_id
        elif kind == E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            started_id = event.workflow_task_completed_event_attributes.started_event_id
            scheduled_at = task_scheduled.get(task_started.get(started_id, -1))
            if scheduled_at is not None:
                task_s.append(at - scheduled_at)
        elif kind == E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            attributes = event.workflow_execution_signaled_event_attributes
            if attributes.signal_name == "acquire":
                received["acquire_signals"] += 1
                acquired[_payload_field(attributes.input, "lease_id")] = at
            elif attributes.signal_name == "release":
                received["release_signals"] += 1
        elif kind == E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request
            if request.input.name == "try_acquire":
                received["try_acquire_updates"] += 1
                acquired[_payload_field(request.input.args, "lease_id")] = at
        elif kind == E.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
            attributes = event.signal_external_workflow_execution_initiated_event_attributes
            lease_id = _payload_field(attributes.input, "lease_id")
            if attributes.signal_name == "lease_granted" and lease_id in acquired:
                grant_s.append(at - acquired.pop(lease_id))
    return {
        "runs": runs,
        "history_events": len(events),
        "workflow_tasks": len(task_s),
        "workflow_task_ms_median": _ms(statistics.median(task_s)) if task_s else None,
        **received,
        "leases_granted_by_signal": len(grant_s),
        "acquire_to_grant_sent_ms_median": _ms(statistics.median(grant_s)) if grant_s else None,
        "acquire_to_grant_sent_ms_p95": _ms(_percentile(grant_s, 0.95)) if grant_s else None,
    }


async def _ceiling_state(client: Client, ceiling_id: str) -> dict[str, Any]:
    from workflows.model_ceiling import ModelCeilingWorkflow

    state = await client.get_workflow_handle(ceiling_id).query(ModelCeilingWorkflow.state)
    return {
        "ceiling": state.ceiling,
        "max_held": state.max_held,
        "granted_total": state.granted_total,
        "reclaimed_total": state.reclaimed_total,
        "held_now": len(state.held),
        "waiting_now": len(state.waiting),
    }


# --------------------------------------------------------------------------------------------------
# The bench


def _tuning(config: dict[str, Any]) -> dict[str, Any]:
    executor = config.get("activity_executor")
    sticky = config.get("sticky_queue_schedule_to_start_timeout")
    return {
        "workflow_runner": type(config.get("workflow_runner")).__name__,
        "activity_executor_threads": getattr(executor, "_max_workers", None),
        "sticky_queue_schedule_to_start_timeout_s": sticky.total_seconds() if sticky else None,
        "max_concurrent_workflow_tasks": config.get("max_concurrent_workflow_tasks"),
        "max_concurrent_activities": config.get("max_concurrent_activities"),
    }


def _blocks(jobs: int, block_size: int) -> list[tuple[str, int]]:
    """(side, count) in the order baseline, full, full, baseline, baseline, full, … (``jobs`` per side)."""
    order: list[tuple[str, int]] = []
    chunks = [min(block_size, jobs - start) for start in range(0, jobs, block_size)]
    for index, count in enumerate(chunks):
        pair = ("baseline", "full") if index % 2 == 0 else ("full", "baseline")
        order += [(side, count) for side in pair]
    return order


async def _bench(
    args: argparse.Namespace, server_address: str, server_pid: int, state: Path
) -> dict[str, Any]:
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.worker import Worker

    from activities.config import ActivityConfig
    from bench.baseline_call import BaselineCallActivities
    from bench.baseline_workflow import BaselineCallWorkflow
    from contracts.ceilings import ceiling_workflow_id
    from contracts.models import DEFAULT_MODEL_TIMEOUT_S
    from store.database import default_database_url
    from tests.activities.providers.wire_server import running
    from worker import build_worker, compile_workflow_modules

    os.environ[KEY_ENV] = f"sk-model-bench-{uuid.uuid4().hex}"
    answer = _answer()
    delay_s = args.delay_ms / 1000
    database_url = default_database_url(state)
    jobs = Jobs()
    sink = _log_to(state / "bench-worker.log")
    try:
        with running() as wire:
            _prepare_store(database_url, wire, args.ceiling)
            client = await Client.connect(server_address, data_converter=pydantic_data_converter)
            full_worker = build_worker(
                client, task_queue=FULL_QUEUE, config=ActivityConfig(database_url, action_token=BENCH_TOKEN)
            )
            config: dict[str, Any] = dict(full_worker.config())
            threads = getattr(config.get("activity_executor"), "_max_workers", 16)
            baseline_executor = concurrent.futures.ThreadPoolExecutor(max_workers=threads)
            runner = Runner(client, jobs)
            sides = {"full": Side(), "baseline": Side()}
            ones: dict[str, Callable[[], Awaitable[Sample]]] = {
                "full": runner.full,
                "baseline": runner.baseline,
            }
            ceiling_id = ceiling_workflow_id(FULL_QUEUE, MODEL)
            async with contextlib.AsyncExitStack() as workers:
                await workers.enter_async_context(full_worker)
                # Warm-up: opens the store, starts the ceiling workflow, builds the SDK client, fills
                # the sandbox's module cache; the first request it sends is the baseline's request.
                _rearm(wire, answer, delay_s)
                await _bounded(max(args.warmup, 1), args.concurrency, runner.full)
                jobs.captured = CapturedRequest.from_body(wire.received[0].body)
                baseline_activities = BaselineCallActivities(
                    base_url=wire.base_url,
                    api_key_env=KEY_ENV,
                    instructions=jobs.captured.instructions,
                    response_format=jobs.captured.response_format,
                    timeout_s=float(DEFAULT_MODEL_TIMEOUT_S),
                )
                compile_workflow_modules([BaselineCallWorkflow])  # as build_worker does for its own
                baseline_worker = Worker(
                    **{
                        **config,
                        "task_queue": BASELINE_QUEUE,
                        "workflows": [BaselineCallWorkflow],
                        "activities": [baseline_activities.call],
                        "activity_executor": baseline_executor,
                    }
                )
                await workers.enter_async_context(baseline_worker)
                await _bounded(max(args.warmup, 1), args.concurrency, runner.baseline)
                for name, count in _blocks(args.jobs, args.block_size):
                    await _block(
                        ones[name], count, args.concurrency, sides[name], wire, answer, delay_s, server_pid
                    )
                ceiling_measured = await _ceiling_state(client, ceiling_id)
                ceiling_history = await _ceiling_history(client, ceiling_id)  # warm-up + measured jobs
                burst: dict[str, Any] = {"jobs": args.burst}
                if args.burst:
                    _rearm(wire, answer, delay_s)
                    started = time.perf_counter()
                    samples = await asyncio.gather(*(runner.full() for _ in range(args.burst)))
                    burst.update(
                        wall_s=round(time.perf_counter() - started, 2),
                        latency_ms_p50=_ms(statistics.median(s.latency_s for s in samples)),
                        latency_ms_max=_ms(max(s.latency_s for s in samples)),
                        wire_max_in_flight=wire.max_in_flight,
                        wire_requests=len(wire.received),
                        ceiling=await _ceiling_state(client, ceiling_id),
                    )
                breakdown = {
                    "full_path": await _breakdown(client, sides["full"].samples, FULL_DETAILS),
                    "baseline": await _breakdown(client, sides["baseline"].samples, []),
                    "ceiling_workflow": ceiling_history,
                }
            baseline_executor.shutdown(wait=False)
        return {
            "sides": {name: _side_report(side) for name, side in sides.items()},
            "ceiling_measured": ceiling_measured,
            "burst": burst,
            "breakdown": breakdown,
            "worker_tuning": _tuning(config),
        }
    finally:
        sink.close()


def _report(
    args: argparse.Namespace, result: dict[str, Any], load: tuple[float, float], wall_s: float
) -> dict[str, Any]:
    """The bench's JSON: headline figures first, then each side, the ceiling, the breakdown."""
    import openai

    full, baseline = result["sides"]["full"], result["sides"]["baseline"]
    ratio_p50 = round(full["latency_ms_p50"] / baseline["latency_ms_p50"], 2)
    ratio_p95 = round(full["latency_ms_p95"] / baseline["latency_ms_p95"], 2)
    ceiling = result["ceiling_measured"]
    return {
        "jobs": args.jobs,
        "concurrency": args.concurrency,
        "ceiling": args.ceiling,
        "model_delay_ms": args.delay_ms,
        "full_path_ms": {"p50": full["latency_ms_p50"], "p95": full["latency_ms_p95"]},
        "baseline_ms": {"p50": baseline["latency_ms_p50"], "p95": baseline["latency_ms_p95"]},
        "ratio": {"p50": ratio_p50, "p95": ratio_p95},
        "target": {"full_path_p50_max_ratio": TARGET_P50_RATIO, "met": ratio_p50 <= TARGET_P50_RATIO},
        "wire_max_in_flight_full_path": full["wire_max_in_flight"],
        "ceiling_max_held": ceiling["max_held"],
        "full_path": full,
        "baseline": baseline,
        "ceiling_workflow": ceiling,
        "burst": result["burst"],
        "breakdown": result["breakdown"],
        "config": {
            "block_size": args.block_size,
            "block_order": "baseline, full, full, baseline, … (ABBA)",
            "warmup_jobs_per_side": args.warmup,
            "model": MODEL,
            "worker": (
                "in-process: worker.build_worker for the full path; a second in-process Worker with the "
                "same Worker.config() (sandbox, executor size, sticky timeout) for the baseline"
            ),
            "wire_server": (
                "tests/activities/providers/wire_server.py in this process (threads), 127.0.0.1; "
                "every request answered after model_delay_ms"
            ),
            "baseline_http_client": (
                "openai SDK (max_retries=0); model, messages and response_format captured from a "
                "full-path request"
            ),
            "latency": "client side: start_workflow request to result",
            "server": "fresh in-memory dev server, headless, free ports",
            "store": "SQLite file in a temporary directory",
            "worker_tuning": result["worker_tuning"],
        },
        "environment": {
            "python": platform.python_version(),
            "implementation": platform.python_implementation(),
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "load_average_1m": {"start": round(load[0], 2), "end": round(load[1], 2)},
            "temporalio": _version("temporalio"),
            "openai": openai.__version__,
        },
        "wall_s": round(wall_s, 1),
    }


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=60, help="measured jobs per side")
    parser.add_argument("--ceiling", type=int, default=5, help="the registered model's ceiling")
    parser.add_argument("--concurrency", type=int, default=None, help="jobs in flight (default: ceiling)")
    parser.add_argument("--block-size", type=int, default=10, help="jobs per block (blocks alternate)")
    parser.add_argument("--delay-ms", type=int, default=200, help="the wire server's answer delay")
    parser.add_argument("--warmup", type=int, default=5, help="unmeasured jobs per side first")
    parser.add_argument("--burst", type=int, default=15, help="full-path jobs started at once (0: none)")
    args = parser.parse_args()
    if args.concurrency is None:
        args.concurrency = args.ceiling
    if min(args.jobs, args.ceiling, args.concurrency, args.block_size) < 1:
        parser.error("--jobs, --ceiling, --concurrency and --block-size must be at least 1")
    if min(args.delay_ms, args.warmup, args.burst) < 0:
        parser.error("--delay-ms, --warmup and --burst must not be negative")

    from bench.report_output import report_on_stdout
    from contracts.search_attributes import SEARCH_ATTRIBUTES
    from infra.devserver import DevServer, free_port

    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    with (
        report_on_stdout() as emit,
        tempfile.TemporaryDirectory(prefix="model-bench-") as tmp,
        DevServer(
            state_dir=Path(tmp),
            db_filename=None,
            port=free_port(),
            headless=True,
            search_attributes=SEARCH_ATTRIBUTES,
        ) as server,
    ):
        result = asyncio.run(_bench(args, server.address, server.pid or 0, Path(tmp)))
        report = _report(args, result, (load_before, os.getloadavg()[0]), time.perf_counter() - started)
        emit(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
