"""The CLI stays in command groups small enough to read (docs/architecture.md "Layers"): ``control/cli.py``
only assembles the app, and no CLI module is over 400 lines."""

from __future__ import annotations

from pathlib import Path

import pytest

CONTROL = Path(__file__).resolve().parents[2] / "control"
MAX_LINES = 400
MODULES = sorted([CONTROL / "cli.py", *(CONTROL / "commands").glob("*.py")])


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_no_cli_module_is_over_400_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(CONTROL.parent)} has {lines} lines: split its commands"
