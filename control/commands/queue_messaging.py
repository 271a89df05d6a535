"""Talking to the goal queue's workflow for the ``queue`` commands: a client once a worker is seen
polling, the queue's workflow id, item and settings updates, and the queue's view
(docs/architecture.md "Goal queue")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from control.commands.common import client, run_async, task_queue

if TYPE_CHECKING:
    from temporalio.client import Client

    from contracts.queue_items import QueueItem
    from contracts.queue_messages import ItemAnswer, SettingsAnswer
    from contracts.temporal_names import QueueMessage


async def worker_client(queue: str) -> Client:
    """A Temporal client, once a worker is seen polling ``queue``: every queue command needs one to
    answer, so without one it says so at once (exit 5 ``no_worker``) and sends nothing."""
    from control.temporal import require_worker

    temporal = await client()
    await require_worker(temporal, queue)
    return temporal


def queue_id() -> str:
    from contracts.queue_messages import queue_workflow_id

    return queue_workflow_id(task_queue())


def send_item(message: QueueMessage, request: Any) -> ItemAnswer:
    from contracts.queue_messages import ItemAnswer
    from control.queue import queue_update

    queue = task_queue()

    async def go() -> ItemAnswer:
        return await queue_update(await worker_client(queue), queue, message, request, ItemAnswer)

    return run_async(go())


def send_settings(message: QueueMessage, request: Any) -> tuple[SettingsAnswer, Any]:
    from contracts.queue_messages import SettingsAnswer
    from control.queue import queue_update, queue_view

    queue = task_queue()

    async def go() -> tuple[SettingsAnswer, Any]:
        temporal = await worker_client(queue)
        answer = await queue_update(temporal, queue, message, request, SettingsAnswer)
        return answer, await queue_view(temporal, queue)

    return run_async(go())


def queue_state(key: str | None = None) -> Any:
    from control.queue import queue_view

    queue = task_queue()

    async def go() -> Any:
        return await queue_view(await worker_client(queue), queue, key)

    return run_async(go())


def held_item(key: str) -> QueueItem:
    """The item ``key`` the queue holds (:func:`control.queue.held_in`)."""
    from control.queue import held_in

    return held_in(queue_state(key), key)
