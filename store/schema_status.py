"""Where the store's schema stands, read without changing anything (``specialists status``): the
revision the database carries against the newest shipped Alembic migration.

Nothing is created: a missing SQLite file is reported as missing, not made; the database is only
read (``alembic_version``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import inspect, select, text

from store.database import parse_database_url
from store.engine import create_store_engine, database_errors, is_memory_sqlite, render_url

if TYPE_CHECKING:
    from alembic.script import ScriptDirectory


@dataclass(frozen=True)
class SchemaStatus:
    """The database at ``url`` (credentials masked): whether it holds a store, the revision it
    carries (``current``; ``None`` when it holds none) and the newest shipped one (``head``)."""

    url: str
    exists: bool
    current: str | None
    head: str
    known: bool
    """Whether ``current`` is one of the shipped migrations (a newer version may have written it)."""

    @property
    def migration_needed(self) -> bool:
        """The database is behind the shipped migrations (the next configuration change upgrades it)."""
        return self.exists and self.known and self.current != self.head


def schema_status(url: str) -> SchemaStatus:
    """The schema revision of the store at ``url`` against the Alembic head.

    Raises :class:`contracts.errors.InvalidInput` for a URL the store does not take and
    :class:`contracts.errors.ServiceUnavailable` (``database_unreachable``) when the database cannot
    be reached.
    """
    from alembic.script import ScriptDirectory

    from store.migrate import alembic_config

    scripts = ScriptDirectory.from_config(alembic_config())
    head = scripts.get_current_head() or ""
    parsed = parse_database_url(url)
    shown = render_url(parsed)
    if parsed.get_backend_name() == "sqlite" and (
        is_memory_sqlite(parsed) or not Path(str(parsed.database)).is_file()
    ):
        return SchemaStatus(url=shown, exists=False, current=None, head=head, known=True)
    engine = create_store_engine(parsed, create=False)
    try:
        with database_errors(parsed, opening=True), engine.connect() as connection:
            if not inspect(connection).has_table("alembic_version"):
                return SchemaStatus(url=shown, exists=False, current=None, head=head, known=True)
            revisions = connection.scalars(
                select(text("version_num")).select_from(text("alembic_version"))
            ).all()
    finally:
        engine.dispose()
    if not revisions:
        return SchemaStatus(url=shown, exists=False, current=None, head=head, known=True)
    current = ", ".join(str(revision) for revision in revisions)
    known = len(revisions) == 1 and _known(scripts, str(revisions[0]))
    return SchemaStatus(url=shown, exists=True, current=current, head=head, known=known)


def _known(scripts: ScriptDirectory, revision: str) -> bool:
    from alembic.script.revision import RevisionError
    from alembic.util.exc import CommandError

    try:
        return scripts.get_revision(revision) is not None
    except (RevisionError, CommandError):
        return False
