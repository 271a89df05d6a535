"""Operator configuration and projections in SQL: SQLite by default, PostgreSQL by URL.

Open with :func:`open_store`; schema changes go through the Alembic migrations in
``store/migrations/`` (loaded only when a store is opened with ``create=True``).
"""

from store.database import (
    StoreMissing,
    database_url_from_env,
    default_database_url,
    open_store,
)
from store.store import Store

__all__ = [
    "Store",
    "StoreMissing",
    "database_url_from_env",
    "default_database_url",
    "open_store",
]
