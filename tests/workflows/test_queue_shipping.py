"""``queue ship`` and the main-write guard on the shared dev server with a worker, on real git
repositories: a done item shipped by merge (the reviewed patch file's sha256 checked, the actor its
author, nothing pushed), a repeat refused, a repository without a policy refused with the question, a
patch whose sha256 does not match refused, a non-done item refused, and a ``main_write`` event when
someone commits to the base branch while an item is open — none for the ship's own merge."""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from contracts.config import RepositoryConfig
from contracts.errors import Refused
from contracts.execution import PrReadyPatch
from contracts.queue_items import QueueItem, QueueStatus
from contracts.queue_messages import ItemAnswer, QueueAction, QueueState
from contracts.runs import RunView
from contracts.shipping import ShipCode, ShippingFlow, ShippingPolicy, ShipRequest
from contracts.temporal_names import QueueMessage, RunMessage
from control.queue import queue_update
from control.queue_shipping import require_policy, ship
from tests.control.test_show_execution import pr_ready_view
from tests.store.git_repository import git, make_working_tree, register_repository
from tests.workflows.harness import ACTOR, proof, until
from tests.workflows.queue_harness import QueueBench, items_in_every_status, queue_bench

AT = dt.datetime(2026, 12, 2, 9, 0, tzinfo=dt.UTC)


@workflow.defn(name="ShipTestRun")
class AcceptedRun:
    """Stands in for the accepted run: answers ``view`` with the run view it was started with."""

    @workflow.init
    def __init__(self, view: RunView) -> None:
        self._view = view

    @workflow.run
    async def run(self, view: RunView) -> None:
        await workflow.wait_condition(lambda: False)

    @workflow.query(name=RunMessage.VIEW)
    def view(self) -> RunView:
        return self._view


def _repository(tmp_path: Path, policy: ShippingPolicy | None) -> tuple[Path, str, Path, str]:
    tree = make_working_tree(tmp_path / "orders")
    base = git(tree, "rev-parse", "HEAD")
    git(tree, "checkout", "--quiet", "feature")
    (tree / "docs" / "README.md").write_text("docs\nthe reviewed change\n")
    patch = tmp_path / "pr-ready.patch"
    patch.write_bytes(git(tree, "diff", "--binary", "--full-index", base).encode() + b"\n")
    git(tree, "checkout", "--quiet", "--", ".")
    return tree, base, patch, hashlib.sha256(patch.read_bytes()).hexdigest()


def _items(run_id: str) -> dict[QueueStatus, QueueItem]:
    items, _ = items_in_every_status(AT)
    made = {item.status: item for item in items}
    done = made[QueueStatus.DONE]
    runs = [done.runs[-1].model_copy(update={"run_id": run_id})]
    made[QueueStatus.DONE] = done.model_copy(update={"runs": runs})
    return made


async def _start(
    q: QueueBench, tmp_path: Path, policy: ShippingPolicy | None, run_tq: str
) -> tuple[Path, str, QueueItem, dict[QueueStatus, QueueItem]]:
    tree, base, patch, sha256 = _repository(tmp_path, policy)
    register_repository(q.bench.store, "orders", tree, "main", ACTOR, RepositoryConfig(shipping=policy))
    view = pr_ready_view()
    assert view.execution is not None and view.execution.evidence is not None
    evidence = view.execution.evidence.model_copy(update={"base_commit": base})
    pr_patch = PrReadyPatch(sha256=sha256, size_bytes=patch.stat().st_size, path=str(patch))
    run_id = "SOR-" + uuid.uuid4().hex[:16].upper()
    execution = view.execution.model_copy(update={"evidence": evidence, "pr_patch": pr_patch})
    await q.client.start_workflow(
        "ShipTestRun",
        view.model_copy(update={"run_id": run_id, "execution": execution}),
        id=run_id,
        task_queue=run_tq,
        execution_timeout=dt.timedelta(minutes=3),
    )
    made = _items(run_id)
    open_item = made[QueueStatus.APPROVED]
    await q.start(QueueState(items=[made[QueueStatus.DONE], open_item], main_write_check_seconds=0.3))
    return tree, sha256, made[QueueStatus.DONE], made


def _sign(target: str, action: str, digest: str):  # type: ignore[no-untyped-def]
    return proof(target, action, digest=digest)


@pytest.mark.asyncio
async def test_ship_by_merge_once_with_a_main_write_for_others_and_none_for_its_own_merge(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    run_tq = f"{task_queue}-runs"
    async with (
        queue_bench(temporal_client, task_queue, tmp_path) as q,
        Worker(
            temporal_client,
            task_queue=run_tq,
            workflows=[AcceptedRun],
            workflow_runner=UnsandboxedWorkflowRunner(),
        ),
    ):
        policy = ShippingPolicy(flow=ShippingFlow.MERGE, base_branch="main")
        tree, sha256, done, made = await _start(q, tmp_path, policy, run_tq)
        remote = tmp_path / "remote.git"
        git(tmp_path, "init", "--quiet", "--bare", str(remote))
        git(tree, "remote", "add", "origin", str(remote))
        git(tree, "push", "--quiet", "origin", "main")
        pushed = git(remote, "for-each-ref")

        async def heads_held() -> bool:
            return "orders" in (await q.view()).base_heads

        assert await until(heads_held, timeout=15)
        # Someone commits to main while an item referencing the repository is open.
        git(tree, "checkout", "--quiet", "main")
        (tree / "other.txt").write_text("someone else\n")
        git(tree, "add", "other.txt")
        git(tree, "commit", "--quiet", "--no-gpg-sign", "-m", "a direct write")
        written = git(tree, "rev-parse", "HEAD")
        git(tree, "checkout", "--quiet", "feature")

        async def main_written() -> bool:
            return bool((await q.view()).main_writes)

        assert await until(main_written, timeout=15)
        write = (await q.view()).main_writes[0]
        assert (write.repo_alias, write.branch, write.after) == ("orders", "main", written)
        assert write.items == [made[QueueStatus.APPROVED].key]  # the open item named, not the done one
        answer, shipped_sha = await ship(q.client, task_queue, done, ACTOR, _sign)
        assert shipped_sha == sha256
        item = answer.item
        assert item is not None and item.shipped is not None
        assert item.shipped.shipped_by == ACTOR and item.shipped.merged and not item.shipped.fast_forward
        assert item.shipped.branch == f"specialists/{done.key}"
        assert git(tree, "rev-parse", "main") == item.shipped.merge_commit
        assert git(tree, "log", "-1", "--format=%an", item.shipped.commit) == "Alice Operator"
        assert item.events[-1].kind == "shipped"
        assert git(remote, "for-each-ref") == pushed  # nothing pushed
        await __import__("asyncio").sleep(1.0)  # several guard checks after the ship's own merge
        assert len((await q.view()).main_writes) == 1
        with pytest.raises(Refused) as again:
            await ship(q.client, task_queue, item, ACTOR, _sign)
        assert again.value.code == ShipCode.ALREADY_SHIPPED


@pytest.mark.asyncio
async def test_no_policy_a_wrong_sha256_and_a_non_done_item_are_refused(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    run_tq = f"{task_queue}-runs"
    async with (
        queue_bench(temporal_client, task_queue, tmp_path) as q,
        Worker(
            temporal_client,
            task_queue=run_tq,
            workflows=[AcceptedRun],
            workflow_runner=UnsandboxedWorkflowRunner(),
        ),
    ):
        tree, sha256, done, made = await _start(q, tmp_path, None, run_tq)
        with pytest.raises(Refused) as missing:
            require_policy(q.bench.store.get_repository("orders"))
        assert missing.value.code == ShipCode.SHIPPING_POLICY_MISSING
        assert (
            "flow 'branch'" in missing.value.message
            and "specialists repos update orders" in missing.value.message
        )
        # The worker refuses it too, asking the same question; the item records the failure.
        with pytest.raises(Refused) as refused:
            await ship(q.client, task_queue, done, ACTOR, _sign)
        assert refused.value.code == ShipCode.SHIPPING_POLICY_MISSING
        item = await q.item(done.key)
        assert item.shipped is None and item.events[-1].kind == "ship_failed"
        # A sha256 other than the reviewed patch's, with a policy in place.
        q.bench.store.update_repository_config(
            "orders", RepositoryConfig(shipping=ShippingPolicy(flow=ShippingFlow.BRANCH)), _signer()
        )
        request = ShipRequest(actor=ACTOR, key=done.key, run_id=done.runs[-1].run_id, patch_sha256="0" * 64)
        signed = request.model_copy(update={"proof": _sign(done.key, QueueAction.SHIP, request.digest())})
        with pytest.raises(Refused) as mismatch:
            await queue_update(q.client, task_queue, QueueMessage.SHIP, signed, ItemAnswer)
        assert mismatch.value.code == ShipCode.PATCH_MISMATCH
        assert "specialists/" not in git(tree, "branch", "--list")
        # An item that is not done is refused by the queue's validator.
        approved = made[QueueStatus.APPROVED]
        request = ShipRequest(actor=ACTOR, key=approved.key, run_id=done.runs[-1].run_id, patch_sha256=sha256)
        signed = request.model_copy(update={"proof": _sign(approved.key, QueueAction.SHIP, request.digest())})
        with pytest.raises(Refused) as not_done:
            await queue_update(q.client, task_queue, QueueMessage.SHIP, signed, ItemAnswer)
        assert not_done.value.code == ShipCode.NOT_SHIPPABLE


def _signer():  # type: ignore[no-untyped-def]
    from tests.identity import signer

    return signer(ACTOR)


@pytest.mark.asyncio
async def test_a_merge_that_conflicts_fails_on_the_dev_server_and_leaves_the_base_branch_as_it_was(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    run_tq = f"{task_queue}-runs"
    async with (
        queue_bench(temporal_client, task_queue, tmp_path) as q,
        Worker(
            temporal_client,
            task_queue=run_tq,
            workflows=[AcceptedRun],
            workflow_runner=UnsandboxedWorkflowRunner(),
        ),
    ):
        policy = ShippingPolicy(flow=ShippingFlow.MERGE, base_branch="main")
        tree, _sha256, done, _ = await _start(q, tmp_path, policy, run_tq)
        # Someone changes the same lines on main after the run's base commit.
        git(tree, "checkout", "--quiet", "main")
        (tree / "docs" / "README.md").write_text("docs\nsomething else entirely\n")
        git(tree, "commit", "--quiet", "--no-gpg-sign", "-am", "a conflicting write")
        main_before = git(tree, "rev-parse", "main")
        git(tree, "checkout", "--quiet", "feature")
        with pytest.raises(Refused) as conflict:
            await ship(q.client, task_queue, done, ACTOR, _sign)
        assert conflict.value.code == ShipCode.SHIP_CONFLICT
        assert git(tree, "rev-parse", "main") == main_before, "the base branch is never forced"
        # The reviewed change is kept on its own branch for the person to merge by hand.
        assert (
            git(tree, "branch", "--list", f"specialists/{done.key}")
            .strip()
            .endswith(f"specialists/{done.key}")
        )
        item = await q.item(done.key)
        assert item.shipped is None and item.events[-1].kind == "ship_failed"
