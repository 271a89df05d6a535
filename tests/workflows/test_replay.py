"""Every recorded history in ``tests/histories/`` replays against the current workflow code.

A failure here means a change would break runs already in flight: put it behind
``workflow.patched()`` (DESIGN.md "Temporal conventions") instead of changing the command sequence.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from worker import WORKFLOWS, sandbox_runner

HISTORIES = Path(__file__).resolve().parent.parent / "histories"
RECORDED = sorted(HISTORIES.glob("*.json"))


def test_a_history_is_recorded_for_every_run_path() -> None:
    names = {path.name.split(".")[0] for path in RECORDED}
    assert {
        "recommended",
        "accepted",
        "rejected",
        "cancelled_ready",
        "cancelled_while_running",
        "failed_automation_off",
        "failed_output_schema",
        "accepted_after_fallback",
        "expired",
    } <= names


@pytest.mark.parametrize("path", RECORDED, ids=[path.stem for path in RECORDED])
async def test_recorded_history_replays_without_nondeterminism(path: Path) -> None:
    workflow_id = path.stem.replace(".", "-")
    history = WorkflowHistory.from_json(workflow_id, path.read_text(encoding="utf-8"))
    replayer = Replayer(
        workflows=list(WORKFLOWS),
        data_converter=pydantic_data_converter,
        workflow_runner=sandbox_runner(),
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"
