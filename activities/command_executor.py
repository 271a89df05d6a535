"""The ``command`` executor: run a repository's external agent (its captured argument vector) in an
attempt's worktree, confined by bubblewrap (:mod:`activities.sandbox`), with a reduced environment, no
network unless granted, a wall-clock budget and bounded output; and a pr_ready run's verify commands
the same way. Plain functions (no Temporal here); ``activities.execution`` calls
:func:`run_agent_command` between creating the worktree and ``check_and_collect``.

* **No shell.** The argument vector is run as given (``subprocess.Popen``, ``shell=False``) behind
  ``bwrap --args FD --json-status-fd FD --``, in a new session (``start_new_session=True``), so
  bubblewrap, the sandbox and everything in it form one process group that is killed as a whole.
* **Confined.** What the sandbox lets a command see and write is :mod:`activities.sandbox`'s: only the
  worktree (with its own git metadata), HOME and TMPDIR writable; the source repository's git data
  read-only; the state directory, other repositories and the worker's home invisible; its own
  ``/proc``; no network unless the captured configuration grants it to the agent. **Fail closed**:
  when bubblewrap is missing or cannot set up its namespaces (:func:`activities.sandbox.confinement`,
  probed once per worker process) nothing runs and the attempt fails ``confinement_unavailable`` — unless the
  captured configuration says ``allow_unconfined = true``; then the command runs as before confinement
  existed (own session, reduced environment, ``unshare --net`` where available) and its report says
  ``confined = False`` and why.
* **Input.** cwd is the worktree; stdin is the task text (task, evidence ids, stop rule) written by the
  workflow, read from a file in the attempt's evidence directory; nothing from the work item is used
  as a path or a command.
* **Environment.** Only ``PATH=/usr/local/bin:/usr/bin:/bin``, ``LANG=C.UTF-8``, ``HOME`` and
  ``TMPDIR`` (fresh directories in the attempt's evidence directory) and the variables the captured
  configuration names in ``env`` and ``model_credentials`` (their values from the worker's
  environment; an unset one is simply absent). A ``SPECIALISTS_*`` name is refused here too, whatever
  was captured. Nothing else of the worker's environment reaches the command.
* **Budget.** On expiry of the wall-clock budget the process group is killed (SIGKILL) and the attempt
  fails closed with ``command_timeout``. stdout and stderr are read up to
  :data:`~contracts.execution.MAX_COMMAND_OUTPUT_BYTES` each; more kills the group and fails
  ``command_output_too_large`` (never cut silently). A non-zero exit fails ``command_failed``. After a
  normal exit the process group is killed too, so nothing the agent left running can change the
  worktree while it is checked (confined, the sandbox's process namespace ends with its command).
"""

from __future__ import annotations

import contextlib
import dataclasses
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

from activities.sandbox import (
    SAFE_PATH,
    Confinement,
    child_started,
    confinement,
    describe,
    launcher_environment,
    sandbox_arguments,
    sandbox_layout,
)
from contracts.config import RepositoryConfig, is_reserved_name
from contracts.errors import InvalidInput
from contracts.execution import MAX_COMMAND_OUTPUT_BYTES, CommandReport, VerificationResult
from contracts.worktree import ExecutionFailure, WorktreeAttempt, WorktreeExecutionFailed

HOME_DIR: Final = "command-home"
TMP_DIR: Final = "command-tmp"
STDIN_FILE: Final = "command-stdin.txt"
_POLL_SECONDS: Final = 0.2
_READ_CHUNK: Final = 16 * 1024
_DRAIN_SECONDS: Final = 5.0


class CommandFailed(WorktreeExecutionFailed):
    """The agent failed closed (``command_timeout``, ``command_output_too_large``, ``command_failed``,
    ``confinement_unavailable``); ``report`` says what it did."""

    def __init__(self, failure_type: str, message: str, report: CommandReport) -> None:
        super().__init__(failure_type, message)
        self.report = report


@dataclasses.dataclass(frozen=True)
class Sandbox:
    """How an attempt's commands run: ``confinement`` (the worker's probe), whether the captured
    configuration accepts running unconfined when it is unavailable (``allow_unconfined``), and the
    paths the sandbox must hide even when they lie inside a bound system directory (``hidden``: the
    state directory, every registered repository, the worker's home)."""

    confinement: Confinement
    allow_unconfined: bool = False
    hidden: tuple[Path, ...] = ()

    @classmethod
    def probed(
        cls, program: str | None = None, *, allow_unconfined: bool = False, hidden: tuple[Path, ...] = ()
    ) -> Sandbox:
        """The sandbox of this worker (``program``: bubblewrap's path, default found on PATH)."""
        return cls(confinement(program), allow_unconfined, hidden)

    def require(self) -> None:
        """Raise :class:`WorktreeExecutionFailed` ``confinement_unavailable`` when commands cannot be
        confined and the configuration does not accept running them unconfined."""
        if not self.confinement.available and not self.allow_unconfined:
            raise WorktreeExecutionFailed(
                ExecutionFailure.CONFINEMENT_UNAVAILABLE,
                f"commands cannot be confined on this worker ({self.confinement.reason}) and the "
                "repository configuration does not accept running them unconfined "
                "(allow_unconfined = true); nothing was run",
            )

    def require_confinement(self, what: str) -> None:
        """Raise :class:`WorktreeExecutionFailed` ``confinement_unavailable`` when commands cannot be
        confined, whatever the configuration accepts: ``what`` (a probe) always runs confined."""
        if not self.confinement.available:
            raise WorktreeExecutionFailed(
                ExecutionFailure.CONFINEMENT_UNAVAILABLE,
                f"{what} always runs confined, whatever the repository configuration says, and commands "
                f"cannot be confined on this worker ({self.confinement.reason}); install bubblewrap on "
                "the worker's host (the bubblewrap package: `bwrap` on /usr/local/bin:/usr/bin:/bin, "
                "with unprivileged user namespaces allowed); nothing was run",
            )


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


def _in_network_namespace(argv: list[str]) -> list[str]:
    """``argv`` run in a new network namespace (only its own loopback); call only when
    :func:`network_isolation_available`."""
    unshare = shutil.which("unshare", path=SAFE_PATH)
    assert unshare is not None
    return [unshare, "--net", "--map-root-user", "--", *argv]


def _private_directories(evidence_dir: Path, home_name: str, tmp_name: str) -> tuple[Path, Path]:
    """A HOME and a TMPDIR (mode 0700) inside the attempt's evidence directory, outside the tree."""
    home, tmpdir = evidence_dir / home_name, evidence_dir / tmp_name
    home.mkdir(mode=0o700, exist_ok=True)
    tmpdir.mkdir(mode=0o700, exist_ok=True)
    return home, tmpdir


def agent_environment(
    names: tuple[str, ...], home: Path, tmpdir: Path, source: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The agent's whole environment: the fixed values plus each variable of ``names`` that is set in
    ``source`` (the worker's environment by default). Nothing else. Raises :class:`InvalidInput`
    ``invalid_repository_config`` for a ``SPECIALISTS_*`` name (never passed, whatever was captured)."""
    source = os.environ if source is None else source
    environment = {"PATH": SAFE_PATH, "LANG": "C.UTF-8", "HOME": str(home), "TMPDIR": str(tmpdir)}
    for name in names:
        if is_reserved_name(name):
            raise InvalidInput(
                "invalid_repository_config",
                f"{name!r} is one of the deployment's own settings: it is never passed to a command",
            )
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


@dataclasses.dataclass(frozen=True)
class _Outcome:
    """How one bounded process ended: its exit status (``None`` when timed out), whether it ran over
    its budget or its output bound, how long it took, and what it wrote (at most the bound)."""

    returncode: int | None
    timed_out: bool
    duration_seconds: float
    stdout: bytes
    stderr: bytes
    stdout_over: bool
    stderr_over: bool

    @property
    def output_too_large(self) -> bool:
        return self.stdout_over or self.stderr_over

    def fields(self) -> dict[str, object]:
        """The fields :class:`CommandReport` and :class:`VerificationResult` share."""
        return {
            "exit_status": self.returncode,
            "duration_seconds": round(self.duration_seconds, 3),
            "timed_out": self.timed_out,
            "stdout": self.stdout.decode("utf-8", "backslashreplace"),
            "stderr": self.stderr.decode("utf-8", "backslashreplace"),
            "stdout_bytes": len(self.stdout),
            "stderr_bytes": len(self.stderr),
            "output_too_large": self.output_too_large,
        }


def _run_bounded(
    argv: list[str],
    *,
    cwd: Path,
    stdin: IO[bytes] | int,
    environment: dict[str, str],
    budget: float,
    heartbeat: Callable[[], None] | None,
    pass_fds: tuple[int, ...] = (),
) -> _Outcome:
    """Run ``argv`` (no shell) in its own process group with ``budget`` seconds of wall clock and
    output bounded per stream; the whole group is killed at the end, whatever it left running.
    Raises ``OSError`` when the program cannot be started."""
    started = time.monotonic()
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment,
        start_new_session=True,
        shell=False,
        close_fds=True,
        pass_fds=pass_fds,
    )
    pgid = process.pid  # start_new_session: the program leads its own process group
    assert process.stdout is not None and process.stderr is not None
    readers = [
        _BoundedReader(process.stdout, MAX_COMMAND_OUTPUT_BYTES, lambda: _kill_group(pgid)),
        _BoundedReader(process.stderr, MAX_COMMAND_OUTPUT_BYTES, lambda: _kill_group(pgid)),
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
        # Whatever it left running (a background child) goes too, before git looks at the tree.
        _kill_group(pgid)
        if process.poll() is None:
            process.kill()
            process.wait()
        for reader in readers:
            reader.join(_DRAIN_SECONDS)
        process.stdout.close()
        process.stderr.close()
    out, err = readers
    return _Outcome(
        returncode=None if timed_out else process.returncode,
        timed_out=timed_out,
        duration_seconds=time.monotonic() - started,
        stdout=bytes(out.data),
        stderr=bytes(err.data),
        stdout_over=out.over,
        stderr_over=err.over,
    )


class _SetupFailed(Exception):
    """bubblewrap could not set up the sandbox (it started no child)."""


class _NotStarted(Exception):
    """The command could not be started (inside the sandbox: bubblewrap's ``execvp`` failed)."""


@dataclasses.dataclass(frozen=True)
class _Ran:
    """How one command ran: its outcome and how it was confined."""

    outcome: _Outcome
    confined: bool
    confinement: str
    network_isolated: bool

    def fields(self) -> dict[str, object]:
        return {
            **self.outcome.fields(),
            "confined": self.confined,
            "confinement": self.confinement,
            "network_isolated": self.network_isolated,
        }


def _how(sandbox: Sandbox, *, network: bool) -> tuple[bool, str, bool]:
    """Whether a command runs confined, the report's ``confinement`` line, and whether it is
    network-isolated (``network``: the agent was granted the network)."""
    if sandbox.confinement.available:
        return True, describe(sandbox.confinement, network=network), not network
    isolated = not network and network_isolation_available()
    return (
        False,
        f"none: {sandbox.confinement.reason}; the repository configuration accepts running unconfined "
        "(allow_unconfined = true): reduced environment, own process group"
        + (", own network namespace (unshare)" if isolated else ""),
        isolated,
    )


def _run_command(
    command: list[str],
    *,
    attempt: WorktreeAttempt,
    sandbox: Sandbox,
    environment: dict[str, str],
    network: bool,
    stdin: IO[bytes] | int,
    budget: float,
    heartbeat: Callable[[], None] | None,
    cwd: Path | None = None,
) -> _Ran:
    """Run ``command`` in ``attempt``'s worktree (or ``cwd``, a directory inside it the caller
    checked): confined when the worker can, else (the configuration allowing it —
    :meth:`Sandbox.require` was called) as before confinement existed.
    Raises ``_SetupFailed``, ``_NotStarted`` or ``OSError`` (an unconfined program that cannot start)."""
    confined, description, isolated = _how(sandbox, network=network)
    if not confined:
        argv = _in_network_namespace(command) if isolated else command
        outcome = _run_bounded(
            argv,
            cwd=cwd or attempt.worktree,
            stdin=stdin,
            environment=environment,
            budget=budget,
            heartbeat=heartbeat,
        )
        return _Ran(outcome, False, description, isolated)
    program = sandbox.confinement.program
    assert program is not None
    layout = sandbox_layout(attempt, Path(environment["HOME"]), Path(environment["TMPDIR"]), sandbox.hidden)
    options = sandbox_arguments(layout, environment, network=network, chdir=cwd)
    arguments = os.memfd_create("bwrap-args", os.MFD_CLOEXEC)
    status_read, status_write = os.pipe()
    try:
        os.write(arguments, b"".join(option.encode("utf-8", "surrogateescape") + b"\0" for option in options))
        os.lseek(arguments, 0, os.SEEK_SET)
        argv = [program, "--args", str(arguments), "--json-status-fd", str(status_write), "--", *command]
        outcome = _run_bounded(
            argv,
            cwd=cwd or attempt.worktree,
            stdin=stdin,
            environment=launcher_environment(),
            budget=budget,
            heartbeat=heartbeat,
            pass_fds=(arguments, status_write),
        )
        os.close(status_write)
        status_write = -1
        status = _read_available(status_read)
    finally:
        os.close(arguments)
        os.close(status_read)
        if status_write >= 0:
            os.close(status_write)
    if outcome.returncode not in (0, None) and not child_started(status):
        raise _SetupFailed(
            _first_line(outcome.stderr) or f"bubblewrap exited with status {outcome.returncode}"
        )
    if outcome.returncode == 1 and outcome.stderr.startswith(b"bwrap: execvp "):
        raise _NotStarted(_first_line(outcome.stderr).removeprefix("bwrap: "))
    return _Ran(outcome, True, description, isolated)


def _read_available(fd: int) -> bytes:
    """What is in pipe ``fd`` now (its writers are gone or will write no more)."""
    os.set_blocking(fd, False)
    chunks = []
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _first_line(data: bytes) -> str:
    lines = data.decode("utf-8", "backslashreplace").strip().splitlines()
    return lines[0][:300] if lines else ""


def run_agent_command(
    attempt: WorktreeAttempt,
    config: RepositoryConfig,
    task_text: str,
    *,
    sandbox: Sandbox,
    timeout_seconds: float | None = None,
    heartbeat: Callable[[], None] | None = None,
    source_environment: Mapping[str, str] | None = None,
) -> CommandReport:
    """Run ``config.command`` in ``attempt.worktree``, confined by ``sandbox``, and return its report.

    ``timeout_seconds`` (default: the captured ``command_timeout_seconds``) is the wall-clock budget;
    ``heartbeat`` is called while the agent runs. Raises :class:`CommandFailed` (``command_timeout``,
    ``command_output_too_large``, ``command_failed`` — a non-zero exit, a signal, or a program that
    cannot be started — and ``confinement_unavailable`` when the sandbox cannot be set up and the
    configuration does not accept running unconfined), its report attached; messages never quote the
    agent's output or environment.
    """
    if not config.command:
        raise ValueError("the repository configuration names no command")
    budget = float(config.command_timeout_seconds if timeout_seconds is None else timeout_seconds)
    home, tmpdir = _private_directories(attempt.evidence_dir, HOME_DIR, TMP_DIR)
    environment = agent_environment(config.env + config.model_credentials, home, tmpdir, source_environment)
    confined, description, isolated = _how(sandbox, network=config.network)
    base = CommandReport(
        confined=confined,
        confinement=description,
        network_isolated=isolated,
        network_granted=config.network,
        timeout_seconds=budget,
    )
    _require(sandbox, base)
    stdin_path = attempt.evidence_dir / STDIN_FILE
    stdin_path.write_text(task_text, encoding="utf-8")
    started = time.monotonic()
    try:
        with stdin_path.open("rb") as stdin:
            ran = _run_command(
                list(config.command),
                attempt=attempt,
                sandbox=sandbox,
                environment=environment,
                network=config.network,
                stdin=stdin,
                budget=budget,
                heartbeat=heartbeat,
            )
    except (OSError, _NotStarted, _SetupFailed) as error:
        report = base.model_copy(update={"duration_seconds": round(time.monotonic() - started, 3)})
        raise _not_run(error, f"the agent {config.command[0]!r}", report) from None
    outcome = ran.outcome
    report = base.model_copy(update=ran.fields())
    if outcome.timed_out:
        raise CommandFailed(
            ExecutionFailure.COMMAND_TIMEOUT,
            f"the agent did not exit within {budget:g} s; its process group was killed",
            report,
        )
    if report.output_too_large:
        streams = [
            name for name, over in (("stdout", outcome.stdout_over), ("stderr", outcome.stderr_over)) if over
        ]
        raise CommandFailed(
            ExecutionFailure.COMMAND_OUTPUT_TOO_LARGE,
            f"the agent wrote more than {MAX_COMMAND_OUTPUT_BYTES} bytes to {' and '.join(streams)}; "
            "its process group was killed (output is never cut silently)",
            report,
        )
    if outcome.returncode != 0:
        status = outcome.returncode or 0
        how = f"was killed by signal {-status}" if status < 0 else f"exited with status {status}"
        raise CommandFailed(ExecutionFailure.COMMAND_FAILED, f"the agent {how}", report)
    return report


def _require(sandbox: Sandbox, report: CommandReport) -> None:
    try:
        sandbox.require()
    except WorktreeExecutionFailed as error:
        raise CommandFailed(error.code, error.message, report) from None


def _not_run(error: Exception, what: str, report: CommandReport) -> CommandFailed:
    """The failure of a command that did not run: the sandbox could not be set up
    (``confinement_unavailable``) or the program could not be started (``command_failed``)."""
    if isinstance(error, _SetupFailed):
        return CommandFailed(
            ExecutionFailure.CONFINEMENT_UNAVAILABLE,
            f"the sandbox for {what} could not be set up: {error}; nothing was run",
            report,
        )
    reason = (error.strerror or type(error).__name__) if isinstance(error, OSError) else str(error)
    return CommandFailed(ExecutionFailure.COMMAND_FAILED, f"{what} could not be started: {reason}", report)


VERIFY_HOME_DIR: Final = "verify-home"
VERIFY_TMP_DIR: Final = "verify-tmp"


def run_verification_command(
    attempt: WorktreeAttempt,
    argv: list[str],
    *,
    sandbox: Sandbox,
    timeout_seconds: float,
    heartbeat: Callable[[], None] | None = None,
) -> VerificationResult:
    """Run one of a pr_ready run's ``verify`` commands in ``attempt.worktree``, confined by
    ``sandbox`` as the agent is: no shell, own process group, stdin empty, the same reduced
    environment as the agent (no configured variables), never network, ``timeout_seconds`` of wall
    clock, output bounded.

    A non-zero exit is returned (evidence, not a failure). Raises :class:`CommandFailed`
    (``command_timeout``, ``command_output_too_large``, ``command_failed`` when it cannot be started,
    ``confinement_unavailable``) with the result's fields in a :class:`CommandReport`."""
    return _run_checked_command(
        attempt,
        argv,
        noun=f"the verify command {argv[0]!r}",
        directories=(VERIFY_HOME_DIR, VERIFY_TMP_DIR),
        extra_environment={"PYTHONDONTWRITEBYTECODE": "1"},
        sandbox=sandbox,
        timeout_seconds=timeout_seconds,
        heartbeat=heartbeat,
    )


def _run_checked_command(
    attempt: WorktreeAttempt,
    argv: list[str],
    *,
    noun: str,
    directories: tuple[str, str],
    extra_environment: Mapping[str, str] | None = None,
    stdin_file: tuple[str, str] | None = None,
    cwd: Path | None = None,
    sandbox: Sandbox,
    timeout_seconds: float,
    heartbeat: Callable[[], None] | None,
) -> VerificationResult:
    """A verify command or a probe (``noun`` names it in errors): confined by ``sandbox``, no shell,
    own process group, the reduced environment with no configured variable (``extra_environment``
    added), never network, ``timeout_seconds`` of wall clock, output bounded; its private HOME and
    TMPDIR are ``directories`` in the evidence directory; stdin empty, or ``stdin_file`` (a file name
    in the evidence directory and its text, written once confinement is known to be available); cwd
    the worktree or ``cwd``, a directory inside it the caller checked."""
    home, tmpdir = _private_directories(attempt.evidence_dir, *directories)
    environment = agent_environment((), home, tmpdir, {})
    environment.update(extra_environment or {})
    budget = float(timeout_seconds)
    confined, description, isolated = _how(sandbox, network=False)
    base = VerificationResult(
        argv=list(argv),
        confined=confined,
        confinement=description,
        network_isolated=isolated,
        timeout_seconds=budget,
    )
    _require(sandbox, _as_report(base))
    stdin_path = None
    if stdin_file is not None:
        stdin_path = attempt.evidence_dir / stdin_file[0]
        stdin_path.write_text(stdin_file[1], encoding="utf-8")
    started = time.monotonic()
    try:
        with stdin_path.open("rb") if stdin_path is not None else contextlib.nullcontext() as stdin:
            ran = _run_command(
                list(argv),
                attempt=attempt,
                sandbox=sandbox,
                environment=environment,
                network=False,
                stdin=stdin if stdin is not None else subprocess.DEVNULL,
                budget=budget,
                heartbeat=heartbeat,
                cwd=cwd,
            )
    except (OSError, _NotStarted, _SetupFailed) as error:
        result = base.model_copy(update={"duration_seconds": round(time.monotonic() - started, 3)})
        raise _not_run(error, noun, _as_report(result)) from None
    result = base.model_copy(update=ran.fields())
    if ran.outcome.timed_out:
        raise CommandFailed(
            ExecutionFailure.COMMAND_TIMEOUT,
            f"{noun} did not exit within {budget:g} s; its process group was killed",
            _as_report(result),
        )
    if result.output_too_large:
        raise CommandFailed(
            ExecutionFailure.COMMAND_OUTPUT_TOO_LARGE,
            f"{noun} wrote more than {MAX_COMMAND_OUTPUT_BYTES} bytes to stdout or stderr; its process "
            "group was killed (output is never cut silently)",
            _as_report(result),
        )
    return result


def _as_report(result: VerificationResult) -> CommandReport:
    return CommandReport(
        exit_status=result.exit_status,
        duration_seconds=result.duration_seconds,
        confined=result.confined,
        confinement=result.confinement,
        network_isolated=result.network_isolated,
        timeout_seconds=result.timeout_seconds,
        timed_out=result.timed_out,
        stdout=result.stdout,
        stderr=result.stderr,
        stdout_bytes=result.stdout_bytes,
        stderr_bytes=result.stderr_bytes,
        output_too_large=result.output_too_large,
    )


PROBE_HOME_DIR: Final = "probe-home"
PROBE_TMP_DIR: Final = "probe-tmp"
PROBE_STDIN_FILE: Final = "probe-stdin.txt"


def run_probe_command(
    attempt: WorktreeAttempt,
    argv: list[str],
    *,
    cwd: Path,
    stdin_text: str,
    sandbox: Sandbox,
    timeout_seconds: float,
    heartbeat: Callable[[], None] | None = None,
) -> VerificationResult:
    """Run an approved probe's argument vector in ``cwd`` (a directory inside ``attempt.worktree``
    the caller resolved and checked), confined as a verify command is: no shell, own process group,
    the reduced environment with no configured variable, never network, ``timeout_seconds`` of wall
    clock, output bounded; ``stdin_text`` on stdin (docs/architecture.md "Probe requests").

    A non-zero exit is returned (evidence). Raises :class:`CommandFailed` (``command_timeout``,
    ``command_output_too_large``, ``command_failed`` when it cannot be started,
    ``confinement_unavailable``) with what it did as the report."""
    return _run_checked_command(
        attempt,
        argv,
        noun="the probe",
        directories=(PROBE_HOME_DIR, PROBE_TMP_DIR),
        stdin_file=(PROBE_STDIN_FILE, stdin_text),
        cwd=cwd,
        sandbox=sandbox,
        timeout_seconds=timeout_seconds,
        heartbeat=heartbeat,
    )
