"""``specialists queue spec`` against a real Temporal dev server, a worker process, a real git
repository and a registered replay model answering: a spec pass fills a thin proposal's sections
with cited evidence and it stays a proposal (exit 0); without --actor it is exit 2; an unknown key
exit 3; an item past proposal exit 4."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contracts.queue_items import SCOPE_SECTIONS
from infra.devserver import DevServer
from tests.control.cli_harness import Cli, running_worker
from tests.store.git_repository import git, make_orders_repository

TITLE = "Speed up the orders report"
EVIDENCE = "file:reports.sql"


def _answer() -> dict[str, Any]:
    return {
        "role": "product-manager",
        "axis": "specification",
        "inspected_evidence": [EVIDENCE],
        "findings": [
            {
                "severity": "low",
                "title": name,
                "evidence_refs": [EVIDENCE],
                "detail": f"{name}: [bold]from reports.sql[/bold]",
            }
            for name in SCOPE_SECTIONS
        ],
        "confidence": 0.8,
        "confidence_band": "high",
        "closure": "closed",
        "recommended_next_action": "review the spec",
    }


@pytest.fixture(scope="module")
def deployment(
    temporal_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Cli, Path]]:
    root = tmp_path_factory.mktemp("cli-queue-spec")
    cli = Cli.isolated(
        root,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"cli-queue-spec-{uuid.uuid4().hex}",
    )
    assert cli.call("actors", "register", "alice", "--name", "Alice").exit_code == 0
    repo = make_orders_repository(root / "orders")
    cli.call("repos", "add", "orders", str(repo), "--actor", "alice", "--json").ok()
    recordings = root / "spec.json"
    entry = {"profile": "product-manager", "kind": "analysis", "title": TITLE, "response": _answer()}
    recordings.write_text(json.dumps({"recordings": [entry]}), encoding="utf-8")
    cli.call(
        "models", "add", "replay:spec", "--recordings", str(recordings), "--actor", "alice", "--json"
    ).ok()
    cli.call("models", "select", "--primary", "replay:spec", "--actor", "alice", "--json").ok()
    with running_worker(cli.env, root / "worker.log"):
        yield cli, repo


def _add(cli: Cli, root: Path, data: dict[str, Any]) -> str:
    proposal = root / f"proposal-{uuid.uuid4().hex}.json"
    proposal.write_text(json.dumps(data), encoding="utf-8")
    added = cli.call("queue", "add", "--input-json", f"@{proposal}", "--actor", "alice", "--json").ok()
    return str(added["item"]["key"])


def test_queue_spec_fills_a_thin_proposal_and_it_stays_a_proposal(
    deployment: tuple[Cli, Path], tmp_path: Path
) -> None:
    cli, repo = deployment
    key = _add(cli, tmp_path, {"title": TITLE, "repo_alias": "orders", "evidence": [EVIDENCE]})
    done = cli.call("queue", "spec", key, "--actor", "alice", "--json").ok()
    item = done["item"]
    assert item["status"] == "proposal"
    assert done["spec_pass"]["written"] == list(SCOPE_SECTIONS)
    assert done["spec_pass"]["commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert item["events"][-1]["kind"] == "spec_written"
    assert item["scope"]["tests"] == "tests: [bold]from reports.sql[/bold]"
    human = cli.call("queue", "spec", key, "--actor", "alice")
    assert human.exit_code == 0, str(human)
    assert "stays a proposal" in human.stdout and "kept problem" in human.stdout
    # The model's text is data: its markup is shown as written, never interpreted.
    assert "[bold]from reports.sql[/bold]" in human.stdout


def test_queue_spec_exit_codes(deployment: tuple[Cli, Path], tmp_path: Path) -> None:
    cli, _repo = deployment
    assert cli.call("queue", "spec", "ORD-999", "--json").exit_code == 2
    assert cli.call("queue", "spec", "ORD-999", "--actor", "alice", "--json").exit_code == 3
    key = _add(cli, tmp_path, {"title": "A thought without a repository"})
    refused = cli.call("queue", "spec", key, "--actor", "alice", "--json")
    assert refused.exit_code == 4, str(refused)
    assert refused.json()["error"]["code"] == "spec_no_repository"
