"""How the CLI speaks: one JSON object on stdout with ``--json``, rich tables otherwise.

Errors follow DESIGN.md: ``{"error": {"code", "message"}}`` on stdout with ``--json``, a one-line
message on stderr otherwise; the process exits with the error's exit code.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from contracts.errors import OperatorError


def print_json(data: Any) -> None:
    """Print exactly one JSON object (sorted keys, UTF-8) on stdout."""
    sys.stdout.write(json.dumps(data, sort_keys=True, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def console() -> Console:
    """A rich console on stdout (imported lazily: ``--json`` paths never load rich)."""
    from rich.console import Console

    # Off a terminal (pipes, CI logs) rich would assume 80 columns and fold every table cell.
    width = None if sys.stdout.isatty() else 200
    return Console(highlight=False, soft_wrap=False, width=width)


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
        sys.stderr.write(f"error [{error.code}]: {error.message}\n")
    return error.exit_code


def table(title: str, columns: list[str], rows: list[list[str]]) -> Any:
    """A rich table with the given columns and rows (all cells text)."""
    from rich.table import Table

    result = Table(title=title, title_justify="left")
    for column in columns:
        result.add_column(column)
    for row in rows:
        result.add_row(*row)
    return result
