"""Structured logs for activities and the worker (docs/architecture.md "Configuration").

JSON lines off a terminal, a console renderer on one. Every line is bound with the run (or team) id it
concerns. Never pass a secret, token or model key to a logger.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog

_configured = False


def configure_logging(level: int = logging.INFO) -> None:
    """Configure structlog once per process: JSON lines, or a console renderer on a terminal."""
    global _configured
    if _configured:
        return
    renderer: Any = (
        structlog.dev.ConsoleRenderer() if sys.stderr.isatty() else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    _configured = True


def run_logger(run_id: str, **context: Any) -> Any:
    """A logger bound with ``run_id`` and ``context``."""
    return structlog.get_logger("specialists").bind(run_id=run_id, **context)
