"""Deployment settings read from the environment (docs/architecture.md "Configuration").

Cheap to import: the standard library and ``contracts`` only. An unset or empty variable takes its
default; a malformed one raises :class:`contracts.errors.InvalidInput` naming the variable.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from contracts.constants import (
    DEFAULT_NAMESPACE,
    DEFAULT_TASK_QUEUE,
    DEFAULT_TEMPORAL_ADDRESS,
    DEFAULT_TEMPORAL_UI_PORT,
    default_state_dir,
)
from contracts.errors import InvalidInput

ENV_TEMPORAL_ADDRESS: Final = "SPECIALISTS_TEMPORAL_ADDRESS"
ENV_TEMPORAL_UI_PORT: Final = "SPECIALISTS_TEMPORAL_UI_PORT"
ENV_NAMESPACE: Final = "SPECIALISTS_NAMESPACE"
ENV_TASK_QUEUE: Final = "SPECIALISTS_TASK_QUEUE"
ENV_CLASS_CEILINGS: Final = "SPECIALISTS_CLASS_CEILINGS"
"""``support=20,core=5,advisory=2``: each model class's in-flight ceiling (``contracts.model_classes``)."""
ENV_STATE_DIR: Final = "SPECIALISTS_STATE_DIR"
ENV_DATABASE_URL: Final = "SPECIALISTS_DATABASE_URL"
ENV_CODEC_KEYS_FILE: Final = "SPECIALISTS_CODEC_KEYS_FILE"

DATABASE_FILENAME: Final = "specialists.db"
"""The SQLite store's file name inside the state directory."""

TEMPORAL_DB_FILENAME: Final = "temporal.db"
"""The embedded Temporal server's SQLite file name inside the state directory."""

_HOSTNAME = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_.-]{0,252})$")
_IPV6 = re.compile(r"^\[([0-9A-Fa-f:.]+)\]$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,254}$")
_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def parse_address(value: str, *, variable: str = ENV_TEMPORAL_ADDRESS) -> tuple[str, int]:
    """Split ``host:port`` (``[v6]:port`` for IPv6) into ``(host, port)``.

    The host is returned without brackets. Raises :class:`InvalidInput` naming ``variable``.
    """
    text = value.strip()
    host, sep, port_text = text.rpartition(":")
    if not sep or not host:
        raise InvalidInput(
            "invalid_address",
            f"{variable}={value!r} is not a host:port address (e.g. {DEFAULT_TEMPORAL_ADDRESS})",
        )
    v6 = _IPV6.match(host)
    if v6:
        host = v6.group(1)
    elif not _HOSTNAME.match(host):
        raise InvalidInput(
            "invalid_address",
            f"{variable}={value!r}: {host!r} is not a host name or IP address "
            f"(expected host:port, e.g. {DEFAULT_TEMPORAL_ADDRESS}; no scheme, no path)",
        )
    return host, _parse_port(port_text, variable=variable, shown=value)


def format_address(host: str, port: int) -> str:
    """The inverse of :func:`parse_address`: brackets an IPv6 host."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _parse_port(text: str, *, variable: str, shown: str) -> int:
    stripped = text.strip()
    if not (stripped.isascii() and stripped.isdigit()) or not 1 <= int(stripped) <= 65535:
        raise InvalidInput(
            "invalid_port",
            f"{variable}={shown!r}: the port must be an integer from 1 to 65535",
        )
    return int(stripped)


def _name(env: Mapping[str, str], variable: str, default: str) -> str:
    return validate_name((env.get(variable) or "").strip() or default, variable)


def validate_name(value: str, variable: str) -> str:
    """``value`` (stripped) when it is a namespace or task-queue name; :class:`InvalidInput` naming
    ``variable`` (or whatever setting it came from) otherwise."""
    value = value.strip()
    if not _NAME.match(value):
        raise InvalidInput(
            "invalid_setting",
            f"{variable}={value!r}: use letters, digits and . _ / - (at most 255 characters)",
        )
    return value


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the services are and where local state lives.

    Build it with :meth:`from_env` (``Settings.from_env({})`` gives the defaults); every field is
    already validated and normalised there: ``state_dir`` is absolute (by default
    ``$XDG_STATE_HOME/specialists``, else ``~/.local/state/specialists``), ``database_url`` is
    filled in. ``temporal_address`` and ``namespace`` are this project's settings or the defaults;
    what a client connects to also takes the SDK's environment configuration into account
    (:func:`runtime.connection.load_connection`). ``codec_keys_file`` is the payload keys file
    (absolute; ``None``: payloads are not encrypted), read when a client connects (``runtime.codec``;
    docs/architecture.md "Encrypted history").
    """

    temporal_address: str
    temporal_ui_port: int
    namespace: str
    task_queue: str
    state_dir: Path
    database_url: str
    codec_keys_file: Path | None = None
    temporal_address_set: bool = False
    """Whether ``SPECIALISTS_TEMPORAL_ADDRESS`` was set: then it wins over the SDK's environment
    configuration (``TEMPORAL_ADDRESS``, a profile's ``address``; :mod:`runtime.connection`)."""
    namespace_set: bool = False
    """Whether ``SPECIALISTS_NAMESPACE`` was set: then it wins over ``TEMPORAL_NAMESPACE`` and a
    profile's ``namespace``."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read the ``SPECIALISTS_*`` variables (``os.environ`` when ``environ`` is ``None``)."""
        env: Mapping[str, str] = os.environ if environ is None else environ

        address = (env.get(ENV_TEMPORAL_ADDRESS) or "").strip() or DEFAULT_TEMPORAL_ADDRESS
        host, port = parse_address(address)

        ui_text = (env.get(ENV_TEMPORAL_UI_PORT) or "").strip()
        ui_port = (
            _parse_port(ui_text, variable=ENV_TEMPORAL_UI_PORT, shown=ui_text)
            if ui_text
            else DEFAULT_TEMPORAL_UI_PORT
        )

        state_dir = state_dir_from_env(env)

        database_url = (env.get(ENV_DATABASE_URL) or "").strip()
        if not database_url:
            database_url = sqlite_url(state_dir / DATABASE_FILENAME)
        elif not _URL_SCHEME.match(database_url):
            raise InvalidInput(
                "invalid_setting",
                f"{ENV_DATABASE_URL} is not a database URL (expected e.g. "
                "sqlite:////abs/path.db or postgresql+psycopg://user@host:5432/db)",
            )

        return cls(
            temporal_address=format_address(host, port),
            codec_keys_file=_optional_path(env, ENV_CODEC_KEYS_FILE),
            temporal_ui_port=ui_port,
            namespace=_name(env, ENV_NAMESPACE, DEFAULT_NAMESPACE),
            task_queue=_name(env, ENV_TASK_QUEUE, DEFAULT_TASK_QUEUE),
            state_dir=state_dir,
            database_url=database_url,
            temporal_address_set=bool((env.get(ENV_TEMPORAL_ADDRESS) or "").strip()),
            namespace_set=bool((env.get(ENV_NAMESPACE) or "").strip()),
        )

    @property
    def temporal_host(self) -> str:
        """The host part of :attr:`temporal_address` (no IPv6 brackets)."""
        return parse_address(self.temporal_address)[0]

    @property
    def temporal_port(self) -> int:
        """The port part of :attr:`temporal_address`."""
        return parse_address(self.temporal_address)[1]

    @property
    def temporal_ui_url(self) -> str:
        """The Web UI of the embedded dev server (same host as the gRPC address)."""
        return f"http://{format_address(self.temporal_host, self.temporal_ui_port)}"

    @property
    def temporal_db_path(self) -> Path:
        """The embedded dev server's SQLite file."""
        return self.state_dir / TEMPORAL_DB_FILENAME


def state_dir_from_env(env: Mapping[str, str]) -> Path:
    """``SPECIALISTS_STATE_DIR`` as an absolute path, else the default state directory. The default
    is absolute (XDG state home), so every working directory sees the same deployment; a relative
    value is taken relative to the working directory. A NUL character is an :class:`InvalidInput`
    naming the variable."""
    state_text = (env.get(ENV_STATE_DIR) or "").strip() or default_state_dir(env)
    if "\x00" in state_text:
        raise InvalidInput("invalid_setting", f"{ENV_STATE_DIR} contains a NUL character")
    return Path(state_text).expanduser().resolve()


def _optional_path(env: Mapping[str, str], variable: str) -> Path | None:
    """An absolute path from ``variable`` (relative to the working directory), or ``None`` unset."""
    text = (env.get(variable) or "").strip()
    if not text:
        return None
    if "\x00" in text:
        raise InvalidInput("invalid_setting", f"{variable} contains a NUL character")
    return Path(text).expanduser().absolute()


def sqlite_url(path: Path) -> str:
    """An SQLAlchemy URL for an SQLite file: ``sqlite:///`` + the absolute path."""
    return f"sqlite:///{path.resolve()}"


ENV_READ_ONLY_BUDGET: Final = "SPECIALISTS_READ_ONLY_BUDGET_SECONDS"
ENV_EDIT_BUDGET: Final = "SPECIALISTS_EDIT_BUDGET_SECONDS"
ENV_APPROVAL_WINDOW: Final = "SPECIALISTS_APPROVAL_WINDOW_SECONDS"
ENV_TEAM_DEADLINE: Final = "SPECIALISTS_TEAM_DEADLINE_SECONDS"
ENV_TEAM_CYCLE: Final = "SPECIALISTS_TEAM_CYCLE_SECONDS"
_MAX_SECONDS: Final = 365 * 24 * 3600


@dataclass(frozen=True)
class RunBudgets:
    """Per-deployment run limits in seconds (docs/architecture.md "Run lifecycle"), captured into each
    contract: runtime 30 min for read_only and 60 min for worktree/pr_ready, approval window 7 days;
    the research team deadline, 24 hours from the team's start, and the research coordinator's cycle,
    60 s (docs/architecture.md "Research team")."""

    read_only_seconds: int = 30 * 60
    edit_seconds: int = 60 * 60
    approval_window_seconds: int = 7 * 24 * 3600
    team_deadline_seconds: int = 24 * 3600
    team_cycle_seconds: int = 60

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RunBudgets:
        """Read ``SPECIALISTS_<NAME>_SECONDS`` for READ_ONLY_BUDGET, EDIT_BUDGET, APPROVAL_WINDOW,
        TEAM_DEADLINE and TEAM_CYCLE; each a whole number of seconds from 1 to one year.
        Raises :class:`InvalidInput` naming the variable."""
        env: Mapping[str, str] = os.environ if environ is None else environ
        defaults = cls()
        return cls(
            read_only_seconds=_seconds(env, ENV_READ_ONLY_BUDGET, defaults.read_only_seconds),
            edit_seconds=_seconds(env, ENV_EDIT_BUDGET, defaults.edit_seconds),
            approval_window_seconds=_seconds(env, ENV_APPROVAL_WINDOW, defaults.approval_window_seconds),
            team_deadline_seconds=_seconds(env, ENV_TEAM_DEADLINE, defaults.team_deadline_seconds),
            team_cycle_seconds=_seconds(env, ENV_TEAM_CYCLE, defaults.team_cycle_seconds),
        )


def _seconds(env: Mapping[str, str], variable: str, default: int) -> int:
    text = (env.get(variable) or "").strip()
    if not text:
        return default
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= _MAX_SECONDS:
        raise InvalidInput(
            "invalid_setting",
            f"{variable}={text!r} must be a whole number of seconds from 1 to {_MAX_SECONDS}",
        )
    return int(text)
