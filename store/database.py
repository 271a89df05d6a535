"""Where the store lives and how it is opened (docs/architecture.md "Storage", "Configuration").

SQLite file ``<state dir>/specialists.db`` by default; ``SPECIALISTS_DATABASE_URL`` selects another
database, e.g. ``postgresql+psycopg://postgres@127.0.0.1:5432/test``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from sqlalchemy import Engine, inspect, select, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from contracts.constants import default_state_dir
from contracts.errors import InvalidInput, NotFound, Refused, ServiceUnavailable
from contracts.identity import TrustAnchor
from store.engine import create_store_engine, database_errors, is_memory_sqlite, render_url
from store.schema import SCHEMA_REVISION
from store.store import Store

DATABASE_FILE_NAME: Final = "specialists.db"
DATABASE_URL_ENV: Final = "SPECIALISTS_DATABASE_URL"
STATE_DIR_ENV: Final = "SPECIALISTS_STATE_DIR"

_SQLITE_DRIVERS: Final = frozenset({"sqlite", "sqlite+pysqlite"})
_POSTGRESQL_DRIVERS: Final = frozenset({"postgresql", "postgresql+psycopg"})


class StoreMissing(NotFound):
    """There is no store yet at the URL (``open_store(create=False)``): callers use the defaults."""

    def __init__(self, message: str) -> None:
        super().__init__("store_missing", message)


def default_database_url(state_dir: Path) -> str:
    """The SQLite URL of ``<state_dir>/specialists.db``, with an absolute path."""
    database = (Path(state_dir) / DATABASE_FILE_NAME).resolve()
    return URL.create("sqlite", database=str(database)).render_as_string(hide_password=False)


def database_url_from_env() -> str:
    """``SPECIALISTS_DATABASE_URL`` if set, else the default SQLite file in
    ``SPECIALISTS_STATE_DIR`` (default ``$XDG_STATE_HOME/specialists``, else
    ``~/.local/state/specialists``: :func:`contracts.constants.default_state_dir`)."""
    url = os.environ.get(DATABASE_URL_ENV, "").strip()
    if url:
        return url
    state_dir = os.environ.get(STATE_DIR_ENV, "").strip() or default_state_dir(os.environ)
    return default_database_url(Path(state_dir))


def open_store(url: str, *, create: bool = True, anchor: TrustAnchor | None = None) -> Store:
    """Open the store at ``url``; ``anchor`` is what its configuration reads are verified against
    (:class:`store.store.Store`; none: no signed record can be read).

    With ``create`` true, a SQLite file and its directory are created when missing and the schema is
    upgraded to the newest revision. With ``create`` false no database, directory or table is
    created and the schema is left as it is: a missing SQLite file, or a database without the
    store's schema, raises :class:`StoreMissing` so the caller can use the defaults.

    Raises :class:`InvalidInput` (``invalid_database_url``, ``unsupported_database_url``) for a URL
    that is not SQLite or ``postgresql+psycopg``; :class:`ServiceUnavailable`
    (``database_unreachable``) when the database cannot be reached or the SQLite directory cannot be
    created; :class:`Refused` (``database_schema_mismatch``) when the schema is at another revision
    than this version expects and ``create`` is false (or is newer than this version knows).
    """
    parsed = parse_database_url(url)
    if parsed.get_backend_name() == "sqlite":
        _prepare_sqlite(parsed, create=create)
    engine = create_store_engine(parsed, create=create)
    try:
        with database_errors(parsed, opening=True):
            if create:
                from store.migrate import upgrade_to_head

                upgrade_to_head(engine)
            else:
                _check_schema_revision(engine, parsed)
    except BaseException:
        engine.dispose()
        raise
    return Store(engine, url=parsed, anchor=anchor)


def shown_database_url(url: str) -> str:
    """``url`` as it may be shown: parsed and checked (:func:`parse_database_url`), any password as
    ``***``."""
    return render_url(parse_database_url(url))


def parse_database_url(url: str) -> URL:
    """Parse and check a store URL; ``postgresql://`` means ``postgresql+psycopg://``."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:
        raise InvalidInput(
            "invalid_database_url", f"{url!r} is not a database URL (e.g. sqlite:///PATH)"
        ) from exc
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.drivername not in _SQLITE_DRIVERS | _POSTGRESQL_DRIVERS:
        raise InvalidInput(
            "unsupported_database_url",
            f"unsupported database {render_url(parsed)}: use sqlite:///PATH or "
            "postgresql+psycopg://USER@HOST:PORT/DATABASE",
        )
    if parsed.drivername in _SQLITE_DRIVERS and "uri" in parsed.query:
        raise InvalidInput(
            "unsupported_database_url",
            f"SQLite URI filenames are not supported ({render_url(parsed)}): use sqlite:///PATH",
        )
    return parsed


def _prepare_sqlite(url: URL, *, create: bool) -> None:
    if is_memory_sqlite(url):
        if not create:
            raise StoreMissing("an in-memory SQLite database holds no store until it is created")
        return
    assert url.database is not None
    path = Path(url.database)
    if not create:
        if not path.is_file():
            raise StoreMissing(f"no store at {path}: nothing has been configured yet")
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ServiceUnavailable(
            "database_unreachable", f"cannot create the state directory {path.parent}: {exc}"
        ) from exc


def _check_schema_revision(engine: Engine, url: URL) -> None:
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            raise StoreMissing(f"no store schema in the database at {render_url(url)}")
        revisions = connection.scalars(select(text("version_num")).select_from(text("alembic_version"))).all()
    if not revisions:
        raise StoreMissing(f"no store schema in the database at {render_url(url)}")
    if list(revisions) != [SCHEMA_REVISION]:
        found = ", ".join(str(revision) for revision in revisions)
        raise Refused(
            "database_schema_mismatch",
            f"the database at {render_url(url)} has schema revision {found}; this version of "
            f"specialists expects {SCHEMA_REVISION}. A configuration change upgrades an older "
            "schema; a newer one needs the newer version of specialists",
        )
