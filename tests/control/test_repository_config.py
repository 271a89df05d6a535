"""A repository's configuration file (``repos add|update --config FILE``): TOML read with ``tomllib``
into :class:`contracts.config.RepositoryConfig`. Every key has a type and a rule; an unknown key, a
wrong type or a broken rule is refused as invalid input naming the key and the rule, and a file that
cannot be read is refused plainly. The same rules hold wherever the model is built — except the
environment rules (no ``SPECIALISTS_*`` name, no secret-looking name in ``env``), which registration,
capture and execution check, so a configuration captured before them still decodes."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from contracts.config import (
    MAX_ARGUMENT_LENGTH,
    MAX_ARGV_ITEMS,
    MAX_ENV_NAMES,
    MAX_VERIFY_COMMANDS,
    RepositoryConfig,
    RepositoryExecutor,
    environment_rule_violations,
    looks_like_secret,
    repository_config_from_mapping,
)
from contracts.errors import InvalidInput
from control.repository_config import MAX_CONFIG_BYTES, parse_repository_config, read_repository_config

COMMAND_CONFIG = """
executor = "command"
command = ["my-agent", "--task-file", "TASK.md"]
verify = [["make", "test"], ["make", "lint"]]
env = ["AGENT_MODE", "_PRIVATE_1"]
model_credentials = ["AGENT_API_KEY"]
network = true
allow_unconfined = true
command_timeout_seconds = 900
"""


def _refusal(text: str) -> str:
    """The message of the refusal of ``text`` (it must be ``invalid_repository_config``, exit 2)."""
    with pytest.raises(InvalidInput) as refused:
        parse_repository_config(text)
    assert refused.value.code == "invalid_repository_config"
    assert refused.value.exit_code == 2
    return refused.value.message


# --------------------------------------------------------------------------------------------- accepted


def test_an_empty_file_is_the_default_configuration() -> None:
    config = parse_repository_config("")
    assert config == RepositoryConfig()
    assert config.executor is RepositoryExecutor.PATCH
    assert (config.command, config.verify, config.env, config.network) == (None, (), (), False)
    assert (config.model_credentials, config.allow_unconfined) == ((), False)
    assert config.command_timeout_seconds == 600


def test_a_command_executor_configuration_is_read_in_full() -> None:
    config = parse_repository_config(COMMAND_CONFIG)
    assert config.executor is RepositoryExecutor.COMMAND
    assert config.command == ("my-agent", "--task-file", "TASK.md")
    assert config.verify == (("make", "test"), ("make", "lint"))
    assert config.env == ("AGENT_MODE", "_PRIVATE_1")
    assert config.model_credentials == ("AGENT_API_KEY",)
    assert config.network is True and config.allow_unconfined is True
    assert config.command_timeout_seconds == 900


def test_the_patch_executor_may_have_verify_commands_and_a_timeout() -> None:
    config = parse_repository_config('verify = [["pytest", "-q"]]\ncommand_timeout_seconds = 1\n')
    assert config.executor is RepositoryExecutor.PATCH
    assert config.verify == (("pytest", "-q"),)
    assert config.command_timeout_seconds == 1


def test_the_patch_executor_accepts_the_default_env_and_network_written_out() -> None:
    assert parse_repository_config('executor = "patch"\nenv = []\nnetwork = false\n') == RepositoryConfig()


def test_limits_are_inclusive() -> None:
    argv = ["a" * MAX_ARGUMENT_LENGTH] * MAX_ARGV_ITEMS
    names = [f"NAME_{index}" for index in range(MAX_ENV_NAMES)]
    config = RepositoryConfig.model_validate(
        {
            "executor": "command",
            "command": argv,
            "verify": [argv] * MAX_VERIFY_COMMANDS,
            "env": names,
            "command_timeout_seconds": 3600,
        }
    )
    assert len(config.command or ()) == MAX_ARGV_ITEMS
    assert len(config.verify) == MAX_VERIFY_COMMANDS
    assert len(config.env) == MAX_ENV_NAMES
    assert RepositoryConfig(env=(), verify=(("x",),), command_timeout_seconds=1).command_timeout_seconds == 1
    assert RepositoryConfig.model_validate({"env": ["A" * 128]} | {"executor": "command", "command": ["x"]})


def test_the_stored_json_form_reads_back_equal() -> None:
    config = parse_repository_config(COMMAND_CONFIG)
    stored = config.model_dump(mode="json")
    assert set(stored) == {
        "executor",
        "command",
        "verify",
        "env",
        "model_credentials",
        "network",
        "allow_unconfined",
        "command_timeout_seconds",
    }
    assert stored["command"] == ["my-agent", "--task-file", "TASK.md"]
    assert RepositoryConfig.model_validate(stored) == config
    assert RepositoryConfig.model_validate_json(config.model_dump_json()) == config


def test_the_configuration_is_frozen() -> None:
    config = parse_repository_config(COMMAND_CONFIG)
    with pytest.raises(ValidationError):
        config.network = False  # type: ignore[misc]
    assert hash(config) == hash(parse_repository_config(COMMAND_CONFIG))


# ----------------------------------------------------------------------------------------- the command


def test_a_shell_string_command_is_refused() -> None:
    message = _refusal('executor = "command"\ncommand = "my-agent --fix && rm -rf /"\n')
    assert "command must be an argument vector" in message
    assert "not a shell string" in message


def test_a_shell_string_verify_command_is_refused() -> None:
    assert "not a shell string" in _refusal('verify = "make test"\n')
    message = _refusal('verify = ["make test"]\n')
    assert "verify[0] must be an argument vector" in message and "not a shell string" in message


def test_the_command_executor_requires_a_command() -> None:
    assert "command is required when executor is 'command'" in _refusal('executor = "command"\n')


def test_a_command_with_the_patch_executor_is_refused() -> None:
    message = _refusal('command = ["my-agent"]\n')
    assert "command is only allowed with executor = 'command'" in message
    assert "command is only allowed" in _refusal('executor = "patch"\ncommand = ["my-agent"]\n')


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("[]", "command must name at least the program to run"),
        ('["agent", ""]', "command[1] is empty"),
        ('["agent", "a\\u0000b"]', "command[1] contains a NUL character"),
        ('["agent", 3]', "command[1] must be a string, not an integer"),
        ('["agent", ["nested"]]', "command[1] must be a string, not list"),
        ("42", "command must be a list of strings, not an integer"),
        (f'["{"a" * (MAX_ARGUMENT_LENGTH + 1)}"]', f"at most {MAX_ARGUMENT_LENGTH} are allowed"),
        (str(["x"] * (MAX_ARGV_ITEMS + 1)), f"command has 65 items; at most {MAX_ARGV_ITEMS} are allowed"),
    ],
)
def test_a_malformed_command_is_refused(command: str, rule: str) -> None:
    assert rule in _refusal(f'executor = "command"\ncommand = {command}\n')


def test_too_many_verify_commands_are_refused() -> None:
    verify = ", ".join('["make", "test"]' for _ in range(MAX_VERIFY_COMMANDS + 1))
    assert f"verify has 17 commands; at most {MAX_VERIFY_COMMANDS} are allowed" in _refusal(
        f"verify = [{verify}]\n"
    )


def test_a_malformed_verify_command_is_refused() -> None:
    assert "verify[1][0] is empty" in _refusal('verify = [["make"], [""]]\n')
    assert "verify[0] must name at least the program" in _refusal("verify = [[]]\n")
    assert "verify must be a list of argument vectors, not a table" in _refusal("[verify]\nmake = 1\n")


# ------------------------------------------------------------------------------------ env and network


def test_env_with_the_patch_executor_is_refused() -> None:
    message = _refusal('env = ["HOME"]\n')
    assert "env is only allowed with executor = 'command'" in message


def test_network_with_the_patch_executor_is_refused() -> None:
    assert "network = true is only allowed with executor = 'command'" in _refusal("network = true\n")


@pytest.mark.parametrize(
    ("names", "rule"),
    [
        ('["1ST"]', "env[0] '1ST' is not a valid variable name"),
        ('["OK", "WITH-DASH"]', "env[1] 'WITH-DASH' is not a valid variable name"),
        ('["A B"]', "is not a valid variable name"),
        ('[""]', "env[0] '' is not a valid variable name"),
        ('["PATH=/bin"]', "is not a valid variable name"),
        (f'["{"A" * 129}"]', "is not a valid variable name"),
        ('["ÄPFEL"]', "is not a valid variable name"),
        ('["A", "B", "A"]', "env names 'A' twice"),
        ('"API_KEY"', "env must be a list of variable names"),
        ("[1]", "env[0] must be a string, not an integer"),
    ],
)
def test_bad_env_names_are_refused(names: str, rule: str) -> None:
    assert rule in _refusal(f'executor = "command"\ncommand = ["agent"]\nenv = {names}\n')


def test_too_many_env_names_are_refused() -> None:
    names = ", ".join(f'"NAME_{index}"' for index in range(MAX_ENV_NAMES + 1))
    message = _refusal(f'executor = "command"\ncommand = ["agent"]\nenv = [{names}]\n')
    assert f"env and model_credentials name 33 variables; at most {MAX_ENV_NAMES} are allowed" in message
    split = ", ".join(f'"CREDENTIAL_{index}"' for index in range(2))
    message = _refusal(
        f'executor = "command"\ncommand = ["agent"]\nenv = [{names[: names.rindex(",")]}]\n'
        f"model_credentials = [{split}]\n"
    )
    assert f"env and model_credentials name 34 variables; at most {MAX_ENV_NAMES} are allowed" in message


@pytest.mark.parametrize("value", ['"yes"', "1", "[true]"])
def test_network_must_be_a_boolean(value: str) -> None:
    assert "network must be true or false" in _refusal(
        f'executor = "command"\ncommand = ["agent"]\nnetwork = {value}\n'
    )


# ----------------------------------------------------------------------------------- environment rules

COMMAND = 'executor = "command"\ncommand = ["agent"]\n'


@pytest.mark.parametrize("field", ["env", "model_credentials"])
@pytest.mark.parametrize("name", ["SPECIALISTS_ACTION_TOKEN", "SPECIALISTS_DATABASE_URL", "specialists_x"])
def test_a_specialists_name_is_refused_in_either_field(field: str, name: str) -> None:
    message = _refusal(f'{COMMAND}{field} = ["{name}"]\n')
    assert f"{field}[0] {name!r} is one of the deployment's own settings" in message
    assert "never passed to a command" in message


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "AGENT_API_KEY",
        "GITHUB_TOKEN",
        "HF_TOKEN",
        "GHTOKEN",
        "NPM_TOKENS",
        "CLIENT_SECRET",
        "PGPASSWORD",
        "DB_PASS",
        "MYSQL_PWD_PASSWD",
        "GPG_PASSPHRASE",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "AWS_ACCESS_KEY_ID",
        "AWS_PROFILE",
        "AZURE_CLIENT_ID",
        "GCP_PROJECT",
        "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE",
        "SSH_AUTH_SOCK",
        "GIT_ASKPASS",
        "SESSION_COOKIE",
        "GITLAB_PAT",
        "STRIPE_APIKEY",
        "KUBECONFIG",
        "DOCKER_CONFIG",
        "netrc",
    ],
)
def test_a_secret_looking_name_in_env_is_refused_and_the_message_names_model_credentials(name: str) -> None:
    assert looks_like_secret(name)
    message = _refusal(f'{COMMAND}env = ["OK_SETTING", "{name}"]\n')
    assert f"env[1] {name!r} looks like a secret" in message
    assert "model_credentials" in message
    # Named where the approval shows it, it is accepted.
    config = parse_repository_config(f'{COMMAND}model_credentials = ["{name}"]\n')
    assert config.model_credentials == (name,)


@pytest.mark.parametrize(
    "name",
    [
        "AGENT_MODE",
        "LOG_LEVEL",
        "TOKENIZERS_PARALLELISM",
        "GIT_AUTHOR_NAME",
        "KEYBOARD_LAYOUT",
        "PATH",
        "HOME",
    ],
)
def test_an_ordinary_name_is_accepted_in_env(name: str) -> None:
    assert not looks_like_secret(name)
    assert parse_repository_config(f'{COMMAND}env = ["{name}"]\n').env == (name,)


def test_every_environment_violation_is_named_at_once() -> None:
    message = _refusal(f'{COMMAND}env = ["OPENAI_API_KEY", "SPECIALISTS_ACTION_TOKEN"]\n')
    assert "env[0] 'OPENAI_API_KEY' looks like a secret" in message
    assert "env[1] 'SPECIALISTS_ACTION_TOKEN' is one of the deployment's own settings" in message


def test_a_name_in_both_env_and_model_credentials_is_refused() -> None:
    message = _refusal(f'{COMMAND}env = ["AGENT_MODE"]\nmodel_credentials = ["AGENT_MODE"]\n')
    assert "model_credentials names 'AGENT_MODE' twice" in message


def test_model_credentials_with_the_patch_executor_are_refused() -> None:
    message = _refusal('model_credentials = ["OPENAI_API_KEY"]\n')
    assert "model_credentials is only allowed with executor = 'command'" in message


def test_the_environment_rules_are_not_part_of_decoding_so_an_old_capture_still_reads() -> None:
    # As a contract captured before the rules: it decodes, and says what it breaks.
    config = RepositoryConfig.model_validate(
        {"executor": "command", "command": ["agent"], "env": ["SPECIALISTS_ACTION_TOKEN", "OPENAI_API_KEY"]}
    )
    violations = environment_rule_violations(config)
    assert len(violations) == 2 and "SPECIALISTS_ACTION_TOKEN" in violations[0]
    assert environment_rule_violations(parse_repository_config(COMMAND_CONFIG)) == []


# ------------------------------------------------------------------------------------ allow_unconfined


def test_allow_unconfined_is_accepted_with_a_command_or_verify_commands() -> None:
    assert parse_repository_config(f"{COMMAND}allow_unconfined = true\n").allow_unconfined
    assert parse_repository_config('verify = [["make"]]\nallow_unconfined = true\n').allow_unconfined
    assert not parse_repository_config("allow_unconfined = false\n").allow_unconfined


def test_allow_unconfined_with_nothing_to_run_is_refused() -> None:
    message = _refusal("allow_unconfined = true\n")
    assert "allow_unconfined = true needs a command or verify commands" in message


@pytest.mark.parametrize("value", ['"yes"', "1", "[true]"])
def test_allow_unconfined_must_be_a_boolean(value: str) -> None:
    assert "allow_unconfined must be true or false" in _refusal(f"{COMMAND}allow_unconfined = {value}\n")


# ----------------------------------------------------------------------------- timeout, keys and types


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("0", "command_timeout_seconds 0 is out of range: it must be from 1 to 3600 seconds"),
        ("-5", "command_timeout_seconds -5 is out of range"),
        ("3601", "command_timeout_seconds 3601 is out of range"),
        ("1.5", "command_timeout_seconds must be an integer number of seconds, not a number"),
        ('"600"', "command_timeout_seconds must be an integer number of seconds, not a string"),
        ("true", "command_timeout_seconds must be an integer number of seconds, not a boolean"),
    ],
)
def test_a_bad_timeout_is_refused(value: str, rule: str) -> None:
    assert rule in _refusal(f"command_timeout_seconds = {value}\n")


def test_an_unknown_key_is_refused_and_named() -> None:
    message = _refusal('executor = "patch"\nshell = "bash"\n')
    assert "shell: unknown key" in message
    assert (
        "executor, command, verify, env, model_credentials, network, allow_unconfined, "
        "command_timeout_seconds" in message
    )
    assert "timeout: unknown key" in _refusal("timeout = 10\n")
    assert "sandbox: unknown key" in _refusal("[sandbox]\nnetwork = true\n")


def test_an_unknown_executor_is_refused() -> None:
    assert "executor: Input should be 'patch' or 'command'" in _refusal('executor = "shell"\n')
    assert "executor:" in _refusal("executor = 1\n")


def test_every_fault_is_named_at_once() -> None:
    message = _refusal('env = ["1BAD"]\ncommand_timeout_seconds = 0\nextra = 1\n')
    assert "env[0] '1BAD' is not a valid variable name" in message
    assert "command_timeout_seconds 0 is out of range" in message
    assert "extra: unknown key" in message


def test_malformed_toml_is_refused() -> None:
    assert "is not valid TOML" in _refusal('executor = "command\n')
    assert "is not valid TOML" in _refusal("executor = patch\n")


def test_the_same_rules_hold_wherever_the_model_is_built() -> None:
    with pytest.raises(ValidationError, match="not a shell string"):
        RepositoryConfig.model_validate({"executor": "command", "command": "agent --go"})
    with pytest.raises(ValidationError, match="only allowed with executor = 'command'"):
        RepositoryConfig(env=("HOME",))
    with pytest.raises(ValidationError, match="only allowed with executor = 'command'"):
        RepositoryConfig(network=True)
    with pytest.raises(ValidationError, match="out of range"):
        RepositoryConfig(command_timeout_seconds=0)
    with pytest.raises(InvalidInput, match="must be a table of settings"):
        repository_config_from_mapping(["executor", "patch"])


# ----------------------------------------------------------------------------------------- the file


def test_a_config_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "repo.toml"
    path.write_text(COMMAND_CONFIG, encoding="utf-8")
    assert read_repository_config(path) == parse_repository_config(COMMAND_CONFIG)


def test_a_refusal_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "repo.toml"
    path.write_text('command = "make"\n', encoding="utf-8")
    with pytest.raises(InvalidInput) as refused:
        read_repository_config(path)
    assert refused.value.code == "invalid_repository_config"
    assert str(path) in refused.value.message


def _unreadable(path: Path) -> str:
    with pytest.raises(InvalidInput) as refused:
        read_repository_config(path)
    assert refused.value.code == "repository_config_unreadable"
    assert refused.value.exit_code == 2
    return refused.value.message


def test_a_missing_config_file_is_refused_clearly(tmp_path: Path) -> None:
    message = _unreadable(tmp_path / "missing.toml")
    assert "missing.toml" in message and "does not exist" in message


def test_a_directory_is_not_a_config_file(tmp_path: Path) -> None:
    assert "is not a regular file" in _unreadable(tmp_path)


def test_a_config_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes("command_timeout_seconds = 10 # caf\xe9\n".encode("latin-1"))
    assert "is not UTF-8 text" in _unreadable(path)


def test_an_oversized_config_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    path.write_text("# " + "x" * MAX_CONFIG_BYTES + "\n", encoding="utf-8")
    assert "larger than the limit" in _unreadable(path)


def test_an_unreadable_config_file_is_refused(tmp_path: Path) -> None:
    import os

    if os.geteuid() == 0:
        pytest.skip("root reads files whatever their mode")
    path = tmp_path / "private.toml"
    path.write_text("", encoding="utf-8")
    path.chmod(0)
    assert "cannot read" in _unreadable(path)


def test_a_document_nested_deeper_than_the_parser_reads_is_refused_as_invalid() -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_repository_config("a = " + "[" * 5000 + "]" * 5000)
    assert refused.value.code == "invalid_repository_config"
    assert "nested too deeply" in refused.value.message
