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
    """``[{"code", "message"}]``: each setting of ``environ`` a worker would refuse at start, in the
    order the worker reads them (empty when it would start); reads nothing but ``environ`` and the
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
    ]
    problems: list[dict[str, str]] = []
    for check in checks:
        try:
            check()
        except InvalidInput as error:
            problems.append({"code": error.code, "message": error.message})
    return problems


def _codec_keys(environ: Mapping[str, str]) -> None:
    """The keys file as the worker's client loads it when it connects; nothing when none is set."""
    from runtime.codec import load_key_ring
    from runtime.settings import ENV_CODEC_KEYS_FILE, _optional_path

    path = _optional_path(environ, ENV_CODEC_KEYS_FILE)
    if path is not None:
        load_key_ring(path)
