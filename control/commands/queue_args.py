"""Arguments and options of the ``queue`` commands, and their checks (each refusal is exit 2)."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Annotated

import typer

from contracts.errors import InvalidInput

if TYPE_CHECKING:
    from contracts.queue_items import QueueStatus

KeyArgument = Annotated[str, typer.Argument(metavar="KEY", help="Item key (ORD-12, or Q-3 for a proposal).")]
InputJson = Annotated[
    str, typer.Option("--input-json", help="The item as JSON, or @FILE to read it from a file.")
]
SinceOption = Annotated[
    str | None, typer.Option("--since", help="Only what changed at or after this ISO 8601 time (with Z).")
]


def parse_since(value: str | None) -> dt.datetime | None:
    """``--since`` as an aware UTC time; :class:`InvalidInput` ``invalid_since`` (exit 2)."""
    if value is None:
        return None
    try:
        at = dt.datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput("invalid_since", f"--since {value!r} is not an ISO 8601 time") from None
    if at.tzinfo is None:
        raise InvalidInput("invalid_since", f"--since {value!r} needs a time zone (e.g. Z for UTC)")
    return at.astimezone(dt.UTC)


def parse_status(value: str | None) -> QueueStatus | None:
    """``--status`` as a :class:`QueueStatus`; :class:`InvalidInput` ``invalid_status`` (exit 2)."""
    from contracts.queue_items import QueueStatus

    if value is None:
        return None
    try:
        return QueueStatus(value)
    except ValueError:
        allowed = ", ".join(status.value for status in QueueStatus)
        raise InvalidInput("invalid_status", f"unknown status {value!r}; use one of: {allowed}") from None


def check_key(key: str) -> str:
    """``key`` when it is an item key; :class:`InvalidInput` ``invalid_key`` (exit 2)."""
    from contracts.queue_items import ITEM_KEY_PATTERN

    if ITEM_KEY_PATTERN.fullmatch(key) is None:
        raise InvalidInput("invalid_key", f"item key {key!r} must be a series and a number, such as ORD-12")
    return key
