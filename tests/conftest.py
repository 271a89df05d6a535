"""Fixtures shared by every test package.

``database_url``: a test that takes it runs once against SQLite (a file under ``tmp_path``) and once
against PostgreSQL, in a schema of its own (first on the URL's search path) that is dropped
afterwards. PostgreSQL comes from ``SPECIALISTS_TEST_DATABASE_URL`` (e.g.
``postgresql+psycopg://postgres@127.0.0.1:5432/test``) or, without it, from a testcontainers
PostgreSQL when a Docker engine is reachable; otherwise the PostgreSQL variants skip.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from typing import Any

# Imported now, before any Temporal worker thread exists: otherwise the hypothesis plugin imports it
# while pytest finishes, and CPython 3.11.7 can fail a compile that runs beside another thread's
# ("SystemError: AST constructor recursion depth mismatch"), turning a passing run into an error.
import hypothesis  # noqa: F401
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.pool import NullPool

# Temporal fixtures (one shared dev server per test run, time-skipping server, task queues).
from tests.temporal_fixtures import (  # noqa: F401
    task_queue,
    temporal_client,
    temporal_dev_server,
    time_skipping_env,
)

# The deployment's default state directory is under XDG_STATE_HOME (else ~/.local/state): for the
# whole session it is a temporary directory, so nothing a test runs writes into the real home. Tests
# that are about the default pass their own environment.
_SESSION_STATE_HOME = tempfile.mkdtemp(prefix="specialists-test-state-home-")
os.environ["XDG_STATE_HOME"] = _SESSION_STATE_HOME
atexit.register(shutil.rmtree, _SESSION_STATE_HOME, True)

# The Temporal connection also follows the SDK's environment configuration (runtime/connection.py):
# a developer's TEMPORAL_* variables or ~/.config/temporalio/temporal.toml must not send the tests
# elsewhere. They see no such variable and an empty profile file; the connection tests set their own.
_SDK_CONNECTION_PREFIXES = (
    "TEMPORAL_ADDRESS",
    "TEMPORAL_NAMESPACE",
    "TEMPORAL_API_KEY",
    "TEMPORAL_TLS",
    "TEMPORAL_PROFILE",
    "TEMPORAL_GRPC_META_",
    "TEMPORAL_CODEC_",
    "TEMPORAL_CONFIG_FILE",
)
for _name in [name for name in os.environ if name.startswith(_SDK_CONNECTION_PREFIXES)]:
    del os.environ[_name]
os.environ["TEMPORAL_CONFIG_FILE"] = os.path.join(_SESSION_STATE_HOME, "temporal.toml")
with open(os.environ["TEMPORAL_CONFIG_FILE"], "w", encoding="utf-8"):
    pass

POSTGRES_URL_ENV = "SPECIALISTS_TEST_DATABASE_URL"
POSTGRES_IMAGE = "postgres:16-alpine"


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    """A PostgreSQL server URL (psycopg 3) whose role may create schemas; skips when there is none."""
    url = os.environ.get(POSTGRES_URL_ENV, "").strip()
    if url:
        yield url
        return
    yield from _postgres_container()


def _postgres_container() -> Iterator[str]:
    try:
        from testcontainers.community.postgres import PostgresContainer
    except ImportError:
        try:
            from testcontainers.postgres import PostgresContainer  # type: ignore[no-redef]
        except ImportError:
            pytest.skip(f"PostgreSQL variant: set {POSTGRES_URL_ENV}, or install testcontainers")
    from docker.errors import DockerException

    container = None
    try:
        container = PostgresContainer(POSTGRES_IMAGE, driver="psycopg")
        container.start()
    except DockerException as exc:
        if container is not None:
            _stop_quietly(container)
        pytest.skip(
            f"PostgreSQL variant: set {POSTGRES_URL_ENV}, or start Docker "
            f"(testcontainers: no Docker engine reachable, {type(exc).__name__})"
        )
    try:
        yield container.get_connection_url()
    finally:
        _stop_quietly(container)


def _stop_quietly(container: Any) -> None:
    from docker.errors import DockerException

    with contextlib.suppress(DockerException):
        container.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A URL for an empty store database: a SQLite file (its directory not yet created) or a fresh
    PostgreSQL schema."""
    if request.param == "sqlite":
        state_dir = tmp_path_factory.mktemp("store") / "state"
        yield URL.create("sqlite", database=str(state_dir / "specialists.db")).render_as_string(
            hide_password=False
        )
        return
    yield from _fresh_postgres_database(request.getfixturevalue("postgres_server_url"))


def _fresh_postgres_database(server_url: str) -> Iterator[str]:
    # A schema per test, first on the search path: as isolated as a database for the store (which
    # only uses the default schema) and far cheaper to create than CREATE DATABASE.
    server = make_url(server_url)
    if server.drivername == "postgresql":
        server = server.set(drivername="postgresql+psycopg")
    schema = f"test_{uuid.uuid4().hex}"
    options = " ".join(filter(None, [server.query.get("options"), f"-csearch_path={schema}"]))
    test_url = server.update_query_dict({"options": options, "application_name": schema})
    admin = create_engine(server, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as connection:
            connection.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
        try:
            yield test_url.render_as_string(hide_password=False)
        finally:
            with admin.connect() as connection:
                # End connections a test left open, so the drop cannot wait on their locks.
                connection.execute(
                    text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = :n"
                    ),
                    {"n": schema},
                )
                connection.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        admin.dispose()
