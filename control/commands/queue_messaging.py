"""Talking to the goal queue's workflow for the ``queue`` commands: a client once a worker is seen
polling, the queue's workflow id, item and settings updates, and the queue's view
(docs/architecture.md "Goal queue")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contracts.errors import NotFound
from control.commands.common import client, run_async, task_queue

if TYPE_CHECKING:
    import datetime as dt

    from temporalio.client import Client

    from contracts.queue_items import QueueItem
    from contracts.queue_messages import ItemAnswer, QueueView, SettingsAnswer
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
    """Send an item update; a key the queue no longer knows but the store's archive does is refused
    ``item_archived`` (exit 4), as a key whose tombstone the queue keeps is."""
    from contracts.queue_messages import ItemAnswer
    from control.queue import queue_update

    queue = task_queue()

    async def go() -> ItemAnswer:
        return await queue_update(await worker_client(queue), queue, message, request, ItemAnswer)

    try:
        return run_async(go())
    except NotFound as error:  # a key the queue forgot it archived is refused as archived
        key = getattr(request, "key", None)
        if error.code != "unknown_item" or not isinstance(key, str):
            raise
        found = archived_named(queue_state(key), key)
        if found is None:
            raise
        from contracts.queue_archive import tombstone

        raise tombstone(*found).refusal(key) from None


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
    """The item ``key`` the queue holds (:func:`control.queue.held_in`); a key the queue has forgotten
    it archived is refused ``item_archived`` from the store's archive."""
    from control.queue import held_in

    view = queue_state(key)
    if not view.items and view.archived is None:
        found = archived_named(view, key)
        if found is not None:
            from contracts.queue_archive import tombstone

            raise tombstone(*found).refusal(key)
    return held_in(view, key)


def archived_named(view: QueueView, key: str) -> tuple[QueueItem, dt.datetime] | None:
    """The archived item ``key`` names (its key or a former one) in the store's archive, when the
    queue of ``view`` has forgotten some of its tombstones and holds no item ``key``; else ``None``."""
    from control.commands.common import open_store

    if not view.tombstones_forgotten or view.renamed_to is not None:
        return None
    store = open_store(create=False)
    if store is None:
        return None
    with store:
        return store.archived_queue_item_named(view.workflow_id, key)


def check_item_repository(key: str) -> None:
    """Before ``queue approve``: :func:`control.queue.require_item_repository` with the store."""
    from control.commands.common import open_configuration_store
    from control.queue import require_item_repository

    item = held_item(key)
    with open_configuration_store() as store:
        require_item_repository(store, item)
