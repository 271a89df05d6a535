"""The ``command`` executor: run a repository's external agent (its captured argument vector) in an
attempt's worktree, with a reduced environment, no network where the OS allows it, a wall-clock budget
and bounded output. Plain functions (no Temporal here); ``activities.execution`` calls
:func:`run_agent_command` between creating the worktree and ``check_and_collect``.

* **No shell.** The argument vector is run as given (``subprocess.Popen``, ``shell=False``), in a new
  session (``start_new_session=True``), so the agent and everything it starts form one process group
  that can be killed as a whole.
* **Input.** cwd is the worktree; stdin is the task text (task, evidence ids, stop rule) written by the
  workflow, read from a file in the attempt's evidence directory; nothing from the work item is used
  as a path or a command.
* **Environment.** Only ``PATH=/usr/local/bin:/usr/bin:/bin``, ``LANG=C.UTF-8``, ``HOME`` and
  ``TMPDIR`` (fresh directories in the attempt's evidence directory) and the variables the captured
  configuration names in ``env`` (their values from the worker's environment; an unset one is simply
  absent). Nothing else of the worker's environment reaches the agent — no key or token unless named.
* **Network.** Unless ``network = true`` was captured, the agent runs in a new network namespace
  (``unshare --net --map-root-user -- argv…``: only its own loopback, no route anywhere). Whether that
  works is probed once per worker process; when it does not, the agent runs without isolation and the
  report says ``network_isolated = False``.
* **Budget.** On expiry of the wall-clock budget the process group is killed (SIGKILL) and the attempt
  fails closed with ``command_timeout``. stdout and stderr are read up to
  :data:`~contracts.execution.MAX_COMMAND_OUTPUT_BYTES` each; more kills the group and fails
  ``command_output_too_large`` (never cut silently). A non-zero exit fails ``command_failed``. After a
  normal exit the process group is killed too, so nothing the agent left running can change the
  worktree while it is checked.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Final

from contracts.config import RepositoryConfig
from contracts.execution import MAX_COMMAND_OUTPUT_BYTES, CommandReport, VerificationResult
from contracts.worktree import ExecutionFailure, WorktreeAttempt, WorktreeExecutionFailed

SAFE_PATH: Final = "/usr/local/bin:/usr/bin:/bin"
HOME_DIR: Final = "command-home"
TMP_DIR: Final = "command-tmp"
STDIN_FILE: Final = "command-stdin.txt"
_POLL_SECONDS: Final = 0.2
_READ_CHUNK: Final = 16 * 1024
_DRAIN_SECONDS: Final = 5.0


class CommandFailed(WorktreeExecutionFailed):
    """The agent failed closed (``command_timeout``, ``command_output_too_large``, ``command_failed``);
    ``report`` says what it did."""

    def __init__(self, failure_type: str, message: str, report: CommandReport) -> None:
        super().__init__(failure_type, message)
        self.report = report


@functools.cache
def network_isolation_available() -> bool:
    """Whether ``unshare --net --map-root-user`` works here (probed once per process)."""
    unshare = shutil.which("unshare", path=SAFE_PATH)
    if unshare is None:
        return False
    try:
        result = subprocess.run(
            [unshare, "--net", "--map-root-user", "--", "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env={"PATH": SAFE_PATH, "LANG": "C.UTF-8"},
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


def agent_environment(
    names: tuple[str, ...], home: Path, tmpdir: Path, source: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The agent's whole environment: the fixed values plus each variable of ``names`` that is set in
    ``source`` (the worker's environment by default). Nothing else."""
    source = os.environ if source is None else source
    environment = {"PATH": SAFE_PATH, "LANG": "C.UTF-8", "HOME": str(home), "TMPDIR": str(tmpdir)}
    for name in names:
        if name in source:
            environment[name] = source[name]
    return environment


class _BoundedReader(threading.Thread):
    """Reads a pipe up to ``limit`` bytes; one more byte sets ``over`` and calls ``on_over``."""

    def __init__(self, stream: IO[bytes], limit: int, on_over: Callable[[], None]) -> None:
        super().__init__(daemon=True)
        self._stream = stream
        self._limit = limit
        self._on_over = on_over
        self.data = bytearray()
        self.over = False

    def run(self) -> None:
        try:
            while True:
                chunk = self._stream.read1(_READ_CHUNK)  # type: ignore[attr-defined]
                if not chunk:
                    return
                room = self._limit - len(self.data)
                if len(chunk) > room:
                    self.data += chunk[: max(room, 0)]
                    self.over = True
                    self._on_over()
                    return
                self.data += chunk
        except (OSError, ValueError):
            return


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run_agent_command(
    attempt: WorktreeAttempt,
    config: RepositoryConfig,
    task_text: str,
    *,
    timeout_seconds: float | None = None,
    heartbeat: Callable[[], None] | None = None,
    source_environment: Mapping[str, str] | None = None,
) -> CommandReport:
    """Run ``config.command`` in ``attempt.worktree`` and return its report.

    ``timeout_seconds`` (default: the captured ``command_timeout_seconds``) is the wall-clock budget;
    ``heartbeat`` is called while the agent runs. Raises :class:`CommandFailed` (``command_timeout``,
    ``command_output_too_large``, ``command_failed`` — a non-zero exit, a signal, or a program that
    cannot be started), its report attached; messages never quote the agent's output or environment.
    """
    if not config.command:
        raise ValueError("the repository configuration names no command")
    budget = float(config.command_timeout_seconds if timeout_seconds is None else timeout_seconds)
    home = attempt.evidence_dir / HOME_DIR
    tmpdir = attempt.evidence_dir / TMP_DIR
    home.mkdir(mode=0o700)
    tmpdir.mkdir(mode=0o700)
    stdin_path = attempt.evidence_dir / STDIN_FILE
    stdin_path.write_text(task_text, encoding="utf-8")
    isolated = not config.network and network_isolation_available()
    argv = list(config.command)
    if isolated:
        unshare = shutil.which("unshare", path=SAFE_PATH)
        assert unshare is not None
        argv = [unshare, "--net", "--map-root-user", "--", *argv]
    base = CommandReport(network_isolated=isolated, network_granted=config.network, timeout_seconds=budget)
    started = time.monotonic()
    try:
        with stdin_path.open("rb") as stdin:
            process = subprocess.Popen(
                argv,
                cwd=attempt.worktree,
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=agent_environment(config.env, home, tmpdir, source_environment),
                start_new_session=True,
                shell=False,
                close_fds=True,
            )
    except OSError as error:
        report = base.model_copy(update={"duration_seconds": time.monotonic() - started})
        raise CommandFailed(
            ExecutionFailure.COMMAND_FAILED,
            f"the agent {config.command[0]!r} could not be started: {error.strerror or type(error).__name__}",
            report,
        ) from None
    pgid = process.pid  # start_new_session: the agent leads its own process group
    over = threading.Event()

    def on_over() -> None:
        over.set()
        _kill_group(pgid)

    assert process.stdout is not None and process.stderr is not None
    readers = [
        _BoundedReader(process.stdout, MAX_COMMAND_OUTPUT_BYTES, on_over),
        _BoundedReader(process.stderr, MAX_COMMAND_OUTPUT_BYTES, on_over),
    ]
    for reader in readers:
        reader.start()
    timed_out = False
    try:
        while True:
            try:
                process.wait(timeout=_POLL_SECONDS)
                break
            except subprocess.TimeoutExpired:
                pass
            if heartbeat is not None:
                heartbeat()
            if time.monotonic() - started >= budget:
                timed_out = True
                _kill_group(pgid)
                process.wait()
                break
    finally:
        # Whatever the agent left running (a background child) goes too, before git looks at the tree.
        _kill_group(pgid)
        if process.poll() is None:
            process.kill()
            process.wait()
        for reader in readers:
            reader.join(_DRAIN_SECONDS)
        process.stdout.close()
        process.stderr.close()
    duration = time.monotonic() - started
    out, err = readers
    report = base.model_copy(
        update={
            "exit_status": None if timed_out else process.returncode,
            "duration_seconds": round(duration, 3),
            "timed_out": timed_out,
            "stdout": bytes(out.data).decode("utf-8", "backslashreplace"),
            "stderr": bytes(err.data).decode("utf-8", "backslashreplace"),
            "stdout_bytes": len(out.data),
            "stderr_bytes": len(err.data),
            "output_too_large": over.is_set() or out.over or err.over,
        }
    )
    if timed_out:
        raise CommandFailed(
            ExecutionFailure.COMMAND_TIMEOUT,
            f"the agent did not exit within {budget:g} s; its process group was killed",
            report,
        )
    if report.output_too_large:
        streams = [name for name, reader in (("stdout", out), ("stderr", err)) if reader.over]
        raise CommandFailed(
            ExecutionFailure.COMMAND_OUTPUT_TOO_LARGE,
            f"the agent wrote more than {MAX_COMMAND_OUTPUT_BYTES} bytes to {' and '.join(streams)}; "
            "its process group was killed (output is never cut silently)",
            report,
        )
    if process.returncode != 0:
        status = process.returncode
        how = f"was killed by signal {-status}" if status < 0 else f"exited with status {status}"
        raise CommandFailed(ExecutionFailure.COMMAND_FAILED, f"the agent {how}", report)
    return report


VERIFY_HOME_DIR: Final = "verify-home"
VERIFY_TMP_DIR: Final = "verify-tmp"


def run_verification_command(
    attempt: WorktreeAttempt,
    argv: list[str],
    *,
    timeout_seconds: float,
    heartbeat: Callable[[], None] | None = None,
) -> VerificationResult:
    """Run one of a pr_ready run's ``verify`` commands in ``attempt.worktree``: no shell, own process
    group, stdin empty, the same reduced environment as the agent (no configured variables), never
    network (isolated where the OS allows it), ``timeout_seconds`` of wall clock, output bounded.

    A non-zero exit is returned (evidence, not a failure). Raises :class:`CommandFailed`
    (``command_timeout``, ``command_output_too_large``, ``command_failed`` when it cannot be started)
    with the result's fields in a :class:`CommandReport`."""
    home = attempt.evidence_dir / VERIFY_HOME_DIR
    tmpdir = attempt.evidence_dir / VERIFY_TMP_DIR
    home.mkdir(mode=0o700, exist_ok=True)
    tmpdir.mkdir(mode=0o700, exist_ok=True)
    isolated = network_isolation_available()
    command = list(argv)
    if isolated:
        unshare = shutil.which("unshare", path=SAFE_PATH)
        assert unshare is not None
        command = [unshare, "--net", "--map-root-user", "--", *command]
    environment = agent_environment((), home, tmpdir, {})
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    budget = float(timeout_seconds)
    started = time.monotonic()
    base = VerificationResult(argv=list(argv), network_isolated=isolated, timeout_seconds=budget)
    try:
        process = subprocess.Popen(
            command,
            cwd=attempt.worktree,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment,
            start_new_session=True,
            shell=False,
            close_fds=True,
        )
    except OSError as error:
        result = base.model_copy(update={"duration_seconds": round(time.monotonic() - started, 3)})
        raise CommandFailed(
            ExecutionFailure.COMMAND_FAILED,
            f"the verify command {argv[0]!r} could not be started: {error.strerror or type(error).__name__}",
            _as_report(result),
        ) from None
    pgid = process.pid
    over = threading.Event()

    def on_over() -> None:
        over.set()
        _kill_group(pgid)

    assert process.stdout is not None and process.stderr is not None
    readers = [
        _BoundedReader(process.stdout, MAX_COMMAND_OUTPUT_BYTES, on_over),
        _BoundedReader(process.stderr, MAX_COMMAND_OUTPUT_BYTES, on_over),
    ]
    for reader in readers:
        reader.start()
    timed_out = False
    try:
        while True:
            try:
                process.wait(timeout=_POLL_SECONDS)
                break
            except subprocess.TimeoutExpired:
                pass
            if heartbeat is not None:
                heartbeat()
            if time.monotonic() - started >= budget:
                timed_out = True
                _kill_group(pgid)
                process.wait()
                break
    finally:
        _kill_group(pgid)
        if process.poll() is None:
            process.kill()
            process.wait()
        for reader in readers:
            reader.join(_DRAIN_SECONDS)
        process.stdout.close()
        process.stderr.close()
    out, err = readers
    result = base.model_copy(
        update={
            "exit_status": None if timed_out else process.returncode,
            "duration_seconds": round(time.monotonic() - started, 3),
            "timed_out": timed_out,
            "stdout": bytes(out.data).decode("utf-8", "backslashreplace"),
            "stderr": bytes(err.data).decode("utf-8", "backslashreplace"),
            "stdout_bytes": len(out.data),
            "stderr_bytes": len(err.data),
            "output_too_large": over.is_set() or out.over or err.over,
        }
    )
    if timed_out:
        raise CommandFailed(
            ExecutionFailure.COMMAND_TIMEOUT,
            f"the verify command {argv[0]!r} did not exit within {budget:g} s; its process group was killed",
            _as_report(result),
        )
    if result.output_too_large:
        raise CommandFailed(
            ExecutionFailure.COMMAND_OUTPUT_TOO_LARGE,
            f"the verify command {argv[0]!r} wrote more than {MAX_COMMAND_OUTPUT_BYTES} bytes to stdout "
            "or stderr; its process group was killed (output is never cut silently)",
            _as_report(result),
        )
    return result


def _as_report(result: VerificationResult) -> CommandReport:
    return CommandReport(
        exit_status=result.exit_status,
        duration_seconds=result.duration_seconds,
        network_isolated=result.network_isolated,
        timeout_seconds=result.timeout_seconds,
        timed_out=result.timed_out,
        stdout=result.stdout,
        stderr=result.stderr,
        stdout_bytes=result.stdout_bytes,
        stderr_bytes=result.stderr_bytes,
        output_too_large=result.output_too_large,
    )
