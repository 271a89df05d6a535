"""Many workers: three ``python -m worker`` processes, each standing for a host of its own (a UTS
namespace with its own host name, and its own state directory where its worktrees live), poll one
task queue of the shared dev server and share one PostgreSQL store. Thirty mixed runs — read_only
runs, worktree runs on a registered repository (approved, executed, decided) and research teams —
all call one registered ``openai:`` model with an in-flight ceiling, served by a loopback wire
server. One worker is killed with SIGKILL while runs are in flight.

What must hold: every run reaches its expected state exactly once (one workflow execution per id,
one completion in its history, one arrival at its final status, one successful worktree attempt);
the model never has more calls in flight than its ceiling and the ceiling ends with no lease held;
every worktree is on the disk of the host recorded for it, and pruning it is done by that host's
worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType, PendingActivityState
from temporalio.client import Client

from activities.config import DEFAULT_RECORDINGS_DIR
from contracts.audit import AuditKind
from contracts.ceilings import CeilingState, ceiling_workflow_id
from contracts.enums import Tier
from contracts.execution import WorktreeLocation
from contracts.models import ModelRegistration
from contracts.research_teams import TeamStatus
from contracts.runs import DecisionOutcome, RunStatus, RunView
from contracts.temporal_names import ActivityName, WorkflowType
from contracts.worktree_prune import PRUNE_ACTION, PruneRequest
from control.runs import wait_for_view
from control.worktrees import run_prune
from infra.devserver import DevServer
from tests.activities.providers.wire_server import Received, Scripted, WireServer, openai_completion
from tests.conftest import _fresh_postgres_database
from tests.identity import signer
from tests.store.git_repository import make_orders_repository
from tests.workflows.harness import (
    ACTOR,
    RELEASE_GATE,
    SLOW_QUERY,
    Bench,
    bench,
    events,
    own_host_names_unavailable,
    proof,
    until,
    within,
    worker_process,
)
from tests.workflows.research_harness import create_case, ended, start
from workflows.model_ceiling import ModelCeilingWorkflow

MODEL = "openai:many-workers-model"
KEY_ENV = "MANY_WORKERS_TEST_API_KEY"
CEILING = 3
CALL_DELAY_S = 0.3
HOSTS = ("many-workers-a", "many-workers-b", "many-workers-c")
VICTIM = HOSTS[0]
ALIAS = "orders-service"  # the slow-query example's repo_alias
READ_ONLY_RUNS = 20
WORKTREE_RUNS = 8
TEAMS = 2
MODEL_CALLS = READ_ONLY_RUNS * 2 + WORKTREE_RUNS * 2 + TEAMS * 12
"""Analysis and review of each run (the change job of a worktree run is its analysis); six stages of
analysis and review for each team."""
KILL_AFTER_CALLS = MODEL_CALLS // 4
"""Model calls the wire server has received when the worker may be killed."""
STALL_S = 4.0
"""How long the killed worker's last call is held (less than the registered model's 5 s timeout, so
the model sees it end before its lease could pass to another call)."""


def _key(host: str) -> str:
    """The API key ``host``'s worker calls the model with (the wire server tells the workers apart
    by it)."""
    return f"sk-{host}"


# ------------------------------------------------------------------------------- the model server


_PROFILE_LINE = re.compile(r"^Profile: .* \(([a-z0-9-]+)\)\.$", re.MULTILINE)
_REVIEWER = "You are the independent reviewer."
_PATCH = "Return the change itself in 'patch'"
_STAGE = re.compile(r"## Objective\n\n[^\n]*?\bstage (\d)\b")


class ReplayWireServer(WireServer):
    """A wire server that answers each chat completion as ``replay:demo`` would answer the job it
    carries — found from the request text: the profile id in the instructions, the job kind (review,
    a change that returns a patch, or analysis), the research stage in the pack's objective or the
    work item's title in the task — after ``delay_s``. Requests it cannot place are answered with
    an error and kept in ``misses``.

    :meth:`stall` picks one call to hold: the first sent with a given API key (each worker is given
    its own) once ``after`` calls were received is answered only after ``seconds``; ``stalled`` is set
    when it arrives, so a test knows that worker is in the middle of a call."""

    def __init__(self, delay_s: float) -> None:
        super().__init__()
        self.delay_s = delay_s
        self.misses: list[str] = []
        self.stalled = threading.Event()
        self._stall: tuple[str, int, float] | None = None
        data = json.loads((DEFAULT_RECORDINGS_DIR / "demo.json").read_text(encoding="utf-8"))
        self._recordings: list[dict[str, Any]] = data["recordings"]

    def stall(self, api_key: str, *, after: int, seconds: float) -> None:
        self._stall = (f"Bearer {api_key}", after, seconds)

    def _next(self, request: Received) -> Scripted:
        delay = self.delay_s
        with self._lock:
            self.received.append(request)
            if self._stall is not None and not self.stalled.is_set():
                authorization, after, seconds = self._stall
                if request.headers.get("authorization") == authorization and len(self.received) > after:
                    self.stalled.set()
                    delay = seconds
        answer = self._answer_for(request.body)
        if answer is None:
            with self._lock:
                self.misses.append(json.dumps(request.body)[:2000])
            return Scripted(599, {"error": {"type": "unscripted", "message": "no recording for this job"}})
        return Scripted(200, openai_completion(answer), delay_s=delay)

    def _answer_for(self, body: Any) -> str | None:
        try:
            system, user = (message["content"] for message in body["messages"])
        except (KeyError, TypeError, ValueError):
            return None
        profile = _PROFILE_LINE.search(system)
        if profile is None:
            return None
        kind = "review" if _REVIEWER in system else "change" if _PATCH in system else "analysis"
        candidates = [r for r in self._recordings if (r["profile"], r["kind"]) == (profile.group(1), kind)]
        stage = _STAGE.search(user)
        if stage is not None:
            candidates = [r for r in candidates if r["title"].endswith(f"(stage {stage.group(1)})")]
        else:
            candidates = [r for r in candidates if r["title"] in user]
        # As contracts.recordings.select_recording: one whose task_contains the task has, else none.
        fitting = [r for r in candidates if r.get("task_contains") and r["task_contains"] in user]
        fitting = fitting or [r for r in candidates if not r.get("task_contains")]
        return json.dumps(fitting[0]["response"]) if fitting else None


@pytest.fixture
def wire() -> Iterator[ReplayWireServer]:
    server = ReplayWireServer(CALL_DELAY_S)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server_url: str) -> Iterator[str]:
    """A fresh PostgreSQL schema for the one store every worker shares."""
    yield from _fresh_postgres_database(postgres_server_url)


# ---------------------------------------------------------------------------------- the runs


async def _settled(b: Bench, run_id: str, status: RunStatus) -> RunView:
    # Patient: a query whose workflow was cached on the killed worker may go unanswered a moment.
    view = await wait_for_view(
        b.client, run_id, lambda v: v.status is status or v.status.terminal, timeout=150, patient=True
    )
    assert view.status is status, f"run {run_id} is {view.status.value}, error {view.error}"
    return view


async def _read_only_run(b: Bench, item: str) -> str:
    run_id = (await b.create(item, tier=Tier.READ_ONLY, enqueue=True)).run_id
    await _settled(b, run_id, RunStatus.AWAITING_DECISION)
    await b.decide(run_id, DecisionOutcome.ACCEPTED, "many workers")
    return run_id


async def _worktree_run(b: Bench) -> str:
    run_id = (await b.create(SLOW_QUERY, tier=Tier.WORKTREE)).run_id
    view = await _settled(b, run_id, RunStatus.AWAITING_APPROVAL)
    assert view.contract_sha256 is not None
    await b.approve(run_id, view.contract_sha256)
    await b.execute(run_id)
    await _settled(b, run_id, RunStatus.AWAITING_DECISION)
    await b.decide(run_id, DecisionOutcome.ACCEPTED, "many workers")
    return run_id


async def _team(b: Bench, case_id: str) -> str:
    team_id = (await start(b, case_id)).team_id
    view = await ended(b, team_id, timeout=150)
    assert view.status is TeamStatus.AWAITING_HUMAN_REVIEW, (view.status, view.block, view.error)
    return team_id


async def _pending(client: Client, workflow_id: str) -> list[Any]:
    """The workflow's pending activities (none when it cannot be described)."""
    try:
        return list(
            (await client.get_workflow_handle(workflow_id).describe()).raw_description.pending_activities
        )
    except Exception:
        return []


# ------------------------------------------------------------------------------------- history


async def _history(client: Client, workflow_id: str) -> list[Any]:
    return list((await client.get_workflow_handle(workflow_id).fetch_history()).events)


def _closing_events(history: list[Any]) -> list[str]:
    closing = {
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: "completed",
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED: "failed",
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT: "timed_out",
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED: "terminated",
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED: "cancelled",
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW: "continued_as_new",
    }
    return [closing[event.event_type] for event in history if event.event_type in closing]


def _task_hosts(history: list[Any]) -> list[str]:
    """The host of the worker that started each workflow task, in order (identity ``pid@host``; a
    task the server records without one, as it may around a lost worker, is left out)."""
    identities = [
        event.workflow_task_started_event_attributes.identity
        for event in history
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED
    ]
    return [identity.rpartition("@")[2] for identity in identities if identity]


def _location(view: RunView) -> WorktreeLocation | None:
    return view.execution.location if view.execution is not None else None


async def _executions(client: Client, query: str) -> Counter[str]:
    """How many workflow executions visibility lists for each workflow id matching ``query``."""
    return Counter([execution.id async for execution in client.list_workflows(query)])


# ----------------------------------------------------------------------------------------- test


@within(300)
async def test_thirty_mixed_runs_on_three_worker_hosts_survive_a_killed_worker_exactly_once_under_the_ceiling(
    temporal_client: Client,
    temporal_dev_server: DevServer,
    task_queue: str,
    tmp_path: Path,
    wire: ReplayWireServer,
    postgres_url: str,
) -> None:
    if (reason := own_host_names_unavailable()) is not None:
        pytest.skip(f"three workers as three hosts need a UTS namespace each: {reason}")
    repository = make_orders_repository(tmp_path / "orders")
    states = {host: tmp_path / host for host in HOSTS}
    environment = {
        "SPECIALISTS_DATABASE_URL": postgres_url,
        "SPECIALISTS_TEAM_CYCLE_SECONDS": "1",
    }

    def worker(host: str) -> contextlib.AbstractAsyncContextManager[int]:
        return worker_process(
            temporal_dev_server,
            task_queue,
            states[host],
            log=tmp_path / f"{host}.log",
            environment={**environment, "SPECIALISTS_STATE_DIR": str(states[host]), KEY_ENV: _key(host)},
            host=host,
        )

    async with bench(temporal_client, task_queue, tmp_path, model=None, database_url=postgres_url) as b:
        b.store.register_model(
            ModelRegistration(
                id=MODEL, base_url=wire.base_url, api_key_env=KEY_ENV, timeout_s=5, ceiling=CEILING
            ),
            signer(ACTOR),
        )
        b.select(MODEL)
        b.add_repository(ALIAS, repository, "main")
        case_id = create_case(b).case_id
        async with contextlib.AsyncExitStack() as stack:
            pids = dict(
                zip(
                    HOSTS,
                    await asyncio.gather(*(stack.enter_async_context(worker(h)) for h in HOSTS)),
                    strict=True,
                )
            )
            items = [SLOW_QUERY, RELEASE_GATE]
            runs = {
                **{
                    f"read_only-{n}": asyncio.ensure_future(_read_only_run(b, items[n % 2]))
                    for n in range(READ_ONLY_RUNS)
                },
                **{f"worktree-{n}": asyncio.ensure_future(_worktree_run(b)) for n in range(WORKTREE_RUNS)},
                **{f"team-{n}": asyncio.ensure_future(_team(b, case_id)) for n in range(TEAMS)},
            }

            # Mid-way, while the victim is in the middle of a model call (whatever else it does).
            wire.stall(_key(VICTIM), after=KILL_AFTER_CALLS, seconds=STALL_S)
            assert await asyncio.to_thread(wire.stalled.wait, 120), "the runs never got mid-way"
            open_at_kill = sum(not task.done() for task in runs.values())
            os.kill(pids[VICTIM], signal.SIGKILL)
            finished = dict(zip(runs, await asyncio.gather(*runs.values()), strict=True))

            # The killed host comes back with its state directory and host name (as a StatefulSet
            # reschedules a pod): its host queue is served again, so its worktrees can be pruned.
            await stack.enter_async_context(worker(VICTIM))
            run_ids = [finished[name] for name in runs if not name.startswith("team")]
            views = {
                run_id: await temporal_client.get_workflow_handle(run_id, result_type=RunView).result()
                for run_id in run_ids
            }
            worktree_ids = [finished[name] for name in runs if name.startswith("worktree")]
            # Before pruning: which hosts' disks hold each run's worktrees, and the recorded one.
            on_disk = {
                run_id: {host for host in HOSTS if (states[host] / "worktrees" / run_id).is_dir()}
                for run_id in worktree_ids
            }
            recorded_exists = {
                run_id: (found := _location(views[run_id])) is not None and Path(found.worktree).is_dir()
                for run_id in worktree_ids
            }
            prunes = {
                run_id: await run_prune(
                    temporal_client,
                    PruneRequest(
                        run_id=run_id, actor=ACTOR, proof=proof(run_id, PRUNE_ACTION), host_wait_seconds=30
                    ),
                    task_queue=task_queue,
                    wait_seconds=60,
                )
                for run_id in worktree_ids
            }
            ceiling_handle = temporal_client.get_workflow_handle(ceiling_workflow_id(task_queue, MODEL))

            async def no_lease_held() -> bool:
                state = await ceiling_handle.query(ModelCeilingWorkflow.state)
                return (state.held, state.waiting) == ([], [])

            assert await until(no_lease_held, timeout=30)
            ceiling: CeilingState = await ceiling_handle.query(ModelCeilingWorkflow.state)
            histories = {
                workflow_id: await _history(temporal_client, workflow_id) for workflow_id in finished.values()
            }
            claims = {run_id: b.store.worktree_claims(run_id) for run_id in worktree_ids}
            projected = Counter(summary.run_id for summary in b.store.list_runs(limit=1000))

        # Every run was carried mid-way, and on past the kill.
        assert open_at_kill >= 10, f"only {open_at_kill} runs were still open at the kill"
        assert wire.misses == []

        # Exactly once: one execution per id, one completion, one arrival at the final status.
        ids = list(finished.values())
        assert len(set(ids)) == len(ids) == READ_ONLY_RUNS + WORKTREE_RUNS + TEAMS
        runs_query = f"TaskQueue = '{task_queue}' AND WorkflowType = '{WorkflowType.SPECIALIST_RUN}'"
        teams_query = f"TaskQueue = '{task_queue}' AND WorkflowType = '{WorkflowType.RESEARCH_TEAM}'"

        async def all_listed() -> bool:
            listed = await _executions(temporal_client, runs_query) + await _executions(
                temporal_client, teams_query
            )
            return set(listed) == set(ids)

        assert await until(all_listed, timeout=10)
        listed = await _executions(temporal_client, runs_query) + await _executions(
            temporal_client, teams_query
        )
        assert listed == Counter(ids), "a run or team was started more than once"
        for workflow_id, history in histories.items():
            assert _closing_events(history) == ["completed"], workflow_id
        for run_id, view in views.items():
            assert view.status is RunStatus.ACCEPTED, (run_id, view.status, view.error)
            arrivals = [e for e in events(view, AuditKind.STATUS_CHANGED) if e["to"] == "accepted"]
            assert len(arrivals) == 1, run_id
            assert len(events(view, AuditKind.DECIDED)) == 1, run_id
            assert projected[run_id] == 1, run_id
        for run_id in run_ids:
            assert b.projected_status(run_id) == "accepted", run_id

        # Some runs were moved off the killed host: their workflow tasks ran there, then elsewhere.
        moved = [
            workflow_id
            for workflow_id, history in histories.items()
            if VICTIM in (hosts := _task_hosts(history)) and hosts[-1] != VICTIM
        ]
        assert moved, "no run had been served by the killed worker"
        assert {host for history in histories.values() for host in _task_hosts(history)} <= set(HOSTS)

        # The ceiling held across the three workers and no lease outlived its call.
        assert wire.max_in_flight <= CEILING
        assert ceiling.max_held <= CEILING
        assert (ceiling.held, ceiling.waiting) == ([], [])
        # The call cut off by the kill was made again on another worker.
        assert len(wire.received) > MODEL_CALLS
        assert ceiling.granted_total == len(wire.received)

        # Each worktree run: one successful attempt, its worktree on the recorded host's disk, and
        # pruned by that host's worker (on its host queue).
        for run_id in worktree_ids:
            view = views[run_id]
            assert len(events(view, AuditKind.WORKTREE_EXECUTED)) == 1, run_id
            assert events(view, AuditKind.WORKTREE_FAILED) == [], run_id
            execution = view.execution
            assert execution is not None and execution.location is not None, run_id
            location = execution.location
            assert location.host in HOSTS, (run_id, location)
            claimed = {claim.execution_attempt: claim.worker for claim in claims[run_id]}
            assert claimed[location.attempt].startswith(f"{location.host}:"), (run_id, claimed)
            worktree = Path(location.worktree)
            assert worktree.parent == (states[location.host] / "worktrees" / run_id).resolve(), run_id
            assert recorded_exists[run_id], run_id
            claim_hosts = {worker.rpartition(":")[0] for worker in claimed.values()}
            # Only hosts that claimed an attempt of the run hold anything of it.
            assert location.host in on_disk[run_id] <= claim_hosts, (run_id, on_disk[run_id], claimed)
            prune = prunes[run_id]
            assert prune.hosts == sorted(claim_hosts | {location.host}), (run_id, prune.hosts)
            assert prune.unreachable_hosts == [], run_id
            # prune_worktrees reports the host it ran on: the worker of the recorded host did it.
            ours = [p for p in prune.pruned if p.attempt == location.attempt]
            assert [(p.host, p.existed, p.removed_worktree) for p in ours] == [(location.host, True, True)], (
                run_id,
                prune.pruned,
            )
            assert not worktree.exists(), run_id
        hosts_used = {
            view.execution.location.host
            for run_id in worktree_ids
            if (view := views[run_id]).execution is not None and view.execution.location is not None
        }
        assert len(hosts_used) >= 2, "the worktree attempts were not spread over the hosts"


# ------------------------------------------------------------------ a worker lost mid-attempt

_STALLING_GIT = """#!/bin/sh
# git, except that `git worktree add` stalls for as long as the worker that ran it lives.
case " $* " in
*" worktree add "*)
    while kill -0 "$PPID" 2>/dev/null; do sleep 0.1; done
    exit 1
    ;;
esac
exec {git} "$@"
"""
FAILOVER_LIMIT_S = 30.0
"""How long after the kill the run may take to have its attempt made again on the other worker."""


def _stalling_git(directory: Path) -> Path:
    """A directory holding a ``git`` that stalls in ``worktree add`` (put it first on ``PATH``)."""
    real = shutil.which("git")
    assert real is not None
    directory.mkdir()
    script = directory / "git"
    script.write_text(_STALLING_GIT.format(git=real), encoding="utf-8")
    script.chmod(0o755)
    return directory


@within(150)
async def test_a_worker_killed_during_a_worktree_attempt_is_replaced_by_another_within_seconds(
    temporal_client: Client, temporal_dev_server: DevServer, task_queue: str, tmp_path: Path
) -> None:
    repository = make_orders_repository(tmp_path / "orders")
    stalling = _stalling_git(tmp_path / "stalling-git")
    async with bench(temporal_client, task_queue, tmp_path) as b:
        b.add_repository(ALIAS, repository, "main")
        database = {"SPECIALISTS_DATABASE_URL": b.database_url}
        slow_state, other_state = tmp_path / "slow-host", tmp_path / "other-host"
        slow_env = {**database, "PATH": f"{stalling}{os.pathsep}{os.environ['PATH']}"}
        async with worker_process(
            temporal_dev_server, task_queue, slow_state, log=tmp_path / "slow.log", environment=slow_env
        ) as slow:
            run_id = (await b.create(SLOW_QUERY, tier=Tier.WORKTREE)).run_id
            view = await _settled(b, run_id, RunStatus.AWAITING_APPROVAL)
            assert view.contract_sha256 is not None
            await b.approve(run_id, view.contract_sha256)
            await b.execute(run_id)

            async def attempt_started() -> bool:
                return any(
                    activity.activity_type.name == ActivityName.EXECUTE_WORKTREE_ATTEMPT
                    and activity.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
                    for activity in await _pending(temporal_client, run_id)
                )

            assert await until(attempt_started, timeout=60), "the attempt never started"
            async with worker_process(
                temporal_dev_server, task_queue, other_state, log=tmp_path / "other.log", environment=database
            ):
                os.kill(slow, signal.SIGKILL)
                killed = time.monotonic()
                view = await wait_for_view(
                    temporal_client,
                    run_id,
                    lambda v: v.status is RunStatus.AWAITING_DECISION or v.status.terminal,
                    timeout=FAILOVER_LIMIT_S,
                    patient=True,
                )
                waited = time.monotonic() - killed
                assert view.status is RunStatus.AWAITING_DECISION, (
                    f"{waited:.0f}s after the kill the run is still {view.status.value}: the attempt "
                    "lost with its worker was not made again on the other worker"
                )
                claims = b.store.worktree_claims(run_id)
    # The lost attempt keeps its number; the second is made on the other worker's disk.
    assert [claim.execution_attempt for claim in claims] == [1, 2]
    location = view.execution.location if view.execution is not None else None
    assert location is not None and location.attempt == 2
    assert Path(location.worktree).parent == (other_state / "worktrees" / run_id).resolve()
    assert len(events(view, AuditKind.WORKTREE_EXECUTED)) == 1
