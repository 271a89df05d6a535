"""Allow-listed repositories: alias → absolute path of a git working tree, its default branch and its
configuration (:class:`contracts.config.RepositoryConfig`, stored as JSON with every key present), each
row signed by the actor who last changed it. A deactivated repository stays listed; no new run and no
execution may use it."""

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
from contracts.identity import RecordKind, Signer
from store.schema import RepositoryRow
from store.trust import Trust, sign_row

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
    trust: Trust,
    alias: str,
    path: str,
    default_branch: str,
    signer: Signer,
    at: dt.datetime,
    config: RepositoryConfig | None = None,
) -> RepositoryRecord:
    """Record an already checked repository with ``config`` (the default configuration when
    ``None``), signed by ``signer``. Raises the :meth:`Trust.require_signer` refusals or
    ``duplicate_alias`` (refused)."""
    check_alias(alias)
    trust.require_signer(signer)
    if session.get(RepositoryRow, alias) is not None:
        raise _duplicate(alias)
    row = RepositoryRow(
        alias=alias,
        path=path,
        default_branch=default_branch,
        added_by=signer.actor_id,
        added_at=at,
        config=_stored_config(RepositoryConfig() if config is None else config),
        active=True,
        deactivated_by=None,
        deactivated_at=None,
    )
    sign_row(RecordKind.REPOSITORY, row, signer, at)
    session.add(row)
    try:
        session.flush()
    except IntegrityError as exc:
        raise _duplicate(alias) from exc
    return repository_record(row)


def _verified_row(session: Session, trust: Trust, alias: str) -> RepositoryRow:
    row = session.get(RepositoryRow, alias)
    if row is None:
        raise _unknown(alias)
    trust.require(RecordKind.REPOSITORY, [row])
    return row


def update_repository_config(
    session: Session, trust: Trust, alias: str, config: RepositoryConfig, signer: Signer, at: dt.datetime
) -> RepositoryRecord:
    """Replace the configuration of the repository ``alias`` with ``config``, signed by ``signer``;
    its path, branch and who added it when stay as they are. Raises the :meth:`Trust.require_signer`
    refusals, ``unknown_repository`` (not found), ``configuration_unverified`` or
    ``repository_deactivated``."""
    trust.require_signer(signer)
    row = _verified_row(session, trust, alias)
    if not row.active:
        raise _deactivated(row)
    row.config = _stored_config(config)
    sign_row(RecordKind.REPOSITORY, row, signer, at)
    session.flush()
    return repository_record(row)


def deactivate_repository(
    session: Session, trust: Trust, alias: str, signer: Signer, at: dt.datetime
) -> RepositoryRecord:
    """Deactivate the repository ``alias`` as ``signer``: it stays listed; no new run and no
    execution may use it. Raises ``unknown_repository`` (not found), ``repository_deactivated``
    (already), ``configuration_unverified`` or the :meth:`Trust.require_signer` refusals."""
    trust.require_signer(signer)
    row = _verified_row(session, trust, alias)
    if not row.active:
        raise _deactivated(row)
    row.active = False
    row.deactivated_by = signer.actor_id
    row.deactivated_at = at
    sign_row(RecordKind.REPOSITORY, row, signer, at)
    session.flush()
    return repository_record(row)


_REPOSITORIES: Table = RepositoryRow.__table__  # type: ignore[assignment]
_BY_ALIAS = select(_REPOSITORIES).where(_REPOSITORIES.c.alias == bindparam("alias"))


def get_repository(session: Session, trust: Trust, alias: str) -> RepositoryRecord:
    """The repository registered as ``alias`` (active or not). Raises ``unknown_repository`` (not
    found) or ``configuration_unverified``."""
    record = find_repository(session, trust, alias)
    if record is None:
        raise _unknown(alias)
    return record


def find_repository(session: Session, trust: Trust, alias: str) -> RepositoryRecord | None:
    """The repository registered as ``alias``, or ``None`` (a plain row, read by a statement built
    once: every run naming a repository looks it up when its contract is captured). Raises
    ``configuration_unverified`` when its row is not verified."""
    row = session.execute(_BY_ALIAS, {"alias": alias}).first()
    if row is None:
        return None
    trust.require(RecordKind.REPOSITORY, [row])
    return repository_record(row)


def list_repositories(session: Session, trust: Trust) -> list[RepositoryRecord]:
    """All registered repositories (active or not), by alias; ``configuration_unverified`` names any
    that is not verified."""
    rows = list(session.scalars(select(RepositoryRow).order_by(RepositoryRow.alias)))
    trust.require(RecordKind.REPOSITORY, rows)
    return [repository_record(row) for row in rows]


def require_active(record: RepositoryRecord) -> RepositoryRecord:
    """``record`` when it is active; else ``repository_deactivated`` (refused)."""
    if not record.active:
        raise _deactivated(record)
    return record


def repository_record(row: RepositoryRow | Row[Any]) -> RepositoryRecord:
    """The contract record of a stored repository."""
    return RepositoryRecord(
        alias=row.alias,
        path=row.path,
        default_branch=row.default_branch,
        added_by=row.added_by,
        added_at=row.added_at,
        config=_read_config(row),
        active=bool(row.active),
        deactivated_by=row.deactivated_by,
        deactivated_at=row.deactivated_at,
    )


def _deactivated(record: Any) -> Refused:
    at = record.deactivated_at.isoformat() if record.deactivated_at else "?"
    return Refused(
        "repository_deactivated",
        f"repository {record.alias!r} was deactivated by {record.deactivated_by} at {at}: no new run or "
        "execution may use it",
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
