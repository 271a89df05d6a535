"""Notes and reasons typed into Mission Control's forms (docs/architecture.md "Mission Control"):
held to the rules the CLI holds ``--note`` and ``--reason`` to, so a person's words reach an audit
trail the same way from either surface."""

from __future__ import annotations

from typing import Final

from contracts.errors import InvalidInput

MAX_NOTE_CHARS: Final = 2000


def form_note(text: str) -> str:
    """A note or reason from a form: its line breaks as a form sends them (CR LF) written as line
    feeds, at most :data:`MAX_NOTE_CHARS` characters (else ``note_too_long``), not blank when given
    and holding line feeds and tabs but no other control, format or separator character (else
    ``invalid_note``)."""
    from contracts.text_rules import check_multiline

    text = text.replace("\r\n", "\n")
    if len(text) > MAX_NOTE_CHARS:
        raise InvalidInput(
            "note_too_long", f"the note is {len(text)} characters; the limit is {MAX_NOTE_CHARS}"
        )
    if text and not text.strip():
        raise InvalidInput("invalid_note", "the note is blank: write why, or leave it empty")
    try:
        return check_multiline(text, "the note")
    except ValueError as error:
        raise InvalidInput("invalid_note", str(error)) from None
