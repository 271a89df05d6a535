"""A reader that goes away (``specialists list | head -1``) ends the command quietly with exit code
141 (``OUTPUT_CLOSED``, 128 + SIGPIPE), not 1, which the exit-code table keeps for the unexpected.

Each command runs as a separate process whose stdout is a pipe with its reading end already closed,
so its first write fails exactly as it does behind ``head`` once ``head`` has read its line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import control.cli as cli_module
from control.cli import OUTPUT_CLOSED, main
from tests.control.cli_harness import Cli


def run_with_closed_stdout(cli: Cli, *args: str) -> tuple[int, str]:
    """``python -m control.cli ARGS`` writing to a pipe nobody reads; its exit code and stderr."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "control.cli", *args],
            cwd=cli.cwd,
            env=cli.env,
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    return completed.returncode, completed.stderr


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli.isolated(tmp_path)


def test_a_table_whose_reader_has_gone_ends_with_exit_141_and_says_nothing(cli: Cli) -> None:
    assert run_with_closed_stdout(cli, "catalog") == (OUTPUT_CLOSED, "")


def test_json_whose_reader_has_gone_ends_with_exit_141_and_says_nothing(cli: Cli) -> None:
    assert run_with_closed_stdout(cli, "catalog", "--json") == (OUTPUT_CLOSED, "")


def test_a_json_error_whose_reader_has_gone_ends_with_exit_141(cli: Cli, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    answer = run_with_closed_stdout(cli, "route", "--input-json", f"@{missing}", "--json")
    assert answer == (OUTPUT_CLOSED, "")


def test_an_error_on_stderr_keeps_its_exit_code_when_stdout_is_closed(cli: Cli, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    code, stderr = run_with_closed_stdout(cli, "route", "--input-json", f"@{missing}")
    assert code == 2
    assert stderr.startswith("error [")


def test_an_exit_raised_while_stdout_is_open_goes_on_as_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    def exits(argv: list[str] | None) -> int:
        raise SystemExit(3)

    monkeypatch.setattr(cli_module, "_main", exits)
    read_end, write_end = os.pipe()
    try:
        with open(write_end, "w", closefd=False) as stdout:
            monkeypatch.setattr(sys, "stdout", stdout)
            with pytest.raises(SystemExit) as stopped:
                main([])
    finally:
        os.close(read_end)
        os.close(write_end)
    assert stopped.value.code == 3
