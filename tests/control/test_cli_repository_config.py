"""``repos add ALIAS PATH --config FILE`` and ``repos update ALIAS --config FILE``: a repository's
configuration from a TOML file, shown by ``repos --json`` in full and summarised in the ``repos``
table. Both are protected configuration changes (the deployment's action token); invalid input — a
bad or unreadable file included — creates no store and changes nothing; an update replaces the
configuration and nothing else."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.control.cli_harness import ACTION_TOKEN, ISO_UTC, Cli, token_leaks, transcript_texts
from tests.store.git_repository import make_working_tree

OTHER_TOKEN = "another-deployment-token-41c8e0"
DEFAULT_CONFIG: dict[str, Any] = {
    "executor": "patch",
    "command": None,
    "verify": [],
    "env": [],
    "model_credentials": [],
    "network": False,
    "allow_unconfined": False,
    "command_timeout_seconds": 600,
}
COMMAND_TOML = """\
executor = "command"
command = ["my-agent", "--task-file", "TASK.md"]
verify = [["make", "test"], ["make", "lint"]]
env = ["AGENT_MODE"]
model_credentials = ["AGENT_API_KEY"]
network = true
command_timeout_seconds = 900
"""
COMMAND_CONFIG = {
    "executor": "command",
    "command": ["my-agent", "--task-file", "TASK.md"],
    "verify": [["make", "test"], ["make", "lint"]],
    "env": ["AGENT_MODE"],
    "model_credentials": ["AGENT_API_KEY"],
    "network": True,
    "allow_unconfined": False,
    "command_timeout_seconds": 900,
}
VERIFY_TOML = 'verify = [["pytest", "-q"]]\ncommand_timeout_seconds = 120\n'
VERIFY_CONFIG = {**DEFAULT_CONFIG, "verify": [["pytest", "-q"]], "command_timeout_seconds": 120}


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli.isolated(tmp_path)


@pytest.fixture
def alice(cli: Cli) -> Cli:
    """The CLI with a store in which ``alice`` is registered."""
    cli.call("actors", "register", "alice", "--name", "Alice", "--json").ok()
    return cli


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_working_tree(tmp_path / "orders-service")


def _file(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _repositories(cli: Cli) -> list[dict[str, Any]]:
    repositories = cli.call("repos", "--json").ok()["repositories"]
    assert isinstance(repositories, list)
    return repositories


# --------------------------------------------------------------------------------------------- add


def test_a_repository_is_added_with_its_configuration(alice: Cli, tree: Path, tmp_path: Path) -> None:
    config = _file(tmp_path, "agent.toml", COMMAND_TOML)
    added = alice.run(
        "repos", "add", "orders-service", str(tree), "--config", str(config), "--actor", "alice", "--json"
    ).ok()
    repository = added["repository"]
    assert repository["alias"] == "orders-service"
    assert repository["path"] == str(tree.resolve())
    assert repository["default_branch"] == "main"
    assert repository["added_by"] == "alice"
    assert re.fullmatch(ISO_UTC, repository["added_at"])
    assert repository["config"] == COMMAND_CONFIG
    assert _repositories(alice) == [repository]


def test_a_repository_added_without_a_config_has_the_default(alice: Cli, tree: Path) -> None:
    added = alice.call("repos", "add", "app", str(tree), "--actor", "alice", "--json").ok()
    assert added["repository"]["config"] == DEFAULT_CONFIG
    assert [r["config"] for r in _repositories(alice)] == [DEFAULT_CONFIG]


def test_the_repos_table_summarises_each_configuration(alice: Cli, tree: Path, tmp_path: Path) -> None:
    config = _file(tmp_path, "agent.toml", COMMAND_TOML)
    assert (
        alice.call("repos", "add", "agent", str(tree), "--config", str(config), "--actor", "alice").exit_code
        == 0
    )
    assert alice.call("repos", "add", "plain", str(tree), "--actor", "alice").exit_code == 0

    shown = alice.call("repos")
    assert shown.exit_code == 0, shown
    header = next(line for line in shown.stdout.splitlines() if "alias" in line)
    for column in ("executor", "command", "verify", "env", "network"):
        assert column in header
    agent = next(line for line in shown.stdout.splitlines() if " agent " in line)
    assert re.search(r"command\s+\S\s+set\s+\S\s+2 commands\s+\S\s+1 name, 1 credential\s+\S\s+on", agent), (
        agent
    )
    plain = next(line for line in shown.stdout.splitlines() if " plain " in line)
    assert re.search(r"patch\s+\S\s+-\s+\S\s+-\s+\S\s+-\s+\S\s+off", plain), plain


def test_adding_with_a_config_shows_the_configuration_in_full(alice: Cli, tree: Path, tmp_path: Path) -> None:
    config = _file(tmp_path, "agent.toml", COMMAND_TOML)
    shown = alice.call("repos", "add", "agent", str(tree), "--config", str(config), "--actor", "alice")
    assert shown.exit_code == 0, shown
    assert "configuration of agent" in shown.stdout
    assert '["my-agent", "--task-file", "TASK.md"]' in shown.stdout
    assert '["make", "lint"]' in shown.stdout
    assert "AGENT_MODE" in shown.stdout and "AGENT_API_KEY" in shown.stdout
    assert re.search(r"model credentials\W+AGENT_API_KEY", shown.stdout)
    assert re.search(r"confinement\W+required: fails closed", shown.stdout)
    assert "900 s" in shown.stdout


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ('executor = "command"\ncommand = "my-agent --go"\n', "not a shell string"),
        ('command = ["my-agent"]\n', "command is only allowed with executor = 'command'"),
        ('env = ["HOME"]\n', "env is only allowed with executor = 'command'"),
        ("network = true\n", "network = true is only allowed with executor = 'command'"),
        ('executor = "command"\ncommand = ["a"]\nenv = ["1X"]\n', "is not a valid variable name"),
        (
            'executor = "command"\ncommand = ["a"]\nenv = ["SPECIALISTS_ACTION_TOKEN"]\n',
            "'SPECIALISTS_ACTION_TOKEN' is one of the deployment's own settings",
        ),
        (
            'executor = "command"\ncommand = ["a"]\nmodel_credentials = ["SPECIALISTS_ACTION_TOKEN_FILE"]\n',
            "never passed to a command",
        ),
        ('executor = "command"\ncommand = ["a"]\nenv = ["OPENAI_API_KEY"]\n', "in model_credentials instead"),
        ("allow_unconfined = true\n", "allow_unconfined = true needs a command or verify commands"),
        ("unknown = 1\n", "unknown: unknown key"),
        ("command_timeout_seconds = 0\n", "out of range"),
        ('executor = "command\n', "not valid TOML"),
    ],
)
def test_a_bad_config_file_creates_no_store(
    cli: Cli, tree: Path, tmp_path: Path, text: str, rule: str
) -> None:
    config = _file(tmp_path, "bad.toml", text)
    message = cli.call(
        "repos", "add", "app", str(tree), "--config", str(config), "--actor", "alice", "--json"
    ).error(2, "invalid_repository_config")
    assert rule in message
    assert str(config) in message
    assert not cli.state_dir.exists()


def test_a_bad_config_file_adds_nothing(alice: Cli, tree: Path, tmp_path: Path) -> None:
    config = _file(tmp_path, "bad.toml", 'env = ["HOME"]\n')
    alice.call("repos", "add", "app", str(tree), "--config", str(config), "--actor", "alice", "--json").error(
        2, "invalid_repository_config"
    )
    assert _repositories(alice) == []


def test_a_config_file_that_cannot_be_read_is_refused_clearly(cli: Cli, tree: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    message = cli.call(
        "repos", "add", "app", str(tree), "--config", str(missing), "--actor", "alice", "--json"
    ).error(2, "repository_config_unreadable")
    assert str(missing) in message and "does not exist" in message
    human = cli.call("repos", "add", "app", str(tree), "--config", str(tmp_path), "--actor", "alice")
    assert human.exit_code == 2
    assert human.stderr.startswith("error [repository_config_unreadable]: ")
    assert "is not a regular file" in human.stderr
    assert not cli.state_dir.exists()


# ------------------------------------------------------------------------------------------- update


def test_update_replaces_the_configuration_and_nothing_else(alice: Cli, tree: Path, tmp_path: Path) -> None:
    agent = _file(tmp_path, "agent.toml", COMMAND_TOML)
    verify = _file(tmp_path, "verify.toml", VERIFY_TOML)
    added = alice.call(
        "repos",
        "add",
        "app",
        str(tree),
        "--branch",
        "feature",
        "--config",
        str(agent),
        "--actor",
        "alice",
        "--json",
    ).ok()["repository"]
    alice.call("repos", "add", "other", str(tree), "--config", str(agent), "--actor", "alice", "--json").ok()
    alice.call("actors", "register", "bob", "--name", "Bob", "--actor", "alice", "--json").ok()

    updated = (
        alice.as_actor("bob")
        .run("repos", "update", "app", "--config", str(verify), "--actor", "bob", "--json")
        .ok()
    )

    assert updated["repository"] == {**added, "config": VERIFY_CONFIG}
    assert {r["alias"]: r["config"] for r in _repositories(alice)} == {
        "app": VERIFY_CONFIG,
        "other": COMMAND_CONFIG,
    }

    empty = _file(tmp_path, "empty.toml", "")
    reset = alice.call("repos", "update", "app", "--config", str(empty), "--actor", "alice", "--json").ok()
    assert reset["repository"]["config"] == DEFAULT_CONFIG


def test_update_shows_the_new_configuration(alice: Cli, tree: Path, tmp_path: Path) -> None:
    alice.call("repos", "add", "app", str(tree), "--actor", "alice", "--json").ok()
    shown = alice.call(
        "repos", "update", "app", "--config", str(_file(tmp_path, "v.toml", VERIFY_TOML)), "--actor", "alice"
    )
    assert shown.exit_code == 0, shown
    assert "configuration of app" in shown.stdout
    assert '["pytest", "-q"]' in shown.stdout
    assert "120 s" in shown.stdout


def test_refused_updates_change_nothing(alice: Cli, tree: Path, tmp_path: Path) -> None:
    agent = _file(tmp_path, "agent.toml", COMMAND_TOML)
    verify = _file(tmp_path, "verify.toml", VERIFY_TOML)
    alice.call("repos", "add", "app", str(tree), "--config", str(agent), "--actor", "alice", "--json").ok()
    before = _repositories(alice)

    alice.call("repos", "update", "app", "--actor", "alice", "--json").error(2, "config_required")
    alice.call("repos", "update", "app", "--config", str(verify), "--json").error(2, "actor_required")
    alice.call("repos", "update", "Bad Alias", "--config", str(verify), "--actor", "alice", "--json").error(
        2, "invalid_alias"
    )
    bad = _file(tmp_path, "bad.toml", 'executor = "command"\n')
    message = alice.call("repos", "update", "app", "--config", str(bad), "--actor", "alice", "--json").error(
        2, "invalid_repository_config"
    )
    assert "command is required when executor is 'command'" in message
    alice.call(
        "repos", "update", "app", "--config", str(tmp_path / "gone.toml"), "--actor", "alice", "--json"
    ).error(2, "repository_config_unreadable")
    alice.call("repos", "update", "ghost", "--config", str(verify), "--actor", "alice", "--json").error(
        3, "unknown_repository"
    )
    alice.call("repos", "update", "app", "--config", str(verify), "--actor", "zed", "--json").error(
        3, "unknown_actor"
    )

    assert _repositories(alice) == before


def test_invalid_update_input_creates_no_store(cli: Cli, tmp_path: Path) -> None:
    bad = _file(tmp_path, "bad.toml", "network = true\n")
    cli.call("repos", "update", "app", "--config", str(bad), "--actor", "alice", "--json").error(
        2, "invalid_repository_config"
    )
    cli.call("repos", "update", "app", "--actor", "alice", "--json").error(2, "config_required")
    assert not cli.state_dir.exists()


# ------------------------------------------------------------------------------- the key and the token


def _changes(tree: Path, tmp_path: Path) -> list[list[str]]:
    config = str(_file(tmp_path, "agent.toml", COMMAND_TOML))
    return [
        ["repos", "add", "app", str(tree), "--config", config, "--actor", "alice"],
        ["repos", "update", "app", "--config", config, "--actor", "alice"],
    ]


def test_without_a_key_no_store_is_created(tmp_path: Path, tree: Path) -> None:
    bare = Cli.isolated(tmp_path).without_key()
    for args in _changes(tree, tmp_path):
        message = bare.call(*args, "--json").error(4, "actor_key_missing")
        assert "SPECIALISTS_ACTOR_KEY_FILE" in message
        assert not bare.state_dir.exists(), args


def test_without_a_key_nothing_changes(alice: Cli, tree: Path, tmp_path: Path) -> None:
    alice.call("repos", "add", "app", str(tree), "--actor", "alice", "--json").ok()
    before = _repositories(alice)
    for args in _changes(tree, tmp_path):
        alice.without_key().call(*args, "--json").error(4, "actor_key_missing")
        alice.stranger().call(*args, "--json").error(4, "actor_key_mismatch")
    assert _repositories(alice) == before


def test_another_deployments_token_verifies_nothing_and_changes_nothing(
    alice: Cli, tree: Path, tmp_path: Path
) -> None:
    alice.call("repos", "add", "app", str(tree), "--actor", "alice", "--json").ok()
    before = _repositories(alice)
    other = alice.with_token(OTHER_TOKEN)
    for args in _changes(tree, tmp_path):
        message = other.call(*args, "--json").error(4, "configuration_unverified")
        assert OTHER_TOKEN not in message and ACTION_TOKEN not in message
    assert _repositories(alice) == before
    # The deployment's own token still works.
    alice.call(*_changes(tree, tmp_path)[1], "--json").ok()
    assert (
        token_leaks([ACTION_TOKEN, OTHER_TOKEN], files=[alice.state_dir], texts=transcript_texts(alice)) == []
    )


def test_reading_repositories_needs_a_trust_anchor_but_no_token(alice: Cli, tree: Path) -> None:
    alice.call("repos", "add", "app", str(tree), "--actor", "alice", "--json").ok()
    bare = alice.without_token().without_key()
    bare.call("repos", "--json").error(4, "trust_root_not_configured")
    pinned = bare.with_env(SPECIALISTS_TRUST_ROOT=alice.call("actors", "--json").ok()["trust_root"])
    assert [r["alias"] for r in pinned.call("repos", "--json").ok()["repositories"]] == ["app"]
    assert pinned.call("repos").exit_code == 0


def test_help_describes_update_and_config(cli: Cli) -> None:
    listed = cli.call("repos", "--help")
    assert listed.exit_code == 0 and "update" in listed.stdout
    update = cli.call("repos", "update", "--help")
    assert update.exit_code == 0 and "--config" in update.stdout
    assert "--config" in cli.call("repos", "add", "--help").stdout
