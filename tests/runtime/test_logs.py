"""One stream of structured lines for everything a process logs: structlog's loggers, the standard
library's (the Temporal SDK, ``workflow.logger``, ``activity.logger``), at the configured level, with
the ids of the workflow a line comes from."""

from __future__ import annotations

import io
import json
import logging
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import structlog
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

from contracts.errors import InvalidInput
from runtime.logs import ENV_LOG_LEVEL, configure_logging, log_level, run_logger


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """Each test configures the process's logging; put back what was there before."""
    root, alembic = logging.getLogger(), logging.getLogger("alembic")
    handlers, level, alembic_level = root.handlers[:], root.level, alembic.level
    on_message = (workflow.logger.workflow_info_on_message, activity.logger.activity_info_on_message)
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    alembic.setLevel(alembic_level)
    workflow.logger.workflow_info_on_message, activity.logger.activity_info_on_message = on_message
    structlog.reset_defaults()


@pytest.fixture
def stream() -> io.StringIO:
    out = io.StringIO()
    configure_logging(stream=out, environ={})
    return out


def _lines(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]


def test_a_standard_library_line_is_a_json_line_with_level_logger_and_time(stream: io.StringIO) -> None:
    logging.getLogger("temporalio.worker._workflow").warning("task failed: %s", "NondeterminismError")
    (line,) = _lines(stream)
    assert line["event"] == "task failed: NondeterminismError"
    assert line["level"] == "warning" and line["logger"] == "temporalio.worker._workflow"
    assert line["timestamp"].endswith("Z")


def test_structlog_lines_share_the_stream(stream: io.StringIO) -> None:
    run_logger("SOR-0000000000000001", activity="capture_contract").info("captured", tier="read_only")
    (line,) = _lines(stream)
    assert line["run_id"] == "SOR-0000000000000001" and line["event"] == "captured"


def test_the_level_comes_from_the_environment_for_both_kinds_of_logger() -> None:
    out = io.StringIO()
    configure_logging(stream=out, environ={ENV_LOG_LEVEL: "WARNING"})
    logging.getLogger("temporalio").info("quiet")
    structlog.get_logger("x").info("quiet too")
    logging.getLogger("temporalio").error("loud")
    assert [line["event"] for line in _lines(out)] == ["loud"]
    assert log_level({}) == logging.INFO and log_level({ENV_LOG_LEVEL: " debug "}) == logging.DEBUG


def test_an_unknown_level_is_refused_naming_the_variable() -> None:
    with pytest.raises(InvalidInput, match="SPECIALISTS_LOG_LEVEL='loud': expected one of debug"):
        log_level({ENV_LOG_LEVEL: "loud"})


def test_configuring_again_replaces_the_handler_instead_of_doubling_lines(stream: io.StringIO) -> None:
    configure_logging(stream=stream, environ={})
    logging.getLogger("alembic").warning("once")
    assert [line["event"] for line in _lines(stream)] == ["once"]


def test_opening_a_store_says_one_line_when_it_migrated_and_nothing_when_current(
    stream: io.StringIO, tmp_path: Path
) -> None:
    from store.database import open_store
    from store.migrate import head_revision

    url = f"sqlite:///{tmp_path / 'store.db'}"
    open_store(url, create=True).close()
    (line,) = _lines(stream)
    assert line["event"] == f"store schema upgraded from an empty database to {head_revision()}"
    assert line["logger"] == "store.migrate" and line["level"] == "info"
    open_store(url, create=True).close()
    assert len(_lines(stream)) == 1


def test_at_debug_alembic_says_each_step_it_takes(tmp_path: Path) -> None:
    from store.database import open_store

    out = io.StringIO()
    configure_logging(stream=out, environ={ENV_LOG_LEVEL: "debug"})
    open_store(f"sqlite:///{tmp_path / 'store.db'}", create=True).close()
    loggers = {line["logger"] for line in _lines(out)}
    assert any(name.startswith("alembic") for name in loggers) and "store.migrate" in loggers


@activity.defn(name="logs_test_activity")
def _logging_activity(note: str) -> str:
    activity.logger.info("activity says %s", note)
    return note


@workflow.defn(name="LogsTestWorkflow", sandboxed=False)
class _LoggingWorkflow:
    @workflow.run
    async def run(self, note: str) -> str:
        workflow.logger.info("workflow says %s", note)
        return str(
            await workflow.execute_activity(
                _logging_activity, note, start_to_close_timeout=timedelta(seconds=10)
            )
        )


@pytest.mark.asyncio
async def test_workflow_and_activity_lines_carry_the_run_they_belong_to(
    temporal_client: Client, stream: io.StringIO
) -> None:
    queue = f"logs-{uuid.uuid4().hex[:8]}"
    job_id = "SOR-LOGS000000000001-analysis"  # a run's model job: its lines name the run
    with_pool = ThreadPoolExecutor(max_workers=2)
    async with Worker(
        temporal_client,
        task_queue=queue,
        workflows=[_LoggingWorkflow],
        activities=[_logging_activity],
        activity_executor=with_pool,
    ):
        await temporal_client.execute_workflow(_LoggingWorkflow.run, "hello", id=job_id, task_queue=queue)
    with_pool.shutdown()
    lines = {line["event"]: line for line in _lines(stream) if "says" in line["event"]}
    said = lines["workflow says hello"]
    assert said["workflow_id"] == job_id and said["run_id"] == "SOR-LOGS000000000001"
    assert said["workflow_type"] == "LogsTestWorkflow" and said["level"] == "info"
    done = lines["activity says hello"]
    assert done["run_id"] == "SOR-LOGS000000000001" and done["activity_type"] == "logs_test_activity"
