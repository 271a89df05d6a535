"""Operator configuration records as read from the store (docs/architecture.md "Storage"), and the
configuration of a repository (:class:`RepositoryConfig`), which runs on that repository capture into their
contract."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, Final

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError

from contracts.errors import InvalidInput
from contracts.policy import AutomationPolicy

ActorId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._@-]{0,63}$")]
"""A registered human's id: lower-case letters, digits, ``. _ @ -``; 1..64 characters."""


class PolicyRecord(BaseModel):
    """The automation policy in force, who set it and when (``None`` for the built-in default)."""

    model_config = ConfigDict(frozen=True)

    policy: AutomationPolicy
    set_by: str | None = None
    set_at: dt.datetime | None = None


# ------------------------------------------------------------------------------ repository configuration

MAX_ARGV_ITEMS: Final = 64
"""At most this many items in one argument vector (``command``, each ``verify`` command)."""
MAX_ARGUMENT_LENGTH: Final = 4096
"""At most this many characters in one argument."""
MAX_VERIFY_COMMANDS: Final = 16
MAX_ENV_NAMES: Final = 32
ENV_NAME_PATTERN: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
"""An environment variable name the ``command`` executor may pass on: ``^[A-Za-z_][A-Za-z0-9_]{0,127}$``."""
MIN_COMMAND_TIMEOUT_SECONDS: Final = 1
MAX_COMMAND_TIMEOUT_SECONDS: Final = 3600
DEFAULT_COMMAND_TIMEOUT_SECONDS: Final = 600
REPOSITORY_CONFIG_KEYS: Final = ("executor", "command", "verify", "env", "network", "command_timeout_seconds")
"""Every key a repository configuration may set, in the order they are documented."""


class RepositoryExecutor(StrEnum):
    """How an approved worktree or pr_ready run on the repository makes its change.

    ``patch`` (the default) applies the model's unified diff with git; ``command`` runs the
    repository's external agent (its ``command``) in the run's worktree.
    """

    PATCH = "patch"
    COMMAND = "command"


def _refused(rule: str) -> PydanticCustomError:
    return PydanticCustomError("repository_config", rule)


def _argument_vector(value: Any, what: str) -> tuple[str, ...]:
    """``value`` as an argument vector: a list of 1..64 non-empty strings of at most 4096 characters
    without NUL. A string is refused (it would need a shell to split it)."""
    if isinstance(value, str):
        raise _refused(
            f'{what} must be an argument vector (a list of strings such as ["make", "test"]), '
            "not a shell string: commands never run through a shell"
        )
    if not isinstance(value, list | tuple):
        raise _refused(f"{what} must be a list of strings, not {_type_name(value)}")
    if not value:
        raise _refused(f"{what} must name at least the program to run (argv[0])")
    if len(value) > MAX_ARGV_ITEMS:
        raise _refused(f"{what} has {len(value)} items; at most {MAX_ARGV_ITEMS} are allowed")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise _refused(f"{what}[{index}] must be a string, not {_type_name(item)}")
        if not item:
            raise _refused(f"{what}[{index}] is empty; every argument must be a non-empty string")
        if "\x00" in item:
            raise _refused(f"{what}[{index}] contains a NUL character")
        if len(item) > MAX_ARGUMENT_LENGTH:
            raise _refused(
                f"{what}[{index}] has {len(item)} characters; at most {MAX_ARGUMENT_LENGTH} are allowed"
            )
    return tuple(value)


def _type_name(value: Any) -> str:
    names = {str: "a string", bool: "a boolean", int: "an integer", float: "a number", dict: "a table"}
    return names.get(type(value), type(value).__name__)


class RepositoryConfig(BaseModel):
    """The configuration of an allow-listed repository, as its operator set it (``repos add --config``,
    ``repos update --config``) and as a worktree or pr_ready contract captures it.

    * ``executor``: ``patch`` (default) or ``command``;
    * ``command``: the external agent's argument vector — required with executor ``command``,
      forbidden otherwise; never a shell string;
    * ``verify``: at most 16 verification commands (argument vectors) for pr_ready runs;
    * ``env``: at most 32 distinct names (``^[A-Za-z_][A-Za-z0-9_]{0,127}$``) of environment variables
      passed to the external agent — only with executor ``command``;
    * ``network``: whether the external agent may reach the network (default false) — ``true`` only
      with executor ``command``;
    * ``command_timeout_seconds``: 1..3600 (default 600), for the command and each verify command.

    An argument vector has 1..64 non-empty strings of at most 4096 characters without NUL. Values are
    taken as given, never coerced (``network = "yes"`` or ``command_timeout_seconds = 1.5`` is
    refused), and unknown keys are refused. Raises ``pydantic.ValidationError`` naming the key and the
    rule; :func:`repository_config_from_mapping` turns that into :class:`InvalidInput`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    executor: RepositoryExecutor = RepositoryExecutor.PATCH
    command: tuple[str, ...] | None = Field(default=None, validate_default=True)
    verify: tuple[tuple[str, ...], ...] = ()
    env: tuple[str, ...] = Field(default=(), validate_default=True)
    network: bool = Field(default=False, validate_default=True)
    command_timeout_seconds: int = DEFAULT_COMMAND_TIMEOUT_SECONDS

    @field_validator("command", mode="before")
    @classmethod
    def _command_is_an_argument_vector(cls, value: Any) -> tuple[str, ...] | None:
        return None if value is None else _argument_vector(value, "command")

    @field_validator("command")
    @classmethod
    def _command_only_with_the_command_executor(
        cls, value: tuple[str, ...] | None, info: ValidationInfo
    ) -> tuple[str, ...] | None:
        executor = info.data.get("executor")
        if executor is RepositoryExecutor.COMMAND and value is None:
            raise _refused("command is required when executor is 'command'")
        if executor is RepositoryExecutor.PATCH and value is not None:
            raise _refused("command is only allowed with executor = 'command' (the executor is 'patch')")
        return value

    @field_validator("verify", mode="before")
    @classmethod
    def _verify_is_a_list_of_argument_vectors(cls, value: Any) -> tuple[tuple[str, ...], ...]:
        if isinstance(value, str):
            raise _refused(
                'verify must be a list of argument vectors (such as [["make", "test"]]), not a shell '
                "string: commands never run through a shell"
            )
        if not isinstance(value, list | tuple):
            raise _refused(f"verify must be a list of argument vectors, not {_type_name(value)}")
        if len(value) > MAX_VERIFY_COMMANDS:
            raise _refused(f"verify has {len(value)} commands; at most {MAX_VERIFY_COMMANDS} are allowed")
        return tuple(_argument_vector(item, f"verify[{index}]") for index, item in enumerate(value))

    @field_validator("env", mode="before")
    @classmethod
    def _env_is_a_list_of_names(cls, value: Any) -> tuple[str, ...]:
        if isinstance(value, str):
            raise _refused(f'env must be a list of variable names (such as ["{value}"]), not a string')
        if not isinstance(value, list | tuple):
            raise _refused(f"env must be a list of variable names, not {_type_name(value)}")
        if len(value) > MAX_ENV_NAMES:
            raise _refused(f"env has {len(value)} names; at most {MAX_ENV_NAMES} are allowed")
        seen: set[str] = set()
        for index, name in enumerate(value):
            if not isinstance(name, str):
                raise _refused(f"env[{index}] must be a string, not {_type_name(name)}")
            if not ENV_NAME_PATTERN.fullmatch(name):
                raise _refused(
                    f"env[{index}] {name!r} is not a valid variable name "
                    "(^[A-Za-z_][A-Za-z0-9_]{0,127}$: a letter or '_', then letters, digits or '_')"
                )
            if name in seen:
                raise _refused(f"env names {name!r} twice; each variable may be named once")
            seen.add(name)
        return tuple(value)

    @field_validator("env")
    @classmethod
    def _env_only_with_the_command_executor(
        cls, value: tuple[str, ...], info: ValidationInfo
    ) -> tuple[str, ...]:
        if value and info.data.get("executor") is RepositoryExecutor.PATCH:
            raise _refused("env is only allowed with executor = 'command' (the executor is 'patch')")
        return value

    @field_validator("network", mode="before")
    @classmethod
    def _network_is_a_boolean(cls, value: Any) -> bool:
        if not isinstance(value, bool):
            raise _refused(f"network must be true or false, not {_type_name(value)}")
        return value

    @field_validator("network")
    @classmethod
    def _network_only_with_the_command_executor(cls, value: bool, info: ValidationInfo) -> bool:
        if value and info.data.get("executor") is RepositoryExecutor.PATCH:
            raise _refused(
                "network = true is only allowed with executor = 'command' (the executor is 'patch')"
            )
        return value

    @field_validator("command_timeout_seconds", mode="before")
    @classmethod
    def _timeout_in_range(cls, value: Any) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _refused(
                f"command_timeout_seconds must be an integer number of seconds, not {_type_name(value)}"
            )
        if not MIN_COMMAND_TIMEOUT_SECONDS <= value <= MAX_COMMAND_TIMEOUT_SECONDS:
            raise _refused(
                f"command_timeout_seconds {value} is out of range: it must be from "
                f"{MIN_COMMAND_TIMEOUT_SECONDS} to {MAX_COMMAND_TIMEOUT_SECONDS} seconds"
            )
        return value


def describe_repository_config_error(error: ValidationError) -> str:
    """One line naming every key at fault and the rule it breaks."""
    parts = []
    for item in error.errors():
        key = ".".join(str(part) for part in item["loc"]) or "configuration"
        if item["type"] == "extra_forbidden":
            parts.append(f"{key}: unknown key (allowed: {', '.join(REPOSITORY_CONFIG_KEYS)})")
        elif item["type"] == "repository_config":
            parts.append(item["msg"])
        else:
            parts.append(f"{key}: {item['msg']}")
    return "; ".join(parts)


def repository_config_from_mapping(
    data: Any, *, source: str = "repository configuration"
) -> RepositoryConfig:
    """Validate ``data`` (e.g. a parsed TOML document) as a :class:`RepositoryConfig`.

    Raises :class:`InvalidInput` ``invalid_repository_config`` naming every key at fault and the rule
    it breaks (``source`` says where the data came from).
    """
    if not isinstance(data, Mapping):
        raise InvalidInput(
            "invalid_repository_config", f"{source} must be a table of settings, not {_type_name(data)}"
        )
    try:
        return RepositoryConfig.model_validate(dict(data))
    except ValidationError as error:
        raise InvalidInput(
            "invalid_repository_config", f"{source}: {describe_repository_config_error(error)}"
        ) from None


class RepositoryRecord(BaseModel):
    """An allow-listed repository: alias → absolute path of a git repository, default branch, and its
    configuration (the default for a repository added without one)."""

    model_config = ConfigDict(frozen=True)

    alias: str
    path: str
    default_branch: str
    added_by: str
    added_at: dt.datetime
    config: RepositoryConfig = RepositoryConfig()


class ActorRecord(BaseModel):
    """A registered human actor. ``registered_by`` is ``None`` for the first actor."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    registered_by: str | None
    registered_at: dt.datetime
