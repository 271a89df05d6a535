"""The goal queue's archive through the CLI, against a real dev server, worker and store
(docs/architecture.md "Archive"): after the queue continues as new, ``queue list`` counts what it
archived, ``queue show`` reads an archived item from the store, ``queue archived`` lists them, and
moving one is refused ``item_archived``."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import uuid
from collections.abc import Iterator

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from contracts.queue_items import QueueItem, QueueStatus
from contracts.queue_messages import QueueState, queue_workflow_id
from contracts.temporal_names import WorkflowType
from infra.devserver import DevServer
from tests.control.cli_harness import Cli, running_worker
from tests.workflows.queue_harness import items_in_every_status


@pytest.fixture(scope="module")
def archived(
    temporal_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Cli, QueueItem, QueueItem]]:
    """A CLI, its worker, and a queue that archived its done and rejected items (ended 40 days ago)."""
    root = tmp_path_factory.mktemp("cli-queue-archive")
    queue = f"cli-queue-archive-{uuid.uuid4().hex}"
    cli = Cli.isolated(
        root, SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address, SPECIALISTS_TASK_QUEUE=queue
    )
    cli.call("actors", "register", "alice", "--name", "Alice", "--json").ok()
    items, allocator = items_in_every_status(dt.datetime.now(dt.UTC) - dt.timedelta(days=40))
    by_status = {item.status: item for item in items}

    async def start() -> None:
        client = await Client.connect(temporal_dev_server.address, data_converter=pydantic_data_converter)
        await client.start_workflow(
            WorkflowType.WORK_QUEUE,
            QueueState(items=items, allocator=allocator, continue_as_new_after_events=20, poll_seconds=3600),
            id=queue_workflow_id(queue),
            task_queue=queue,
            execution_timeout=dt.timedelta(minutes=5),
        )

    with running_worker(cli.env, root / "worker.log"):
        asyncio.run(start())
        for index in range(20):
            if cli.call("queue", "list", "--json").ok()["archived_count"]:
                break
            add = (
                "queue",
                "add",
                "--input-json",
                json.dumps({"title": f"filler {index}"}),
                "--actor",
                "alice",
            )
            cli.call(*add, "--json").ok()
        yield cli, by_status[QueueStatus.DONE], by_status[QueueStatus.REJECTED]


def test_list_counts_the_archived_items_and_no_longer_holds_them(
    archived: tuple[Cli, QueueItem, QueueItem],
) -> None:
    cli, done, rejected = archived
    listed = cli.call("queue", "list", "--json").ok()
    assert listed["archived_count"] == 2
    assert listed["counts"]["done"] == 0 and listed["counts"]["rejected"] == 0
    assert {done.key, rejected.key}.isdisjoint(row["key"] for row in listed["items"])
    human = cli.call("queue", "list")
    assert human.exit_code == 0 and "archived: 2" in human.stdout


def test_show_reads_an_archived_item_from_the_store(archived: tuple[Cli, QueueItem, QueueItem]) -> None:
    cli, done, _ = archived
    shown = cli.call("queue", "show", done.key, "--json").ok()
    assert QueueItem.model_validate(shown["item"]) == done
    assert shown["attention"] is None and shown["archived"]["archived_at"].endswith("Z")
    human = cli.call("queue", "show", done.key)
    assert human.exit_code == 0 and "read from the archive" in human.stdout and done.title in human.stdout


def test_archived_lists_them_newest_first_with_the_total(archived: tuple[Cli, QueueItem, QueueItem]) -> None:
    cli, done, rejected = archived
    listed = cli.call("queue", "archived", "--json").ok()
    assert listed["total"] == 2
    assert {row["key"] for row in listed["items"]} == {done.key, rejected.key}
    assert cli.call("queue", "archived", "--limit", "1", "--json").ok()["total"] == 2
    human = cli.call("queue", "archived")
    assert human.exit_code == 0 and rejected.title in human.stdout
    cli.call("queue", "archived", "--limit", "0", "--json").error(2, "invalid_limit")
    # A limit past any the database holds is refused too, not an integer overflow.
    huge = cli.call("queue", "archived", "--limit", "99999999999999999999999", "--json")
    assert "limit must be 1 to 100000" in huge.error(2, "invalid_limit")


@pytest.mark.parametrize(
    "command",
    [
        ("reopen", "--reason", "again"),
        ("dispatch",),
        ("done",),
        ("ship",),
        ("spec",),
        ("approve",),
    ],
)
def test_acting_on_an_archived_item_is_refused_item_archived(
    archived: tuple[Cli, QueueItem, QueueItem], command: tuple[str, ...]
) -> None:
    cli, done, _ = archived
    refused = cli.call("queue", command[0], done.key, *command[1:], "--actor", "alice", "--json")
    assert refused.exit_code == 4, str(refused)
    error = refused.json()["error"]
    assert (error["code"], error["key"], error["status"]) == ("item_archived", done.key, "done")
    assert f"queue show {done.key}" in error["message"] and error["archived_at"].endswith("Z")
