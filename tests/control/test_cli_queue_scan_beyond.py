"""``specialists queue scan ALIAS --beyond`` against a real Temporal dev server, a worker process and
a real git repository, the model a registered replay model: without a selected model the pass is
refused and nothing is entered; with one, the proposal quoting the README truly is proposed as
``beyond`` and the fabricated one dropped and listed; a second pass proposes nothing twice."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from contracts.intake_beyond import BEYOND_PROFILE
from infra.devserver import DevServer
from tests.activities.intake_repository import make_intake_repository
from tests.control.cli_harness import Cli, running_worker


def _recordings(path: Path) -> Path:
    finding = {"severity": "low", "evidence_refs": ["file:README.md"]}
    response = {
        "role": BEYOND_PROFILE,
        "axis": "README claims against layout and history",
        "inspected_evidence": ["file:README.md"],
        "findings": [
            {
                **finding,
                "title": "README promises caching the code lacks",
                "quotes": [{"path": "README.md", "line": 7, "text": "- add caching to the report query"}],
            },
            {
                **finding,
                "title": "README claims the service is fast",
                "quotes": [{"path": "README.md", "line": 3, "text": "The service answers in 1 ms"}],
            },
        ],
        "confidence": 0.6,
        "confidence_band": "medium",
        "closure": "partial",
        "recommended_next_action": "review the proposals",
    }
    recording = {
        "profile": BEYOND_PROFILE,
        "kind": "analysis",
        "title": "Beyond-source pass of demo",
        "response": response,
    }
    path.write_text(json.dumps({"recordings": [recording]}), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def bench(temporal_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    root = tmp_path_factory.mktemp("cli-queue-scan-beyond")
    cli = Cli.isolated(
        root,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"cli-queue-beyond-{uuid.uuid4().hex}",
    )
    assert cli.call("actors", "register", "alice", "--name", "Alice").exit_code == 0
    repos = root / "repos"
    repos.mkdir()
    repo = make_intake_repository(repos)
    cli.call("repos", "add", "demo", str(repo), "--actor", "alice", "--json").ok()
    recordings = _recordings(root / "beyond.json")
    cli.call(
        "models", "add", "replay:beyond", "--recordings", str(recordings), "--actor", "alice", "--json"
    ).ok()
    with running_worker(cli.env, root / "worker.log"):
        yield cli


def test_scan_beyond_proposes_the_true_quote_drops_the_fabricated_one_and_reports_exit_codes(
    bench: Cli,
) -> None:
    cli = bench
    refused = cli.call("queue", "scan", "demo", "--beyond", "--actor", "alice", "--json")
    assert refused.exit_code == 4 and refused.json()["error"]["code"] == "no_model_selected"
    assert cli.call("queue", "list", "--status", "proposal", "--json").ok()["items"] == []
    cli.call("models", "select", "--primary", "replay:beyond", "--actor", "alice", "--json").ok()

    first = cli.call("queue", "scan", "demo", "--beyond", "--actor", "alice", "--json").ok()
    beyond = [row for row in first["proposed"] if row["kind"] == "beyond"]
    assert [(row["sub_kind"], row["path"], row["line"]) for row in beyond] == [("gap", "README.md", 7)]
    assert [(row["title"], row["line"]) for row in first["dropped"]] == [
        ("README claims the service is fast", 3)
    ]
    assert first["counts"]["dropped"] == 1
    shown = cli.call("queue", "show", beyond[0]["key"], "--json").ok()["item"]
    assert shown["intake"]["kind"] == "beyond" and shown["status"] == "proposal"
    assert "file:README.md:7" in shown["evidence"]

    second = cli.call("queue", "scan", "demo", "--beyond", "--actor", "alice", "--json").ok()
    assert second["proposed"] == [] and beyond[0]["key"] in [row["key"] for row in second["already_queued"]]
    human = cli.call("queue", "scan", "demo", "--beyond", "--actor", "alice")
    assert human.exit_code == 0 and "dropped (quote not matching): 1" in human.stdout
    unknown = cli.call("queue", "scan", "nope", "--beyond", "--actor", "alice", "--json")
    assert unknown.exit_code == 3
