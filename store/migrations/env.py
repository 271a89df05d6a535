"""Alembic environment of the store.

Run through :mod:`store.migrate`, which passes an open connection in ``config.attributes``. Without one
(``python -m store.migrate`` builds none only for offline SQL), the URL comes from the configuration.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from store.schema import Base

config = context.config
target_metadata = Base.metadata


def _configure_and_run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things in place; batch mode copies the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_offline() -> None:
    """Emit the migration SQL for the configured URL instead of running it."""
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    """Migrate over the connection given by the caller (``store.migrate``)."""
    connection = config.attributes.get("connection")
    if not isinstance(connection, Connection):
        raise RuntimeError("store migrations run through store.migrate, which passes a connection")
    _configure_and_run(connection)


if context.is_offline_mode():
    run_offline()
else:
    run_online()
