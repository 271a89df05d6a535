"""Allow-listed repositories: alias → absolute path of a git working tree, its default branch and its
configuration (:class:`contracts.config.RepositoryConfig`, stored as JSON with every key present)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, Final

from pydantic import ValidationError
from sqlalchemy import Row, Table, bindparam, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from contracts.config import RepositoryConfig, RepositoryRecord, describe_repository_config_error
from contracts.errors import InvalidInput, NotFound, OperatorError, Refused
from store.actors import require_actor
from store.schema import RepositoryRow

ALIAS_PATTERN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def check_alias(alias: str) -> str:
    """Return ``alias`` if well formed (``^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$``), else raise
    ``invalid_alias``."""
    if not ALIAS_PATTERN.fullmatch(alias):
        raise InvalidInput(
            "invalid_alias",
            f"repository alias {alias!r} must be 1..64 letters, digits or '._-', starting with a "
            "letter or digit",
        )
    return alias


def add_repository(
    session: Session,
    alias: str,
    path: str,
    default_branch: str,
    actor: str,
    at: dt.datetime,
    config: RepositoryConfig | None = None,
) -> RepositoryRecord:
    """Record an already checked repository with ``config`` (the default configuration when
    ``None``). Raises ``unknown_actor`` (not found) or ``duplicate_alias`` (refused)."""
    check_alias(alias)
    require_actor(session, actor)
    if session.get(RepositoryRow, alias) is not None:
        raise _duplicate(alias)
    row = RepositoryRow(
        alias=alias,
        path=path,
        default_branch=default_branch,
        added_by=actor,
        added_at=at,
        config=_stored_config(RepositoryConfig() if config is None else config),
    )
    session.add(row)
    try:
        session.flush()
    except IntegrityError as exc:
        raise _duplicate(alias) from exc
    return repository_record(row)


def update_repository_config(
    session: Session, alias: str, config: RepositoryConfig, actor: str
) -> RepositoryRecord:
    """Replace the configuration of the repository ``alias`` with ``config``; its path, branch and who
    added it when stay as they are. Raises ``unknown_actor`` or ``unknown_repository`` (not found)."""
    require_actor(session, actor)
    row = session.get(RepositoryRow, alias)
    if row is None:
        raise _unknown(alias)
    row.config = _stored_config(config)
    session.flush()
    return repository_record(row)


_REPOSITORIES: Table = RepositoryRow.__table__  # type: ignore[assignment]
_BY_ALIAS = select(_REPOSITORIES).where(_REPOSITORIES.c.alias == bindparam("alias"))


def get_repository(session: Session, alias: str) -> RepositoryRecord:
    """The repository registered as ``alias``. Raises ``unknown_repository`` (not found)."""
    record = find_repository(session, alias)
    if record is None:
        raise _unknown(alias)
    return record


def find_repository(session: Session, alias: str) -> RepositoryRecord | None:
    """The repository registered as ``alias``, or ``None`` (a plain row, read by a statement built
    once: every run naming a repository looks it up when its contract is captured)."""
    row = session.execute(_BY_ALIAS, {"alias": alias}).first()
    return None if row is None else repository_record(row)


def list_repositories(session: Session) -> list[RepositoryRecord]:
    """All registered repositories, by alias."""
    return [
        repository_record(row) for row in session.scalars(select(RepositoryRow).order_by(RepositoryRow.alias))
    ]


def repository_record(row: RepositoryRow | Row[Any]) -> RepositoryRecord:
    """The contract record of a stored repository."""
    return RepositoryRecord(
        alias=row.alias,
        path=row.path,
        default_branch=row.default_branch,
        added_by=row.added_by,
        added_at=row.added_at,
        config=_read_config(row),
    )


def _stored_config(config: RepositoryConfig) -> dict[str, Any]:
    """``config`` as stored: its JSON form, every key present (defaults included)."""
    return config.model_dump(mode="json")


def _read_config(row: RepositoryRow | Row[Any]) -> RepositoryConfig:
    try:
        return RepositoryConfig.model_validate(row.config)
    except ValidationError as error:
        raise OperatorError(
            "stored_repository_config_invalid",
            f"the stored configuration of repository {row.alias!r} is not valid "
            f"({describe_repository_config_error(error)}): set it again with `specialists repos update`",
        ) from None


def _unknown(alias: str) -> NotFound:
    return NotFound("unknown_repository", f"no repository is registered as {alias!r}")


def _duplicate(alias: str) -> Refused:
    return Refused("duplicate_alias", f"a repository is already registered as {alias!r}")
