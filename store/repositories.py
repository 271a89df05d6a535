"""Allow-listed repositories: alias → absolute path of a git working tree and its default branch."""

from __future__ import annotations

import datetime as dt
import re
from typing import Final

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from contracts.config import RepositoryRecord
from contracts.errors import InvalidInput, NotFound, Refused
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
    session: Session, alias: str, path: str, default_branch: str, actor: str, at: dt.datetime
) -> RepositoryRecord:
    """Record an already checked repository. Raises ``unknown_actor`` (not found) or
    ``duplicate_alias`` (refused)."""
    check_alias(alias)
    require_actor(session, actor)
    if session.get(RepositoryRow, alias) is not None:
        raise _duplicate(alias)
    row = RepositoryRow(alias=alias, path=path, default_branch=default_branch, added_by=actor, added_at=at)
    session.add(row)
    try:
        session.flush()
    except IntegrityError as exc:
        raise _duplicate(alias) from exc
    return repository_record(row)


def get_repository(session: Session, alias: str) -> RepositoryRecord:
    """The repository registered as ``alias``. Raises ``unknown_repository`` (not found)."""
    row = session.get(RepositoryRow, alias)
    if row is None:
        raise NotFound("unknown_repository", f"no repository is registered as {alias!r}")
    return repository_record(row)


def list_repositories(session: Session) -> list[RepositoryRecord]:
    """All registered repositories, by alias."""
    return [
        repository_record(row) for row in session.scalars(select(RepositoryRow).order_by(RepositoryRow.alias))
    ]


def repository_record(row: RepositoryRow) -> RepositoryRecord:
    """The contract record of a stored repository."""
    return RepositoryRecord(
        alias=row.alias,
        path=row.path,
        default_branch=row.default_branch,
        added_by=row.added_by,
        added_at=row.added_at,
    )


def _duplicate(alias: str) -> Refused:
    return Refused("duplicate_alias", f"a repository is already registered as {alias!r}")
