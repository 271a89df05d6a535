"""The worker's own settings checked without starting a worker (docs/architecture.md
"Configuration"): what ``specialists status`` reports so a worker that would refuse to start — a
malformed budget, log level, tracing mode, health or metrics address, model-class ceilings,
deployment version or payload keys file — shows before one is started. Each check is the parser the
worker itself runs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
    from runtime.settings import ENV_CLASS_CEILINGS, RunBudgets
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
        lambda: require_usable_state_dir(environ),
    ]
    problems: list[dict[str, str]] = []
    for check in checks:
        try:
            check()
        except InvalidInput as error:
            problems.append({"code": error.code, "message": error.message})
    return problems


def require_usable_state_dir(environ: Mapping[str, str]) -> None:
    """The state directory (``SPECIALISTS_STATE_DIR``, else the default) as a worker uses it for
    worktrees and probes: a directory it may write, or one it may make. Raises :class:`InvalidInput`
    ``state_dir_unusable`` naming the variable and why — a file stands in its path, or its nearest
    existing directory is not writable. Reads the file system; makes nothing."""
    import os
    from pathlib import Path

    from contracts.constants import default_state_dir
    from runtime.settings import ENV_STATE_DIR

    text = (environ.get(ENV_STATE_DIR) or "").strip() or default_state_dir(environ)
    if "\x00" in text:
        return  # Settings.from_env refuses it, naming the variable
    path = Path(text).expanduser().absolute()
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        why = f"{existing} is not a directory"
    elif not os.access(existing, os.W_OK | os.X_OK):
        why = f"{existing} is not writable by this user"
    else:
        return
    raise InvalidInput(
        "state_dir_unusable",
        f"{ENV_STATE_DIR}={str(path)!r} cannot be used ({why}): worktree runs and probes would fail",
    )


def _codec_keys(environ: Mapping[str, str]) -> None:
    """The keys file as the worker's client loads it when it connects; nothing when none is set."""
    from runtime.codec import load_key_ring
    from runtime.settings import ENV_CODEC_KEYS_FILE, _optional_path

    path = _optional_path(environ, ENV_CODEC_KEYS_FILE)
    if path is not None:
        load_key_ring(path)
