"""Reading a repository configuration file (``repos add --config FILE``, ``repos update --config FILE``).

The file is TOML (parsed with the standard library's ``tomllib``); its keys and rules are those of
:class:`contracts.config.RepositoryConfig`. Every failure is an :class:`InvalidInput` with a one-line
message and nothing is written: ``repository_config_unreadable`` (missing, not a regular file, too
large, not UTF-8) or ``invalid_repository_config`` (not TOML, an unknown key, a wrong type, a rule
broken, the environment rules included — the message names the key and the rule).

Example::

    executor = "command"
    command = ["my-agent", "--task-file", "TASK.md"]
    verify = [["make", "test"], ["make", "lint"]]
    env = ["AGENT_MODE"]
    model_credentials = ["AGENT_API_KEY"]
    network = true
    command_timeout_seconds = 900
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Final

from contracts.config import RepositoryConfig, repository_config_from_mapping
from contracts.errors import InvalidInput

MAX_CONFIG_BYTES: Final = 64 * 1024
"""A repository configuration file larger than this is refused."""


def parse_repository_config(text: str, *, source: str = "repository configuration") -> RepositoryConfig:
    """The configuration in the TOML document ``text``. Raises ``invalid_repository_config``."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InvalidInput("invalid_repository_config", f"{source} is not valid TOML: {error}") from None
    except RecursionError:
        raise InvalidInput("invalid_repository_config", f"{source} is nested too deeply to be read") from None
    return repository_config_from_mapping(data, source=source)


def read_repository_config(path: Path) -> RepositoryConfig:
    """The configuration in the TOML file at ``path``.

    Raises ``repository_config_unreadable`` (the file cannot be read as UTF-8 text of at most 64 KiB)
    or ``invalid_repository_config``.
    """
    source = f"repository configuration file {str(path)!r}"
    try:
        if not path.is_file():
            reason = "does not exist" if not path.exists() else "is not a regular file"
            raise InvalidInput("repository_config_unreadable", f"{source} {reason}")
        with path.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as error:
        raise InvalidInput(
            "repository_config_unreadable", f"cannot read {source}: {error.strerror or error}"
        ) from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise InvalidInput(
            "repository_config_unreadable", f"{source} is larger than the limit of {MAX_CONFIG_BYTES} bytes"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput("repository_config_unreadable", f"{source} is not UTF-8 text") from None
    return parse_repository_config(text, source=source)
