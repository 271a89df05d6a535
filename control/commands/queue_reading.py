"""Reading the goal queue: ``specialists queue list | show | events`` (JSON shapes in
:mod:`control.queue_views`)."""

from __future__ import annotations

from typing import Annotated

import typer

from control.commands.common import JsonFlag
from control.commands.queue_args import KeyArgument, SinceOption, check_key, parse_since, parse_status
from control.commands.queue_messaging import queue_state

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
    from contracts.errors import NotFound
    from contracts.queue_messages import UNKNOWN_ITEM
    from control.output import emit
    from control.queue_views import attention, item_json, render_item

    check_key(key)
    view = queue_state(key)
    if not view.items:
        hint = (
            f": it was renamed to {view.renamed_to} at its approval" if view.renamed_to else " in the queue"
        )
        raise NotFound(UNKNOWN_ITEM, f"no item {key}{hint}")
    item = view.items[0]
    data = item_json(item, attention=attention(item, view.run_status))
    emit(data, as_json, lambda console: render_item(console, item, attention=data["attention"]))


@reading.command("events")
def events_command(since: SinceOption = None, as_json: JsonFlag = False) -> None:
    """Every item's events and the settings changes, oldest first."""
    from control.output import emit
    from control.queue_views import events_json, render_events

    after = parse_since(since)
    data = events_json(queue_state(), since=after)
    emit(data, as_json, lambda console: render_events(console, data))
