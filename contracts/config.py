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
    SerializerFunctionWrapHandler,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
)
from pydantic_core import PydanticCustomError

from contracts.errors import InvalidInput
from contracts.policy import AutomationPolicy
from contracts.shipping import ShippingPolicy

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
"""At most this many names in ``env`` and ``model_credentials`` together."""
ENV_NAME_PATTERN: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
"""An environment variable name the ``command`` executor may pass on: ``^[A-Za-z_][A-Za-z0-9_]{0,127}$``."""
MIN_COMMAND_TIMEOUT_SECONDS: Final = 1
MAX_COMMAND_TIMEOUT_SECONDS: Final = 3600
DEFAULT_COMMAND_TIMEOUT_SECONDS: Final = 600
REPOSITORY_CONFIG_KEYS: Final = (
    "executor",
    "command",
    "verify",
    "env",
    "model_credentials",
    "network",
    "allow_unconfined",
    "command_timeout_seconds",
    "shipping",
)
"""Every key a repository configuration may set, in the order they are documented."""

RESERVED_ENV_PREFIX: Final = "SPECIALISTS_"
"""The deployment's own settings (the action token among them): never passed to a command, in any
field and in any letter case."""
SECRET_NAME_PARTS: Final = ("SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "APIKEY")
"""A name containing one of these (in any letter case) looks like a secret."""
SECRET_NAME_WORDS: Final = frozenset({"KEY", "PASS", "PAT", "AUTH", "COOKIE", "ASKPASS"})
"""A name with one of these as a word (the name split at ``_``, any letter case) looks like a secret:
``OPENAI_API_KEY``, ``DB_PASS``, ``SSH_AUTH_SOCK``; so does one with a word ending in ``TOKEN`` or
``TOKENS`` (``GITHUB_TOKEN``, ``HF_TOKEN``, ``GHTOKEN``, but not ``TOKENIZERS_PARALLELISM``)."""
CLOUD_CREDENTIAL_PREFIXES: Final = ("AWS_", "AZURE_", "GOOGLE_", "GCP_", "GCLOUD_", "CLOUDSDK_")
"""Cloud credential variables (``AWS_SECRET_ACCESS_KEY``, ``AZURE_CLIENT_SECRET``,
``GOOGLE_APPLICATION_CREDENTIALS``, ...): every name with one of these prefixes looks like a secret."""
CREDENTIAL_FILE_VARIABLES: Final = frozenset({"KUBECONFIG", "DOCKER_CONFIG", "NETRC"})
"""Variables that locate credential files."""


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
    * ``env``: names (``^[A-Za-z_][A-Za-z0-9_]{0,127}$``) of ordinary environment variables passed to
      the external agent — only with executor ``command``; a name that looks like a secret belongs in
      ``model_credentials`` (:func:`environment_rule_violations`);
    * ``model_credentials``: names of the variables holding the credentials an agent needs to reach
      its model (``OPENAI_API_KEY``) — only with executor ``command``; ``env`` and
      ``model_credentials`` together name at most 32 distinct variables;
    * ``network``: whether the external agent may reach the network (default false) — ``true`` only
      with executor ``command``;
    * ``allow_unconfined``: whether commands may run without the sandbox when the worker cannot set
      it up (default false: the attempt fails ``confinement_unavailable``) — only with a command or
      verify commands;
    * ``command_timeout_seconds``: 1..3600 (default 600), for the command and each verify command.

    An argument vector has 1..64 non-empty strings of at most 4096 characters without NUL. Values are
    taken as given, never coerced (``network = "yes"`` or ``command_timeout_seconds = 1.5`` is
    refused), and unknown keys are refused. Raises ``pydantic.ValidationError`` naming the key and the
    rule; :func:`repository_config_from_mapping` turns that into :class:`InvalidInput`.

    The environment rules (:func:`environment_rule_violations`: no ``SPECIALISTS_*`` name anywhere, no
    secret-looking name in ``env``) are not part of decoding, so a configuration captured before they
    existed still decodes from a run's history; they are checked where a configuration is registered
    (:func:`repository_config_from_mapping`), captured and executed.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    executor: RepositoryExecutor = RepositoryExecutor.PATCH
    command: tuple[str, ...] | None = Field(default=None, validate_default=True)
    verify: tuple[tuple[str, ...], ...] = ()
    env: tuple[str, ...] = Field(default=(), validate_default=True)
    model_credentials: tuple[str, ...] = Field(default=(), validate_default=True)
    network: bool = Field(default=False, validate_default=True)
    allow_unconfined: bool = Field(default=False, validate_default=True)
    command_timeout_seconds: int = DEFAULT_COMMAND_TIMEOUT_SECONDS
    shipping: ShippingPolicy | None = None
    """How a done goal-queue item of the repository is shipped (``contracts.shipping``); ``None``:
    not declared, so ``queue ship`` is refused with the question. Never frozen into a run's contract,
    and left out of the stored and captured JSON when ``None``, so a configuration without one reads,
    signs and digests as it did before it existed."""

    @model_serializer(mode="wrap")
    def _without_an_undeclared_policy(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.shipping is None:
            data.pop("shipping", None)
        return data

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

    @field_validator("env", "model_credentials", mode="before")
    @classmethod
    def _a_list_of_names(cls, value: Any, info: ValidationInfo) -> tuple[str, ...]:
        field = info.field_name
        if isinstance(value, str):
            raise _refused(f'{field} must be a list of variable names (such as ["{value}"]), not a string')
        if not isinstance(value, list | tuple):
            raise _refused(f"{field} must be a list of variable names, not {_type_name(value)}")
        seen: set[str] = set(info.data.get("env", ())) if field == "model_credentials" else set()
        if len(value) + len(seen) > MAX_ENV_NAMES:
            raise _refused(
                f"env and model_credentials name {len(value) + len(seen)} variables; "
                f"at most {MAX_ENV_NAMES} are allowed"
            )
        for index, name in enumerate(value):
            if not isinstance(name, str):
                raise _refused(f"{field}[{index}] must be a string, not {_type_name(name)}")
            if not ENV_NAME_PATTERN.fullmatch(name):
                raise _refused(
                    f"{field}[{index}] {name!r} is not a valid variable name "
                    "(^[A-Za-z_][A-Za-z0-9_]{0,127}$: a letter or '_', then letters, digits or '_')"
                )
            if name in seen:
                raise _refused(
                    f"{field} names {name!r} twice (env and model_credentials included); "
                    "each variable may be named once"
                )
            seen.add(name)
        return tuple(value)

    @field_validator("env", "model_credentials")
    @classmethod
    def _names_only_with_the_command_executor(
        cls, value: tuple[str, ...], info: ValidationInfo
    ) -> tuple[str, ...]:
        if value and info.data.get("executor") is RepositoryExecutor.PATCH:
            raise _refused(
                f"{info.field_name} is only allowed with executor = 'command' (the executor is 'patch')"
            )
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

    @field_validator("allow_unconfined", mode="before")
    @classmethod
    def _allow_unconfined_is_a_boolean(cls, value: Any) -> bool:
        if not isinstance(value, bool):
            raise _refused(f"allow_unconfined must be true or false, not {_type_name(value)}")
        return value

    @field_validator("allow_unconfined")
    @classmethod
    def _allow_unconfined_only_with_something_to_run(cls, value: bool, info: ValidationInfo) -> bool:
        if value and info.data.get("command") is None and not info.data.get("verify"):
            raise _refused(
                "allow_unconfined = true needs a command or verify commands: nothing else runs in the sandbox"
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


def is_reserved_name(name: str) -> bool:
    """``SPECIALISTS_*`` in any letter case: one of the deployment's own settings."""
    return name.upper().startswith(RESERVED_ENV_PREFIX)


def looks_like_secret(name: str) -> bool:
    """Whether variable ``name`` looks like it holds a secret (any letter case): it contains one of
    :data:`SECRET_NAME_PARTS`, has one of :data:`SECRET_NAME_WORDS` or a word ending in ``TOKEN``
    or ``TOKENS``, starts with one of :data:`CLOUD_CREDENTIAL_PREFIXES` or is one of
    :data:`CREDENTIAL_FILE_VARIABLES`."""
    upper = name.upper()
    words = upper.split("_")
    return (
        any(part in upper for part in SECRET_NAME_PARTS)
        or any(word in SECRET_NAME_WORDS or word.endswith(("TOKEN", "TOKENS")) for word in words)
        or upper.startswith(CLOUD_CREDENTIAL_PREFIXES)
        or upper in CREDENTIAL_FILE_VARIABLES
    )


def environment_rule_violations(config: RepositoryConfig) -> list[str]:
    """Every way ``config`` breaks the environment rules (docs/architecture.md "Worktree execution"),
    one message each; empty when it keeps them.

    * a ``SPECIALISTS_*`` name (any letter case) is never passed, in ``env`` or ``model_credentials``:
      these are the deployment's settings, the action token among them;
    * a name in ``env`` that looks like a secret (:func:`looks_like_secret`) is refused there: a
      credential the agent needs to reach its model is named in ``model_credentials``, which ``show``
      displays at approval and the contract digest covers.
    """
    violations = []
    for field, names in (("env", config.env), ("model_credentials", config.model_credentials)):
        for index, name in enumerate(names):
            if is_reserved_name(name):
                violations.append(
                    f"{field}[{index}] {name!r} is one of the deployment's own settings "
                    f"({RESERVED_ENV_PREFIX}*): it is never passed to a command"
                )
            elif field == "env" and looks_like_secret(name):
                violations.append(
                    f"env[{index}] {name!r} looks like a secret: name a credential the agent needs to "
                    "reach its model in model_credentials instead (shown at approval, covered by the "
                    "contract digest); env is for ordinary settings"
                )
    return violations


def check_environment_rules(config: RepositoryConfig, *, source: str = "repository configuration") -> None:
    """Raise :class:`InvalidInput` ``invalid_repository_config`` naming every violation of
    :func:`environment_rule_violations` (``source`` says whose configuration it is)."""
    violations = environment_rule_violations(config)
    if violations:
        raise InvalidInput("invalid_repository_config", f"{source}: {'; '.join(violations)}")


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
    it breaks, the environment rules (:func:`environment_rule_violations`) included (``source`` says
    where the data came from).
    """
    if not isinstance(data, Mapping):
        raise InvalidInput(
            "invalid_repository_config", f"{source} must be a table of settings, not {_type_name(data)}"
        )
    try:
        config = RepositoryConfig.model_validate(dict(data))
    except ValidationError as error:
        raise InvalidInput(
            "invalid_repository_config", f"{source}: {describe_repository_config_error(error)}"
        ) from None
    check_environment_rules(config, source=source)
    return config


class RepositoryRecord(BaseModel):
    """An allow-listed repository: alias → absolute path of a git repository, default branch, and its
    configuration (the default for a repository added without one). A deactivated repository
    (``active`` false, with who and when) stays listed; no new run and no execution may use it."""

    model_config = ConfigDict(frozen=True)

    alias: str
    path: str
    default_branch: str
    added_by: str
    added_at: dt.datetime
    config: RepositoryConfig = RepositoryConfig()
    active: bool = True
    deactivated_by: str | None = None
    deactivated_at: dt.datetime | None = None


class ActorKeyRecord(BaseModel):
    """One public key an actor holds or held: its fingerprint, when it was added and by whom (the
    registering actor, or the actor itself for a rotation), and — for an earlier key — when the next
    key replaced it (``retired_at``)."""

    model_config = ConfigDict(frozen=True)

    fingerprint: str
    public_key: str
    added_at: dt.datetime
    added_by: str
    retired_at: dt.datetime | None = None


class ActorRecord(BaseModel):
    """A registered human actor. ``registered_by`` is ``None`` for the first actor (the trust root).

    ``key_fingerprint`` is the fingerprint of the key the actor acts with now (``None``: none yet);
    ``keys`` every key it held, oldest first. A deactivated actor (``active`` false, with who and
    when) stays listed; its proofs are refused and it signs nothing more."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    registered_by: str | None
    registered_at: dt.datetime
    active: bool = True
    deactivated_by: str | None = None
    deactivated_at: dt.datetime | None = None
    key_fingerprint: str | None = None
    keys: tuple[ActorKeyRecord, ...] = ()


class ConfigurationEvent(BaseModel):
    """One configuration audit event (docs/architecture.md "Configuration"): a protected configuration
    action (``actor_registered``, ``actor_deactivated``, ``actor_key_rotated``, ``model_deactivated``,
    ``repository_deactivated``, ``configuration_attested``) or a record refused because it carries no
    valid signature (``configuration_unverified``, naming the record)."""

    model_config = ConfigDict(frozen=True)

    id: int
    at: dt.datetime
    kind: str
    actor: str | None = None
    record_kind: str | None = None
    record_id: str | None = None
    message: str


class UnverifiedRecord(BaseModel):
    """A configuration record that carries no valid signature, as ``configuration attest`` shows it:
    its kind, id, why it is not verified and a one-line summary of its content."""

    model_config = ConfigDict(frozen=True)

    kind: str
    id: str
    reason: str
    summary: str
