"""Alembic migrations of the store, configured in code: no ``alembic.ini``, so they run from any
working directory and from an installed package.

Only this module (and the developer command :mod:`store.revisions`) imports Alembic, and only
:func:`store.database.open_store` with ``create=True`` imports this module: read-only commands never
pay for loading it.

For development, ``python -m store.revisions`` upgrades, shows or writes revisions.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Final

from sqlalchemy import Engine

from contracts.errors import Refused
from store.engine import writing

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR: Final = Path(__file__).resolve().parent / "migrations"


def alembic_config() -> Config:
    """The Alembic configuration of the store (script location inside this package)."""
    from alembic.config import Config

    config = Config()
    # ConfigParser interpolates "%": a path containing it must be escaped.
    config.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    config.set_main_option("file_template", "%%(rev)s_%%(slug)s")
    return config


_MIGRATING: Final = threading.Lock()
_LOG: Final = logging.getLogger(__name__)


def upgrade_to_head(engine: Engine) -> None:
    """Bring the schema behind ``engine`` to the newest revision, holding the write lock.

    Two processes opening a fresh store at once are serialised by the lock: the second finds the
    schema current and does nothing; two threads of one process by :data:`_MIGRATING`. Raises
    :class:`Refused` (``database_schema_mismatch``) when the database carries a revision this
    version does not know (written by a newer version).

    Logs one line (``store schema upgraded from R1 to R2``) when it changed
    the schema and none when the schema was current; Alembic's own lines stay below the deployment's
    log level unless it is ``debug`` (``runtime.logs``), as every worker and command opens the store.
    """
    from alembic import command
    from alembic.runtime.migration import MigrationContext
    from alembic.util.exc import CommandError

    config = alembic_config()
    try:
        # Alembic runs a migration through module-level proxies (``alembic.op``, the environment
        # context): two threads migrating at once — two stores opened in one process — would share
        # them. One migration at a time per process; the write lock orders processes.
        with _MIGRATING, writing(engine).begin() as connection:
            config.attributes["connection"] = connection
            before = MigrationContext.configure(connection).get_current_revision()
            command.upgrade(config, "head")
            after = MigrationContext.configure(connection).get_current_revision()
    except CommandError as exc:
        raise Refused(
            "database_schema_mismatch",
            f"cannot upgrade the database schema: {exc}; it was probably written by a newer version "
            "of specialists — use that version",
        ) from exc
    if after != before:
        _LOG.info("store schema upgraded from %s to %s", before or "an empty database", after)


def head_revision() -> str:
    """The newest revision among the shipped migrations."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise RuntimeError(f"no migrations found in {MIGRATIONS_DIR}")
    return head
