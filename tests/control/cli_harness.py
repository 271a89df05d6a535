"""Running the ``specialists`` CLI in tests, isolated from the user's environment.

``Cli.run`` starts a real process (``python -m control.cli``), so exit codes, stdout and stderr are
exactly what an operator sees. ``Cli.call`` runs ``control.cli.main`` in this process with the same
environment and working directory, for the many small checks where a fresh interpreter only costs
time. ``Cli.run_reporting_modules`` runs ``control.cli.main`` in a fresh interpreter and reports the
modules it loaded. ``running_worker`` starts ``python -m worker`` as a process and stops it afterwards.

Every environment built here carries the test deployment's action token (:data:`ACTION_TOKEN` in
``SPECIALISTS_ACTION_TOKEN``: it bootstraps the first actor and anchors the CLI's trust) and names
``alice``'s key file, ``<root>/alice.key``, which ``actors register alice`` writes (the default
``./ID.key``), so protected commands work as alice sees them; ``Cli.as_actor`` names another actor's
key file, ``Cli.without_key`` none, and ``Cli.without_token``, ``Cli.with_token`` and
``Cli.with_token_file`` give the token's other cases.
Each ``Cli`` keeps a transcript of every invocation (shared by the variants derived from it), so a
test can check what the CLI ever printed.
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
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
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

TOKEN_ENV = "SPECIALISTS_ACTION_TOKEN"
TOKEN_FILE_ENV = "SPECIALISTS_ACTION_TOKEN_FILE"
KEY_ENV = "SPECIALISTS_ACTOR_KEY"
KEY_FILE_ENV = "SPECIALISTS_ACTOR_KEY_FILE"
ACTION_TOKEN = "test-action-token-7f3c9a1e5b2d"
"""The action token of every test deployment (unless a test chooses another or none)."""


_MODULES_WRAPPER = """
import json, os, sys
from control.cli import main
code = main(sys.argv[2:])
with open(sys.argv[1], "w", encoding="utf-8") as report:
    json.dump(sorted(sys.modules), report)
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)  # as control.cli.entry does after talking to Temporal
"""
"""Runs ``control.cli.main`` on its arguments, then writes the modules the process holds to the file
named first (:meth:`Cli.run_reporting_modules`)."""


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


def isolated_environment(
    state_dir: Path, *, token: str | None = ACTION_TOKEN, key_file: Path | None = None, **extra: str
) -> dict[str, str]:
    """This process's environment without any ``SPECIALISTS_*`` variable, with ``state_dir`` set,
    ``token`` as the action token (``None``: no token) and ``key_file`` as the actor key file (none
    when ``None``). Research teams advance in 1 s coordinator cycles (the shortest the setting
    takes), not the deployment default of 60 s."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("SPECIALISTS_")}
    env["SPECIALISTS_STATE_DIR"] = str(state_dir)
    env["SPECIALISTS_TEAM_CYCLE_SECONDS"] = "1"
    if token is not None:
        env[TOKEN_ENV] = token
    if key_file is not None:
        env[KEY_FILE_ENV] = str(key_file)
    env.update(extra)
    return env


@dataclasses.dataclass(frozen=True)
class Cli:
    """The CLI bound to a working directory and an environment."""

    cwd: Path
    env: dict[str, str]
    transcript: list[CliResult] = dataclasses.field(default_factory=list, compare=False, repr=False)

    @classmethod
    def isolated(cls, root: Path, *, token: str | None = ACTION_TOKEN, **extra: str) -> Cli:
        """Working directory ``root``, state directory ``root/state``, action token ``token``
        (``None``: none), alice's key file ``root/alice.key``, plus ``extra`` variables."""
        env = isolated_environment(root / "state", token=token, key_file=root / "alice.key", **extra)
        return cls(cwd=root, env=env)

    def key_file(self, actor: str) -> Path:
        """Where ``actors register ACTOR`` run by this CLI writes the actor's key (``./ACTOR.key``)."""
        return self.cwd / f"{actor}.key"

    def as_actor(self, actor: str) -> Cli:
        """The same CLI acting with ``actor``'s key file (:meth:`key_file`)."""
        bare = self.without_key()
        return dataclasses.replace(bare, env={**bare.env, KEY_FILE_ENV: str(self.key_file(actor))})

    def stranger(self) -> Cli:
        """The same CLI acting with a key no actor holds (``<cwd>/stranger.key``, made once)."""
        path = self.cwd / "stranger.key"
        if not path.exists():
            from contracts.identity import ActorKey

            path.write_bytes(ActorKey.generate().to_pem())
            path.chmod(0o600)
        bare = self.without_key()
        return dataclasses.replace(bare, env={**bare.env, KEY_FILE_ENV: str(path)})

    def without_key(self) -> Cli:
        """The same CLI with no actor key configured."""
        env = {name: value for name, value in self.env.items() if name not in (KEY_ENV, KEY_FILE_ENV)}
        return dataclasses.replace(self, env=env)

    @property
    def state_dir(self) -> Path:
        return Path(self.env["SPECIALISTS_STATE_DIR"])

    @property
    def database(self) -> Path:
        return self.state_dir / DATABASE_FILENAME

    def with_env(self, **changes: str) -> Cli:
        return dataclasses.replace(self, env={**self.env, **changes})

    def without_token(self) -> Cli:
        """The same CLI with neither token variable set."""
        env = {name: value for name, value in self.env.items() if name not in (TOKEN_ENV, TOKEN_FILE_ENV)}
        return dataclasses.replace(self, env=env)

    def with_token(self, token: str) -> Cli:
        """The same CLI with ``token`` in ``SPECIALISTS_ACTION_TOKEN`` (and no token file)."""
        bare = self.without_token()
        return dataclasses.replace(bare, env={**bare.env, TOKEN_ENV: token})

    def with_token_file(self, path: Path) -> Cli:
        """The same CLI reading its token from ``path`` (``SPECIALISTS_ACTION_TOKEN_FILE`` only)."""
        bare = self.without_token()
        return dataclasses.replace(bare, env={**bare.env, TOKEN_FILE_ENV: str(path)})

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
        return self._noted(CliResult(args, completed.returncode, completed.stdout, completed.stderr))

    def run_reporting_modules(self, *args: str, timeout: float = 60.0) -> tuple[CliResult, frozenset[str]]:
        """``control.cli.main(ARGS)`` in a fresh interpreter, and every module that process had
        imported when the command returned (what a command loads, checked from outside)."""
        with tempfile.TemporaryDirectory(prefix="cli-modules-") as scratch:
            report = Path(scratch) / "modules.json"
            completed = subprocess.run(
                [sys.executable, "-c", _MODULES_WRAPPER, str(report), *args],
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
            assert report.exists(), completed.stderr
            modules = frozenset(json.loads(report.read_text(encoding="utf-8")))
        result = CliResult(args, completed.returncode, completed.stdout, completed.stderr)
        return self._noted(result), modules

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
        return self._noted(CliResult(args, exit_code, stdout.getvalue(), stderr.getvalue()))

    def _noted(self, result: CliResult) -> CliResult:
        self.transcript.append(result)
        return result


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
    """``python -m worker`` from the repository root with ``env``, until the block ends.

    Waits for the worker's "polling" line; stops it with SIGTERM (then SIGKILL) in every case.
    """
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "worker"],
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


def raw_history(address: str, run_id: str) -> bytes:
    """Every event of the run's Temporal history, serialised (payloads are raw JSON bytes in it)."""
    import asyncio

    from temporalio.client import Client

    async def fetch() -> bytes:
        client = await Client.connect(address)
        history = await client.get_workflow_handle(run_id).fetch_history()
        return b"".join(event.SerializeToString() for event in history.events)

    return asyncio.run(fetch())


def token_leaks(
    tokens: Iterable[str],
    *,
    texts: Iterable[str] = (),
    files: Iterable[Path] = (),
    blobs: Iterable[bytes] = (),
) -> list[str]:
    """Where any of ``tokens`` appears: in ``texts``, in the bytes of ``files`` (every file under a
    directory), or in ``blobs``. Empty when none does."""
    needles = [token.encode("utf-8") for token in tokens]
    found: list[str] = []
    for index, text in enumerate(texts):
        found += [f"text {index}: {text[:200]!r}" for needle in needles if needle in text.encode("utf-8")]
    for file in files:
        for path in sorted(file.rglob("*")) if file.is_dir() else [file]:
            if path.is_file():
                data = path.read_bytes()
                found += [f"file {path}" for needle in needles if needle in data]
    for index, blob in enumerate(blobs):
        found += [f"blob {index}" for needle in needles if needle in blob]
    return found


def transcript_texts(cli: Cli) -> list[str]:
    """Everything the CLI printed (stdout and stderr) in the invocations ``cli`` recorded."""
    return [text for result in cli.transcript for text in (result.stdout, result.stderr)]
