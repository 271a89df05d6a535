"""Spent nonces of proofs of the action token: the first workflow execution to spend a nonce owns it.

A retry by the same execution (same ``spent_by``) is allowed again; any other execution is refused,
also when spends race. Rows far older than a proof's validity are pruned. Migration 0005 adds the
table to a store at 0004 and keeps what was there.
"""

from __future__ import annotations

import datetime as dt
import secrets
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import inspect, select, text
from sqlalchemy.orm import Session

from store import Store, open_store
from store import spent_proofs as spent_proofs_module
from store.database import parse_database_url
from store.engine import create_store_engine, writing
from store.migrate import alembic_config
from store.schema import SCHEMA_REVISION, SpentProofRow
from store.spent_proofs import SPENT_PROOF_RETENTION
from tests.identity import insert_legacy_actor

RUN_ID = "SMC-0123456789ABCDEF"
FIRST_RUN = "0199a0c2-0000-7000-8000-000000000001"
SECOND_RUN = "0199a0c2-0000-7000-8000-000000000002"
NOW = dt.datetime(2026, 12, 13, 9, 30, tzinfo=dt.UTC)

Lookup = Callable[[Session, str], "str | None"]


def _nonce() -> str:
    return secrets.token_hex(16)


def _spend(store: Store, nonce: str, spent_by: str, *, at: dt.datetime = NOW) -> bool:
    return store.spend_proof_nonce(
        nonce, action="test_model", run_id=RUN_ID, actor="alice", spent_by=spent_by, at=at
    )


def _rows(store: Store) -> list[SpentProofRow]:
    with Session(store.engine) as session:
        return list(session.scalars(select(SpentProofRow).order_by(SpentProofRow.spent_at)))


def test_a_new_nonce_is_spent_and_recorded(store: Store) -> None:
    nonce = _nonce()
    assert _spend(store, nonce, FIRST_RUN)
    [row] = _rows(store)
    assert (row.nonce, row.action, row.run_id, row.actor, row.spent_by) == (
        nonce,
        "test_model",
        RUN_ID,
        "alice",
        FIRST_RUN,
    )
    assert row.spent_at == NOW


def test_the_same_execution_may_spend_its_nonce_again(store: Store) -> None:
    nonce = _nonce()
    assert _spend(store, nonce, FIRST_RUN)
    assert _spend(store, nonce, FIRST_RUN, at=NOW + dt.timedelta(seconds=5))
    [row] = _rows(store)
    assert row.spent_at == NOW


def test_another_execution_is_refused_the_nonce(store: Store) -> None:
    nonce = _nonce()
    assert _spend(store, nonce, FIRST_RUN)
    assert not _spend(store, nonce, SECOND_RUN)
    assert _spend(store, nonce, FIRST_RUN)
    assert [row.spent_by for row in _rows(store)] == [FIRST_RUN]


def test_different_nonces_are_independent(store: Store) -> None:
    assert _spend(store, _nonce(), FIRST_RUN)
    assert _spend(store, _nonce(), SECOND_RUN)
    assert len(_rows(store)) == 2


def test_of_concurrent_spends_exactly_one_execution_wins(store: Store) -> None:
    nonce = _nonce()
    spenders = [f"run-{index}" for index in range(8)]
    results: dict[str, bool] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(spenders))

    def spend(spender: str) -> None:
        try:
            barrier.wait(timeout=30)
            results[spender] = _spend(store, nonce, spender)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=spend, args=(spender,)) for spender in spenders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    winners = [spender for spender, won in results.items() if won]
    assert len(results) == len(spenders) and len(winners) == 1
    assert [row.spent_by for row in _rows(store)] == winners


def test_an_insert_that_loses_a_race_reads_the_winner_back(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another writer's row lands between the read and the insert: the insert fails on the primary key
    # and the spend is decided by the row that is there.
    nonce = _nonce()
    assert _spend(store, nonce, FIRST_RUN)
    monkeypatch.setattr(spent_proofs_module, "spender_of", _blind_once(spent_proofs_module.spender_of))
    assert not _spend(store, nonce, SECOND_RUN)
    monkeypatch.setattr(spent_proofs_module, "spender_of", _blind_once(spent_proofs_module.spender_of))
    assert _spend(store, nonce, FIRST_RUN)
    assert [row.spent_by for row in _rows(store)] == [FIRST_RUN]


def _blind_once(lookup: Lookup) -> Lookup:
    """``lookup`` that misses on its first call, as if the row were written just after it looked."""
    calls = 0

    def blind(session: Session, nonce: str) -> str | None:
        nonlocal calls
        calls += 1
        return None if calls == 1 else lookup(session, nonce)

    return blind


def test_a_new_spend_prunes_nonces_spent_over_a_day_earlier(store: Store) -> None:
    old, recent = _nonce(), _nonce()
    assert _spend(store, old, FIRST_RUN, at=NOW - SPENT_PROOF_RETENTION - dt.timedelta(minutes=1))
    assert _spend(store, recent, FIRST_RUN, at=NOW - dt.timedelta(hours=23))
    assert _spend(store, _nonce(), SECOND_RUN, at=NOW)
    assert old not in {row.nonce for row in _rows(store)}
    assert recent in {row.nonce for row in _rows(store)}


def test_prune_deletes_only_rows_before_the_cutoff(store: Store) -> None:
    with Session(store.engine) as session, session.begin():
        for hours in (50, 30, 1):
            session.add(
                SpentProofRow(
                    nonce=_nonce(),
                    action="approve",
                    run_id=RUN_ID,
                    actor="alice",
                    spent_by=FIRST_RUN,
                    spent_at=NOW - dt.timedelta(hours=hours),
                )
            )
    assert store.prune_spent_proofs(before=NOW - dt.timedelta(hours=24)) == 2
    assert len(_rows(store)) == 1
    # Default cutoff: a day before the store's clock.
    a_day_later = Store(store.engine, clock=lambda: NOW + dt.timedelta(hours=23))
    assert a_day_later.prune_spent_proofs() == 0
    a_day_later = Store(store.engine, clock=lambda: NOW + dt.timedelta(hours=24))
    assert a_day_later.prune_spent_proofs() == 1
    assert _rows(store) == []


def test_a_naive_spend_time_is_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        _spend(store, _nonce(), FIRST_RUN, at=NOW.replace(tzinfo=None))


def test_migration_0005_upgrades_a_store_at_0004(database_url: str) -> None:
    from alembic import command

    parsed = parse_database_url(database_url)
    if parsed.get_backend_name() == "sqlite":
        assert parsed.database is not None
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_store_engine(parsed, create=True)
    try:
        config = alembic_config()
        with writing(engine).begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "0004")
        with engine.connect() as connection:
            assert not inspect(connection).has_table("spent_proofs")
    finally:
        engine.dispose()
    with writing(create_store_engine(parsed, create=True)).begin() as connection:
        insert_legacy_actor(connection)

    with open_store(database_url) as upgraded:
        with upgraded.engine.connect() as connection:
            assert inspect(connection).has_table("spent_proofs")
            revision = connection.scalar(text("SELECT version_num FROM alembic_version"))
        assert revision == SCHEMA_REVISION
        assert upgraded.keyless_actors() == ["alice"]
        nonce = _nonce()
        assert _spend(upgraded, nonce, FIRST_RUN)
        assert not _spend(upgraded, nonce, SECOND_RUN)
