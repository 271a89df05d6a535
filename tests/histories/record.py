"""Record one workflow history per run path into ``tests/histories/`` (run by hand, then commit).

    .venv/bin/python -m tests.histories.record

Starts its own in-memory dev server and an in-process worker with test providers and an action
token (protected actions carry proofs of it, as the CLI sends them), allow-lists a git repository for
the worktree-tier paths, drives each path, and writes ``<path>.json`` (the ``SpecialistRun`` history)
plus ``<path>.<job>.json`` for each ``ModelJob`` child. ``tests/workflows/test_replay.py`` replays
every file on every test run, so a change to workflow logic that would break running workflows fails
the build; such a change goes behind ``workflow.patched()``.

Histories recorded before an earlier change are kept beside them and replay too: ``v1/`` before
protected create was authorised, ``v2/`` before model jobs drove each attempt themselves and runs
audited every attempt, ``v3/`` before a job's pack and lease requests were local activities and the
ceiling answered lease requests by update, ``v4/`` before a run upserted its search attributes at most
once per workflow task, ``v5/`` before a run and a job each recorded one consolidated patch marker,
``v6/`` before the ids that came after those markers joined ``run-v6`` and ``model-job-v6`` (with a
goal queue's run and a review wave's run, recorded from the tests that drive them; each directory
with the ``workflow-ids.json`` it ran under).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import os
import secrets
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from activities.config import ActivityConfig
from activities.providers.base import CompletionRequest, ProviderError
from contracts.ceilings import ceiling_workflow_id
from contracts.enums import AutomationMode, FallbackMode, Tier
from contracts.errors import ErrorType, NotFound
from contracts.identity import ActorKey, Signer, TrustAnchor, sign_action
from contracts.ids import new_run_id
from contracts.models import ModelRegistration, ModelSelection
from contracts.policy import AutomationPolicy
from contracts.proofs import ActionProof
from contracts.runs import (
    ActionResult,
    ApproveRequest,
    CancelRequest,
    DecisionOutcome,
    EnqueueRequest,
    RunInput,
    RunStatus,
    RunView,
)
from contracts.search_attributes import SEARCH_ATTRIBUTES
from contracts.work_item import WorkItem
from contracts.worktree_prune import PRUNE_ACTION, PruneRequest, PruneResult, prune_workflow_id
from control.runs import approve_run, decide_run, execute_run, request_digest, wait_for_view
from infra.devserver import DevServer, free_port
from store.database import default_database_url, open_store
from tests.activities.providers.wire_server import Scripted, openai_completion
from tests.activities.providers.wire_server import running as running_wire_server
from tests.store.git_repository import make_working_tree
from worker import build_host_worker, build_worker

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent.parent / "examples" / "work-items"
SLOW_QUERY = WorkItem.model_validate_json((EXAMPLES / "03-slow-query.json").read_text())
BREACH = WorkItem.model_validate_json((EXAMPLES / "01-production-breach.json").read_text())
# A token for this recording only: histories hold proofs made with it, never the token itself.
TOKEN = f"record-histories-{secrets.token_hex(16)}".encode()
KEYS: dict[str, ActorKey] = {}
"""Each recorded actor's key for this recording (alice is the trust root, bootstrapped with TOKEN)."""
ANCHOR = TrustAnchor(token=TOKEN)


def _alice() -> Signer:
    return Signer("alice", KEYS.setdefault("alice", ActorKey.generate()))


def _proof(
    run_id: str,
    action: str,
    *,
    actor: str = "alice",
    digest: str = "",
    issued_at: dt.datetime | None = None,
) -> ActionProof:
    return sign_action(
        Signer(actor, KEYS.setdefault(actor, ActorKey.generate())),
        action=action,
        target=run_id,
        digest=digest,
        issued_at=issued_at or dt.datetime.now(dt.UTC),
        nonce=secrets.token_hex(16),
    )


class SlowReplay:
    """Answers like ``replay:demo`` after ``delay`` seconds (to cancel or expire a running job)."""

    def __init__(self, inner: object, delay: float) -> None:
        self._inner = inner
        self._delay = delay

    def complete(self, request: CompletionRequest) -> str:
        time.sleep(self._delay)
        return self._inner.complete(request)  # type: ignore[attr-defined, no-any-return]


class QuotaExhausted:
    """Always fails with a quota error (a fallback class)."""

    def complete(self, request: CompletionRequest) -> str:
        raise ProviderError(ErrorType.MODEL_QUOTA, "quota exhausted for this billing period")


class FailsFirstCall:
    """Fails each job's first call with a transport error (retried on the same model), then answers
    like ``replay:demo``."""

    def __init__(self, inner: object) -> None:
        self._inner = inner
        self._seen: set[tuple[str, str]] = set()

    def complete(self, request: CompletionRequest) -> str:
        job = (request.identity.profile_id, request.identity.kind.value)
        if job not in self._seen:
            self._seen.add(job)
            raise ProviderError(ErrorType.MODEL_TRANSPORT, "connection reset by peer")
        return self._inner.complete(request)  # type: ignore[attr-defined, no-any-return]


class Patching:
    """Answers a worktree run's change job like the ``replay:demo`` analysis of its work item plus
    ``patch``; any other job like ``replay:demo``."""

    def __init__(self, inner: object, patch: str) -> None:
        self._inner = inner
        self._patch = patch

    def complete(self, request: CompletionRequest) -> str:
        if not request.identity.expects_patch:
            return self._inner.complete(request)  # type: ignore[attr-defined, no-any-return]
        analysis = dataclasses.replace(
            request, identity=dataclasses.replace(request.identity, expects_patch=False)
        )
        answer = json.loads(self._inner.complete(analysis))  # type: ignore[attr-defined]
        return json.dumps({**answer, "patch": self._patch})


GOOD_PATCH = (
    "diff --git a/docs/README.md b/docs/README.md\n--- a/docs/README.md\n+++ b/docs/README.md\n"
    "@@ -1 +1,2 @@\n docs\n+Orders report: index orders (merchant_id, created_at).\n"
)
STALE_PATCH = (
    "diff --git a/docs/README.md b/docs/README.md\n--- a/docs/README.md\n+++ b/docs/README.md\n"
    "@@ -1 +1,2 @@\n a line that is not there\n+added\n"
)


class NotJson:
    """Returns text that is not a result (a schema error: never a fallback)."""

    def complete(self, request: CompletionRequest) -> str:
        return "I think the index is missing."


KEY_ENV = "RECORD_HISTORIES_API_KEY"


@contextlib.contextmanager
def _key_in_environment() -> Iterator[None]:
    """A throwaway key for the loopback model, in the variable its registration names."""
    os.environ[KEY_ENV] = f"sk-record-{secrets.token_hex(8)}"
    try:
        yield
    finally:
        os.environ.pop(KEY_ENV, None)


WORKFLOW_IDS = HERE / "workflow-ids.json"
"""File stem → the workflow id it was recorded under: a workflow may use its own id (a ModelJob names
its leases with it), so replay must run under the same id."""


def _note_id(stem: str, workflow_id: str) -> None:
    ids = json.loads(WORKFLOW_IDS.read_text(encoding="utf-8")) if WORKFLOW_IDS.exists() else {}
    ids[stem] = workflow_id
    WORKFLOW_IDS.write_text(json.dumps(ids, indent=1, sort_keys=True) + "\n", encoding="utf-8")


async def _save(client: Client, name: str, run_id: str) -> None:
    handle = client.get_workflow_handle(run_id)
    history = await handle.fetch_history()
    (HERE / f"{name}.json").write_text(history.to_json(), encoding="utf-8")
    _note_id(name, run_id)
    for kind in ("analysis", "review"):
        child = client.get_workflow_handle(f"{run_id}-{kind}")
        try:
            child_history = await child.fetch_history()
        except Exception:  # noqa: S112 - a path without this child job simply has none
            continue
        (HERE / f"{name}.{kind}.json").write_text(child_history.to_json(), encoding="utf-8")
        _note_id(f"{name}.{kind}", child.id)
    print(f"recorded {name} ({run_id})", flush=True)


def _input(
    item: WorkItem,
    tier: Tier | None,
    *,
    enqueue: bool = False,
    automatic: bool = False,
    signed: bool = True,
) -> RunInput:
    """A create request by alice, carrying her proof of the create unless ``signed`` is off (the run
    proves a named creator, and an enqueued or automatic create is protected)."""
    draft = RunInput(
        run_id=new_run_id(),
        work_item=item,
        requested_tier=tier,
        automatic=automatic,
        enqueue=enqueue,
        request_digest="",
        created_by="alice",
    )
    run_input = draft.model_copy(update={"request_digest": request_digest(draft)})
    if signed:
        proof = _proof(run_input.run_id, "create", digest=run_input.request_digest)
        run_input = run_input.model_copy(update={"proof": proof})
    return run_input


async def _cancel(client: Client, run_id: str, reason: str = "") -> None:
    request = CancelRequest(actor="alice", reason=reason, proof=_proof(run_id, "cancel"))
    await client.get_workflow_handle(run_id).signal("cancel", request)


async def _approve_attempt(
    client: Client, run_id: str, digest: str, proof: ActionProof | None, actor: str = "alice"
) -> ActionResult:
    request = ApproveRequest(actor=actor, contract_sha256=digest, proof=proof)
    handle = client.get_workflow_handle(run_id)
    result: ActionResult = await handle.execute_update("approve", request, result_type=ActionResult)
    return result


async def _start(client: Client, run_input: RunInput, queue: str) -> str:
    await client.start_workflow("SpecialistRun", run_input, id=run_input.run_id, task_queue=queue)
    return run_input.run_id


def _status(*statuses: RunStatus) -> Callable[[RunView], bool]:
    return lambda view: view.status in statuses


async def record(server: DevServer, state: Path) -> None:
    url = default_database_url(state)
    repository = make_working_tree(state / "orders-service")
    with open_store(url, anchor=ANCHOR) as store:
        store.bootstrap_actor("alice", "Alice", KEYS.setdefault("alice", ActorKey.generate()), TOKEN)
        store.select_models(ModelSelection(primary="replay:demo"), _alice())
        store.add_repository(SLOW_QUERY.repo_alias or "orders-service", repository, "main", _alice())
    client = await Client.connect(server.address, data_converter=pydantic_data_converter)
    from activities.providers.replay import ReplayProvider

    replay = ReplayProvider(ActivityConfig(database_url=url).recordings_dir)
    providers = {
        "slow": SlowReplay(replay, 3.0),
        "quota": QuotaExhausted(),
        "notjson": NotJson(),
        "flaky": FailsFirstCall(replay),
        "patching": Patching(replay, GOOD_PATCH),
        "stalepatch": Patching(replay, STALE_PATCH),
    }
    queue = "record-histories"
    config = ActivityConfig(
        database_url=url,
        read_only_budget_seconds=60,
        recordings_dir=replay._dir,
        action_token=TOKEN,
        state_dir=state,
    )
    paths: list[tuple[str, Callable[[], Awaitable[str]]]] = []

    async def recommended() -> str:
        run_id = await _start(client, _input(BREACH, Tier.RECOMMEND), queue)
        await wait_for_view(client, run_id, _status(RunStatus.RECOMMENDED))
        return run_id

    async def accepted() -> str:
        run_id = await _start(client, _input(SLOW_QUERY, Tier.READ_ONLY), queue)
        await wait_for_view(client, run_id, _status(RunStatus.READY))
        enqueue = EnqueueRequest(actor="alice", proof=_proof(run_id, "enqueue"))
        await client.get_workflow_handle(run_id).execute_update("enqueue", enqueue)
        await wait_for_view(client, run_id, _status(RunStatus.AWAITING_DECISION))
        # The refusal is the point: an unregistered actor's attempt is recorded in history.
        with contextlib.suppress(NotFound):
            await decide_run(client, run_id, "mallory", DecisionOutcome.ACCEPTED, "not registered")
        proof = _proof(run_id, "decide")
        await decide_run(client, run_id, "alice", DecisionOutcome.ACCEPTED, "looks right", proof)
        await wait_for_view(client, run_id, _status(RunStatus.ACCEPTED))
        return run_id

    async def rejected() -> str:
        run_id = await _start(client, _input(SLOW_QUERY, Tier.READ_ONLY, enqueue=True), queue)
        await wait_for_view(client, run_id, _status(RunStatus.AWAITING_DECISION))
        proof = _proof(run_id, "decide")
        await decide_run(client, run_id, "alice", DecisionOutcome.REJECTED, "needs table statistics", proof)
        await wait_for_view(client, run_id, _status(RunStatus.REJECTED))
        return run_id

    async def cancelled_ready() -> str:
        run_id = await _start(client, _input(SLOW_QUERY, Tier.READ_ONLY), queue)
        await wait_for_view(client, run_id, _status(RunStatus.READY))
        await _cancel(client, run_id)
        await wait_for_view(client, run_id, _status(RunStatus.CANCELLED))
        return run_id

    async def failed_automation_off() -> str:
        with open_store(url, anchor=ANCHOR) as store:
            store.set_policy(AutomationPolicy(mode=AutomationMode.OFF), _alice())
        run_id = await _start(client, _input(SLOW_QUERY, None, automatic=True), queue)
        await wait_for_view(client, run_id, _status(RunStatus.FAILED))
        with open_store(url, anchor=ANCHOR) as store:
            store.set_policy(AutomationPolicy(), _alice())
        return run_id

    async def with_selection(selection: ModelSelection, body: Callable[[], Awaitable[str]]) -> str:
        with open_store(url, anchor=ANCHOR) as store:
            store.select_models(selection, _alice())
        try:
            return await body()
        finally:
            with open_store(url, anchor=ANCHOR) as store:
                store.select_models(ModelSelection(primary="replay:demo"), _alice())

    async def cancelled_while_running() -> str:
        async def body() -> str:
            run_id = await _start(client, _input(SLOW_QUERY, Tier.READ_ONLY, enqueue=True), queue)
            await wait_for_view(client, run_id, _status(RunStatus.RUNNING))
            await _cancel(client, run_id)
            await wait_for_view(client, run_id, _status(RunStatus.CANCELLED), timeout=30)
            return run_id

        return await with_selection(ModelSelection(primary="slow:demo"), body)

    async def failed_output_schema() -> str:
        async def body() -> str:
            run_id = await _start(client, _input(SLOW_QUERY, Tier.READ_ONLY, enqueue=True), queue)
            await wait_for_view(client, run_id, _status(RunStatus.FAILED), timeout=30)
            return run_id

        return await with_selection(ModelSelection(primary="notjson:demo"), body)

    async def accepted_after_fallback() -> str:
        async def body() -> str:
            run_id = await _start(client, _input(SLOW_QUERY, Tier.READ_ONLY, enqueue=True), queue)
            await wait_for_view(client, run_id, _status(RunStatus.AWAITING_DECISION), timeout=30)
            await decide_run(client, run_id, "alice", DecisionOutcome.ACCEPTED, "", _proof(run_id, "decide"))
            await wait_for_view(client, run_id, _status(RunStatus.ACCEPTED))
            return run_id

        selection = ModelSelection(
            primary="quota:demo", fallbacks=["replay:demo"], fallback_mode=FallbackMode.ORDERED
        )
        return await with_selection(selection, body)

    async def accepted_after_retry() -> str:
        async def body() -> str:
            run_id = await _start(client, _input(SLOW_QUERY, Tier.READ_ONLY, enqueue=True), queue)
            await wait_for_view(client, run_id, _status(RunStatus.AWAITING_DECISION), timeout=30)
            await decide_run(client, run_id, "alice", DecisionOutcome.ACCEPTED, "", _proof(run_id, "decide"))
            await wait_for_view(client, run_id, _status(RunStatus.ACCEPTED))
            return run_id

        return await with_selection(ModelSelection(primary="flaky:demo"), body)

    async def accepted_under_ceiling() -> str:
        """A registered model on a loopback endpoint: each call holds a lease of its ceiling."""
        recordings = json.loads((replay._dir / "demo.json").read_text(encoding="utf-8"))["recordings"]
        answers = {
            (entry["kind"], entry["profile"]): json.dumps(entry["response"])
            for entry in recordings
            if entry["title"] == SLOW_QUERY.title
        }
        with running_wire_server() as wire, _key_in_environment():
            wire.script(
                Scripted(200, openai_completion(answers[("analysis", "database-optimizer")])),
                Scripted(200, openai_completion(answers[("review", "backend-architect")])),
            )
            with open_store(url, anchor=ANCHOR) as store:
                registration = ModelRegistration(
                    id="openai:recorded", base_url=wire.base_url, api_key_env=KEY_ENV, ceiling=2
                )
                store.register_model(registration, _alice())

            async def body() -> str:
                run_id = await _start(client, _input(SLOW_QUERY, Tier.READ_ONLY, enqueue=True), queue)
                await wait_for_view(client, run_id, _status(RunStatus.AWAITING_DECISION), timeout=30)
                await decide_run(
                    client, run_id, "alice", DecisionOutcome.ACCEPTED, "", _proof(run_id, "decide")
                )
                await wait_for_view(client, run_id, _status(RunStatus.ACCEPTED))
                return run_id

            return await with_selection(ModelSelection(primary="openai:recorded"), body)

    async def awaiting_approval() -> tuple[str, str]:
        run_id = await _start(client, _input(SLOW_QUERY, Tier.WORKTREE), queue)
        view = await wait_for_view(client, run_id, _status(RunStatus.AWAITING_APPROVAL))
        assert view.contract_sha256 is not None, view.error
        return run_id, view.contract_sha256

    async def approved_cancelled() -> str:
        run_id, digest = await awaiting_approval()
        proof = _proof(run_id, "approve", digest=digest)
        await approve_run(client, run_id, "alice", digest, proof)
        await _cancel(client, run_id, "approved, not executed")
        await wait_for_view(client, run_id, _status(RunStatus.CANCELLED))
        return run_id

    async def approval_refused_then_approved() -> str:
        run_id, digest = await awaiting_approval()
        # Each refusal reaches the handler and is recorded: a stale proof, an unregistered actor,
        # and that actor's proof sent again (a replay).
        stale = _proof(
            run_id, "approve", digest=digest, issued_at=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=20)
        )
        refused = await _approve_attempt(client, run_id, digest, stale)
        assert refused.code == "proof_expired", refused
        mallory = _proof(run_id, "approve", actor="mallory", digest=digest)
        refused = await _approve_attempt(client, run_id, digest, mallory, actor="mallory")
        assert refused.code == "unknown_actor", refused
        refused = await _approve_attempt(client, run_id, digest, mallory, actor="mallory")
        assert refused.code == "proof_replayed", refused
        await approve_run(client, run_id, "alice", digest, _proof(run_id, "approve", digest=digest))
        await _cancel(client, run_id)
        await wait_for_view(client, run_id, _status(RunStatus.CANCELLED))
        return run_id

    async def executed(model: str, settled: RunStatus) -> str:
        """A worktree run approved, then executed with ``model`` writing its patch."""

        async def body() -> str:
            run_id, digest = await awaiting_approval()
            await approve_run(client, run_id, "alice", digest, _proof(run_id, "approve", digest=digest))
            # Refused in the handler (an unregistered actor), so it is recorded; then executed.
            with contextlib.suppress(NotFound):
                mallory = _proof(run_id, "execute", actor="mallory", digest=digest)
                await execute_run(client, run_id, "mallory", mallory)
            await execute_run(client, run_id, "alice", _proof(run_id, "execute", digest=digest))
            await wait_for_view(client, run_id, _status(settled), timeout=60)
            return run_id

        return await with_selection(ModelSelection(primary=model), body)

    async def executed_accepted() -> str:
        run_id = await executed("patching:demo", RunStatus.AWAITING_DECISION)
        await decide_run(client, run_id, "alice", DecisionOutcome.ACCEPTED, "", _proof(run_id, "decide"))
        await wait_for_view(client, run_id, _status(RunStatus.ACCEPTED))
        return run_id

    async def executed_failed_closed() -> str:
        run_id = await executed("stalepatch:demo", RunStatus.FAILED)
        view = await wait_for_view(client, run_id, _status(RunStatus.FAILED))
        assert view.error is not None and view.error.type == "patch_does_not_apply", view.error
        return run_id

    async def worktree_pruned() -> str:
        """A worktree run executed and accepted, then its worktree pruned (the ``WorktreePrune``
        workflow's history is the recording; its id is ``prune:<run>``)."""
        run_id = await executed_accepted()
        request = PruneRequest(run_id=run_id, actor="alice", proof=_proof(run_id, PRUNE_ACTION))
        handle = await client.start_workflow(
            "WorktreePrune", request, id=prune_workflow_id(run_id), task_queue=queue, result_type=PruneResult
        )
        result = await handle.result()
        assert result.pruned, result
        return handle.id

    async def failed_create_unauthorised() -> str:
        run_id = await _start(client, _input(SLOW_QUERY, Tier.READ_ONLY, enqueue=True, signed=False), queue)
        view = await wait_for_view(client, run_id, _status(RunStatus.FAILED))
        assert view.error is not None and view.error.type == "proof_missing", view.error
        return run_id

    paths = [
        ("recommended", recommended),
        ("accepted", accepted),
        ("rejected", rejected),
        ("cancelled_ready", cancelled_ready),
        ("failed_automation_off", failed_automation_off),
        ("cancelled_while_running", cancelled_while_running),
        ("failed_output_schema", failed_output_schema),
        ("accepted_after_fallback", accepted_after_fallback),
        ("accepted_after_retry", accepted_after_retry),
        ("accepted_under_ceiling", accepted_under_ceiling),
        ("approved_cancelled", approved_cancelled),
        ("approval_refused_then_approved", approval_refused_then_approved),
        ("failed_create_unauthorised", failed_create_unauthorised),
        ("executed_accepted", executed_accepted),
        ("executed_failed_closed", executed_failed_closed),
        ("worktree_pruned", worktree_pruned),
    ]
    async with (
        build_worker(client, task_queue=queue, config=config, providers=providers),
        build_host_worker(client, task_queue=queue, config=config),
    ):
        for name, path in paths:
            await _save(client, name, await path())
        # The ceiling's own history (it keeps running; a running history replays as far as it goes).
        ceiling = client.get_workflow_handle(ceiling_workflow_id(queue, "openai:recorded"))
        history = await ceiling.fetch_history()
        (HERE / "accepted_under_ceiling.ceiling.json").write_text(history.to_json(), encoding="utf-8")
        _note_id("accepted_under_ceiling.ceiling", ceiling.id)
        await ceiling.terminate("recording finished")

    # The budget path needs a short budget: a second worker configuration on its own queue.
    expired_queue = "record-histories-expired"
    short = ActivityConfig(
        database_url=url,
        read_only_budget_seconds=1,
        approval_window_seconds=1,
        recordings_dir=replay._dir,
        action_token=TOKEN,
    )
    async with build_worker(client, task_queue=expired_queue, config=short, providers=providers):

        async def expired() -> str:
            run_id = await _start(client, _input(SLOW_QUERY, Tier.READ_ONLY, enqueue=True), expired_queue)
            await wait_for_view(client, run_id, _status(RunStatus.EXPIRED), timeout=30)
            return run_id

        await _save(client, "expired", await with_selection(ModelSelection(primary="slow:demo"), expired))

        async def approval_expired() -> str:
            run_id = await _start(client, _input(SLOW_QUERY, Tier.WORKTREE), expired_queue)
            await wait_for_view(client, run_id, _status(RunStatus.EXPIRED), timeout=30)
            return run_id

        await _save(client, "approval_expired", await approval_expired())


def main() -> None:
    WORKFLOW_IDS.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        with DevServer(
            state_dir=state,
            db_filename=None,
            port=free_port(),
            headless=True,
            search_attributes=SEARCH_ATTRIBUTES,
        ) as server:
            asyncio.run(record(server, state))
    names = sorted(p.name for p in HERE.glob("*.json"))
    print(json.dumps({"histories": names}, indent=1))


if __name__ == "__main__":
    main()
