"""Operator-supplied replay recordings (README "Replay recordings"): a real provider's answers are
exported from a finished run into a recordings file, registered as ``replay:NAME`` (checked at
registration, stored signed), selected, and answer a later run of the same work item with no call to
the provider; bad files, built-in and unknown replay ids are refused with the reason and change
nothing.

Real components: CLI invocations, a worker process, the shared dev server, SQLite, and a scripted
OpenAI-compatible model server on loopback playing the real provider (``openai:live``).
"""

from __future__ import annotations

import json
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from activities.config import DEFAULT_RECORDINGS_DIR
from infra.devserver import DevServer
from tests.activities.providers.wire_server import Scripted, WireServer, openai_completion
from tests.control.cli_harness import SLOW_QUERY, Cli, CliResult, running_worker

LIVE_MODEL = "openai:live"
KEY_ENV = "WIRE_TEST_LIVE_API_KEY"
TITLE = "Audit the nightly invoices export that slowed down after the schema change"


def _demo(kind: str, profile: str) -> dict[str, Any]:
    title = json.loads(SLOW_QUERY.read_text(encoding="utf-8"))["title"]
    data = json.loads((DEFAULT_RECORDINGS_DIR / "demo.json").read_text(encoding="utf-8"))
    for entry in data["recordings"]:
        if (entry["kind"], entry["profile"], entry["title"]) == (kind, profile, title):
            return dict(entry["response"])
    raise AssertionError(f"no recording of {profile} {kind}")


# What the live provider answers: the demo's answers for the same profiles, marked so a replayed
# answer is known to be this one.
ANALYSIS = {
    **_demo("analysis", "database-optimizer"),
    "recommended_next_action": "Measure on staging (live).",
}
REVIEW = {**_demo("review", "backend-architect"), "recommended_next_action": "Keep the index (live)."}


def _answer(output: dict[str, Any]) -> Scripted:
    return Scripted(200, openai_completion(json.dumps(output)))


@pytest.fixture(scope="module")
def deployment(temporal_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("replay-recordings")
    wire = WireServer()
    wire.start()
    cli = Cli.isolated(
        root,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"replay-recordings-{uuid.uuid4().hex}",
        **{KEY_ENV: "live-model-key-0123456789"},
    )
    cli.call("actors", "register", "alice", "--name", "Alice", "--json").ok()
    add = ("models", "add", LIVE_MODEL, "--base-url", wire.base_url, "--api-key-env", KEY_ENV)
    cli.call(*add, "--actor", "alice", "--json").ok()
    item = {**json.loads(SLOW_QUERY.read_text(encoding="utf-8")), "title": TITLE}
    item_file = root / "invoices.json"
    item_file.write_text(json.dumps(item), encoding="utf-8")
    try:
        with running_worker(cli.env, root / "worker.log"):
            yield cli, wire, root, item_file
    finally:
        wire.stop()


def _create(cli: Cli, item_file: Path) -> dict[str, Any]:
    return cli.call(
        "create", "--input-json", f"@{item_file}", "--tier", "read_only", "--enqueue", "--actor", "alice",
        "--request-id", uuid.uuid4().hex, "--wait", "--timeout", "120", "--json",
    ).ok()  # fmt: skip


def _invalid_recordings(result: CliResult) -> tuple[str, list[str]]:
    assert result.exit_code == 2, str(result)
    error = result.json()["error"]
    assert error["code"] == "invalid_recordings", str(result)
    return error["message"], error["problems"]


def test_a_live_providers_answers_are_recorded_registered_and_replayed_without_calling_it(
    deployment: Any,
) -> None:
    cli, wire, root, item_file = deployment
    wire.reset()
    wire.script(_answer(ANALYSIS), _answer(REVIEW))
    cli.call("models", "select", "--primary", LIVE_MODEL, "--actor", "alice", "--json").ok()
    live = _create(cli, item_file)
    assert live["status"] == "awaiting_decision", live
    assert len(wire.received) == 2

    output = root / "invoices-recordings.json"
    exported = cli.call("models", "export-recordings", live["run_id"], "--output", str(output), "--json").ok()
    assert exported["recordings"] == [
        {"profile": "database-optimizer", "kind": "analysis", "title": TITLE},
        {"profile": "backend-architect", "kind": "review", "title": TITLE},
    ]
    assert stat.S_IMODE(output.stat().st_mode) == 0o600
    # An existing file is never overwritten.
    again = cli.call("models", "export-recordings", live["run_id"], "--output", str(output), "--json")
    again.error(4, "output_exists")

    model = cli.call(
        "models", "add", "replay:invoices", "--recordings", str(output), "--actor", "alice", "--json"
    ).ok()["model"]
    assert (model["provider"], model["recordings"], model["active"]) == ("replay", 2, True)
    assert len(model["recordings_sha256"]) == 64
    listed = cli.call("models", "--json").ok()["registered"]
    assert model in listed
    cli.call("models", "test", "replay:invoices", "--actor", "alice", "--json").ok()

    cli.call("models", "select", "--primary", "replay:invoices", "--actor", "alice", "--json").ok()
    replayed = _create(cli, item_file)
    assert replayed["status"] == "awaiting_decision", replayed
    assert replayed["result"] == live["result"] and replayed["review"] == live["review"]
    assert replayed["result"]["recommended_next_action"] == "Measure on staging (live)."
    assert len(wire.received) == 2  # the provider was not called again


def test_a_replay_miss_on_registered_recordings_names_the_nearest_recorded_title(deployment: Any) -> None:
    cli, _wire, root, item_file = deployment
    recordings = root / "one.json"
    entry = {"profile": "database-optimizer", "kind": "analysis", "title": TITLE, "response": ANALYSIS}
    recordings.write_text(json.dumps({"recordings": [entry]}), encoding="utf-8")
    cli.call(
        "models", "add", "replay:one", "--recordings", str(recordings), "--actor", "alice", "--json"
    ).ok()
    cli.call("models", "select", "--primary", "replay:one", "--actor", "alice", "--json").ok()
    other = root / "other-title.json"
    other.write_text(
        json.dumps({**json.loads(item_file.read_text(encoding="utf-8")), "title": TITLE + " again"}),
        encoding="utf-8",
    )
    failed = cli.call(
        "create", "--input-json", f"@{other}", "--tier", "read_only", "--enqueue", "--actor", "alice",
        "--wait", "--timeout", "120", "--json",
    )  # fmt: skip
    assert failed.exit_code == 7, str(failed)
    error = failed.json()["error"]
    assert error["type"] == "replay_no_recording", error
    assert (
        f"the nearest recorded key is profile 'database-optimizer', job 'analysis', title {TITLE!r}"
        in (error["message"])
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"\xff\xfe not utf-8", "not UTF-8 text"),
        (b"{not json", "not JSON"),
        (b'{"recordings": []}', "file: recordings: List should have at least 1 item"),
        (
            b'{"recordings": [{"profile": "x", "kind": "guess", "title": "t", "response": {}}]}',
            "entry 0: kind",
        ),
    ],
)
def test_a_bad_recordings_file_is_refused_naming_the_problem_and_registers_nothing(
    deployment: Any, tmp_path: Path, content: bytes, problem: str
) -> None:
    cli = deployment[0]
    before = cli.call("models", "--json").ok()["registered"]
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    result = cli.call("models", "add", "replay:bad", "--recordings", str(bad), "--actor", "alice", "--json")
    message, problems = _invalid_recordings(result)
    assert any(problem in item for item in problems), problems
    assert problem in message
    assert cli.call("models", "--json").ok()["registered"] == before


def test_every_problem_of_a_recordings_file_is_listed_at_once(deployment: Any, tmp_path: Path) -> None:
    cli = deployment[0]
    review_without_verdict = {**REVIEW}
    review_without_verdict.pop("verdict", None)
    entries = [
        {"profile": "database-optimizer", "kind": "analysis", "title": TITLE, "response": ANALYSIS},
        {"profile": "database-optimizer", "kind": "analysis", "title": TITLE, "response": ANALYSIS},
        {
            "profile": "backend-architect",
            "kind": "review",
            "title": TITLE,
            "response": review_without_verdict,
        },
        {"profile": "someone-else", "kind": "analysis", "title": TITLE, "response": ANALYSIS},
    ]
    bad = tmp_path / "many.json"
    bad.write_text(json.dumps({"recordings": entries}), encoding="utf-8")
    result = cli.call("models", "add", "replay:many", "--recordings", str(bad), "--actor", "alice", "--json")
    _message, problems = _invalid_recordings(result)
    assert [problem.split(":")[0] for problem in problems] == ["entry 1", "entry 2", "entry 3"], problems
    assert "already recorded by entry 0" in problems[0]


@pytest.mark.parametrize(
    ("args", "exit_code", "code"),
    [
        (["replay:mine"], 2, "recordings_required"),
        (["replay:demo", "--recordings", "FILE"], 2, "replay_is_built_in"),
        (
            ["replay:mine", "--recordings", "FILE", "--base-url", "http://127.0.0.1:1/v1"],
            2,
            "invalid_model_registration",
        ),
        (["openai:mine", "--recordings", "FILE"], 2, "invalid_model_id"),
        (["replay:mine", "--recordings", "MISSING"], 2, "input_not_found"),
    ],
)
def test_replay_registrations_that_cannot_work_are_refused(
    deployment: Any, tmp_path: Path, args: list[str], exit_code: int, code: str
) -> None:
    cli = deployment[0]
    good = tmp_path / "good.json"
    entry = {"profile": "database-optimizer", "kind": "analysis", "title": TITLE, "response": ANALYSIS}
    good.write_text(json.dumps({"recordings": [entry]}), encoding="utf-8")
    args = [
        str(good) if a == "FILE" else str(tmp_path / "missing.json") if a == "MISSING" else a for a in args
    ]
    cli.call("models", "add", *args, "--actor", "alice", "--json").error(exit_code, code)


def test_selecting_a_replay_model_without_recordings_is_refused_with_the_fix(deployment: Any) -> None:
    cli = deployment[0]
    message = cli.call(
        "models", "select", "--primary", "replay:doesnotexist", "--actor", "alice", "--json"
    ).error(3, "unknown_model")
    assert "replay:demo" in message and "--recordings FILE" in message


def test_exporting_a_run_without_answers_is_refused(deployment: Any) -> None:
    cli, _wire, root, _item = deployment
    created = cli.call(
        "create", "--input-json", f"@{SLOW_QUERY}", "--tier", "read_only", "--request-id", uuid.uuid4().hex,
        "--json",
    ).ok()  # fmt: skip
    assert created["status"] == "ready"
    cli.call(
        "models", "export-recordings", created["run_id"], "--output", str(root / "none.json"), "--json"
    ).error(4, "run_has_no_answers")
    assert not (root / "none.json").exists()
