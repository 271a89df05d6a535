"""``specialists models add`` / ``models`` / ``models select`` against the model registry."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from activities.config import DEFAULT_RECORDINGS_DIR
from tests.control.cli_harness import ISO_UTC, Cli

EMPTY = {
    "selected": False,
    "current": None,
    "history": [],
    "registered": [],
    "ceilings": [],
    "class_pools": [],
}


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli.isolated(tmp_path)


@pytest.fixture
def alice(cli: Cli) -> Cli:
    """The CLI with a store in which ``alice`` is registered."""
    assert cli.call("actors", "register", "alice", "--name", "Alice").exit_code == 0
    return cli


def test_added_model_is_listed(alice: Cli) -> None:
    added = alice.run(
        "models", "add", "openai:gpt-4.1",
        "--base-url", "http://127.0.0.1:8080/v1",
        "--api-key-env", "OPENAI_API_KEY",
        "--timeout-s", "90",
        "--ceiling", "2",
        "--actor", "alice",
        "--json",
    ).ok()  # fmt: skip
    model = added["model"]
    assert set(model) == {
        "id", "provider", "name", "base_url", "api_key_env", "timeout_s", "ceiling", "added_by", "added_at",
        "active", "deactivated_by", "deactivated_at", "recordings", "recordings_sha256",
    }  # fmt: skip
    assert (model["active"], model["deactivated_by"], model["deactivated_at"]) == (True, None, None)
    assert (model["recordings"], model["recordings_sha256"]) == (None, None)
    assert (model["id"], model["provider"], model["name"]) == ("openai:gpt-4.1", "openai", "gpt-4.1")
    assert (model["base_url"], model["api_key_env"]) == ("http://127.0.0.1:8080/v1", "OPENAI_API_KEY")
    assert (model["timeout_s"], model["ceiling"], model["added_by"]) == (90, 2, "alice")
    assert re.fullmatch(ISO_UTC, model["added_at"])

    defaults = alice.call("models", "add", "anthropic:claude-sonnet", "--actor", "alice", "--json").ok()
    assert defaults["model"]["base_url"] is None and defaults["model"]["api_key_env"] is None
    assert (defaults["model"]["timeout_s"], defaults["model"]["ceiling"]) == (60, 5)

    shown = alice.call("models", "--json").ok()
    assert {key: shown[key] for key in ("selected", "current", "history")} == {
        "selected": False, "current": None, "history": []
    }  # fmt: skip
    assert shown["registered"] == [defaults["model"], model]

    table = alice.call("models")
    assert table.exit_code == 0, table
    assert "openai:gpt-4.1" in table.stdout and "OPENAI_API_KEY" in table.stdout
    assert "anthropic:claude-sonnet" in table.stdout


def test_models_lists_nothing_without_creating_a_store(cli: Cli) -> None:
    assert cli.call("models", "--json").ok() == EMPTY
    shown = cli.call("models")
    assert shown.exit_code == 0 and "specialists models add" in shown.stdout
    assert not cli.state_dir.exists()


@pytest.mark.parametrize(
    ("args", "exit_code", "code"),
    [
        (["replay:demo"], 2, "replay_is_built_in"),
        (["ollama:llama3:8b"], 2, "unknown_provider"),
        (["no-colon"], 2, "invalid_model_registration"),
        (["openai:x", "--timeout-s", "0"], 2, "invalid_model_registration"),
        (["openai:x", "--timeout-s", "601"], 2, "invalid_model_registration"),
        (["openai:x", "--ceiling", "1001"], 2, "invalid_model_registration"),
        (["openai:x", "--base-url", "https://user:sk-secret@host/v1"], 2, "invalid_base_url"),
        (["openai:x", "--base-url", "file:///etc/passwd"], 2, "invalid_base_url"),
        (["openai:x", "--api-key-env", "sk-secret-value"], 2, "invalid_api_key_env"),
        (["openai:x", "--actor", "zed"], 3, "unknown_actor"),
    ],
)  # fmt: skip
def test_refused_registration_writes_nothing(alice: Cli, args: list[str], exit_code: int, code: str) -> None:
    actor = [] if "--actor" in args else ["--actor", "alice"]
    message = alice.call("models", "add", *args, *actor, "--json").error(exit_code, code)
    assert "sk-secret" not in message
    assert alice.call("models", "--json").ok() == EMPTY


def test_invalid_registration_creates_no_store(cli: Cli) -> None:
    cli.call("models", "add", "openai:x", "--api-key-env", "bad name", "--actor", "alice", "--json").error(
        2, "invalid_api_key_env"
    )
    cli.call("models", "add", "openai:x", "--json").error(2, "actor_required")
    cli.call("models", "add", "foo:x", "--actor", "alice", "--json").error(2, "unknown_provider")
    assert not cli.state_dir.exists()


def test_duplicate_registration_is_refused(alice: Cli) -> None:
    first = alice.call("models", "add", "openai:x", "--ceiling", "3", "--actor", "alice", "--json").ok()
    alice.call("models", "add", "openai:x", "--actor", "alice", "--json").error(4, "duplicate_model")
    assert alice.call("models", "--json").ok()["registered"] == [first["model"]]


def test_registration_needs_the_actors_key(alice: Cli) -> None:
    alice.without_key().call("models", "add", "openai:x", "--actor", "alice", "--json").error(
        4, "actor_key_missing"
    )
    # A CLI that trusts another deployment's token verifies nothing here, so it signs nothing either.
    alice.with_token("another-token-0123456789").call(
        "models", "add", "openai:x", "--actor", "alice", "--json"
    ).error(4, "configuration_unverified")
    assert alice.call("models", "--json").ok() == EMPTY


def test_selection_takes_registered_and_replay_models(alice: Cli, tmp_path: Path) -> None:
    alice.call("models", "add", "openai:gpt-4.1", "--actor", "alice", "--json").ok()
    alice.call("models", "add", "anthropic:claude", "--actor", "alice", "--json").ok()
    demo = json.loads((DEFAULT_RECORDINGS_DIR / "demo.json").read_text(encoding="utf-8"))
    cheap = tmp_path / "cheap.json"
    cheap.write_text(json.dumps({"recordings": demo["recordings"][:1]}), encoding="utf-8")
    alice.call("models", "add", "replay:cheap", "--recordings", str(cheap), "--actor", "alice", "--json").ok()
    selected = alice.call(
        "models", "select", "--primary", "openai:gpt-4.1", "--fallback", "anthropic:claude",
        "--fallback", "replay:demo", "--support", "replay:cheap", "--actor", "alice", "--json",
    ).ok()  # fmt: skip
    assert selected["current"]["primary"] == "openai:gpt-4.1"
    assert selected["current"]["fallbacks"] == ["anthropic:claude", "replay:demo"]
    assert [model["id"] for model in selected["registered"]] == [
        "anthropic:claude",
        "openai:gpt-4.1",
        "replay:cheap",
    ]


def test_a_selection_keeps_the_reasoning_effort_of_each_class_signed_and_shown(alice: Cli) -> None:
    selected = alice.call(
        "models", "select", "--primary", "replay:demo", "--effort", "core=high", "--effort", "support=low",
        "--actor", "alice", "--json",
    ).ok()  # fmt: skip
    assert selected["current"]["efforts"] == {"core": "high", "support": "low"}
    plain = alice.call("models", "select", "--primary", "replay:demo", "--actor", "alice", "--json").ok()
    assert plain["current"]["efforts"] == {}
    shown = alice.call("models", "--json").ok()  # every row verified on read, signatures included
    assert [entry["efforts"] for entry in shown["history"]] == [{}, {"core": "high", "support": "low"}]
    table = alice.call("models")
    assert "core high, support low" in table.stdout


def test_a_selection_keeps_its_advisory_model_signed_and_shown(alice: Cli) -> None:
    selected = alice.call(
        "models",
        "select",
        "--primary",
        "replay:demo",
        "--advisory",
        "replay:demo",
        "--actor",
        "alice",
        "--json",
    ).ok()
    assert selected["current"]["advisory"] == "replay:demo"
    plain = alice.call("models", "select", "--primary", "replay:demo", "--actor", "alice", "--json").ok()
    assert plain["current"]["advisory"] is None
    shown = alice.call("models", "--json").ok()  # every row verified on read, signatures included
    assert [entry["advisory"] for entry in shown["history"]] == [None, "replay:demo"]
    unknown = alice.call(
        "models",
        "select",
        "--primary",
        "replay:demo",
        "--advisory",
        "openai:nobody",
        "--actor",
        "alice",
        "--json",
    )
    assert "openai:nobody" in unknown.error(3, "unknown_model")
    assert len(alice.call("models", "--json").ok()["history"]) == 2


@pytest.mark.parametrize(
    ("effort", "message"),
    [
        ("core", "expected CLASS=EFFORT with CLASS one of support, core, advisory"),
        ("premium=high", "expected CLASS=EFFORT"),
        ("core=extreme", "the effort must be one of low, medium, high"),
        ("core=", "the effort must be one of low, medium, high"),
    ],
)
def test_a_malformed_effort_is_refused_and_nothing_is_selected(alice: Cli, effort: str, message: str) -> None:
    error = alice.call(
        "models", "select", "--primary", "replay:demo", "--effort", effort, "--actor", "alice", "--json"
    ).error(2, "invalid_model_selection")
    assert message in error
    twice = alice.call(
        "models", "select", "--primary", "replay:demo", "--effort", "core=low", "--effort", "core=high",
        "--actor", "alice", "--json",
    ).error(2, "invalid_model_selection")  # fmt: skip
    assert "class core is given twice" in twice
    assert alice.call("models", "--json").ok()["history"] == []


@pytest.mark.parametrize(
    ("args", "missing"),
    [
        (["--primary", "openai:gpt-5"], "openai:gpt-5"),
        (
            ["--primary", "replay:demo", "--fallback", "openai:gpt-4.1", "--fallback", "anthropic:x"],
            "anthropic:x",
        ),
        (["--primary", "openai:gpt-4.1", "--support", "slow:demo"], "slow:demo"),
        (["--primary", "replay:doesnotexist"], "replay:doesnotexist"),
    ],
)  # fmt: skip
def test_selecting_an_unknown_model_is_not_found(alice: Cli, args: list[str], missing: str) -> None:
    alice.call("models", "add", "openai:gpt-4.1", "--actor", "alice", "--json").ok()
    message = alice.call("models", "select", *args, "--actor", "alice", "--json").error(3, "unknown_model")
    assert missing in message
    shown = alice.call("models", "--json").ok()
    assert (shown["selected"], shown["history"]) == (False, [])


def test_human_error_for_an_unknown_model(alice: Cli) -> None:
    result = alice.call("models", "select", "--primary", "openai:gpt-5", "--actor", "alice")
    assert result.exit_code == 3
    assert "openai:gpt-5" in result.stderr and result.stdout == ""
