"""Developer command for the store's schema: ``python -m store.revisions upgrade|current|revision -m
MESSAGE [--autogenerate]`` against ``SPECIALISTS_DATABASE_URL`` (or the default SQLite file in the state
directory). The migrations themselves run through :mod:`store.migrate`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from store.database import database_url_from_env, open_store
from store.engine import writing
from store.migrate import alembic_config


def main(argv: Sequence[str] | None = None) -> int:
    """Developer entry point: upgrade, show the current revision, or write a new revision file."""
    from alembic import command

    parser = argparse.ArgumentParser(prog="python -m store.revisions", description=__doc__)
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
