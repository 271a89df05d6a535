"""What ``python -m worker`` says at start about the protected actions it cannot verify: a worker
with neither ``SPECIALISTS_TRUST_ROOT`` nor the action token logs one line naming every protected
action it will refuse, the refusal code, why and the fix; a worker with a trust anchor logs none.
The worker runs as a process against the shared dev server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.devserver import DevServer
from tests.workflows.harness import ACTION_TOKEN, within, worker_process
from worker.process import PROTECTED_COMMANDS


def _refusal_lines(log: Path) -> list[str]:
    return [
        line for line in log.read_text(encoding="utf-8").splitlines() if "protected_actions_refused" in line
    ]


@within(60)
async def test_a_worker_without_a_trust_anchor_names_the_actions_it_will_refuse_in_one_line(
    temporal_dev_server: DevServer, task_queue: str, tmp_path: Path
) -> None:
    log = tmp_path / "worker.log"
    async with worker_process(temporal_dev_server, task_queue, tmp_path / "state", log=log, token=None):
        pass

    (line,) = _refusal_lines(log)
    entry = json.loads(line)
    assert entry["level"] == "warning"
    assert entry["code"] == "trust_root_not_configured"
    assert entry["actions"] == list(PROTECTED_COMMANDS)
    for command in ("create --enqueue", "approve", "execute", "decide", "cancel", "models test"):
        assert command in entry["actions"]
    assert "SPECIALISTS_TRUST_ROOT" in entry["reason"] and "SPECIALISTS_ACTION_TOKEN" in entry["reason"]
    assert "SPECIALISTS_TRUST_ROOT" in entry["fix"]
    assert ACTION_TOKEN.decode() not in log.read_text(encoding="utf-8")


@pytest.mark.parametrize("anchor", ["token", "trust_root"])
@within(60)
async def test_a_worker_with_a_trust_anchor_warns_of_no_refusal(
    temporal_dev_server: DevServer, task_queue: str, tmp_path: Path, anchor: str
) -> None:
    log = tmp_path / "worker.log"
    token = ACTION_TOKEN if anchor == "token" else None
    environment = {"SPECIALISTS_TRUST_ROOT": "0" * 64} if anchor == "trust_root" else {}
    async with worker_process(
        temporal_dev_server, task_queue, tmp_path / "state", log=log, token=token, environment=environment
    ):
        pass
    assert _refusal_lines(log) == []
