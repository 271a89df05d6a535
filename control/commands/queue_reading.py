"""Reading the goal queue: ``specialists queue list | show | events | archived`` (JSON shapes in
:mod:`control.queue_views`; an archived item is read from the store's archive)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from contracts.errors import InvalidInput
from control.commands.common import JsonFlag
from control.commands.queue_args import KeyArgument, SinceOption, check_key, parse_since, parse_status
from control.commands.queue_messaging import queue_state

if TYPE_CHECKING:
    from contracts.queue_items import QueueItem

reading = typer.Typer()
"""The reading commands, added to the ``queue`` group by ``control.commands.queue``."""


@reading.command("list")
def list_command(
    status: Annotated[str | None, typer.Option("--status", help="Only items in this status.")] = None,
    since: SinceOption = None,
    as_json: JsonFlag = False,
) -> None:
    """The items, the count of each status, the fleet line (occupied/slots) and the keys ready to
    dispatch."""
    from control.output import emit
    from control.queue_views import listing_json, render_listing

    wanted = parse_status(status)
    after = parse_since(since)
    data = listing_json(queue_state(), status=wanted, since=after)
    emit(data, as_json, lambda console: render_listing(console, data))


@reading.command("show")
def show_command(key: KeyArgument, as_json: JsonFlag = False) -> None:
    """An item with its scope, spec completeness, runs, review rounds and events."""
    from control.commands.queue_messaging import archived_named
    from control.output import emit
    from control.queue import held_in
    from control.queue_views import attention, iso, item_json, render_item

    check_key(key)
    view = queue_state(key)
    if not view.items and view.archived is not None:
        data, item = _from_archive(view.workflow_id, view.archived.key)
        emit(data, as_json, lambda console: render_item(console, item, archived=data["archived"]))
        return
    forgotten = archived_named(view, key) if not view.items else None
    if forgotten is not None:  # archived long ago: the queue no longer keeps its tombstone
        item, archived_at = forgotten
        data = item_json(item, attention=None, archived={"archived_at": iso(archived_at)})
        emit(data, as_json, lambda console: render_item(console, item, archived=data["archived"]))
        return
    item = held_in(view, key)
    data = item_json(item, attention=attention(item, view.run_status))
    emit(data, as_json, lambda console: render_item(console, item, attention=data["attention"]))


def _from_archive(queue_id: str, key: str) -> tuple[dict[str, Any], QueueItem]:
    """``show``'s JSON of an archived item, read from the store's archive (``"archived"``: when)."""
    from contracts.errors import NotFound
    from control.commands.common import open_store
    from control.queue_views import iso, item_json

    store = open_store(create=False)
    found = None
    if store is not None:
        with store:
            found = store.archived_queue_item(queue_id, key)
    if found is None:
        raise NotFound(
            "archived_item_missing",
            f"the queue archived {key}, but this store's archive has no copy of it: is the CLI reading "
            "the worker's database (SPECIALISTS_DATABASE_URL)?",
        )
    item, archived_at = found
    return item_json(item, attention=None, archived={"archived_at": iso(archived_at)}), item


@reading.command("archived")
def archived_command(
    limit: Annotated[int, typer.Option("--limit", help="At most this many, newest archived first.")] = 50,
    as_json: JsonFlag = False,
) -> None:
    """The items the queue archived (ended and unchanged for a while), newest first, read from the
    store; ``total`` is how many the queue has archived."""
    from contracts.errors import NotFound
    from control.commands.common import open_store
    from control.output import emit
    from control.queue_views import archived_json, render_archived

    if limit < 1:
        raise InvalidInput("invalid_limit", f"--limit must be at least 1, not {limit}")
    view = queue_state()
    store = open_store(create=False)
    if store is None:
        raise NotFound("no_store", "this deployment has no store yet: nothing was archived in it")
    # A copy of an item the queue holds again (its batch was written, then reported failed and put
    # back) is not an archived item.
    held = {item.key for item in view.items}
    with store:
        rows, _ = store.list_archived_queue_items(view.workflow_id, limit=limit + len(held))
    shown = [(item, at) for item, at in rows if item.key not in held][:limit]
    data = archived_json(shown, view.archived_count)
    emit(data, as_json, lambda console: render_archived(console, data))


@reading.command("events")
def events_command(since: SinceOption = None, as_json: JsonFlag = False) -> None:
    """Every item's events and the settings changes, oldest first."""
    from control.output import emit
    from control.queue_views import events_json, render_events

    after = parse_since(since)
    data = events_json(queue_state(), since=after)
    emit(data, as_json, lambda console: render_events(console, data))
