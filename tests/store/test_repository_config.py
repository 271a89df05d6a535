"""A repository's configuration in the store: stored with the repository (a JSON column, every key
present), returned on every read, replaced as a whole by an update that changes nothing else; a
refused update writes nothing. Migration 0007 adds the column and gives existing repositories the
default configuration."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, select, text, update
from sqlalchemy.orm import Session

from contracts.config import RepositoryConfig, RepositoryExecutor
from contracts.errors import NotFound, OperatorError
from contracts.identity import RecordKind, Signer
from store import Store, open_store
from store.database import parse_database_url
from store.engine import create_store_engine, writing
from store.migrate import alembic_config
from store.schema import SCHEMA_REVISION, RepositoryRow
from store.trust import sign_row
from tests.identity import STORE_ANCHOR, attest_legacy, insert_legacy_actor, register
from tests.identity import signer as actor_signer
from tests.store.git_repository import register_repository, resolve_base_commit

COMMAND = RepositoryConfig(
    executor=RepositoryExecutor.COMMAND,
    command=("my-agent", "--task-file", "TASK.md"),
    verify=(("make", "test"), ("make", "lint")),
    env=("AGENT_API_KEY",),
    network=True,
    command_timeout_seconds=900,
)
VERIFY_ONLY = RepositoryConfig(verify=(("pytest", "-q"),), command_timeout_seconds=120)
MIGRATION_0007_STORED: dict[str, Any] = {
    "executor": "patch",
    "command": None,
    "verify": [],
    "env": [],
    "network": False,
    "command_timeout_seconds": 600,
}
"""The default configuration as migration 0007 stored it on existing rows."""
DEFAULT_STORED: dict[str, Any] = {**MIGRATION_0007_STORED, "model_credentials": [], "allow_unconfined": False}
"""The default configuration as the store writes it now (every key present)."""


def _stored(store: Store, alias: str) -> object:
    with Session(store.engine) as session:
        return session.scalars(select(RepositoryRow.config).where(RepositoryRow.alias == alias)).one()


def test_a_repository_added_without_a_configuration_has_the_default(
    store: Store, signer: Signer, git_repository: Path
) -> None:
    record = register_repository(store, "service", git_repository, None, signer)
    assert record.config == RepositoryConfig()
    assert store.get_repository("service").config == RepositoryConfig()
    assert _stored(store, "service") == DEFAULT_STORED


def test_a_configuration_round_trips_through_the_store(
    store: Store, signer: Signer, git_repository: Path
) -> None:
    record = register_repository(store, "service", git_repository, None, signer, COMMAND)
    assert record.config == COMMAND
    assert store.get_repository("service") == record
    assert store.list_repositories() == [record]
    assert resolve_base_commit(store, "service")[0].config == COMMAND
    assert _stored(store, "service") == COMMAND.model_dump(mode="json")


def test_an_update_replaces_the_configuration_and_nothing_else(
    store: Store, signer: Signer, git_repository: Path
) -> None:
    register(store, "bob", signer)
    added = register_repository(store, "service", git_repository, "feature", signer, COMMAND)
    register_repository(store, "other", git_repository, None, signer, COMMAND)

    updated = store.update_repository_config("service", VERIFY_ONLY, actor_signer("bob"))

    assert updated == added.model_copy(update={"config": VERIFY_ONLY})
    assert store.get_repository("service") == updated
    # Replaced as a whole: nothing of the command configuration is left.
    assert _stored(store, "service") == {
        **DEFAULT_STORED,
        "verify": [["pytest", "-q"]],
        "command_timeout_seconds": 120,
    }
    assert store.get_repository("other").config == COMMAND
    assert store.update_repository_config("service", RepositoryConfig(), signer).config == RepositoryConfig()


def test_updating_an_unknown_repository_is_refused(store: Store, signer: Signer) -> None:
    with pytest.raises(NotFound) as refused:
        store.update_repository_config("ghost", COMMAND, signer)
    assert refused.value.code == "unknown_repository"
    assert refused.value.exit_code == 3


def test_an_update_by_an_unknown_actor_writes_nothing(
    store: Store, signer: Signer, git_repository: Path
) -> None:
    register_repository(store, "service", git_repository, None, signer, VERIFY_ONLY)
    with pytest.raises(NotFound) as refused:
        store.update_repository_config("service", COMMAND, actor_signer("zed"))
    assert refused.value.code == "unknown_actor"
    assert store.get_repository("service").config == VERIFY_ONLY


def test_a_stored_configuration_that_no_longer_validates_is_reported(
    store: Store, signer: Signer, git_repository: Path
) -> None:
    register_repository(store, "service", git_repository, None, signer)
    with writing(store.engine).begin() as connection:
        connection.execute(update(RepositoryRow).values(config={**DEFAULT_STORED, "network": True}))
    with pytest.raises(OperatorError) as edited:
        store.get_repository("service")
    assert edited.value.code == "configuration_unverified"  # changed outside specialists
    # Signed as it stands (as an earlier version whose rules allowed it would have): the signature is
    # good, and the configuration itself is reported as invalid, never read as another one.
    with Session(store.engine) as session, session.begin():
        row = session.get(RepositoryRow, "service")
        assert row is not None
        sign_row(RecordKind.REPOSITORY, row, signer, row.signed_at or row.added_at)
    with pytest.raises(OperatorError) as broken:
        store.get_repository("service")
    assert broken.value.code == "stored_repository_config_invalid"
    assert "network" in broken.value.message


def test_migration_0007_gives_existing_repositories_the_default_configuration(
    database_url: str, git_repository: Path
) -> None:
    from alembic import command

    parsed = parse_database_url(database_url)
    if parsed.get_backend_name() == "sqlite":
        assert parsed.database is not None
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_store_engine(parsed, create=True)
    config = alembic_config()
    added_at = dt.datetime(2026, 12, 1, 8, 0, tzinfo=dt.UTC)
    try:
        with writing(engine).begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "0006")
        with engine.connect() as connection:
            columns = {column["name"] for column in inspect(connection).get_columns("repositories")}
            assert "config" not in columns
        # As 0006 stored times: naive UTC on SQLite, timezone-aware on PostgreSQL.
        at = added_at.replace(tzinfo=None) if parsed.get_backend_name() == "sqlite" else added_at
        with writing(engine).begin() as connection:
            insert_legacy_actor(connection)
            for alias in ("service", "docs"):
                connection.execute(
                    text(
                        "INSERT INTO repositories (alias, path, default_branch, added_by, added_at) "
                        "VALUES (:alias, :path, 'main', 'alice', :at)"
                    ),
                    {"alias": alias, "path": str(git_repository), "at": at},
                )
    finally:
        engine.dispose()

    with open_store(database_url, anchor=STORE_ANCHOR) as upgraded:
        with upgraded.engine.connect() as connection:
            assert connection.scalar(text("SELECT version_num FROM alembic_version")) == SCHEMA_REVISION
            column = {c["name"]: c for c in inspect(connection).get_columns("repositories")}["config"]
            assert column["nullable"] is False
        alice = attest_legacy(upgraded)
        assert SCHEMA_REVISION >= "0007"
        records = upgraded.list_repositories()
        assert [record.alias for record in records] == ["docs", "service"]
        assert all(record.config == RepositoryConfig() for record in records)
        assert all(record.added_by == "alice" and record.added_at == added_at for record in records)
        assert _stored(upgraded, "service") == MIGRATION_0007_STORED
        upgraded.update_repository_config("service", COMMAND, alice)

        with writing(upgraded.engine).begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0006")
        with upgraded.engine.connect() as connection:
            columns = {column["name"] for column in inspect(connection).get_columns("repositories")}
            assert "config" not in columns
            assert connection.scalar(text("SELECT count(*) FROM repositories")) == 2

    with open_store(database_url, anchor=STORE_ANCHOR) as upgraded_again:
        attest_legacy(upgraded_again)
        assert upgraded_again.get_repository("service").config == RepositoryConfig()


def test_a_shipping_policy_is_signed_with_the_record_and_a_tampered_one_is_refused(
    store: Store, signer: Signer, git_repository: Path
) -> None:
    from contracts.shipping import ShippingFlow, ShippingPolicy

    merge = RepositoryConfig(shipping=ShippingPolicy(flow=ShippingFlow.MERGE, base_branch="main"))
    register_repository(store, "service", git_repository, None, signer, merge)
    assert store.get_repository("service").config.shipping == merge.shipping
    tampered = {**merge.model_dump(mode="json"), "shipping": {"flow": "merge", "base_branch": "release"}}
    with writing(store.engine).begin() as connection:
        connection.execute(update(RepositoryRow).values(config=tampered))
    with pytest.raises(OperatorError) as edited:
        store.get_repository("service")
    assert edited.value.code == "configuration_unverified"


def test_a_configuration_without_a_policy_stores_no_shipping_key(
    store: Store, signer: Signer, git_repository: Path
) -> None:
    register_repository(store, "service", git_repository, None, signer)
    assert store.get_repository("service").config.shipping is None
    assert "shipping" not in RepositoryConfig().model_dump(mode="json")
