"""The schema is created by the shipped Alembic migrations and matches ``store.schema``."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from store import Store, default_database_url, open_store
from store.migrate import MIGRATIONS_DIR, head_revision
from store.schema import SCHEMA_REVISION, AutomationPolicyRow, Base
from store.store import utc_now
from tests.identity import STORE_ANCHOR, bootstrap

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
TABLES = {
    "actors",
    "automation_policy",
    "model_selections",
    "repositories",
    "runs",
    "run_events",
    "deployment_settings",
    "models",
    "spent_proofs",
    "worktree_claims",
    "queue_archive",
    "queue_archive_names",
    "research_cases",
    "research_evidence",
    "research_job_outputs",
    "actor_keys",
    "configuration_events",
    "session_keys",
    "alembic_version",
}


def test_migration_creates_every_table(store: Store) -> None:
    with store.engine.connect() as connection:
        assert set(inspect(connection).get_table_names()) == TABLES


def test_repositories_keep_their_configuration_in_a_required_json_column(store: Store) -> None:
    with store.engine.connect() as connection:
        columns = {column["name"]: column for column in inspect(connection).get_columns("repositories")}
    assert set(columns) == {
        "alias",
        "path",
        "default_branch",
        "added_by",
        "added_at",
        "config",
        "active",
        "deactivated_by",
        "deactivated_at",
        "signed_by",
        "signed_key",
        "signed_at",
        "signature",
    }
    assert columns["config"]["nullable"] is False


def test_migrated_schema_matches_the_declared_schema(store: Store) -> None:
    with store.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []


def test_schema_revision_is_the_newest_migration() -> None:
    assert head_revision() == SCHEMA_REVISION


def test_reopening_a_current_store_keeps_its_content(database_url: str) -> None:
    with open_store(database_url, anchor=STORE_ANCHOR) as first:
        bootstrap(first)
    with open_store(database_url, anchor=STORE_ANCHOR) as second:
        assert [record.id for record in second.list_actors()] == ["alice"]


def test_migrations_run_from_any_working_directory(database_url: str, tmp_path: Path) -> None:
    script = "import sys; from store import open_store; open_store(sys.argv[1]).close(); print('ok')"
    result = subprocess.run(
        [sys.executable, "-c", script, database_url],
        cwd=tmp_path,
        env={"PYTHONPATH": str(REPOSITORY_ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    assert not (tmp_path / "alembic.ini").exists()


def test_migration_files_ship_inside_the_package() -> None:
    assert MIGRATIONS_DIR == REPOSITORY_ROOT / "store" / "migrations"
    assert (MIGRATIONS_DIR / "env.py").is_file()
    assert (MIGRATIONS_DIR / "script.py.mako").is_file()
    assert len(list((MIGRATIONS_DIR / "versions").glob(f"{SCHEMA_REVISION}_*.py"))) == 1


def test_reading_a_store_does_not_load_alembic(database_url: str) -> None:
    open_store(database_url).close()
    script = (
        "import sys\n"
        "import store.database\n"
        "assert 'alembic' not in sys.modules, 'import loaded alembic'\n"
        "with store.database.open_store(sys.argv[1], create=False) as s:\n"
        "    s.get_policy(); s.list_actors()\n"
        "assert 'alembic' not in sys.modules, 'reading loaded alembic'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, database_url],
        cwd=REPOSITORY_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_foreign_keys_are_enforced(store: Store) -> None:
    # SQLite enforces them only when each connection asks for it.
    row = AutomationPolicyRow(
        mode="recommend", maximum_automatic_tier="recommend", set_by="nobody", set_at=utc_now()
    )
    with Session(store.engine) as session, pytest.raises(IntegrityError):
        session.add(row)
        session.commit()


def test_sqlite_store_uses_write_ahead_logging(tmp_path: Path) -> None:
    with open_store(default_database_url(tmp_path)) as store, store.engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


def test_concurrent_first_opens_create_the_schema_once(database_url: str) -> None:
    script = (
        "import sys\nfrom store import open_store\nwith open_store(sys.argv[1]) as s:\n    s.get_policy()\n"
    )
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, database_url],
            cwd=REPOSITORY_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    for process in processes:
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
    with open_store(database_url, create=False) as store, store.engine.connect() as connection:
        assert set(inspect(connection).get_table_names()) == TABLES


def test_fresh_stores_opened_by_several_threads_at_once_all_migrate_to_head(tmp_path: Path) -> None:
    # Alembic migrates through module-level proxies: unguarded, threads migrating at once corrupt
    # each other's run (errors, even a crash of the interpreter).
    errors: list[BaseException] = []

    def open_fresh(number: int) -> None:
        try:
            with open_store(f"sqlite:///{tmp_path / f'store-{number}.db'}", create=True) as store:
                with store.engine.connect() as connection:
                    revision = MigrationContext.configure(connection).get_current_revision()
                assert revision == SCHEMA_REVISION
        except BaseException as error:  # collected for the assertion below
            errors.append(error)

    threads = [threading.Thread(target=open_fresh, args=(number,)) for number in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
