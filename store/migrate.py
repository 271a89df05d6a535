"""Alembic migrations of the store, configured in code: no ``alembic.ini``, so they run from any
working directory and from an installed package.

Only this module imports Alembic, and only :func:`store.database.open_store` with ``create=True``
imports this module: read-only commands never pay for loading it.

For development: ``python -m store.migrate upgrade|current|revision -m MESSAGE [--autogenerate]``
against ``SPECIALISTS_DATABASE_URL`` (or the default SQLite file in the state directory).
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Sequence
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


def upgrade_to_head(engine: Engine) -> None:
    """Bring the schema behind ``engine`` to the newest revision, holding the write lock.

    Two processes opening a fresh store at once are serialised by the lock: the second finds the
    schema current and does nothing; two threads of one process by :data:`_MIGRATING`. Raises
    :class:`Refused` (``database_schema_mismatch``) when the database carries a revision this
    version does not know (written by a newer version).
    """
    from alembic import command
    from alembic.util.exc import CommandError

    config = alembic_config()
    try:
        # Alembic runs a migration through module-level proxies (``alembic.op``, the environment
        # context): two threads migrating at once — two stores opened in one process — would share
        # them. One migration at a time per process; the write lock orders processes.
        with _MIGRATING, writing(engine).begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except CommandError as exc:
        raise Refused(
            "database_schema_mismatch",
            f"cannot upgrade the database schema: {exc}; it was probably written by a newer version "
            "of specialists — use that version",
        ) from exc


def head_revision() -> str:
    """The newest revision among the shipped migrations."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise RuntimeError(f"no migrations found in {MIGRATIONS_DIR}")
    return head


def main(argv: Sequence[str] | None = None) -> int:
    """Developer entry point: upgrade, show the current revision, or write a new revision file."""
    from alembic import command

    from store.database import database_url_from_env, open_store

    parser = argparse.ArgumentParser(prog="python -m store.migrate", description=__doc__)
    parser.add_argument("--url", help="database URL (default: SPECIALISTS_DATABASE_URL or SQLite)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("upgrade", help="upgrade the schema to the newest revision")
    commands.add_parser("current", help="print the revision the database is at")
    revision = commands.add_parser("revision", help="write a new migration file")
    revision.add_argument("-m", "--message", required=True)
    revision.add_argument("--rev-id", help="revision id, e.g. 0002 (the next number by convention)")
    revision.add_argument(
        "--autogenerate", action="store_true", help="diff store.schema against an upgraded database"
    )
    args = parser.parse_args(argv)
    url = args.url or database_url_from_env()

    store = open_store(url, create=True)
    try:
        config = alembic_config()
        with writing(store.engine).begin() as connection:
            config.attributes["connection"] = connection
            if args.command == "current":
                command.current(config)
            elif args.command == "revision":
                command.revision(
                    config,
                    message=args.message,
                    rev_id=args.rev_id,
                    autogenerate=args.autogenerate,
                )
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
