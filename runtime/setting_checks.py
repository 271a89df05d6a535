"""The worker's own settings checked without starting a worker (docs/architecture.md
"Configuration"): what ``specialists status`` reports so a worker that would refuse to start — a
malformed budget, log level, tracing mode, health or metrics address, model-class ceilings,
deployment version or payload keys file — shows before one is started. Each check is the parser the
worker itself runs."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from contracts.errors import InvalidInput


def worker_setting_problems(environ: Mapping[str, str]) -> list[dict[str, str]]:
    """``[{"code", "message"}]``: each setting of ``environ`` a worker would refuse at start (or,
    for the state directory, could not use), in the order the worker reads them (empty when it would
    start); reads nothing but ``environ`` and the
    payload keys file it names (``SPECIALISTS_CODEC_KEYS_FILE``: missing, readable by others or
    malformed — never its keys, which no message shows)."""
    from contracts.model_classes import parse_class_ceilings
    from runtime.health import health_address
    from runtime.logs import log_level
    from runtime.settings import ENV_CLASS_CEILINGS, RunBudgets, state_dir_from_env
    from runtime.telemetry import metrics_address, tracing_mode
    from runtime.versioning import deployment_version

    checks: list[Callable[[], Any]] = [
        lambda: log_level(environ),
        lambda: health_address(environ),
        lambda: deployment_version(environ),
        lambda: metrics_address(environ),
        lambda: tracing_mode(environ),
        lambda: RunBudgets.from_env(environ),
        lambda: parse_class_ceilings(environ.get(ENV_CLASS_CEILINGS, ""), variable=ENV_CLASS_CEILINGS),
        lambda: _codec_keys(environ),
        lambda: require_usable_state_dir(state_dir_from_env(environ)),
    ]
    problems: list[dict[str, str]] = []
    for check in checks:
        try:
            check()
        except InvalidInput as error:
            problems.append({"code": error.code, "message": error.message})
    return problems


def directory_problem(directory: Path) -> str | None:
    """Why ``directory`` could not be used to write files in — the nearest of it and its ancestors that
    exists is not a directory, or is not one this user may write — or ``None`` when it could (it
    exists, or can be made). Reads the file system; makes nothing."""
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable by this user"
    return None


def require_usable_state_dir(state_dir: Path) -> None:
    """The state directory as a worker uses it for worktrees and probes: a directory it may write, or
    one it may make (:func:`directory_problem`). Raises :class:`InvalidInput` ``state_dir_unusable``
    naming the variable and why."""
    from runtime.settings import ENV_STATE_DIR

    why = directory_problem(state_dir)
    if why is not None:
        raise InvalidInput(
            "state_dir_unusable",
            f"{ENV_STATE_DIR}={str(state_dir)!r} cannot be used ({why}): worktree runs and probes would fail",
        )


def _codec_keys(environ: Mapping[str, str]) -> None:
    """The keys file as the worker's client loads it when it connects; nothing when none is set."""
    from runtime.codec import load_key_ring
    from runtime.settings import ENV_CODEC_KEYS_FILE, _optional_path

    path = _optional_path(environ, ENV_CODEC_KEYS_FILE)
    if path is not None:
        load_key_ring(path)
