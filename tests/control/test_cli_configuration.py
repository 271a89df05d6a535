"""Configuration commands: ``policy``, ``actors``, ``models``, ``repos``, ``status``, and usage errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from activities.config import DEFAULT_RECORDINGS_DIR
from catalog.loader import load_catalog
from tests.control.cli_harness import ISO_UTC, Cli
from tests.store.git_repository import make_working_tree

NOTHING_SELECTED = {
    "selected": False,
    "current": None,
    "history": [],
    "registered": [],
    "ceilings": [],
    "class_pools": [],
}

DEFAULT_POLICY = {
    "mode": "recommend",
    "maximum_automatic_tier": "recommend",
    "set_by": None,
    "set_at": None,
    "default": True,
}


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli.isolated(tmp_path)


@pytest.fixture
def alice(cli: Cli) -> Cli:
    """The CLI with a store in which ``alice`` is registered."""
    assert cli.call("actors", "register", "alice", "--name", "Alice").exit_code == 0
    return cli


# --------------------------------------------------------------------------------------------------- policy


def test_policy_shows_the_default_without_creating_a_store(cli: Cli) -> None:
    result = cli.run("policy", "--json")
    assert result.ok() == DEFAULT_POLICY
    assert not cli.state_dir.exists()

    shown = cli.call("policy")
    assert shown.exit_code == 0, shown
    assert "built-in default" in shown.stdout
    assert "recommend" in shown.stdout
    assert not cli.state_dir.exists()


def test_policy_change_by_a_registered_actor_is_stored(alice: Cli) -> None:
    result = alice.run(
        "policy", "--mode", "guarded", "--maximum-automatic-tier", "read_only", "--actor", "alice", "--json"
    )
    changed = result.ok()
    assert changed["mode"] == "guarded"
    assert changed["maximum_automatic_tier"] == "read_only"
    assert changed["set_by"] == "alice"
    assert changed["default"] is False
    assert re.fullmatch(ISO_UTC, changed["set_at"])
    assert alice.call("policy", "--json").ok() == changed

    mode_only = alice.call("policy", "--mode", "off", "--actor", "alice", "--json").ok()
    assert (mode_only["mode"], mode_only["maximum_automatic_tier"]) == ("off", "read_only")


@pytest.mark.parametrize(
    ("args", "exit_code", "code"),
    [
        (["--maximum-automatic-tier", "worktree", "--actor", "alice"], 2, "invalid_policy"),
        (["--maximum-automatic-tier", "pr_ready", "--actor", "alice"], 2, "invalid_policy"),
        (["--mode", "always", "--actor", "alice"], 2, "invalid_policy"),
        (["--mode", "off", "--actor", "mallory"], 3, "unknown_actor"),
        (["--mode", "off"], 2, "actor_required"),
        (["--actor", "alice"], 2, "nothing_to_change"),
    ],
)
def test_refused_policy_change_changes_nothing(
    alice: Cli, args: list[str], exit_code: int, code: str
) -> None:
    before = alice.call(
        "policy", "--mode", "guarded", "--maximum-automatic-tier", "read_only", "--actor", "alice", "--json"
    ).ok()

    alice.call("policy", *args, "--json").error(exit_code, code)

    assert alice.call("policy", "--json").ok() == before


def test_ceiling_above_read_only_is_explained(alice: Cli) -> None:
    result = alice.call("policy", "--maximum-automatic-tier", "worktree", "--actor", "alice", "--json")
    assert "read_only" in result.error(2, "invalid_policy")


# --------------------------------------------------------------------------------------------------- actors


def test_actor_registration_rules(cli: Cli) -> None:
    first = cli.run("actors", "register", "alice", "--name", "Alice", "--json").ok()
    assert first["actor"]["id"] == "alice"
    assert first["actor"]["name"] == "Alice"
    assert first["actor"]["registered_by"] is None
    assert re.fullmatch(ISO_UTC, first["actor"]["registered_at"])

    cli.call("actors", "register", "bob", "--name", "Bob", "--json").error(2, "actor_required")
    cli.call("actors", "register", "bob", "--name", "Bob", "--actor", "zed", "--json").error(
        3, "unknown_actor"
    )
    cli.call("actors", "register", "alice", "--name", "Alice", "--actor", "alice", "--json").error(
        4, "duplicate_actor"
    )
    second = cli.call("actors", "register", "bob", "--name", "Bob", "--actor", "alice", "--json").ok()
    assert second["actor"]["registered_by"] == "alice"

    listed = cli.call("actors", "--json").ok()
    assert [(a["id"], a["name"], a["registered_by"]) for a in listed["actors"]] == [
        ("alice", "Alice", None),
        ("bob", "Bob", "alice"),
    ]


def test_actors_with_none_registered(cli: Cli) -> None:
    assert cli.call("actors", "--json").ok() == {"actors": [], "trust_root": None}
    shown = cli.call("actors")
    assert shown.exit_code == 0
    assert "no actors" in shown.stdout
    assert not cli.state_dir.exists()


# --------------------------------------------------------------------------------------------------- models


def test_models_with_none_selected_say_so_plainly(cli: Cli) -> None:
    assert cli.run("models", "--json").ok() == NOTHING_SELECTED
    shown = cli.call("models")
    assert shown.exit_code == 0, shown
    assert "none selected" in shown.stdout
    assert "specialists models select" in shown.stdout
    assert not cli.state_dir.exists()


def test_model_selection_keeps_a_history_newest_first(alice: Cli, tmp_path: Path) -> None:
    for model in ("openai:gpt-x", "openai:llama3:8b"):
        alice.call("models", "add", model, "--actor", "alice", "--json").ok()
    demo = json.loads((DEFAULT_RECORDINGS_DIR / "demo.json").read_text(encoding="utf-8"))
    cheap = tmp_path / "cheap.json"
    cheap.write_text(json.dumps({"recordings": demo["recordings"][:1]}), encoding="utf-8")
    alice.call("models", "add", "replay:cheap", "--recordings", str(cheap), "--actor", "alice", "--json").ok()
    first = alice.run(
        "models",
        "select",
        "--primary",
        "replay:demo",
        "--fallback",
        "openai:gpt-x",
        "--fallback-mode",
        "ordered",
        "--actor",
        "alice",
        "--json",
    ).ok()
    assert first["selected"] is True
    current = first["current"]
    assert current["primary"] == "replay:demo"
    assert current["fallbacks"] == ["openai:gpt-x"]
    assert current["fallback_mode"] == "ordered"
    assert current["support"] is None
    assert current["selected_by"] == "alice"
    assert re.fullmatch(ISO_UTC, current["selected_at"])

    alice.call(
        "models", "select", "--primary", "openai:llama3:8b", "--support", "replay:cheap", "--actor", "alice"
    )
    shown = alice.call("models", "--json").ok()
    assert shown["current"]["primary"] == "openai:llama3:8b"
    assert shown["current"]["fallback_mode"] == "primary_only"
    assert shown["current"]["support"] == "replay:cheap"
    assert [entry["primary"] for entry in shown["history"]] == ["openai:llama3:8b", "replay:demo"]
    assert shown["history"][0] == shown["current"]

    table = alice.call("models")
    assert table.exit_code == 0
    assert "openai:llama3:8b" in table.stdout and "replay:demo" in table.stdout


def test_fallbacks_alone_imply_ordered_mode(alice: Cli) -> None:
    alice.call("models", "add", "openai:x", "--actor", "alice", "--json").ok()
    selected = alice.call(
        "models", "select", "--primary", "replay:demo", "--fallback", "openai:x", "--actor", "alice", "--json"
    ).ok()
    assert selected["current"]["fallback_mode"] == "ordered"


@pytest.mark.parametrize(
    ("args", "exit_code", "code"),
    [
        (["--primary", "no-colon", "--actor", "alice"], 2, "invalid_model_selection"),
        (["--primary", ":name", "--actor", "alice"], 2, "invalid_model_selection"),
        (["--primary", "replay:demo", "--fallback", "bad", "--actor", "alice"], 2, "invalid_model_selection"),
        (
            ["--primary", "replay:demo", "--fallback", "openai:x", "--fallback-mode", "primary_only",
             "--actor", "alice"],
            2,
            "invalid_model_selection",
        ),
        (["--primary", "replay:demo", "--fallback-mode", "sometimes", "--actor", "alice"], 2,
         "invalid_model_selection"),
        (["--primary", "replay:demo"], 2, "actor_required"),
        (["--primary", "replay:demo", "--actor", "zed"], 3, "unknown_actor"),
    ],
)  # fmt: skip
def test_refused_model_selection_changes_nothing(
    alice: Cli, args: list[str], exit_code: int, code: str
) -> None:
    alice.call("models", "select", *args, "--json").error(exit_code, code)
    assert alice.call("models", "--json").ok() == NOTHING_SELECTED


# ---------------------------------------------------------------------------------------------------- repos


def test_repository_is_added_and_listed(alice: Cli, tmp_path: Path) -> None:
    tree = make_working_tree(tmp_path / "orders-service")

    added = alice.run("repos", "add", "orders-service", str(tree), "--actor", "alice", "--json").ok()
    repository = added["repository"]
    assert repository["alias"] == "orders-service"
    assert repository["path"] == str(tree.resolve())
    assert repository["default_branch"] == "main"
    assert repository["added_by"] == "alice"
    assert re.fullmatch(ISO_UTC, repository["added_at"])

    feature = alice.call(
        "repos", "add", "orders-feature", str(tree), "--branch", "feature", "--actor", "alice", "--json"
    ).ok()
    assert feature["repository"]["default_branch"] == "feature"

    listed = alice.call("repos", "--json").ok()
    assert [r["alias"] for r in listed["repositories"]] == ["orders-feature", "orders-service"]
    shown = alice.call("repos")
    assert "orders-service" in shown.stdout


def test_refused_repository_changes_nothing(alice: Cli, tmp_path: Path) -> None:
    tree = make_working_tree(tmp_path / "tree")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert alice.call("repos", "add", "app", str(tree), "--actor", "alice").exit_code == 0

    alice.call("repos", "add", "other", str(plain), "--actor", "alice", "--json").error(
        2, "not_a_git_repository"
    )
    alice.call("repos", "add", "other", str(tree / "docs"), "--actor", "alice", "--json").error(
        2, "not_a_git_repository"
    )
    alice.call("repos", "add", "app", str(tree), "--actor", "alice", "--json").error(4, "duplicate_alias")
    alice.call("repos", "add", "other", str(tree), "--branch", "nope", "--actor", "alice", "--json").error(
        2, "unknown_branch"
    )
    alice.call("repos", "add", "Bad Alias", str(tree), "--actor", "alice", "--json").error(2, "invalid_alias")
    alice.call("repos", "add", "other", str(tree), "--json").error(2, "actor_required")
    alice.call("repos", "add", "other", str(tree), "--actor", "zed", "--json").error(3, "unknown_actor")

    assert [r["alias"] for r in alice.call("repos", "--json").ok()["repositories"]] == ["app"]


def test_repos_with_none_added(cli: Cli) -> None:
    assert cli.call("repos", "--json").ok() == {"repositories": []}
    assert "no repositories" in cli.call("repos").stdout
    assert not cli.state_dir.exists()


# ------------------------------------------------------------------------------------------ nothing written


def test_invalid_configuration_input_creates_no_store(cli: Cli, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    refused = [
        (["policy", "--maximum-automatic-tier", "worktree", "--actor", "alice"], "invalid_policy"),
        (["policy", "--mode", "always", "--actor", "alice"], "invalid_policy"),
        (["actors", "register", "Not An Id", "--name", "X"], "invalid_actor_id"),
        (["models", "select", "--primary", "no-colon", "--actor", "alice"], "invalid_model_selection"),
        (["repos", "add", "app", str(plain), "--actor", "alice"], "not_a_git_repository"),
        (["repos", "add", "Bad Alias", str(plain), "--actor", "alice"], "invalid_alias"),
    ]
    for args, code in refused:
        cli.call(*args, "--json").error(2, code)
        assert not cli.state_dir.exists(), args


# --------------------------------------------------------------------------------------------------- status


def test_status_of_a_fresh_deployment(cli: Cli) -> None:
    result = cli.run("status", "--json")
    status = result.ok()
    catalog = load_catalog()
    assert status["catalog"] == {
        "catalog_version": catalog.version,
        "catalog_sha256": catalog.sha256,
        "profiles": 20,
    }
    assert status["policy"] == DEFAULT_POLICY
    assert status["models"] == {"selected": False, "current": None}
    assert (status["repositories"], status["actors"]) == (0, 0)
    assert not cli.state_dir.exists()

    shown = cli.call("status")
    assert shown.exit_code == 0, shown
    assert "none selected" in shown.stdout
    assert catalog.sha256 in shown.stdout


def test_status_after_configuration(alice: Cli) -> None:
    alice.call("models", "select", "--primary", "replay:demo", "--actor", "alice")
    alice.call("policy", "--mode", "guarded", "--actor", "alice")

    status = alice.call("status", "--json").ok()

    assert status["models"]["selected"] is True
    assert status["models"]["current"]["primary"] == "replay:demo"
    assert status["policy"]["mode"] == "guarded"
    assert status["policy"]["set_by"] == "alice"
    assert status["actors"] == 1
    assert "replay:demo" in alice.call("status").stdout


# ----------------------------------------------------------------------------------------- environment, usage


def test_database_url_overrides_the_state_directory(cli: Cli, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.db"
    configured = cli.with_env(SPECIALISTS_DATABASE_URL=f"sqlite:///{elsewhere}")

    configured.call("actors", "register", "alice", "--name", "Alice", "--json").ok()

    assert elsewhere.is_file()
    assert not cli.state_dir.exists()
    assert [a["id"] for a in configured.call("actors", "--json").ok()["actors"]] == ["alice"]
    assert cli.call("actors", "--json").ok() == {"actors": [], "trust_root": None}


def test_malformed_database_url_is_invalid_input(cli: Cli) -> None:
    broken = cli.with_env(SPECIALISTS_DATABASE_URL="not a url")
    assert "SPECIALISTS_DATABASE_URL" in broken.call("status", "--json").error(2, "invalid_setting")


def test_unknown_command_and_bad_flag_exit_2(cli: Cli) -> None:
    unknown = cli.run("frobnicate")
    assert unknown.exit_code == 2, unknown
    assert "frobnicate" in unknown.stderr
    assert unknown.stdout == ""

    bad_flag = cli.run("policy", "--colour", "--json")
    assert "--colour" in bad_flag.error(2, "invalid_usage")

    missing_value = cli.call("route", "--input-json")
    assert missing_value.exit_code == 2, missing_value
    assert cli.call("models", "select", "--actor", "alice", "--json").exit_code == 2  # no --primary


def test_help_exits_0(cli: Cli) -> None:
    result = cli.run("--help")
    assert result.exit_code == 0, result
    for command in ("catalog", "route", "policy", "status", "create", "show", "list"):
        assert command in result.stdout


def test_every_protected_configuration_change_is_in_the_configuration_events_newest_first(
    alice: Cli, tmp_path: Path
) -> None:
    tree = make_working_tree(tmp_path / "orders-service")
    config = tmp_path / "config.toml"
    config.write_text('executor = "patch"\n', encoding="utf-8")
    alice.call("policy", "--mode", "guarded", "--actor", "alice", "--json").ok()
    alice.call("models", "add", "openai:gpt-4.1", "--actor", "alice", "--json").ok()
    alice.call(
        "models",
        "select",
        "--primary",
        "replay:demo",
        "--fallback",
        "openai:gpt-4.1",
        "--actor",
        "alice",
        "--json",
    ).ok()
    alice.call("repos", "add", "orders-service", str(tree), "--actor", "alice", "--json").ok()
    alice.call(
        "repos", "update", "orders-service", "--config", str(config), "--actor", "alice", "--json"
    ).ok()
    events = alice.call("configuration", "events", "--json").ok()["events"]
    seen = [(e["kind"], e["actor"], e["record_kind"], e["record_id"]) for e in events]
    assert seen[:5] == [
        ("repository_config_updated", "alice", "repository", "orders-service"),
        ("repository_added", "alice", "repository", "orders-service"),
        ("models_selected", "alice", "model_selection", None),
        ("model_registered", "alice", "model", "openai:gpt-4.1"),
        ("policy_set", "alice", "policy", None),
    ]
    messages = [e["message"] for e in events[:5]]
    assert messages[2] == "models selected: primary replay:demo; fallbacks openai:gpt-4.1 (ordered)"
    assert messages[4].startswith("policy set: mode guarded")
    assert f"repository 'orders-service' added: {tree.resolve()}, branch 'main'" == messages[1]
