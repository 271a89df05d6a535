"""What a worker logs when a model call fails: a replay miss (no recording for the request) is an
expected outcome and is one log line naming the error type and the key looked for, with no
traceback; an unexpected error in a provider is still logged with its traceback."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from temporalio.client import Client

from activities.providers.base import CompletionRequest
from contracts.enums import Tier
from contracts.errors import ErrorType
from contracts.runs import RunStatus, RunView
from infra.devserver import DevServer
from tests.workflows.harness import DASHBOARD, bench, example, within, worker_process


@within(60)
async def test_a_replay_miss_is_one_log_line_with_its_key_and_no_traceback(
    temporal_dev_server: DevServer, temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    log = tmp_path / "worker.log"
    state = tmp_path / "state"
    async with (
        bench(temporal_client, task_queue, tmp_path) as b,
        worker_process(temporal_dev_server, task_queue, state, log=log),
    ):
        view = await b.create(DASHBOARD, tier=Tier.READ_ONLY, enqueue=True)
        handle = temporal_client.get_workflow_handle(view.run_id, result_type=RunView)
        final = await handle.result()
    assert final.status is RunStatus.FAILED
    assert final.error is not None and final.error.type == ErrorType.REPLAY_NO_RECORDING

    text = log.read_text(encoding="utf-8")
    assert "Traceback" not in text, text
    assert "Completing activity as failed" not in text, text
    mentioning = [line for line in text.splitlines() if ErrorType.REPLAY_NO_RECORDING in line]
    assert len(mentioning) == 1, text
    entry = json.loads(mentioning[0])
    assert entry["event"] == "model_call_failed"
    assert entry["error_type"] == ErrorType.REPLAY_NO_RECORDING
    assert entry["replay_model"] == "replay:demo"
    assert entry["replay_profile"] == "frontend-developer"
    assert entry["replay_job"] == "analysis"
    assert entry["replay_title"] == example(DASHBOARD).title


class BrokenProvider:
    """A provider with a bug: every call raises an error no provider classifies."""

    def complete(self, request: CompletionRequest) -> str:
        raise RuntimeError("provider bug: unexpected state")


@within(60)
async def test_an_unexpected_provider_error_is_still_logged_with_its_traceback(
    temporal_client: Client, task_queue: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="temporalio.activity")
    providers = {"broken": BrokenProvider()}
    async with (
        bench(temporal_client, task_queue, tmp_path, providers=providers, model="broken:m") as b,
        b.worker(),
    ):
        view = await b.create(DASHBOARD, tier=Tier.READ_ONLY, enqueue=True)
        final = await b.terminal(view.run_id, timeout=45)
    assert final.status is RunStatus.FAILED

    failures = [
        record
        for record in caplog.records
        if record.name == "temporalio.activity"
        and record.getMessage().startswith("Completing activity as failed")
    ]
    assert failures, [record.getMessage() for record in caplog.records]
    assert all(record.levelno == logging.WARNING for record in failures)
    raised = [record.exc_info[1] for record in failures if record.exc_info is not None]
    assert raised and all(isinstance(error, RuntimeError) for error in raised)
