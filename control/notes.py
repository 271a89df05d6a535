"""Notes and reasons a person writes into an audit trail or an item's events — ``--note`` and
``--reason`` on the command line, a note or reason typed into Mission Control's forms — held to one
rule from every surface (docs/architecture.md "Operator contract")."""

from __future__ import annotations

from typing import Final

from contracts.errors import InvalidInput

MAX_NOTE_CHARS: Final = 2000
"""The longest note or reason a form takes (the CLI's options give their own limits)."""


def check_note(value: str, *, option: str, code: str, limit: int) -> str:
    """``value`` of a free-text option kept in an audit trail or an item's events: at most ``limit``
    characters (else :class:`InvalidInput` ``<code>_too_long``) and text as the operator contract
    allows it — not blank when given, line feeds and tabs, no other control, format or separator
    character (else ``invalid_<code>``, naming the character and where it is)."""
    from contracts.text_rules import check_multiline

    if len(value) > limit:
        raise InvalidInput(f"{code}_too_long", f"{option} is {len(value)} characters; the limit is {limit}")
    if value and not value.strip():
        raise InvalidInput(f"invalid_{code}", f"{option} is blank: write why, or leave {option} out")
    try:
        return check_multiline(value, option)
    except ValueError as error:
        raise InvalidInput(f"invalid_{code}", str(error)) from None


def form_note(text: str, *, code: str = "note", limit: int = MAX_NOTE_CHARS) -> str:
    """A note (or, with ``code="reason"``, a reason) from a form: its line breaks as a form sends
    them (CR LF) written as line feeds, then held to :func:`check_note`."""
    return check_note(text.replace("\r\n", "\n"), option=f"the {code}", code=code, limit=limit)
