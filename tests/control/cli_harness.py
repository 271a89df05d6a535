"""Running the ``specialists`` CLI in tests, isolated from the user's environment.

``Cli.run`` starts a real process (``python -m control.cli``), so exit codes, stdout and stderr are
exactly what an operator sees. ``Cli.call`` runs ``control.cli.main`` in this process with the same
environment and working directory, for the many small checks where a fresh interpreter only costs
time. ``running_worker`` starts ``python worker.py`` as a process and stops it afterwards.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
WORK_ITEMS = ROOT / "examples" / "work-items"
SLOW_QUERY = WORK_ITEMS / "03-slow-query.json"
PRODUCTION_BREACH = WORK_ITEMS / "01-production-breach.json"

DATABASE_FILENAME = "specialists.db"
SHA256_HEX = r"[0-9a-f]{64}"
RUN_ID = r"SOR-[0-9A-Z]{16}"
ISO_UTC = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"


@dataclasses.dataclass(frozen=True)
class CliResult:
    """What one CLI invocation produced."""

    args: tuple[str, ...]
    exit_code: int
    stdout: str
    stderr: str

    def __str__(self) -> str:
        return (
            f"specialists {' '.join(self.args)} -> exit {self.exit_code}\n"
            f"stdout: {self.stdout!r}\nstderr: {self.stderr!r}"
        )

    def json(self) -> dict[str, Any]:
        """The one JSON object on stdout (fails unless stdout is exactly one JSON object line)."""
        assert self.stdout.endswith("\n") and self.stdout.count("\n") == 1, str(self)
        data = json.loads(self.stdout)
        assert isinstance(data, dict), str(self)
        return data

    def ok(self) -> dict[str, Any]:
        """The JSON object of a successful ``--json`` invocation."""
        assert self.exit_code == 0, str(self)
        return self.json()

    def error(self, exit_code: int, code: str) -> str:
        """Check a ``--json`` failure: the exit code, ``{"error": {"code", "message"}}``; the message."""
        assert self.exit_code == exit_code, str(self)
        data = self.json()
        assert set(data) == {"error"}, str(self)
        assert set(data["error"]) == {"code", "message"}, str(self)
        assert data["error"]["code"] == code, str(self)
        message = data["error"]["message"]
        assert isinstance(message, str) and message, str(self)
        return message


def isolated_environment(state_dir: Path, **extra: str) -> dict[str, str]:
    """This process's environment without any ``SPECIALISTS_*`` variable, with ``state_dir`` set."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("SPECIALISTS_")}
    env["SPECIALISTS_STATE_DIR"] = str(state_dir)
    env.update(extra)
    return env


@dataclasses.dataclass(frozen=True)
class Cli:
    """The CLI bound to a working directory and an environment."""

    cwd: Path
    env: dict[str, str]

    @classmethod
    def isolated(cls, root: Path, **extra: str) -> Cli:
        """Working directory ``root``, state directory ``root/state``, plus ``extra`` variables."""
        return cls(cwd=root, env=isolated_environment(root / "state", **extra))

    @property
    def state_dir(self) -> Path:
        return Path(self.env["SPECIALISTS_STATE_DIR"])

    @property
    def database(self) -> Path:
        return self.state_dir / DATABASE_FILENAME

    def with_env(self, **changes: str) -> Cli:
        return dataclasses.replace(self, env={**self.env, **changes})

    def run(self, *args: str, timeout: float = 60.0) -> CliResult:
        """``python -m control.cli ARGS`` as a separate process."""
        completed = subprocess.run(
            [sys.executable, "-m", "control.cli", *args],
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return CliResult(args, completed.returncode, completed.stdout, completed.stderr)

    def call(self, *args: str) -> CliResult:
        """``control.cli.main(ARGS)`` in this process, with this environment and working directory."""
        from control.cli import main

        stdout, stderr = io.StringIO(), io.StringIO()
        with (
            mock.patch.dict(os.environ, self.env, clear=True),
            contextlib.chdir(self.cwd),
            contextlib.redirect_stdout(stdout),
            contextlib.redirect_stderr(stderr),
        ):
            exit_code = main(list(args))
        return CliResult(args, exit_code, stdout.getvalue(), stderr.getvalue())


def wait_until(check: Callable[[], Any], *, timeout: float = 15.0, interval: float = 0.1) -> Any:
    """Call ``check`` until it returns something truthy; returns that value (fails after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"still false after {timeout}s: {value!r}")
        time.sleep(interval)


@contextlib.contextmanager
def running_worker(env: dict[str, str], log_path: Path, *, timeout: float = 60.0) -> Iterator[None]:
    """``python worker.py`` from the repository root with ``env``, until the block ends.

    Waits for the worker's "polling" line; stops it with SIGTERM (then SIGKILL) in every case.
    """
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "worker.py"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + timeout
        while b"worker polling" not in log_path.read_bytes():
            if process.poll() is not None:
                raise AssertionError(f"worker exited with {process.returncode}: {log_path.read_text()}")
            if time.monotonic() >= deadline:
                raise AssertionError(f"worker not polling after {timeout}s: {log_path.read_text()}")
            time.sleep(0.05)
        yield
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
