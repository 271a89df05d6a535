"""Approvals of worktree and pr_ready runs, and the action token's proofs (docs/architecture.md "Run
lifecycle", "Temporal conventions", "Worktree execution").

Real dev server, real SQLite store, a real git repository in ``tmp_path`` allow-listed as the operator
does it (checked with ``runtime.git_repository``, kept by the store). A worktree or pr_ready run
freezes the commit its repository's branch points at, waits in ``awaiting_approval`` and is approved
only for exactly its contract digest, by a registered actor with a fresh proof of the deployment's
action token that the run has not seen before. Validator refusals (state, digest) never reach history;
every other refusal is an ``action_refused`` audit event that changes nothing else. The waits survive
a killed worker, a restarted server and an approval sent while no worker runs; the token itself is
found nowhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import os
import shutil
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from contracts.constants import DEFAULT_NAMESPACE
from contracts.enums import AutomationMode, Tier
from contracts.errors import ErrorType, NotFound, Refused
from contracts.hashing import canonical_sha256
from contracts.identity import ActorKey
from contracts.proofs import ActionProof
from contracts.runs import (
    ActionResult,
    ApproveRequest,
    CancelRequest,
    DecisionOutcome,
    RunStatus,
    RunView,
)
from control.runs import create_run, get_view
from infra.devserver import DevServer, free_port
from tests.identity import key_of, signer
from tests.store.git_repository import git, make_working_tree, resolve_base_commit
from tests.workflows.harness import (
    ACTION_TOKEN,
    ACTOR,
    SLOW_QUERY,
    Bench,
    audit_kinds,
    bench,
    events,
    example,
    no_pending_activities,
    proof,
    register_actor,
    run_input,
    token_proof,
    transitions,
    until,
    within,
    worker_process,
)
from worker import build_worker

ALIAS = "orders-service"  # the repo_alias of the slow-query example
WRONG_KEY = ActorKey.generate()
"""A key no actor holds."""
ACCEPTED_UPDATE = "workflow_execution_update_accepted_event_attributes"
SCHEDULED_ACTIVITY = "activity_task_scheduled_event_attributes"


# ------------------------------------------------------------------------------------------ helpers


@contextlib.asynccontextmanager
async def approvals_bench(
    client: Client, task_queue: str, tmp_path: Path, **kwargs: Any
) -> AsyncIterator[tuple[Bench, Path]]:
    """A bench whose store allow-lists a fresh git working tree (branch ``main``) as ``ALIAS``."""
    tree = make_working_tree(tmp_path / ALIAS)
    async with bench(client, task_queue, tmp_path, **kwargs) as b:
        b.add_repository(ALIAS, tree, "main")
        yield b, tree


def head(tree: Path) -> str:
    """The commit branch ``main`` points at."""
    return git(tree, "rev-parse", "refs/heads/main")


def move_branch(tree: Path) -> str:
    """Commit once more on ``main``; returns the new commit."""
    with (tree / "CHANGELOG.md").open("a") as changelog:
        changelog.write("another change\n")
    git(tree, "add", ".")
    git(tree, "commit", "--quiet", "--no-gpg-sign", "-m", "moved on")
    return head(tree)


async def awaiting_approval(b: Bench, tier: Tier = Tier.WORKTREE) -> RunView:
    """Create a run of ``tier`` for the slow-query example; it settles awaiting approval."""
    view = await b.create(SLOW_QUERY, tier=tier)
    assert view.status is RunStatus.AWAITING_APPROVAL, view.error
    assert view.contract_sha256 is not None
    return view


async def send_approve(
    client: Client, run_id: str, digest: str, signature: ActionProof | None, actor: str = ACTOR
) -> ActionResult:
    """The ``approve`` update as it reaches the workflow (no client-side mapping of refusals)."""
    handle = client.get_workflow_handle(run_id)
    request = ApproveRequest(actor=actor, contract_sha256=digest, proof=signature)
    result: ActionResult = await handle.execute_update("approve", request, result_type=ActionResult)
    return result


async def validator_refusal(client: Client, run_id: str, digest: str) -> str:
    """Send a valid-looking approval that the validator must refuse; returns the refusal type."""
    with pytest.raises(WorkflowUpdateFailedError) as raised:
        await send_approve(client, run_id, digest, proof(run_id, "approve", digest=digest))
    cause = raised.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type is not None
    return cause.type


async def accepted_updates(client: Client, run_id: str) -> int:
    """How many updates the run's history accepted (a validator refusal never appears)."""
    history = await client.get_workflow_handle(run_id).fetch_history()
    return sum(1 for event in history.events if event.HasField(ACCEPTED_UPDATE))


async def scheduled_activities(client: Client, run_id: str) -> list[str]:
    history = await client.get_workflow_handle(run_id).fetch_history()
    return [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
        if event.HasField(SCHEDULED_ACTIVITY)
    ]


def refusals(view: RunView) -> list[tuple[str | None, str, str]]:
    """(actor, action, code) of every ``action_refused`` event, in order."""
    return [(e.actor, e.data["action"], e.data["code"]) for e in view.audit if e.kind == "action_refused"]


# ------------------------------------------------------------------------------ capture and waiting


@pytest.mark.parametrize("tier", [Tier.WORKTREE, Tier.PR_READY])
@within(40)
async def test_worktree_tier_run_freezes_base_commit_awaits_approval_then_stays_approved_until_cancelled(
    temporal_client: Client, task_queue: str, tmp_path: Path, tier: Tier
) -> None:
    async with approvals_bench(temporal_client, task_queue, tmp_path) as (b, tree), b.worker():
        base = head(tree)
        view = await awaiting_approval(b, tier)
        run_id, digest = view.run_id, view.contract_sha256
        assert digest is not None and view.contract is not None
        contract = view.contract
        assert (contract.tier, contract.repo_alias, contract.base_commit) == (tier, ALIAS, base)
        assert contract.budgets.approval_window_seconds == 7 * 24 * 3600
        assert digest == canonical_sha256(contract.model_dump(mode="json"))
        assert transitions(view) == [("routing", "awaiting_approval")]
        (captured,) = events(view, "contract_captured")
        assert captured["contract_sha256"] == digest and captured["tier"] == tier.value
        assert await b.projected(run_id, "awaiting_approval")

        # Moving the branch afterwards changes nothing: the contract froze the commit.
        moved = move_branch(tree)
        assert moved != base
        await asyncio.sleep(0.5)
        shown = await get_view(temporal_client, run_id)
        assert shown.status is RunStatus.AWAITING_APPROVAL
        assert (shown.contract, shown.contract_sha256) == (contract, digest)
        assert "model_job_started" not in audit_kinds(shown)

        query = f'WorkflowId="{run_id}" AND SpecialistStatus="awaiting_approval" AND RepoAlias="{ALIAS}"'

        async def listed() -> bool:
            return [wf.id async for wf in temporal_client.list_workflows(query)] == [run_id]

        assert await until(listed)

        view = await b.approve(run_id, digest)
        assert view.status is RunStatus.APPROVED
        assert view.approval is not None
        assert (view.approval.actor, view.approval.contract_sha256) == (ACTOR, digest)
        (approved,) = [e for e in view.audit if e.kind == "approved"]
        assert approved.actor == ACTOR and approved.data == {"contract_sha256": digest}
        assert view.contract is not None and view.contract.base_commit == base
        assert await b.projected(run_id, "approved")

        # Execution is not offered yet: the approved run waits, and nothing runs.
        await asyncio.sleep(0.5)
        view = await get_view(temporal_client, run_id)
        assert view.status is RunStatus.APPROVED and "model_job_started" not in audit_kinds(view)

        await b.cancel(run_id, "not executing today")
        view = await b.terminal(run_id)
    assert view.status is RunStatus.CANCELLED
    assert transitions(view) == [
        ("routing", "awaiting_approval"),
        ("awaiting_approval", "approved"),
        ("approved", "cancelled"),
    ]
    assert [k for k in audit_kinds(view) if k != "status_changed"] == [
        "run_created",
        "contract_captured",
        "approved",
        "cancel_requested",
    ]
    assert await b.projected(run_id, "cancelled")
    assert [e.kind for e in b.store.run_events(run_id)] == audit_kinds(view)


@within(30)
async def test_a_run_for_an_unregistered_repository_fails_with_unknown_repository_as_the_pre_check_does(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        view = await b.create(SLOW_QUERY, tier=Tier.WORKTREE)
        view = await b.terminal(view.run_id)
        # The operator's pre-check (what `create` runs before starting a workflow) refuses it too.
        with pytest.raises(NotFound) as refused:
            resolve_base_commit(b.store, ALIAS)
    assert view.status is RunStatus.FAILED
    assert view.error is not None and view.error.type == "unknown_repository"
    assert refused.value.code == "unknown_repository" and refused.value.exit_code == 3
    assert view.contract is None and view.approval is None
    assert events(view, "step_failed") == [
        {"step": "capture_contract", "error_type": "unknown_repository", "message": view.error.message}
    ]
    assert await b.projected(view.run_id, "failed")


@pytest.mark.parametrize("damage", ["deleted", "no_longer_git"])
@within(30)
async def test_a_repository_deleted_or_no_longer_git_fails_the_run_with_repository_unavailable(
    temporal_client: Client, task_queue: str, tmp_path: Path, damage: str
) -> None:
    async with approvals_bench(temporal_client, task_queue, tmp_path) as (b, tree), b.worker():
        shutil.rmtree(tree if damage == "deleted" else tree / ".git")
        view = await b.create(SLOW_QUERY, tier=Tier.PR_READY)
        view = await b.terminal(view.run_id)
    assert view.status is RunStatus.FAILED
    assert view.error is not None and view.error.type == "repository_unavailable"
    assert ALIAS in view.error.message
    assert view.contract is None and "model_job_started" not in audit_kinds(view)


# -------------------------------------------------------------------------------------- refusals


@within(40)
async def test_validator_refusals_stale_digest_and_wrong_state_never_enter_history(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with approvals_bench(temporal_client, task_queue, tmp_path) as (b, _), b.worker():
        view = await awaiting_approval(b)
        run_id, digest = view.run_id, view.contract_sha256
        assert digest is not None

        stale = "0" * 64
        assert await validator_refusal(temporal_client, run_id, stale) == "stale_contract_digest"
        with pytest.raises(Refused) as refused:
            await b.approve(run_id, stale)
        assert refused.value.code == "stale_contract_digest"
        after = await get_view(temporal_client, run_id)
        assert after.status is RunStatus.AWAITING_APPROVAL and after.approval is None
        assert after.audit == view.audit
        assert await accepted_updates(temporal_client, run_id) == 0

        # A run in another state: a read_only run waiting to be enqueued is not awaiting approval.
        ready = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY)
        assert ready.status is RunStatus.READY
        assert await validator_refusal(temporal_client, ready.run_id, digest) == "not_awaiting_approval"
        assert (await get_view(temporal_client, ready.run_id)).audit == ready.audit
        assert await accepted_updates(temporal_client, ready.run_id) == 0

        # An approved run is not awaiting approval either: a second approval never reaches history.
        await b.approve(run_id, digest)
        approved = await get_view(temporal_client, run_id)
        assert await validator_refusal(temporal_client, run_id, digest) == "not_awaiting_approval"
        assert (await get_view(temporal_client, run_id)).audit == approved.audit
        assert await accepted_updates(temporal_client, run_id) == 1


@within(40)
async def test_handler_refusals_are_audited_as_action_refused_and_change_nothing_else(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with approvals_bench(temporal_client, task_queue, tmp_path) as (b, _), b.worker():
        register_actor(b.store, "bob", "Bob Operator")
        register_actor(b.store, "erin", "Erin Operator")
        b.store.deactivate_actor("erin", signer(ACTOR))
        view = await awaiting_approval(b)
        other = await awaiting_approval(b)
        run_id, digest = view.run_id, view.contract_sha256
        assert digest is not None and other.contract_sha256 is not None

        # A proof that approved another run, replayed here (with this run's digest in the request).
        used_elsewhere = proof(other.run_id, "approve", digest=other.contract_sha256)
        accepted = await send_approve(temporal_client, other.run_id, other.contract_sha256, used_elsewhere)
        assert accepted.accepted

        twenty_minutes_ago = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=20)
        attempts: list[tuple[str, str, ActionProof | None, str]] = [
            (
                "unregistered actor",
                "mallory",
                proof(run_id, "approve", actor="mallory", digest=digest),
                "unknown_actor",
            ),
            ("no proof", ACTOR, None, "proof_missing"),
            (
                "a key no actor holds",
                ACTOR,
                proof(run_id, "approve", digest=digest, key=WRONG_KEY),
                "actor_key_unknown",
            ),
            (
                "bob's key, claiming to be alice",
                ACTOR,
                proof(run_id, "approve", digest=digest, key=key_of("bob")),
                "proof_invalid",
            ),
            (
                "alice's key, claiming to be bob",
                "bob",
                proof(run_id, "approve", actor="bob", digest=digest, key=key_of(ACTOR)),
                "proof_invalid",
            ),
            (
                "a proof of the shared action token",
                ACTOR,
                token_proof(run_id, "approve", digest=digest),
                "proof_invalid",
            ),
            (
                "a deactivated actor's own valid signature",
                "erin",
                proof(run_id, "approve", actor="erin", digest=digest),
                "actor_deactivated",
            ),
            ("proof for another run", ACTOR, used_elsewhere, "proof_invalid"),
            ("proof for another digest", ACTOR, proof(run_id, "approve", digest="1" * 64), "proof_invalid"),
            ("proof for another action", ACTOR, proof(run_id, "decide", digest=digest), "proof_invalid"),
            (
                "stale proof",
                ACTOR,
                proof(run_id, "approve", digest=digest, issued_at=twenty_minutes_ago),
                "proof_expired",
            ),
        ]
        expected: list[tuple[str | None, str, str]] = []
        for case, actor, signature, code in attempts:
            result = await send_approve(temporal_client, run_id, digest, signature, actor=actor)
            assert (result.accepted, result.code, result.status) == (
                False,
                code,
                RunStatus.AWAITING_APPROVAL,
            ), case
            expected.append((actor, "approve", code))
            current = await get_view(temporal_client, run_id)
            assert current.status is RunStatus.AWAITING_APPROVAL and current.approval is None, case
            assert refusals(current) == expected, case
            assert (current.contract, current.contract_sha256) == (view.contract, digest), case
            assert "approved" not in audit_kinds(current), case

        # Through the client helper the same refusals are operator errors (unknown actor: exit 3).
        with pytest.raises(NotFound) as not_found:
            await b.approve(run_id, digest, actor="mallory")
        assert not_found.value.code == "unknown_actor"

        # Refusals left no trace on the run: a valid approval still goes through.
        view = await b.approve(run_id, digest)
    assert view.status is RunStatus.APPROVED
    assert [e.data for e in view.audit if e.kind == "approved"] == [{"contract_sha256": digest}]
    assert await b.projected(run_id, "approved")
    assert [e.kind for e in b.store.run_events(run_id)].count("action_refused") == len(attempts) + 1


@within(40)
async def test_a_proof_is_spent_on_first_use_so_sending_it_again_is_refused_as_proof_replayed(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with approvals_bench(temporal_client, task_queue, tmp_path) as (b, _), b.worker():
        view = await awaiting_approval(b)
        run_id, digest = view.run_id, view.contract_sha256
        assert digest is not None

        # dana's proof is refused because she is not registered yet; that attempt spends its nonce.
        dana = proof(run_id, "approve", actor="dana", digest=digest)
        first = await send_approve(temporal_client, run_id, digest, dana, actor="dana")
        assert (first.accepted, first.code) == (False, "unknown_actor")
        register_actor(b.store, "dana", "Dana Operator")

        # The same proof again, now from a registered actor and still fresh: refused as a replay,
        # without asking the authorisation activity.
        before = await scheduled_activities(temporal_client, run_id)
        second = await send_approve(temporal_client, run_id, digest, dana, actor="dana")
        assert (second.accepted, second.code, second.status) == (
            False,
            "proof_replayed",
            RunStatus.AWAITING_APPROVAL,
        )
        assert await scheduled_activities(temporal_client, run_id) == before
        view = await get_view(temporal_client, run_id)
        assert refusals(view) == [("dana", "approve", "unknown_actor"), ("dana", "approve", "proof_replayed")]
        assert view.status is RunStatus.AWAITING_APPROVAL and view.approval is None

        # A fresh proof from dana approves the run.
        fresh = proof(run_id, "approve", actor="dana", digest=digest)
        assert (await send_approve(temporal_client, run_id, digest, fresh, actor="dana")).accepted
        view = await b.wait(run_id, RunStatus.APPROVED)

        # The accepted proof, captured and sent again as a cancel, is a replay too: nothing changes.
        handle = temporal_client.get_workflow_handle(run_id)
        await handle.signal("cancel", CancelRequest(actor="dana", reason="replayed", proof=fresh))

        async def replay_refused() -> bool:
            current = await get_view(temporal_client, run_id)
            return len(refusals(current)) == 3

        assert await until(replay_refused)
        view = await get_view(temporal_client, run_id)
        assert refusals(view)[-1] == ("dana", "cancel", "proof_replayed")
        assert view.status is RunStatus.APPROVED and "cancel_requested" not in audit_kinds(view)

        view = await b.cancel(run_id, "done", actor="dana")
        view = await b.terminal(run_id)
    assert view.status is RunStatus.CANCELLED
    assert view.approval is not None and view.approval.actor == "dana"


@within(40)
async def test_a_worker_without_a_trust_anchor_verifies_nobody_and_refuses_as_trust_root_not_configured(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with approvals_bench(temporal_client, task_queue, tmp_path) as (b, _):
        async with b.worker():
            waiting = await awaiting_approval(b)
        digest = waiting.contract_sha256
        assert digest is not None
        # The same deployment's worker, started with neither the action token nor a pinned root.
        anchorless = dataclasses.replace(b.config, action_token=None, trust_root=None)
        async with build_worker(temporal_client, task_queue=task_queue, config=anchorless):
            result = await send_approve(
                temporal_client, waiting.run_id, digest, proof(waiting.run_id, "approve", digest=digest)
            )
            assert (result.accepted, result.code) == (False, "trust_root_not_configured")
            view = await get_view(temporal_client, waiting.run_id)
            # Nor can it capture a contract: the configuration it would read is not verified.
            created = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY)
    assert view.status is RunStatus.AWAITING_APPROVAL and view.approval is None
    assert refusals(view) == [(ACTOR, "approve", "trust_root_not_configured")]
    assert created.status is RunStatus.FAILED
    assert created.error is not None and created.error.type == "trust_root_not_configured"


@within(40)
async def test_two_approvals_racing_approve_once_and_the_other_is_refused_as_not_awaiting_approval(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with approvals_bench(temporal_client, task_queue, tmp_path) as (b, _), b.worker():
        register_actor(b.store, "bob", "Bob Operator")
        view = await awaiting_approval(b)
        run_id, digest = view.run_id, view.contract_sha256
        assert digest is not None
        outcomes = await asyncio.gather(
            send_approve(temporal_client, run_id, digest, proof(run_id, "approve", digest=digest)),
            send_approve(
                temporal_client,
                run_id,
                digest,
                proof(run_id, "approve", actor="bob", digest=digest),
                actor="bob",
            ),
            return_exceptions=True,
        )
        view = await b.wait(run_id, RunStatus.APPROVED)

    winners = [o for o in outcomes if isinstance(o, ActionResult) and o.accepted]
    losers = [o for o in outcomes if not (isinstance(o, ActionResult) and o.accepted)]
    assert len(winners) == 1 and len(losers) == 1
    (loser,) = losers
    # The loser either reached its handler while the winner was being authorised (an audited
    # refusal) or arrived after the approval (a validator refusal, outside history).
    if isinstance(loser, ActionResult):
        assert (loser.accepted, loser.code) == (False, "not_awaiting_approval")
        assert [code for _, _, code in refusals(view)] == ["not_awaiting_approval"]
    else:
        assert isinstance(loser, WorkflowUpdateFailedError)
        assert isinstance(loser.cause, ApplicationError) and loser.cause.type == "not_awaiting_approval"
        assert refusals(view) == []
    assert len([e for e in view.audit if e.kind == "approved"]) == 1
    assert view.approval is not None and view.approval.contract_sha256 == digest


# ------------------------------------------------------------------------------------------ expiry


@within(30)
async def test_a_run_not_approved_within_its_window_expires_and_a_late_approval_is_refused(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with (
        approvals_bench(temporal_client, task_queue, tmp_path, approval_window_seconds=2) as (b, _),
        b.worker(),
    ):
        view = await awaiting_approval(b)
        run_id, digest = view.run_id, view.contract_sha256
        assert digest is not None and view.contract is not None
        assert view.contract.budgets.approval_window_seconds == 2
        view = await b.terminal(run_id, timeout=15)

        # The run has ended: the server refuses the update before any validator could see it.
        with pytest.raises(RPCError) as ended:
            await send_approve(temporal_client, run_id, digest, proof(run_id, "approve", digest=digest))
        assert ended.value.status == RPCStatusCode.NOT_FOUND
        with pytest.raises(Refused) as refused:
            await b.approve(run_id, digest)
        assert refused.value.code == "run_finished"
        after = await get_view(temporal_client, run_id)
    assert view.status is RunStatus.EXPIRED
    assert view.error is not None and view.error.type == ErrorType.APPROVAL_WINDOW_EXPIRED
    assert events(view, "approval_window_expired") == [{"window_seconds": 2.0}]
    assert transitions(view) == [("routing", "awaiting_approval"), ("awaiting_approval", "expired")]
    assert after.audit == view.audit and after.approval is None
    assert await b.projected(run_id, "expired")


@within(60)
async def test_the_default_seven_day_approval_window_expires_the_run_under_time_skipping(
    time_skipping_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = time_skipping_env.client
    async with approvals_bench(client, "approvals-time-skipping", tmp_path) as (b, _), b.worker():
        view = await awaiting_approval(b)
        run_id, digest = view.run_id, view.contract_sha256
        assert view.contract is not None and digest is not None
        assert view.contract.budgets.approval_window_seconds == 7 * 24 * 3600

        # Six days on, the run still waits.
        await time_skipping_env.sleep(dt.timedelta(days=6))
        assert (await get_view(client, run_id)).status is RunStatus.AWAITING_APPROVAL

        # While the test waits for the result, the test server skips time (the run waits on a
        # timer only: no activity runs and no client waits on an update).
        handle = client.get_workflow_handle(view.run_id, result_type=RunView)
        async with time_skipping_env.time_skipping_unlocked():
            view = await asyncio.wait_for(handle.result(), timeout=45)
        # The run has ended: an approval now is refused by the server, and changes nothing.
        with pytest.raises(RPCError):
            await send_approve(client, run_id, digest, proof(run_id, "approve", digest=digest))
        assert (await get_view(client, run_id)).audit == view.audit
    assert view.status is RunStatus.EXPIRED
    assert view.error is not None and view.error.type == ErrorType.APPROVAL_WINDOW_EXPIRED
    assert events(view, "approval_window_expired") == [{"window_seconds": 7 * 24 * 3600.0}]
    waiting, expired = [e for e in view.audit if e.kind == "status_changed"]
    assert (waiting.data["to"], expired.data["to"]) == ("awaiting_approval", "expired")
    assert expired.at - waiting.at >= dt.timedelta(days=7)
    assert "approved" not in audit_kinds(view)


# ------------------------------------------------------------------------------ protected creation


@pytest.mark.parametrize(
    ("mode", "signature", "code"),
    [
        ("enqueue", "none", "proof_missing"),
        ("enqueue", "unknown_key", "actor_key_unknown"),
        ("enqueue", "another_actors_key", "proof_invalid"),
        ("enqueue", "another_request", "proof_invalid"),
        ("enqueue", "unregistered_actor", "unknown_actor"),
        ("automatic", "none", "proof_missing"),
    ],
)
@within(30)
async def test_a_protected_create_without_a_valid_proof_fails_with_the_refusal_and_nothing_runs(
    temporal_client: Client, task_queue: str, tmp_path: Path, mode: str, signature: str, code: str
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        b.set_policy(AutomationMode.GUARDED, Tier.READ_ONLY)
        register_actor(b.store, "bob", "Bob Operator")
        automatic = mode == "automatic"
        actor = "mallory" if signature == "unregistered_actor" else ACTOR
        inp = run_input(
            example(SLOW_QUERY), enqueue=not automatic, automatic=automatic, actor=actor, signed=False
        )
        forged = {
            "none": None,
            "unknown_key": proof(inp.run_id, "create", digest=inp.request_digest, key=WRONG_KEY),
            "another_actors_key": proof(inp.run_id, "create", digest=inp.request_digest, key=key_of("bob")),
            "another_request": proof(inp.run_id, "create", digest="2" * 64),
            "unregistered_actor": proof(inp.run_id, "create", actor="mallory", digest=inp.request_digest),
        }[signature]
        inp = inp.model_copy(update={"proof": forged})
        b.started.append(inp.run_id)
        view, _ = await create_run(temporal_client, inp, task_queue=task_queue)
        view = await b.terminal(inp.run_id)
        scheduled = await scheduled_activities(temporal_client, inp.run_id)
    assert view.status is RunStatus.FAILED
    assert view.error is not None and view.error.type == code
    assert view.contract is None and view.result is None
    assert audit_kinds(view) == ["run_created", "action_refused", "status_changed"]
    assert refusals(view) == [(actor, "create", code)]
    assert transitions(view) == [("routing", "failed")]
    assert scheduled == ["authorize_action", "project_run"]
    assert await b.projected(inp.run_id, "failed")


@within(30)
async def test_a_protected_create_with_a_valid_proof_is_authorised_then_captured_and_run(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY, enqueue=True)
        view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION)
        scheduled = await scheduled_activities(temporal_client, view.run_id)
    assert scheduled[:2] == ["authorize_action", "capture_contract"]
    assert refusals(view) == []
    assert view.result is not None and view.review is not None


async def _replays(client: Client, run_ids: list[str]) -> None:
    """Each run's history replays on the workflow code as it is (patch ``run-creator-proved``)."""
    from temporalio.worker import Replayer

    from worker import WORKFLOWS, sandbox_runner

    replayer = Replayer(
        workflows=list(WORKFLOWS), data_converter=pydantic_data_converter, workflow_runner=sandbox_runner()
    )
    for run_id in run_ids:
        history = await client.get_workflow_handle(run_id).fetch_history()
        replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert replayed.replay_failure is None, replayed.replay_failure


@pytest.mark.parametrize(
    ("creator", "signature", "code"),
    [
        (ACTOR, "none", "proof_missing"),
        (ACTOR, "another_actors_key", "proof_invalid"),
        ("mallory", "own", "unknown_actor"),
    ],
)
@within(30)
async def test_a_run_that_names_its_creator_without_their_proof_fails_though_creating_it_is_not_protected(
    temporal_client: Client, task_queue: str, tmp_path: Path, creator: str, signature: str, code: str
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        register_actor(b.store, "bob", "Bob Operator")
        inp = run_input(example(SLOW_QUERY), tier=Tier.RECOMMEND, actor=creator, signed=False)
        claimed = {
            "none": None,
            "another_actors_key": proof(inp.run_id, "create", digest=inp.request_digest, key=key_of("bob")),
            "own": proof(inp.run_id, "create", actor=creator, digest=inp.request_digest),
        }[signature]
        inp = inp.model_copy(update={"proof": claimed})
        b.started.append(inp.run_id)
        await create_run(temporal_client, inp, task_queue=task_queue)
        view = await b.terminal(inp.run_id)
        scheduled = await scheduled_activities(temporal_client, inp.run_id)
        await _replays(temporal_client, [inp.run_id])
    assert view.status is RunStatus.FAILED
    assert view.error is not None and view.error.type == code
    assert view.contract is None and view.result is None
    assert refusals(view) == [(creator, "create", code)]
    assert scheduled == ["authorize_action", "project_run"]


@within(30)
async def test_a_run_that_names_no_creator_needs_no_proof_and_one_that_proves_its_creator_runs(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        anonymous = run_input(example(SLOW_QUERY), tier=Tier.RECOMMEND, signed=False)
        anonymous = anonymous.model_copy(update={"created_by": None})
        proved = run_input(example(SLOW_QUERY), tier=Tier.RECOMMEND)
        views = []
        for inp in (anonymous, proved):
            b.started.append(inp.run_id)
            await create_run(temporal_client, inp, task_queue=task_queue)
            views.append(await b.terminal(inp.run_id))
        scheduled = [await scheduled_activities(temporal_client, inp.run_id) for inp in (anonymous, proved)]
        await _replays(temporal_client, [inp.run_id for inp in (anonymous, proved)])
    assert [view.status for view in views] == [RunStatus.RECOMMENDED, RunStatus.RECOMMENDED]
    assert [refusals(view) for view in views] == [[], []]
    assert [view.audit[0].actor for view in views] == [None, ACTOR]
    assert "authorize_action" not in scheduled[0]
    assert scheduled[1][:2] == ["authorize_action", "capture_contract"]


# ------------------------------------------------------------------------------------ crash safety


@within(90)
async def test_a_run_awaiting_approval_survives_a_killed_worker_process_and_is_approved_on_a_new_one(
    temporal_client: Client, temporal_dev_server: DevServer, task_queue: str, tmp_path: Path
) -> None:
    state_dir = tmp_path / "state"
    async with approvals_bench(temporal_client, task_queue, tmp_path) as (b, tree):
        async with worker_process(temporal_dev_server, task_queue, state_dir) as pid:
            view = await awaiting_approval(b)
            run_id, digest = view.run_id, view.contract_sha256
            assert digest is not None
            await no_pending_activities(temporal_client, run_id)
            os.kill(pid, signal.SIGKILL)

        async with worker_process(temporal_dev_server, task_queue, state_dir):
            view = await asyncio.wait_for(b.approve(run_id, digest), timeout=40)
            assert view.status is RunStatus.APPROVED
            await b.cancel(run_id, "after a crash")
            view = await b.terminal(run_id, timeout=30)
    assert view.status is RunStatus.CANCELLED
    assert view.contract is not None and view.contract.base_commit == head(tree)
    assert [e.kind for e in view.audit].count("approved") == 1
    assert [e.kind for e in view.audit].count("contract_captured") == 1
    assert await b.projected(run_id, "cancelled")


@within(90)
async def test_a_run_awaiting_approval_survives_a_dev_server_restart_on_its_database_file(
    task_queue: str, tmp_path: Path
) -> None:
    server_dir = tmp_path / "temporal"
    server = DevServer(
        state_dir=server_dir, db_filename=server_dir / "temporal.db", port=free_port(), headless=True
    )

    async def connect() -> Client:
        return await Client.connect(
            server.address, namespace=DEFAULT_NAMESPACE, data_converter=pydantic_data_converter
        )

    try:
        await asyncio.to_thread(server.start)
        async with approvals_bench(await connect(), task_queue, tmp_path) as (b, _):
            async with b.worker():
                view = await awaiting_approval(b)
                run_id, digest = view.run_id, view.contract_sha256
                assert digest is not None

            await asyncio.to_thread(server.stop)
            await asyncio.to_thread(server.start)
            b.client = await connect()

            async with b.worker():
                shown = await get_view(b.client, run_id)
                assert shown.status is RunStatus.AWAITING_APPROVAL
                assert (shown.contract_sha256, shown.audit) == (digest, view.audit)
                view = await b.approve(run_id, digest)
                assert view.status is RunStatus.APPROVED
                await b.cancel(run_id, "after a restart")
                view = await b.terminal(run_id)
    finally:
        await asyncio.to_thread(server.stop)
    assert view.status is RunStatus.CANCELLED
    assert [e.kind for e in view.audit].count("approved") == 1


@within(60)
async def test_an_approval_sent_while_no_worker_runs_completes_once_a_worker_starts_and_applies_once(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with approvals_bench(temporal_client, task_queue, tmp_path) as (b, _):
        async with b.worker():
            view = await awaiting_approval(b)
            run_id, digest = view.run_id, view.contract_sha256
            assert digest is not None

        pending = asyncio.create_task(
            send_approve(temporal_client, run_id, digest, proof(run_id, "approve", digest=digest))
        )
        await asyncio.sleep(1.0)
        assert not pending.done()

        async with b.worker():
            result = await asyncio.wait_for(pending, timeout=20)
            assert result.accepted and result.status is RunStatus.APPROVED
            view = await b.wait(run_id, RunStatus.APPROVED)
            await b.cancel(run_id)
            view = await b.terminal(run_id)
        scheduled = await scheduled_activities(temporal_client, run_id)
    assert [e.kind for e in view.audit].count("approved") == 1
    assert refusals(view) == []
    assert await accepted_updates(temporal_client, run_id) == 1
    # One authorisation each for the named creator, the approval and the cancel: nothing was
    # applied twice.
    assert scheduled.count("authorize_action") == 3


# ------------------------------------------------------------------------------------ token hygiene


@within(90)
async def test_the_action_token_appears_in_no_history_no_store_file_and_no_worker_log(
    temporal_client: Client, temporal_dev_server: DevServer, task_queue: str, tmp_path: Path
) -> None:
    state_dir = tmp_path / "state"
    log = tmp_path / "worker.log"
    async with approvals_bench(temporal_client, task_queue, tmp_path) as (b, _):
        async with worker_process(temporal_dev_server, task_queue, state_dir, log=log):
            # A read_only run created enqueued and decided; a create refused for a forged proof.
            decided = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY, enqueue=True)
            await b.wait(decided.run_id, RunStatus.AWAITING_DECISION, timeout=30)
            await b.decide(decided.run_id, DecisionOutcome.ACCEPTED, "fine")
            forged = run_input(example(SLOW_QUERY), enqueue=True, signed=False)
            forged = forged.model_copy(
                update={"proof": proof(forged.run_id, "create", digest=forged.request_digest, key=WRONG_KEY)}
            )
            b.started.append(forged.run_id)
            await create_run(temporal_client, forged, task_queue=task_queue)

            # A worktree run: refused approvals, an approval, a cancel.
            view = await awaiting_approval(b)
            run_id, digest = view.run_id, view.contract_sha256
            assert digest is not None
            await send_approve(
                temporal_client, run_id, digest, proof(run_id, "approve", digest=digest, key=key_of("bob"))
            )
            await send_approve(temporal_client, run_id, digest, None)
            await b.approve(run_id, digest)
            await b.cancel(run_id)
            for started in b.started:
                await b.terminal(started, timeout=30)

        histories: list[tuple[str, bytes]] = []
        for started in b.started:
            for workflow_id in (started, f"{started}-analysis", f"{started}-review"):
                with contextlib.suppress(RPCError):
                    history = await temporal_client.get_workflow_handle(workflow_id).fetch_history()
                    # The JSON form carries payloads in base64; the events' wire form carries them raw.
                    raw = b"".join(event.SerializeToString() for event in history.events)
                    histories.append((history.to_json(), raw))

    assert len(histories) == 5  # three runs and the decided run's two model jobs
    token = ACTION_TOKEN.decode()
    # The proofs are in history (that is how the worker checks them); the token is not.
    assert b'"signature"' in histories[0][1]
    assert not [text for text, _ in histories if token in text]
    assert not [raw for _, raw in histories if ACTION_TOKEN in raw]
    store_files = [path for path in state_dir.iterdir() if path.is_file()]
    assert any(path.name == "specialists.db" for path in store_files)
    assert not [path for path in store_files if ACTION_TOKEN in path.read_bytes()]
    logged = log.read_bytes()
    assert b"action_authorised" in logged and b"actor_key_unknown" in logged
    assert ACTION_TOKEN not in logged
