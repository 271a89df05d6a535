"""Structured logs for the worker, activities and the SDK (docs/architecture.md "Logs").

One stream of lines for everything a process logs: structlog's own loggers and every standard-library
logger — the Temporal SDK's warnings, ``workflow.logger`` and ``activity.logger`` lines, SQLAlchemy,
uvicorn — go through the same processors and renderer (JSON lines off a terminal, a console renderer
on one). The level comes from ``SPECIALISTS_LOG_LEVEL`` (``debug``, ``info``, ``warning``, ``error``;
``info`` by default). A line from inside a workflow or activity carries the ids it concerns
(``workflow_id``, ``workflow_type``, and ``run_id``, ``team_id`` or ``queue_id`` by the id's
prefix), taken from what the SDK attaches to its records. Never pass a secret, token or model key to
a logger.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any, Final, TextIO

import structlog

from contracts.errors import InvalidInput
from contracts.ids import RUN_PREFIX, TEAM_PREFIX
from contracts.queue_messages import QUEUE_ID_PREFIX

ENV_LOG_LEVEL: Final = "SPECIALISTS_LOG_LEVEL"
LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


def log_level(environ: Mapping[str, str] | None = None) -> int:
    """The level ``SPECIALISTS_LOG_LEVEL`` names (``info`` when unset or empty); anything else is an
    :class:`InvalidInput` naming the variable."""
    env = os.environ if environ is None else environ
    text = (env.get(ENV_LOG_LEVEL) or "").strip().lower()
    if not text:
        return logging.INFO
    if text not in LEVELS:
        raise InvalidInput(
            "invalid_setting",
            f"{ENV_LOG_LEVEL}={env.get(ENV_LOG_LEVEL)!r}: expected one of {', '.join(LEVELS)}",
        )
    return LEVELS[text]


def _temporal_ids(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """The workflow or activity a standard-library record was logged from, as fields."""
    record = event.get("_record")
    if record is None:
        return event
    info = getattr(record, "temporal_workflow", None) or getattr(record, "temporal_activity", None)
    if isinstance(info, Mapping):
        workflow_id = info.get("workflow_id")
        if isinstance(workflow_id, str):
            event.setdefault("workflow_id", workflow_id)
            owner = "-".join(workflow_id.split("-")[:2])  # SOR-… of SOR-…-analysis
            if workflow_id.startswith(RUN_PREFIX):
                event.setdefault("run_id", owner)
            elif workflow_id.startswith(TEAM_PREFIX):
                event.setdefault("team_id", owner)
            elif workflow_id.startswith(QUEUE_ID_PREFIX):
                event.setdefault("queue_id", workflow_id)
        for key in ("workflow_type", "activity_type"):
            if isinstance(info.get(key), str):
                event.setdefault(key, info[key])
    return event


class _OurHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The root handler :func:`configure_logging` installs (and replaces when called again)."""


def configure_logging(
    level: int | None = None,
    *,
    stream: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
) -> None:
    """Send structlog's and the standard library's logs to ``stream`` (standard error) as one kind of
    line, at ``level`` (else ``SPECIALISTS_LOG_LEVEL``). Calling it again replaces the configuration."""
    chosen = log_level(environ) if level is None else level
    out = sys.stderr if stream is None else stream
    renderer: Any = structlog.dev.ConsoleRenderer() if out.isatty() else structlog.processors.JSONRenderer()
    timestamper = structlog.processors.TimeStamper(fmt="iso", utc=True)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            timestamper,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(chosen),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=True,
    )
    handler = _OurHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.contextvars.merge_contextvars,
                structlog.stdlib.add_logger_name,
                structlog.stdlib.add_log_level,
                timestamper,
                _temporal_ids,
                structlog.stdlib.PositionalArgumentsFormatter(),
            ],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _OurHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(chosen)
    # Every process opens the store, and Alembic says at info which dialect it found and each step
    # it ran: below debug, the store's own one line says when a migration changed the schema.
    logging.getLogger("alembic").setLevel(chosen if chosen <= logging.DEBUG else max(chosen, logging.WARNING))
    _ids_as_fields_not_text()


def _ids_as_fields_not_text() -> None:
    """The SDK appends the workflow's or activity's info to every message's text; the ids are fields
    here (:func:`_temporal_ids`), so the message stays the message."""
    from temporalio import activity, workflow

    workflow.logger.workflow_info_on_message = False
    activity.logger.activity_info_on_message = False


def run_logger(run_id: str, **context: Any) -> Any:
    """A logger bound with ``run_id`` and ``context``."""
    return structlog.get_logger("specialists").bind(run_id=run_id, **context)
