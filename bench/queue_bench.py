"""Goal queue bench: N read_only items through the queue's slots against the same N runs started
directly, on one fresh dev server and one in-process worker (replay model), in the same process.

    .venv/bin/python bench/queue_bench.py [--items 100] [--slots 3] [--poll 0.5] [--rounds 1] [--quick]

* **Direct**: N runs created enqueued (as ``specialists create --enqueue`` does), at most ``slots`` at a
  time, each followed until it awaits its decision.
* **Queue**: N items added and approved and the slots set (timed apart as ``prepare_s``), then the
  operator's signed ``autopilot on`` (as ``specialists queue autopilot on`` sends it): the queue fills
  its free slots by itself, follows the runs (reading them every ``--poll`` seconds, the queue's
  ``poll_seconds``, set in the state the queue starts with; the dev server fires a timer shorter than
  a second after about 1 s) and judges their reviews, until every item is in ``human-review``. Timed
  from the ``autopilot on`` to the bench seeing the last item there.
* **History**: the events of every execution of the queue workflow (it continues as new after
  ``--continue-as-new-after`` events).

``--rounds R`` repeats both sides R times, interleaved (direct, queue, direct, queue, …), each round
on its own task queue and queue; the wall times reported are the medians of the rounds (each
round's in ``rounds_s``), ``history.max_events`` the largest of any round, the rest the last round's.

Prints one JSON object: the configuration, both sides' wall time, the ratio (target <= 1.2), what
the queue did (every item's status and runs, the most runs at once), where a run's time in a slot
went (medians: ``direct.run_s`` from a create to the bench seeing it await its decision; by the
queue's workflow time ``queue.run_s`` from a dispatch to the queue's verdict, ``queue.seen_after_s``
from the run awaiting its decision to the queue seeing it, ``queue.refill_s`` from a slot freed to its
next dispatch; ``queue.poll``: the queue's poll timer, its ``read_run_progress`` and the time between
two reads, from its history) and the largest history between continue-as-new (target <= 2,000
events). Exits 1 when an item does not reach ``human-review``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import functools
import itertools
import json
import secrets
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ACTOR = "bench"
MODEL = "replay:demo"
TASK_QUEUE = "queue-bench"
WATCH_SECONDS = 0.25
"""How often the bench reads the queue's view while the autopilot works."""
ITEM_SECONDS = 60.0
"""How long the queue side may take per item before the bench gives up (a stalled queue)."""
ITEM: dict[str, Any] = {
    # Routed like examples/work-items/03-slow-query.json, whose title replay:demo has recorded.
    "title": "Audit the slow query on the orders report and a possible missing index",
    "repo_alias": "orders-service",
    "scope": {
        "problem": "The nightly orders report now takes 14 minutes instead of 40 seconds.",
        "evidence": "The query plan shows a sequential scan over 90 million rows of the orders table.",
        "change": "Check whether an index is missing or unused on the orders query.",
        "judgment_calls": "Which index, and the cost of adding one on write throughput.",
        "tests": "The report query plan uses an index scan.",
        "constraints": "No schema change without a migration.",
    },
    "evidence": ["log:pg-slow-2026-11-27", "plan:orders-report-explain"],
    "value": "H",
    "urgency": "M",
    "risk": "low",
}


class QueueStalled(Exception):
    """The queue side did not bring every item to ``human-review``."""


@functools.cache
def bench_key() -> Any:
    """The bench operator's key (one per bench process)."""
    from contracts.identity import ActorKey

    return ActorKey.generate()


def sign(target: str, action: str, digest: str) -> Any:
    """The bench operator's signature of ``action`` on ``target``, as the CLI makes it."""
    from contracts.identity import Signer, sign_action

    return sign_action(
        Signer(ACTOR, bench_key()),
        action=action,
        target=target,
        digest=digest,
        issued_at=dt.datetime.now(dt.UTC),
        nonce=secrets.token_hex(16),
    )


async def direct(client: Any, task_queue: str, items: int, slots: int) -> tuple[float, list[float]]:
    """Wall seconds for ``items`` runs created directly, ``slots`` at a time, to await a decision, and
    each run's seconds from its create to the bench seeing it await its decision."""
    from contracts.ids import new_run_id
    from contracts.queue_dispatch import dispatch_work_item
    from contracts.queue_items import ItemProposal, new_item
    from contracts.runs import RunInput
    from control.runs import create_run, request_digest, wait_for_view

    template = new_item(
        ItemProposal.model_validate(ITEM), key="ORD-1", at=dt.datetime.now(dt.UTC), actor=ACTOR
    )
    work_item = dispatch_work_item(template)
    gate = asyncio.Semaphore(slots)
    runs: list[float] = []

    async def one() -> None:
        async with gate:
            begun = time.perf_counter()
            draft = RunInput(
                run_id=new_run_id(),
                work_item=work_item,
                requested_tier="read_only",
                enqueue=True,
                request_digest="",
                created_by=ACTOR,
            )
            run = draft.model_copy(update={"request_digest": request_digest(draft)})
            run = run.model_copy(update={"proof": sign(run.run_id, "create", run.request_digest)})
            await create_run(client, run, task_queue=task_queue)
            view = await wait_for_view(
                client, run.run_id, lambda v: v.status.needs_person or v.status.terminal
            )
            assert view.status.value == "awaiting_decision", view.error
            runs.append(time.perf_counter() - begun)

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(items)))
    return time.perf_counter() - started, runs


def median_s(values: list[float]) -> float | None:
    """The median of ``values`` in seconds, rounded (``None`` for none)."""
    return round(statistics.median(values), 3) if values else None


def most_at_once(view: Any) -> int:
    """The most runs the queue had started and not yet seen end at any one time (by its own clock)."""
    edges: list[tuple[dt.datetime, int]] = []
    for item in view.items:
        for run in item.runs:
            edges.append((run.at, 1))
            edges.append((run.ended_at or dt.datetime.max.replace(tzinfo=dt.UTC), -1))
    level = peak = 0
    for _, step in sorted(edges):  # at the same instant an end (-1) sorts before a start (+1)
        level += step
        peak = max(peak, level)
    return peak


def queue_summary(view: Any) -> dict[str, Any]:
    """What the queue did with its items: their statuses, their runs (all started by the autopilot?)
    and their review rounds."""
    runs = [run for item in view.items for run in item.runs]
    rounds = [round_ for item in view.items for round_ in item.rounds]
    return {
        "statuses": dict(Counter(item.status.value for item in view.items)),
        "runs": len(runs),
        "autopilot_runs": sum(1 for run in runs if run.autopilot),
        "verdicts": dict(Counter(round_.verdict.value for round_ in rounds)),
        "most_runs_at_once": most_at_once(view),
    }


async def run_timings(client: Any, view: Any, slots: int) -> dict[str, float | None]:
    """Where each queue run's time in its slot went, by workflow time: from its dispatch to the
    queue seeing its review (``run_s``), of which from the run's last audit event (it awaits its
    decision) to the queue seeing that (``seen_after_s``: the queue's poll), and from an end seen in
    a slot to the next dispatch (``refill_s``). Medians; read after the timed part."""
    from control.runs import get_view

    runs = [run for item in view.items for run in item.runs if run.ended_at is not None]
    gate = asyncio.Semaphore(8)

    async def last_event(run_id: str) -> dt.datetime:
        async with gate:
            return max(event.at for event in (await get_view(client, run_id)).audit)

    lasts = await asyncio.gather(*(last_event(run.run_id) for run in runs))
    seen = [(run.ended_at - last).total_seconds() for run, last in zip(runs, lasts, strict=True)]
    starts = sorted(run.at for run in runs)
    ends = sorted(run.ended_at for run in runs)
    # The k-th dispatch after the first ``slots`` ones takes the slot of the k-th end.
    refill = [(start - end).total_seconds() for start, end in zip(starts[slots:], ends, strict=False)]
    return {
        "run_s": median_s([(run.ended_at - run.at).total_seconds() for run in runs]),
        "seen_after_s": median_s(seen),
        "refill_s": median_s(refill),
    }


async def through_queue(
    client: Any, task_queue: str, items: int, slots: int, poll: float, events: int
) -> dict[str, Any]:
    """Add and approve ``items`` items and set ``slots``, then turn autopilot on and wait until the
    queue has brought every item to ``human-review`` by itself."""
    from contracts.queue_items import ItemProposal, QueueStatus
    from contracts.queue_messages import (
        AddRequest,
        AutopilotRequest,
        CapacityRequest,
        ItemAnswer,
        MoveRequest,
        QueueAction,
        QueueState,
        SettingsAnswer,
        queue_workflow_id,
    )
    from contracts.temporal_names import QueueMessage
    from control.queue import queue_update, queue_view

    state = QueueState(poll_seconds=poll, continue_as_new_after_events=events)
    queue_id = queue_workflow_id(task_queue)

    async def send(message: QueueMessage, request: Any, answer: type[Any] = ItemAnswer) -> Any:
        return await queue_update(client, task_queue, message, request, answer, initial=state)

    async def setting(message: QueueMessage, action: QueueAction, request: Any) -> None:
        signed = request.model_copy(update={"proof": sign(queue_id, action, request.digest())})
        answer = await send(message, signed, SettingsAnswer)
        assert answer.accepted, answer

    started = time.perf_counter()
    await setting(QueueMessage.CAPACITY, QueueAction.CAPACITY, CapacityRequest(actor=ACTOR, slots=slots))
    for _ in range(items):
        add = AddRequest(actor=ACTOR, proposal=ItemProposal.model_validate(ITEM))
        proof = sign(queue_id, QueueAction.ADD, add.digest())
        key = (await send(QueueMessage.ADD, add.model_copy(update={"proof": proof}))).item.key
        move = MoveRequest(actor=ACTOR, key=key)
        await send(
            QueueMessage.APPROVE,
            move.model_copy(update={"proof": sign(key, QueueAction.APPROVE, move.digest())}),
        )
    prepared = time.perf_counter() - started

    started = time.perf_counter()
    await setting(QueueMessage.AUTOPILOT, QueueAction.AUTOPILOT, AutopilotRequest(actor=ACTOR, on=True))
    deadline = started + ITEM_SECONDS * items
    while True:
        view = await queue_view(client, task_queue)
        if all(item.status is QueueStatus.HUMAN_REVIEW for item in view.items):
            break
        stuck = [item.key for item in view.items if item.status in (QueueStatus.FAILED, QueueStatus.BLOCKED)]
        if stuck or time.perf_counter() > deadline:
            raise QueueStalled(json.dumps({"stuck": stuck, **queue_summary(view)}, sort_keys=True))
        await asyncio.sleep(WATCH_SECONDS)
    wall = time.perf_counter() - started
    return {
        "prepare_s": round(prepared, 3),
        "wall_s": round(wall, 3),
        "executions": view.runs,
        **queue_summary(view),
        **await run_timings(client, view, slots),
    }


async def queue_histories(client: Any, task_queue: str) -> tuple[list[int], dict[str, Any]]:
    """The number of events of each execution of the queue workflow, oldest first, and its poll
    cycle by event time (medians): the poll timer (``timer_s``, started to fired), the
    ``read_run_progress`` activity (``read_s``, scheduled to completed) and the time between two
    reads' completions (``cycle_s``), with the number of reads (a local activity's read, as the queue
    makes them since ``queue-reads-runs-locally``, counts without a ``read_s``)."""
    from temporalio.api.enums.v1 import EventType

    from contracts.queue_messages import queue_workflow_id
    from contracts.temporal_names import ActivityName

    workflow_id = queue_workflow_id(task_queue)
    lengths: list[int] = []
    timers: list[float] = []
    reads: list[float] = []
    local_reads = 0
    cycles: list[float] = []
    run_id: str | None = (await client.get_workflow_handle(workflow_id).describe()).run_id
    # Walk back from the current execution through each one's continued-from run.
    while run_id:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        lengths.append(len(history.events))
        at = {event.event_id: event.event_time.ToDatetime() for event in history.events}
        read_ids = set()
        done: list[dt.datetime] = []
        for event in history.events:
            kind = event.event_type
            if kind == EventType.EVENT_TYPE_TIMER_FIRED:
                started_id = event.timer_fired_event_attributes.started_event_id
                timers.append((at[event.event_id] - at[started_id]).total_seconds())
            elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                name = event.activity_task_scheduled_event_attributes.activity_type.name
                if name == ActivityName.READ_RUN_PROGRESS:
                    read_ids.add(event.event_id)
            elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                scheduled_id = event.activity_task_completed_event_attributes.scheduled_event_id
                if scheduled_id in read_ids:
                    reads.append((at[event.event_id] - at[scheduled_id]).total_seconds())
                    done.append(at[event.event_id])
            elif (
                kind == EventType.EVENT_TYPE_MARKER_RECORDED
                and event.marker_recorded_event_attributes.marker_name == "core_local_activity"
            ):  # a read as a local activity: its duration is not in history, only when it ended
                local_reads += 1
                done.append(at[event.event_id])
        cycles.extend((later - earlier).total_seconds() for earlier, later in itertools.pairwise(done))
        started = history.events[0].workflow_execution_started_event_attributes
        run_id = started.continued_execution_run_id or None
    poll = {
        "reads": len(reads) + local_reads,
        "timer_s": median_s(timers),
        "read_s": median_s(reads),
        "cycle_s": median_s(cycles),
    }
    return list(reversed(lengths)), poll


def log_to(path: Path) -> Any:
    """The worker's structured logs (JSON lines) into ``path``, not onto the bench's output."""
    import structlog

    from runtime.logs import configure_logging

    configure_logging()
    sink = path.open("a", encoding="utf-8")
    processors = list(structlog.get_config()["processors"])
    processors[-1] = structlog.processors.JSONRenderer()
    structlog.configure(processors=processors, logger_factory=structlog.PrintLoggerFactory(file=sink))
    return sink


async def one_round(client: Any, config: Any, task_queue: str, args: argparse.Namespace) -> dict[str, Any]:
    """Both sides once, direct first, on ``task_queue`` with its own worker and queue."""
    from worker import build_worker

    async with build_worker(client, task_queue=task_queue, config=config):
        direct_s, direct_runs = await direct(client, task_queue, args.items, args.slots)
        queue = await through_queue(
            client, task_queue, args.items, args.slots, args.poll, args.continue_as_new_after
        )
        histories, poll = await queue_histories(client, task_queue)
        await client.get_workflow_handle(f"work-queue@{task_queue}").terminate("bench finished")
    # Counted from the histories read last: the queue may have continued as new once more after the
    # view that saw every item reviewed (telling the runs their item's status).
    return {
        "direct_s": round(direct_s, 3),
        "direct_run_s": median_s(direct_runs),
        "queue": {**queue, "executions": len(histories), "poll": poll},
        "histories": histories,
    }


async def bench(args: argparse.Namespace, server: Any, state: Path) -> dict[str, Any]:
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter

    from activities.config import ActivityConfig
    from contracts.identity import Signer, TrustAnchor
    from contracts.models import ModelSelection
    from store.database import default_database_url, open_store

    token = secrets.token_urlsafe(32).encode()
    database_url = default_database_url(state)
    with open_store(database_url, create=True, anchor=TrustAnchor(token=token)) as store:
        store.bootstrap_actor(ACTOR, "Bench operator", bench_key(), token)
        store.select_models(ModelSelection(primary=MODEL), Signer(ACTOR, bench_key()))
    sink = log_to(state / "bench-worker.log")
    client = await Client.connect(server.address, data_converter=pydantic_data_converter)
    config = ActivityConfig(database_url=database_url, action_token=token, state_dir=state)
    try:
        rounds = [
            await one_round(client, config, f"{TASK_QUEUE}-{number}", args)
            for number in range(1, args.rounds + 1)
        ]
    finally:
        sink.close()
    direct_s = statistics.median(r["direct_s"] for r in rounds)
    queue_s = statistics.median(r["queue"]["wall_s"] for r in rounds)
    ratio = queue_s / direct_s if direct_s else None
    last = rounds[-1]
    histories = [length for r in rounds for length in r["histories"]]
    return {
        "config": {
            "items": args.items,
            "slots": args.slots,
            "rounds": args.rounds,
            "poll_seconds": args.poll,
            "continue_as_new_after_events": args.continue_as_new_after,
            "dispatch": "autopilot (the operator's signed autopilot on; the queue fills its slots)",
        },
        "direct": {
            "wall_s": round(direct_s, 3),
            "rounds_s": [r["direct_s"] for r in rounds],
            "run_s": last["direct_run_s"],
        },
        "queue": {
            **last["queue"],
            "wall_s": round(queue_s, 3),
            "rounds_s": [r["queue"]["wall_s"] for r in rounds],
        },
        "ratio": None if ratio is None else round(ratio, 3),
        "history": {
            "events_per_execution": last["histories"],
            "max_events": max(histories),
        },
        "targets": {
            "ratio_at_most_1_2": ratio is not None and ratio <= 1.2,
            "history_at_most_2000": max(histories) <= 2_000,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--slots", type=int, default=3)
    parser.add_argument("--poll", type=float, default=0.5, help="the queue's poll_seconds")
    parser.add_argument("--continue-as-new-after", type=int, default=1_500)
    parser.add_argument("--rounds", type=int, default=1, help="both sides this many times, interleaved")
    parser.add_argument("--quick", action="store_true", help="6 items, continue-as-new after 60 events")
    args = parser.parse_args()
    if args.quick:
        args.items, args.continue_as_new_after = 6, 60

    from contracts.search_attributes import SEARCH_ATTRIBUTES
    from infra.devserver import DevServer, free_port

    started = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="queue-bench-") as tmp,
        DevServer(
            state_dir=Path(tmp) / "temporal",
            db_filename=None,
            port=free_port(),
            headless=True,
            search_attributes=SEARCH_ATTRIBUTES,
        ) as server,
    ):
        try:
            report = asyncio.run(bench(args, server, Path(tmp)))
        except QueueStalled as stalled:
            sys.stderr.write(f"queue_bench: not every item reached human-review: {stalled}\n")
            raise SystemExit(1) from None
    report["wall_s"] = round(time.perf_counter() - started, 3)
    sys.stdout.write(json.dumps(report, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
