"""A specialist-run test bench on the shared dev server: a SQLite store in ``tmp_path``, a registered
actor ``alice`` (the trust root, bootstrapped with the deployment's action token, holding its test
key), a model selection, in-process workers built by :func:`worker.build_worker` that hold the
deployment's action token (their trust anchor), actors' signatures for protected actions
(:func:`proof`), and small model providers for the cases the replay recordings cannot produce (slow,
failing, capturing).

:func:`worker_process` runs ``python -m worker`` as a subprocess with the deployment's environment.

Every test bounds itself with :func:`within`, so a hang fails the test instead of blocking the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import functools
import hashlib
import hmac
import json
import os
import secrets
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from temporalio import activity
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError
from temporalio.worker import Worker

from activities.config import DEFAULT_APPROVAL_WINDOW_SECONDS, DEFAULT_RECORDINGS_DIR, ActivityConfig
from activities.providers.base import CompletionRequest, ModelProvider, ProviderError
from activities.providers.replay import ReplayProvider
from contracts.enums import AutomationMode, FallbackMode, Tier
from contracts.identity import ActorKey, Signer, TrustAnchor, sign_action
from contracts.ids import new_run_id
from contracts.models import ModelSelection
from contracts.orchestration import AdvisoryTopic
from contracts.policy import AutomationPolicy
from contracts.proofs import ActionProof
from contracts.research_coordinator import coordinator_workflow_id
from contracts.runs import ActionResult, DecisionOutcome, RunInput, RunStatus, RunView
from contracts.work_item import WorkItem
from control.runs import (
    approve_run,
    cancel_run,
    create_run,
    decide_run,
    enqueue_run,
    execute_run,
    get_view,
    request_digest,
    wait_for_view,
)
from infra.devserver import DevServer
from store.database import open_store
from store.store import Store
from tests.identity import key_of, signer
from tests.store.git_repository import register_repository
from worker import build_worker

P = ParamSpec("P")
T = TypeVar("T")

ACTOR = "alice"
REPLAY_MODEL = "replay:demo"
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES_DIR = ROOT / "examples" / "work-items"
# The deployment's action token for this test session: random, so finding it anywhere (history,
# store, logs) can only mean it leaked. It bootstraps ``alice`` and anchors the workers' trust.
LOOPBACK_KEY_ENV = "CEILING_TEST_API_KEY"
"""The key variable of the loopback model the ``server`` fixture (tests/workflows/conftest.py) serves."""
ACTION_TOKEN = f"test-action-token-{secrets.token_hex(16)}".encode()
ANCHOR = TrustAnchor(token=ACTION_TOKEN)
SLOW_QUERY = "03-slow-query.json"  # low risk; recorded in replay:demo (analysis + review)
RELEASE_GATE = "02-release-gate.json"  # low risk; recorded in replay:demo
AUTH_REVIEW = "04-authentication-review.json"  # high risk; not recorded
DASHBOARD = "05-responsive-dashboard.json"  # low risk; not recorded


AsyncTest = Callable[P, Coroutine[Any, Any, T]]


def within(seconds: float) -> Callable[[AsyncTest[P, T]], AsyncTest[P, T]]:
    """Fail an async test that takes longer than ``seconds`` of wall-clock time."""

    def decorate(test: AsyncTest[P, T]) -> AsyncTest[P, T]:
        @functools.wraps(test)
        async def bounded(*args: P.args, **kwargs: P.kwargs) -> T:
            return await asyncio.wait_for(test(*args, **kwargs), timeout=seconds)

        return bounded

    return decorate


def recorded_response(kind: str, profile: str, title: str) -> dict[str, Any]:
    """The ``replay:demo`` recording of a ``kind`` job (``analysis``/``review``) by ``profile`` on
    the work item titled ``title``: a valid ``SpecialistOutput`` as JSON data."""
    data = json.loads((DEFAULT_RECORDINGS_DIR / "demo.json").read_text(encoding="utf-8"))
    for entry in data["recordings"]:
        if (entry["kind"], entry["profile"], entry["title"]) == (kind, profile, title):
            return dict(entry["response"])
    raise AssertionError(f"no replay:demo recording for {profile} {kind} on {title!r}")


def example(name: str) -> WorkItem:
    """An example work item from ``examples/work-items``."""
    return WorkItem.model_validate_json((EXAMPLES_DIR / name).read_text(encoding="utf-8"))


def proof(
    run_id: str,
    action: str,
    *,
    actor: str = ACTOR,
    digest: str = "",
    key: ActorKey | None = None,
    issued_at: dt.datetime | None = None,
) -> ActionProof:
    """``actor``'s signature of ``action`` on ``run_id`` as the CLI makes it (with ``key``; default the
    actor's test key): issued now (UTC) with a fresh nonce."""
    return sign_action(
        Signer(actor, key or key_of(actor)),
        action=action,
        target=run_id,
        digest=digest,
        issued_at=issued_at or dt.datetime.now(dt.UTC),
        nonce=secrets.token_hex(16),
    )


def token_proof(
    run_id: str, action: str, *, actor: str = ACTOR, digest: str = "", token: bytes = ACTION_TOKEN
) -> ActionProof:
    """A proof of the shared action token, as the CLI made them before per-person keys (an HMAC over
    the action; recorded histories carry them): valid for that token, refused by the worker now."""
    issued_at = dt.datetime.now(dt.UTC)
    nonce = secrets.token_hex(16)
    payload = {
        "action": action,
        "actor": actor,
        "digest": digest,
        "issued_at": issued_at.isoformat(),
        "nonce": nonce,
        "run_id": run_id,
    }
    message = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode("ascii")
    return ActionProof(
        issued_at=issued_at, nonce=nonce, mac=hmac.new(token, message, hashlib.sha256).hexdigest()
    )


def register_actor(store: Store, actor_id: str, name: str, by: str = ACTOR) -> Signer:
    """Register ``actor_id`` with its test key, signed by ``by``."""
    store.register_actor(actor_id, name, key_of(actor_id).public_key, signer(by))
    return signer(actor_id)


def run_input(
    item: WorkItem,
    *,
    tier: Tier | None = Tier.READ_ONLY,
    automatic: bool = False,
    enqueue: bool = False,
    actor: str = ACTOR,
    run_id: str | None = None,
    signed: bool = True,
    review_wave: bool = False,
    advisory: AdvisoryTopic | None = None,
) -> RunInput:
    """A run input as ``specialists create`` builds it (request digest included).

    Creating with ``enqueue`` or ``automatic`` is protected: the input then carries a proof of the
    create action bound to the request digest, unless ``signed`` is false. ``review_wave``: the
    operator asks for a review wave; ``advisory``: for an advisory pass on that topic.
    """
    draft = RunInput(
        run_id=run_id or new_run_id(),
        work_item=item,
        requested_tier=None if automatic else tier,
        automatic=automatic,
        enqueue=enqueue,
        request_digest="",
        created_by=actor,
        review_wave=review_wave,
        advisory=advisory,
    )
    inp = draft.model_copy(update={"request_digest": request_digest(draft)})
    if signed:
        signature = proof(inp.run_id, "create", actor=actor, digest=inp.request_digest)
        inp = inp.model_copy(update={"proof": signature})
    return inp


# ----------------------------------------------------------------------------------------- providers

_DEMO = ReplayProvider(DEFAULT_RECORDINGS_DIR)


def replay_demo(request: CompletionRequest) -> str:
    """The ``replay:demo`` answer for ``request``'s identity, whatever model it was sent to."""
    return _DEMO.complete(dataclasses.replace(request, model_name="demo"))


class RecordingProvider:
    """Records every request, then answers from the ``replay:demo`` recordings."""

    def __init__(self) -> None:
        self.requests: list[CompletionRequest] = []
        self._lock = threading.Lock()

    def complete(self, request: CompletionRequest) -> str:
        with self._lock:
            self.requests.append(request)
        return replay_demo(request)


class FailingProvider:
    """Raises ``ProviderError(error_type)`` on every call (or only on the first ``times`` calls,
    then answers from the ``replay:demo`` recordings)."""

    def __init__(self, error_type: str, *, times: int | None = None) -> None:
        self.error_type = error_type
        self.times = times
        self.calls = 0
        self._lock = threading.Lock()

    def complete(self, request: CompletionRequest) -> str:
        with self._lock:
            self.calls += 1
            calls = self.calls
        if self.times is None or calls <= self.times:
            raise ProviderError(self.error_type, f"test provider fails with {self.error_type}")
        return replay_demo(request)


class TextProvider:
    """Answers with ``answer(request)``: raw text, which need not be valid output."""

    def __init__(self, answer: Callable[[CompletionRequest], str]) -> None:
        self._answer = answer

    def complete(self, request: CompletionRequest) -> str:
        return self._answer(request)


class PatchProvider:
    """Answers a worktree run's change job with the ``replay:demo`` analysis of the same work item plus
    ``patch`` (``None``: no patch at all); every other job as ``replay:demo`` does. Records requests."""

    def __init__(self, patch: str | None) -> None:
        self.patch = patch
        self.requests: list[CompletionRequest] = []
        self._lock = threading.Lock()

    def complete(self, request: CompletionRequest) -> str:
        with self._lock:
            self.requests.append(request)
        if not request.identity.expects_patch:
            return replay_demo(request)
        analysis = dataclasses.replace(
            request, identity=dataclasses.replace(request.identity, expects_patch=False)
        )
        answer = json.loads(replay_demo(analysis))
        if self.patch is not None:
            answer["patch"] = self.patch
        return json.dumps(answer)


class SlowProvider:
    """Heartbeats for ``seconds`` (or until the activity is cancelled or the worker stops), then
    answers from the ``replay:demo`` recordings. ``started`` is set when the first call begins."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = threading.Event()
        self.finished = threading.Event()
        self.calls = 0

    def complete(self, request: CompletionRequest) -> str:
        self.calls += 1
        self.started.set()
        deadline = time.monotonic() + self.seconds
        try:
            while time.monotonic() < deadline:
                activity.heartbeat()
                if activity.is_cancelled() or activity.is_worker_shutdown():
                    raise ProviderError("model_transport", "slow test provider interrupted")
                time.sleep(0.05)
            return replay_demo(request)
        finally:
            self.finished.set()


# ------------------------------------------------------------------------------------------- bench


@dataclass
class Bench:
    """One test's store, task queue and worker factory on the shared dev server."""

    client: Client
    task_queue: str
    database_url: str
    store: Store
    config: ActivityConfig
    providers: dict[str, ModelProvider] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)

    def worker(self) -> Worker:
        """A fresh worker for this bench's task queue (run it with ``async with``)."""
        return build_worker(
            self.client, task_queue=self.task_queue, config=self.config, providers=self.providers
        )

    def select(
        self, primary: str, *fallbacks: str, mode: FallbackMode | None = None, actor: str = ACTOR
    ) -> None:
        """Select the models new runs capture."""
        if mode is None:
            mode = FallbackMode.ORDERED if fallbacks else FallbackMode.PRIMARY_ONLY
        self.store.select_models(
            ModelSelection(primary=primary, fallbacks=list(fallbacks), fallback_mode=mode), signer(actor)
        )

    def set_policy(self, mode: AutomationMode, ceiling: Tier = Tier.RECOMMEND) -> None:
        """Set the automation policy new runs capture."""
        self.store.set_policy(AutomationPolicy(mode=mode, maximum_automatic_tier=ceiling), signer(ACTOR))

    def add_repository(self, alias: str, path: Path, branch: str | None = None) -> None:
        """Allow-list the git working tree at ``path`` as ``alias``."""
        register_repository(self.store, alias, path, branch, signer(ACTOR))

    async def enqueue(self, run_id: str, actor: str = ACTOR) -> ActionResult:
        """Enqueue a ready run, with a valid proof (raises the refusal as an operator error)."""
        return await enqueue_run(self.client, run_id, actor, proof(run_id, "enqueue", actor=actor))

    async def decide(
        self, run_id: str, outcome: DecisionOutcome, note: str = "", actor: str = ACTOR
    ) -> ActionResult:
        """Decide a run awaiting a decision, with a valid proof."""
        signature = proof(run_id, "decide", actor=actor)
        return await decide_run(self.client, run_id, actor, outcome, note, signature)

    async def cancel(self, run_id: str, reason: str = "", actor: str = ACTOR) -> RunView:
        """Cancel a run, with a valid proof; returns the view once the cancel took effect."""
        return await cancel_run(self.client, run_id, actor, reason, proof(run_id, "cancel", actor=actor))

    async def approve(self, run_id: str, digest: str, actor: str = ACTOR) -> RunView:
        """Approve the contract ``digest`` of a run awaiting approval, with a valid proof."""
        signature = proof(run_id, "approve", actor=actor, digest=digest)
        return await approve_run(self.client, run_id, actor, digest, signature)

    async def execute(self, run_id: str, actor: str = ACTOR, *, digest: str | None = None) -> ActionResult:
        """Execute an approved run, with a valid proof bound to its contract digest (``digest``:
        another digest to bind it to)."""
        if digest is None:
            digest = (await get_view(self.client, run_id)).contract_sha256 or ""
        return await execute_run(
            self.client, run_id, actor, proof(run_id, "execute", actor=actor, digest=digest)
        )

    async def create(self, item: WorkItem | str, **kwargs: Any) -> RunView:
        """Create a run with :func:`control.runs.create_run`; returns its first settled-from-routing
        view."""
        if isinstance(item, str):
            item = example(item)
        inp = run_input(item, **kwargs)
        self.started.append(inp.run_id)
        view, deduplicated = await create_run(self.client, inp, task_queue=self.task_queue)
        assert not deduplicated
        return view

    async def wait(
        self, run_id: str, done: Callable[[RunView], bool] | RunStatus, *, timeout: float = 15.0
    ) -> RunView:
        """Poll the run until ``done`` (a predicate or a status); fails on timeout."""
        predicate = (lambda v: v.status is done) if isinstance(done, RunStatus) else done
        view = await wait_for_view(self.client, run_id, predicate, timeout=timeout)
        assert predicate(view), f"run {run_id} is {view.status.value}, error {view.error}"
        return view

    async def terminal(self, run_id: str, *, timeout: float = 15.0) -> RunView:
        """Wait until the workflow has completed and return its final view.

        The view turns terminal before the run's last projection write; the workflow result comes
        after it, so the projection is complete once this returns.
        """
        handle = self.client.get_workflow_handle(run_id, result_type=RunView)
        return await asyncio.wait_for(handle.result(), timeout=timeout)

    def projected_status(self, run_id: str) -> str | None:
        """The run's status in the SQL projection (``None`` when not projected)."""
        for summary in self.store.list_runs(limit=1000):
            if summary.run_id == run_id:
                return summary.status.value
        return None

    async def projected(self, run_id: str, status: str, *, timeout: float = 5.0) -> bool:
        """Whether the projection shows ``status`` within ``timeout`` seconds.

        A run's view changes before the projection activity that follows writes it, so a test that
        has just seen a status waits for the projection to catch up instead of racing it.
        """

        async def shown() -> bool:
            return self.projected_status(run_id) == status

        return await until(shown, timeout=timeout)


def audit_kinds(view: RunView) -> list[str]:
    """The audit event kinds in order."""
    return [event.kind for event in view.audit]


def transitions(view: RunView) -> list[tuple[str, str]]:
    """The ``status_changed`` events as (from, to) pairs, in order."""
    return [(e.data["from"], e.data["to"]) for e in view.audit if e.kind == "status_changed"]


def events(view: RunView, kind: str) -> list[dict[str, Any]]:
    """The data of every audit event of ``kind``."""
    return [e.data for e in view.audit if e.kind == kind]


async def until(check: Callable[[], Awaitable[bool]], *, timeout: float = 5.0, every: float = 0.05) -> bool:
    """Poll an async check until it is true or ``timeout`` seconds pass; returns the last result."""
    deadline = time.monotonic() + timeout
    while True:
        if await check():
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(every)


async def no_pending_activities(client: Client, run_id: str, *, timeout: float = 10.0) -> None:
    """Wait until the server has no activity of the run pending.

    A worker killed while it runs an activity strands it until its start-to-close timeout (30 s for
    bookkeeping activities); a crash test kills its worker only once nothing is in flight.
    """
    handle = client.get_workflow_handle(run_id)

    async def idle() -> bool:
        description = await handle.describe()
        return not description.raw_description.pending_activities

    assert await until(idle, timeout=timeout), f"run {run_id} still has activities pending"


@contextlib.asynccontextmanager
async def bench(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    *,
    providers: dict[str, ModelProvider] | None = None,
    model: str | None = REPLAY_MODEL,
    read_only_budget_seconds: int = 120,
    approval_window_seconds: int = DEFAULT_APPROVAL_WINDOW_SECONDS,
    action_token: bytes | None = ACTION_TOKEN,
    team_cycle_seconds: float = 0.05,
    coordinator_continue_as_new_events: int = 1_000,
    database_url: str | None = None,
) -> AsyncIterator[Bench]:
    """A bench with ``alice`` registered (the trust root, bootstrapped with the deployment's token) and
    ``model`` selected (``None``: no selection); its workers hold ``action_token`` (``None``: a worker
    with neither a token nor a pinned trust root, which can verify nobody). Research teams advance in
    coordinator cycles of ``team_cycle_seconds`` (short, unless a test is about the cycle). The store
    is a SQLite file under ``tmp_path`` unless ``database_url`` names an empty database (e.g. a fresh
    PostgreSQL schema).

    On exit, any run this bench started that is still open is terminated, so the shared dev server
    is left with nothing running.
    """
    database_url = database_url or f"sqlite:///{tmp_path / 'state' / 'specialists.db'}"
    store = open_store(database_url, create=True, anchor=ANCHOR)
    store.bootstrap_actor(ACTOR, "Alice Operator", key_of(ACTOR), ACTION_TOKEN)
    config = ActivityConfig(
        database_url=database_url,
        read_only_budget_seconds=read_only_budget_seconds,
        approval_window_seconds=approval_window_seconds,
        recordings_dir=DEFAULT_RECORDINGS_DIR,
        action_token=action_token,
        state_dir=tmp_path / "state",
        team_cycle_seconds=team_cycle_seconds,
        coordinator_continue_as_new_events=coordinator_continue_as_new_events,
    )
    b = Bench(client, task_queue, database_url, store, config, dict(providers or {}))
    if model is not None:
        b.select(model)
    try:
        yield b
    finally:
        for run_id in [*b.started, coordinator_workflow_id(task_queue)]:
            handle = client.get_workflow_handle(run_id)
            with contextlib.suppress(RPCError):
                description = await handle.describe()
                if description.status == WorkflowExecutionStatus.RUNNING:
                    await handle.terminate("test finished")
        store.close()


# ------------------------------------------------------------------------------------ worker process

WORKER_READY_LINE = "worker polling task queue"

# Run as ``python -c _SET_HOST_NAME NAME PROGRAM ARGS...`` inside ``unshare --uts``: sets the new UTS
# namespace's host name, then execs the program (same pid), which sees ``NAME`` as its host name.
_SET_HOST_NAME = (
    "import os, socket, sys; socket.sethostname(sys.argv[1]); os.execv(sys.argv[2], sys.argv[2:])"
)


def _own_host_prefix(host: str) -> list[str]:
    """The command prefix that runs a program in a UTS namespace of its own named ``host`` (a user
    namespace too when not root, so no privilege is needed where unprivileged namespaces are on)."""
    user_namespace = [] if os.geteuid() == 0 else ["--map-root-user"]
    return ["unshare", "--uts", *user_namespace, sys.executable, "-c", _SET_HOST_NAME, host]


@functools.cache
def own_host_names_unavailable() -> str | None:
    """Why a worker process cannot get a host name of its own here (``None``: it can).

    A worker's host name (``socket.gethostname()``) names its host task queue and is recorded with
    the worktrees it makes; several workers on one machine stand for several hosts only when each
    runs in a UTS namespace of its own (``unshare --uts``)."""
    import shutil
    import subprocess

    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    probe = [
        *_own_host_prefix("probe-host"),
        sys.executable,
        "-c",
        "import socket; print(socket.gethostname())",
    ]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30, check=False)
    except OSError as error:
        return f"unshare failed: {error}"
    if done.returncode != 0 or done.stdout.strip() != "probe-host":
        return f"unshare --uts is not permitted here: {done.stderr.strip()[-300:]}"
    return None


@contextlib.asynccontextmanager
async def worker_process(
    server: DevServer | str,
    task_queue: str,
    state_dir: Path,
    *,
    log: Path | None = None,
    token: bytes | None = ACTION_TOKEN,
    environment: dict[str, str] | None = None,
    host: str | None = None,
) -> AsyncIterator[int]:
    """``python -m worker`` with the deployment's environment variables (the action token in
    ``SPECIALISTS_ACTION_TOKEN`` unless ``token`` is ``None``); yields its pid once it polls.

    ``environment`` adds or replaces variables. ``host``: the worker runs in a UTS namespace of its
    own with that host name, as if on another machine (check :func:`own_host_names_unavailable`
    first). Everything it writes (stdout and stderr) is appended to ``log`` when given. Stopped on
    exit if still running (SIGTERM, a graceful stop; SIGKILL if it does not end within 10 s).
    """
    address = server if isinstance(server, str) else server.address
    env = {name: value for name, value in os.environ.items() if not name.startswith("SPECIALISTS_")}
    env |= {
        "SPECIALISTS_TEMPORAL_ADDRESS": address,
        "SPECIALISTS_TASK_QUEUE": task_queue,
        "SPECIALISTS_DATABASE_URL": f"sqlite:///{state_dir / 'specialists.db'}",
        "SPECIALISTS_STATE_DIR": str(state_dir),
    }
    if token is not None:
        env["SPECIALISTS_ACTION_TOKEN"] = token.decode()
    env |= environment or {}
    prefix = _own_host_prefix(host) if host is not None else []
    process = await asyncio.create_subprocess_exec(
        *prefix,
        sys.executable,
        "-m",
        "worker",
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert process.stdout is not None
    sink = log.open("ab") if log is not None else None
    drain: asyncio.Future[None] | None = None
    try:
        seen: list[str] = []
        while True:
            raw = await asyncio.wait_for(process.stdout.readline(), timeout=20)
            if sink is not None:
                sink.write(raw)
            if not raw:
                raise AssertionError(f"worker exited before polling: {''.join(seen)}")
            seen.append(raw.decode(errors="replace"))
            if WORKER_READY_LINE in seen[-1]:
                break
        # Keep draining its output so a full pipe never blocks the worker.
        drain = asyncio.ensure_future(_drain(process.stdout, sink))
        yield process.pid
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            try:
                await asyncio.wait_for(process.wait(), timeout=10)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        if drain is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(drain, timeout=5)
        if sink is not None:
            sink.close()


async def _drain(stream: asyncio.StreamReader, sink: Any) -> None:
    while line := await stream.readline():
        if sink is not None:
            sink.write(line)
