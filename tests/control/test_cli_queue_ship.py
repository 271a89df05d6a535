"""``queue ship`` end to end through the CLI (docs/architecture.md "Shipping"): a worktree item of a
repository whose configuration declares ``shipping = { flow = "branch" }`` is dispatched, its run
approved, executed, reviewed and marked done by a person; ``queue ship`` then commits exactly the
reviewed diff on a new local branch of the real repository with the actor as author, once; a
repository without a policy is refused with the question to answer; nothing is pushed."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from infra.devserver import DevServer
from tests.control.cli_harness import Cli, running_worker, wait_until
from tests.control.test_cli_queue import refusal
from tests.store.git_repository import git, make_orders_repository
from tests.workflows.queue_harness import SLOW_QUERY_ITEM


@pytest.fixture(scope="module")
def deployment(temporal_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("cli-queue-ship")
    shipped = make_orders_repository(root / "orders")
    plain = make_orders_repository(root / "plain")
    cli = Cli.isolated(
        root,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"cli-queue-ship-{uuid.uuid4().hex}",
    )
    cli.call("actors", "register", "alice", "--name", "Alice Operator", "--json").ok()
    cli.call("models", "select", "--primary", "replay:demo", "--actor", "alice", "--json").ok()
    policy = root / "shipping.toml"
    policy.write_text('shipping = { flow = "branch" }\n', encoding="utf-8")
    cli.call(
        "repos", "add", "orders-service", str(shipped), "--config", str(policy), "--actor", "alice", "--json"
    ).ok()
    cli.call("repos", "add", "plain-service", str(plain), "--actor", "alice", "--json").ok()
    with running_worker(cli.env, root / "worker.log"):
        yield cli, shipped, plain


def _done_worktree_item(cli: Cli, alias: str) -> str:
    """A worktree item of ``alias`` taken through dispatch, approval, execution and review to done."""
    item = {**SLOW_QUERY_ITEM, "repo_alias": alias, "tier": "worktree"}
    key = cli.call("queue", "add", "--input-json", json.dumps(item), "--actor", "alice", "--json").ok()[
        "item"
    ]["key"]
    cli.call("queue", "approve", key, "--actor", "alice", "--json").ok()
    run_id = cli.call("queue", "dispatch", key, "--actor", "alice", "--json").ok()["run_id"]
    run = wait_until(
        lambda: (shown := cli.call("show", run_id, "--json").ok())["status"] == "awaiting_approval" and shown,
        timeout=30,
    )
    digest = run["contract_sha256"]
    cli.call("approve", run_id, "--contract-sha256", digest, "--actor", "alice", "--json").ok()
    executed = cli.call("execute", run_id, "--actor", "alice", "--wait", "--json").ok()
    assert executed["status"] == "awaiting_decision", executed
    wait_until(
        lambda: cli.call("queue", "show", key, "--json").ok()["item"]["status"] == "human-review", timeout=45
    )
    done = cli.call("queue", "done", key, "--actor", "alice", "--json").ok()
    assert done["item"]["status"] == "done" and done["handover"]["change"] is not None
    return key


def test_a_done_item_is_shipped_once_on_a_new_local_branch_by_the_actor_and_nothing_is_pushed(
    deployment: Any,
) -> None:
    cli, tree, _plain = deployment
    main_before = git(tree, "rev-parse", "main")
    key = _done_worktree_item(cli, "orders-service")
    shipped = cli.call("queue", "ship", key, "--actor", "alice", "--json").ok()
    record = shipped["item"]["shipped"]
    branch = f"specialists/{key}"
    assert (record["shipped_by"], record["branch"], record["merged"]) == ("alice", branch, False)
    assert git(tree, "rev-parse", branch) == record["commit"]
    assert git(tree, "log", "-1", "--format=%an", branch) == "Alice Operator"
    assert git(tree, "rev-parse", f"{branch}^") == main_before, "on the run's base commit"
    # Exactly the reviewed diff: the change git computed for the run, committed as one commit.
    changed = git(tree, "diff", "--name-only", f"{branch}^", branch).split()
    assert changed and all(not path.startswith(".") for path in changed)
    assert git(tree, "rev-parse", "main") == main_before, "a branch flow never moves the base branch"
    assert git(tree, "status", "--porcelain") == "", "the operator's checkout is untouched"
    assert git(tree, "remote") == "", "nothing to push to, and nothing was pushed"
    assert shipped["item"]["events"][-1]["kind"] == "shipped"
    again = refusal(cli.call("queue", "ship", key, "--actor", "alice", "--json"), 4, "already_shipped")
    assert key in again["message"]


def test_a_repository_without_a_shipping_policy_is_refused_with_the_question_to_answer(
    deployment: Any,
) -> None:
    cli, _tree, plain = deployment
    key = _done_worktree_item(cli, "plain-service")
    refused = refusal(
        cli.call("queue", "ship", key, "--actor", "alice", "--json"), 4, "shipping_policy_missing"
    )
    assert "repos update" in refused["message"]
    assert git(plain, "branch", "--list", f"specialists/{key}") == ""
    shown = cli.call("queue", "show", key, "--json").ok()["item"]
    assert shown["shipped"] is None
