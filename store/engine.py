"""Engines for the store's two backends, SQLite and PostgreSQL (psycopg 3), and their error mapping.

Write transactions are serialised: SQLite takes the write lock at ``BEGIN IMMEDIATE`` (a deferred
transaction that reads then writes can fail with "database is locked" instead of waiting), and
PostgreSQL takes a transaction-scoped advisory lock. Configuration writes are rare, so one writer at a
time costs nothing and makes every read-validate-write sequence race free.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, Connection
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.pool import ConnectionPoolEntry, StaticPool

from contracts.errors import ServiceUnavailable

WRITE_LOCK_OPTION: Final = "specialists_write_lock"
"""Execution option: a transaction begun on a connection with this option holds the write lock."""

# Any fixed 64-bit number; it names "configuration writes of the specialists store" to PostgreSQL.
_POSTGRES_WRITE_LOCK_KEY: Final = 0x5350_4543_5354_4F52
_SQLITE_BUSY_TIMEOUT_SECONDS: Final = 30.0
_POSTGRES_CONNECT_TIMEOUT_SECONDS: Final = 10


def render_url(url: URL) -> str:
    """The URL as text with any password replaced by ``***``: safe for messages and logs."""
    return url.render_as_string(hide_password=True)


def is_memory_sqlite(url: URL) -> bool:
    """Whether ``url`` names an in-memory SQLite database."""
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")


def create_store_engine(url: URL, *, create: bool) -> Engine:
    """An engine for ``url`` (an already validated SQLite or ``postgresql+psycopg`` URL).

    SQLite connections enable foreign keys and, when ``create`` is true, write-ahead logging. With
    ``create`` false a SQLite file is opened read-write without permission to create it, so a file
    that vanished after the caller checked for it is never created anew.
    """
    if url.get_backend_name() == "sqlite":
        return _sqlite_engine(url, create=create)
    return _postgresql_engine(url)


def writing(engine: Engine) -> Engine:
    """The same engine (pool, events) whose transactions hold the write lock."""
    return engine.execution_options(**{WRITE_LOCK_OPTION: True})


@contextmanager
def database_errors(url: URL, *, opening: bool = False) -> Iterator[None]:
    """Turn a lost or refused database connection into ``ServiceUnavailable`` (exit 5).

    While ``opening``, any database error is one: a file that is not a SQLite database, a server
    that refuses the schema, a role without rights.
    """
    try:
        yield
    except (OperationalError, InterfaceError) as exc:
        raise unavailable(url, exc) from exc
    except DBAPIError as exc:
        if opening or exc.connection_invalidated:
            raise unavailable(url, exc) from exc
        raise


def unavailable(url: URL, exc: DBAPIError) -> ServiceUnavailable:
    """``database_unreachable`` naming ``url`` (password hidden) and the driver's reason."""
    detail = str(exc.orig).strip().splitlines()[0] if str(exc.orig).strip() else type(exc).__name__
    if url.password:
        detail = detail.replace(str(url.password), "***")
    return ServiceUnavailable(
        "database_unreachable", f"cannot use the database at {render_url(url)}: {detail}"
    )


def _sqlite_engine(url: URL, *, create: bool) -> Engine:
    connect_args: dict[str, Any] = {
        "timeout": _SQLITE_BUSY_TIMEOUT_SECONDS,
        "check_same_thread": False,
    }
    if is_memory_sqlite(url):
        # One shared connection: every new connection to ":memory:" would be an empty database.
        engine = create_engine(url, connect_args=connect_args, poolclass=StaticPool)
    elif create:
        engine = create_engine(url, connect_args=connect_args)
    else:
        assert url.database is not None
        read_write = url.set(database=f"file:{quote(url.database)}", query={"mode": "rw", "uri": "true"})
        engine = create_engine(read_write, connect_args=connect_args)
    write_ahead_log = create and not is_memory_sqlite(url)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: ConnectionPoolEntry) -> None:
        # SQLAlchemy emits BEGIN itself (see _on_begin): the sqlite3 module's own transaction
        # handling skips BEGIN before SELECT and DDL, which breaks isolation and migrations.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA foreign_keys = ON")
            if write_ahead_log:
                cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        write = connection.get_execution_options().get(WRITE_LOCK_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def _postgresql_engine(url: URL) -> Engine:
    connect_args: dict[str, Any] = {}
    if "connect_timeout" not in url.query:
        connect_args["connect_timeout"] = _POSTGRES_CONNECT_TIMEOUT_SECONDS
    engine = create_engine(url, connect_args=connect_args, pool_pre_ping=True)

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        if connection.get_execution_options().get(WRITE_LOCK_OPTION, False):
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_POSTGRES_WRITE_LOCK_KEY})")

    return engine
