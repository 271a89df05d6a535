"""How the CLI speaks: one JSON object on stdout with ``--json``, rich tables otherwise.

Errors follow docs/architecture.md "Operator contract": ``{"error": {"code", "message"}}`` on stdout with
``--json``, a one-line message on stderr otherwise; the process exits with the error's exit code.

The human view shows text our code did not write — model output, provider error messages, audit
data, work item titles, operator notes. All of it reaches the console through :func:`safe_text`
(every :func:`table` title and cell does), so it can carry neither rich markup nor terminal control
sequences to the operator's screen. ``--json`` output is JSON-escaped already and is left as it is.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from contracts.errors import OperatorError

# C0 controls except tab and newline, DEL, C1 controls, and the Unicode bidi embeddings, overrides and
# isolates (U+202A-U+202E, U+2066-U+2069), which can make a line read differently from what it holds.
_UNSAFE_CHARACTERS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible_controls(value: object) -> str:
    """``str(value)`` with every unsafe character written as its escape (``\\x1b``, ``\\u202e``).

    Unsafe: C0 controls other than newline and tab, DEL, C1 controls, and the bidi embedding,
    override and isolate controls U+202A-U+202E and U+2066-U+2069. The string form of
    :func:`safe_text`, for output that rich does not render (stderr); it leaves rich markup alone.
    """
    return _UNSAFE_CHARACTERS.sub(_visible, str(value))


def safe_text(value: object, style: str = "") -> Text:
    """``value`` as a rich ``Text`` that shows it literally and can act on nothing.

    Contract: printed by rich (alone, as a table cell, or in ``Text.assemble``), the result shows
    ``str(value)`` exactly, with two exceptions made visible rather than passed on:

    - rich markup such as ``[/bold]`` or ``[link=...]`` and ``:emoji:`` codes are shown as written,
      never interpreted (a ``Text`` is never parsed as markup, so a stray closing tag cannot raise
      ``MarkupError``);
    - characters that would act on the terminal instead of being shown — C0 controls other than
      newline and tab, DEL, C1 controls, and the bidi controls U+202A-U+202E and U+2066-U+2069 —
      are replaced by their Python-style escape: ESC becomes the four characters ``\\x1b``, U+202E
      becomes ``\\u202e`` (see :func:`visible_controls`). Newline and tab are kept.

    ``style`` (optional, ours) styles the whole text; style never comes from the value.

    Why a ``Text`` rather than a string escaped with ``rich.markup.escape``: an escaped string still
    has its ``:emoji:`` codes replaced, shows a doubled backslash when it ends in one (escape adds
    one so that markup appended after it stays markup), and is one f-string away from being mixed
    into markup unescaped or escaped twice. A ``Text`` has none of these failure modes.

    Why escapes rather than control pictures such as U+241B SYMBOL FOR ESCAPE: those exist only for
    C0 and DEL, not for C1 or bidi controls, so they cannot show every case in one notation; escapes
    are plain ASCII that every terminal, font and log shows, and they name the exact code point, so
    an operator can tell which character the model or provider actually sent.
    """
    from rich.text import Text

    return Text(visible_controls(value), style=style)


def utc(value: dt.datetime) -> str:
    """``value`` as the operator contract writes every time, in JSON and on screen alike: ISO 8601
    in UTC with ``Z`` (docs/architecture.md "Values")."""
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def print_json(data: Any) -> None:
    """Print exactly one JSON object (sorted keys, UTF-8) on stdout."""
    sys.stdout.write(json.dumps(data, sort_keys=True, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def console() -> Console:
    """A rich console on stdout (imported lazily: ``--json`` paths never load rich).

    When the reader of stdout goes away (``specialists list | head -1``), the console raises
    ``BrokenPipeError`` like any other write, so :func:`control.cli.main` sees the closed pipe and
    ends with ``OUTPUT_CLOSED``; rich's own handling would point stdout at ``/dev/null`` and exit 1,
    which the exit-code table keeps for the unexpected.
    """
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError

    # Off a terminal (pipes, CI logs) rich would assume 80 columns and fold every table cell.
    width = None if sys.stdout.isatty() else 200
    return _Console(highlight=False, soft_wrap=False, width=width)


def emit(data: dict[str, Any], as_json: bool, render: Callable[[Console], None]) -> None:
    """Print ``data`` as JSON, or call ``render`` with a console for the human view."""
    if as_json:
        print_json(data)
    else:
        render(console())


def report_error(error: OperatorError, as_json: bool) -> int:
    """Show ``error`` in the requested form and return its exit code."""
    if as_json:
        print_json(error.to_json())
    else:
        # The message may quote a provider or a model: no control sequences reach the terminal.
        sys.stderr.write(f"error [{error.code}]: {visible_controls(error.message)}\n")
    return error.exit_code


def table(title: str, columns: list[str], rows: list[list[str]]) -> Any:
    """A rich table with the given columns and rows.

    The title and every cell are plain text, shown literally (see :func:`safe_text`): markup in
    them is not interpreted, so a cell may hold any untrusted string as it is. Style, should a view
    want it, belongs on the column (``add_column(style=...)`` on the result), never in cell markup.
    """
    from rich.table import Table

    # ``table.title`` is the style rich gives a ``str`` title; a ``Text`` title must carry it itself.
    result = Table(title=safe_text(title, style="table.title"), title_justify="left")
    for column in columns:
        result.add_column(column)
    for row in rows:
        result.add_row(*(safe_text(cell) for cell in row))
    return result
