"""Opening the store: URLs, the state directory, a missing store, an unreachable database."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from contracts.errors import InvalidInput, Refused, ServiceUnavailable
from store import StoreMissing, database_url_from_env, default_database_url, open_store
from store.database import parse_database_url
from tests.identity import STORE_ANCHOR, bootstrap

UNREACHABLE_POSTGRESQL = "postgresql+psycopg://postgres:s3cret-pw@127.0.0.1:1/specialists"


def test_default_database_url_is_an_absolute_sqlite_file_in_the_state_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert default_database_url(Path("state")) == f"sqlite:///{tmp_path}/state/specialists.db"


def test_database_url_from_env_prefers_the_database_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECIALISTS_STATE_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("SPECIALISTS_DATABASE_URL", "postgresql+psycopg://postgres@db:5432/specialists")
    assert database_url_from_env() == "postgresql+psycopg://postgres@db:5432/specialists"


def test_database_url_from_env_uses_the_state_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SPECIALISTS_DATABASE_URL", raising=False)
    monkeypatch.setenv("SPECIALISTS_STATE_DIR", str(tmp_path / "state"))
    assert database_url_from_env() == f"sqlite:///{tmp_path}/state/specialists.db"


def test_database_url_from_env_defaults_to_the_xdg_state_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SPECIALISTS_DATABASE_URL", raising=False)
    monkeypatch.delenv("SPECIALISTS_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    assert database_url_from_env() == f"sqlite:///{tmp_path}/xdg/specialists/specialists.db"


def test_creating_a_store_creates_the_state_directory(tmp_path: Path) -> None:
    state_dir = tmp_path / "deep" / "state"
    with open_store(default_database_url(state_dir)):
        pass
    assert (state_dir / "specialists.db").is_file()


def test_missing_sqlite_store_without_create_creates_nothing(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    with pytest.raises(StoreMissing) as raised:
        open_store(default_database_url(state_dir), create=False)
    assert raised.value.code == "store_missing"
    assert raised.value.exit_code == 3
    assert not state_dir.exists()


def test_missing_sqlite_file_in_an_existing_directory_is_not_created(tmp_path: Path) -> None:
    with pytest.raises(StoreMissing):
        open_store(default_database_url(tmp_path), create=False)
    assert list(tmp_path.iterdir()) == []


def test_empty_database_without_create_is_a_missing_store(database_url: str) -> None:
    sqlite_file = _sqlite_file(database_url)
    if sqlite_file is not None:
        sqlite_file.parent.mkdir(parents=True)
        sqlite_file.touch()
    with pytest.raises(StoreMissing):
        open_store(database_url, create=False)
    if sqlite_file is not None:
        assert sqlite_file.stat().st_size == 0
        assert [path.name for path in sqlite_file.parent.iterdir()] == [sqlite_file.name]
    else:
        engine = create_engine(database_url, poolclass=NullPool)
        with engine.connect() as connection:
            tables = connection.execute(
                text("SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()")
            ).scalar()
        engine.dispose()
        assert tables == 0


def test_existing_store_opens_without_create(database_url: str) -> None:
    with open_store(database_url, anchor=STORE_ANCHOR) as created:
        bootstrap(created)
    with open_store(database_url, create=False, anchor=STORE_ANCHOR) as opened:
        assert opened.url == created.url
        assert opened.actor_exists("alice")
        assert opened.get_policy().set_by is None


@pytest.mark.parametrize("create", [True, False])
def test_unreachable_postgresql_is_service_unavailable(create: bool) -> None:
    with pytest.raises(ServiceUnavailable) as raised:
        open_store(UNREACHABLE_POSTGRESQL, create=create)
    assert raised.value.code == "database_unreachable"
    assert raised.value.exit_code == 5
    assert "127.0.0.1:1" in raised.value.message
    assert "s3cret-pw" not in raised.value.message


def test_uncreatable_state_directory_is_service_unavailable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory\n")
    with pytest.raises(ServiceUnavailable) as raised:
        open_store(default_database_url(blocker / "state"))
    assert raised.value.code == "database_unreachable"


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("not a url", "invalid_database_url"),
        ("mysql://root@localhost/specialists", "unsupported_database_url"),
        ("postgresql+asyncpg://postgres@localhost/specialists", "unsupported_database_url"),
        ("sqlite:///file:x.db?mode=ro&uri=true", "unsupported_database_url"),
    ],
)
def test_unsupported_database_url_is_invalid_input(url: str, code: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        open_store(url)
    assert raised.value.code == code


def test_postgresql_url_without_driver_uses_psycopg() -> None:
    assert parse_database_url("postgresql://postgres@db/specialists").drivername == "postgresql+psycopg"


def test_schema_of_another_revision_is_refused(database_url: str) -> None:
    open_store(database_url).close()
    engine = create_engine(database_url, poolclass=NullPool)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    for create in (False, True):
        with pytest.raises(Refused) as raised:
            open_store(database_url, create=create)
        assert raised.value.code == "database_schema_mismatch"


def _sqlite_file(url: str) -> Path | None:
    parsed = parse_database_url(url)
    return Path(parsed.database) if parsed.get_backend_name() == "sqlite" and parsed.database else None


@pytest.mark.parametrize("create", [True, False])
def test_file_that_is_not_a_database_is_service_unavailable(tmp_path: Path, create: bool) -> None:
    database = tmp_path / "specialists.db"
    database.write_bytes(b"this is not a SQLite database, " * 100)
    with pytest.raises(ServiceUnavailable) as raised:
        open_store(default_database_url(tmp_path), create=create)
    assert raised.value.code == "database_unreachable"
    assert "not a database" in raised.value.message


def test_in_memory_store_works_for_one_process() -> None:
    with open_store("sqlite://", anchor=STORE_ANCHOR) as store:
        bootstrap(store)
        assert store.actor_exists("alice")
    with pytest.raises(StoreMissing):
        open_store("sqlite://", create=False)
