"""Worktree claims: one worker per execution attempt of a run, decided by the database's primary key.

A claim is recorded and listed; a second claim of the same (run, execution attempt) is refused with
``attempt_claimed`` naming the holder, also when workers race (threads, processes); other attempts and
runs are independent; bad inputs are refused and write nothing. Migration 0006 adds the table to a
store at 0005, keeping what was there, and its downgrade drops it again.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, select, text
from sqlalchemy.orm import Session

from contracts.errors import InvalidInput, Refused
from contracts.worktree import WorktreeClaim
from store import Store, open_store
from store import worktree_claims as worktree_claims_module
from store.database import parse_database_url
from store.engine import create_store_engine, writing
from store.migrate import alembic_config
from store.schema import SCHEMA_REVISION, WorktreeClaimRow
from tests.identity import insert_legacy_actor

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
RUN_ID = "SMC-0123456789ABCDEF"
NOW = dt.datetime(2026, 12, 20, 9, 30, tzinfo=dt.UTC)


@pytest.fixture
def clocked(store: Store) -> Store:
    """The test store with a fixed clock."""
    return Store(store.engine, clock=lambda: NOW)


def _rows(store: Store) -> list[WorktreeClaimRow]:
    with Session(store.engine) as session:
        return list(
            session.scalars(
                select(WorktreeClaimRow).order_by(WorktreeClaimRow.run_id, WorktreeClaimRow.execution_attempt)
            )
        )


def test_a_claim_is_recorded_and_listed(clocked: Store) -> None:
    claim = clocked.claim_worktree_attempt(RUN_ID, 1, "worker-a@host:123", 1)
    assert claim == WorktreeClaim(
        run_id=RUN_ID, execution_attempt=1, worker="worker-a@host:123", worktree_attempt=1, claimed_at=NOW
    )
    assert clocked.worktree_claims(RUN_ID) == [claim]
    [row] = _rows(clocked)
    assert (row.run_id, row.execution_attempt, row.worker, row.worktree_attempt, row.claimed_at) == (
        RUN_ID,
        1,
        "worker-a@host:123",
        1,
        NOW,
    )


def test_a_run_without_claims_lists_none(store: Store) -> None:
    assert store.worktree_claims(RUN_ID) == []


def test_a_second_claim_of_the_same_execution_attempt_is_refused_naming_the_holder(clocked: Store) -> None:
    first = clocked.claim_worktree_attempt(RUN_ID, 1, "worker-a", 1)
    for worker in ("worker-b", "worker-a"):
        with pytest.raises(Refused) as refused:
            clocked.claim_worktree_attempt(RUN_ID, 1, worker, 2)
        assert refused.value.code == "attempt_claimed"
        assert RUN_ID in refused.value.message
        assert "execution attempt 1" in refused.value.message
        assert "'worker-a'" in refused.value.message
    assert clocked.worktree_claims(RUN_ID) == [first]


def test_another_execution_attempt_of_the_same_run_can_be_claimed(clocked: Store) -> None:
    clocked.claim_worktree_attempt(RUN_ID, 2, "worker-b", 3)
    clocked.claim_worktree_attempt(RUN_ID, 1, "worker-a", 1)
    clocked.claim_worktree_attempt("another_run", 1, "worker-c", 1)
    assert [(c.execution_attempt, c.worker, c.worktree_attempt) for c in clocked.worktree_claims(RUN_ID)] == [
        (1, "worker-a", 1),
        (2, "worker-b", 3),
    ]
    assert [c.worker for c in clocked.worktree_claims("another_run")] == ["worker-c"]


def test_a_refused_claim_leaves_the_callers_transaction_usable(store: Store) -> None:
    # The claim is decided by the insert itself (no read first): a duplicate fails on the primary key,
    # inside a savepoint, and the rest of the transaction carries on.
    store.claim_worktree_attempt(RUN_ID, 1, "worker-a", 1)
    with Session(writing(store.engine)) as session, session.begin():
        with pytest.raises(Refused, match="worker 'worker-a'"):
            worktree_claims_module.claim_worktree_attempt(session, RUN_ID, 1, "worker-b", 1, NOW)
        worktree_claims_module.claim_worktree_attempt(session, RUN_ID, 2, "worker-b", 2, NOW)
    assert [(row.execution_attempt, row.worker) for row in _rows(store)] == [(1, "worker-a"), (2, "worker-b")]


def test_of_threads_racing_for_one_execution_attempt_exactly_one_wins(
    store: Store, database_url: str
) -> None:
    # Each thread has its own store (engine and pool), as separate worker processes would.
    workers = [f"worker-{index}" for index in range(6)]
    stores = [open_store(database_url, create=False) for _ in workers]
    won: list[str] = []
    refused: list[str] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(workers))

    def claim(own: Store, worker: str) -> None:
        try:
            barrier.wait(timeout=30)
            own.claim_worktree_attempt(RUN_ID, 1, worker, 1)
            won.append(worker)
        except Refused as refusal:
            refused.append(refusal.code)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=claim, args=pair) for pair in zip(stores, workers, strict=True)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        for own in stores:
            own.close()
    assert errors == []
    assert len(won) == 1 and refused == ["attempt_claimed"] * (len(workers) - 1)
    assert [claim.worker for claim in store.worktree_claims(RUN_ID)] == won


CLAIM_SCRIPT = """
import sys
from contracts.errors import Refused
from store import open_store
with open_store(sys.argv[1], create=False) as store:
    try:
        store.claim_worktree_attempt(sys.argv[2], 1, sys.argv[3], 1)
    except Refused as refusal:
        print(refusal.code)
    else:
        print("claimed")
"""


def test_of_processes_racing_for_one_execution_attempt_exactly_one_wins(
    store: Store, database_url: str
) -> None:
    workers = [f"process-{index}" for index in range(3)]
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIM_SCRIPT, database_url, RUN_ID, worker],
            cwd=REPOSITORY_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for worker in workers
    ]
    outcomes: dict[str, str] = {}
    for worker, process in zip(workers, processes, strict=True):
        stdout, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
        outcomes[worker] = stdout.strip()
    assert sorted(outcomes.values()) == ["attempt_claimed"] * (len(workers) - 1) + ["claimed"]
    [winner] = [worker for worker, outcome in outcomes.items() if outcome == "claimed"]
    assert [claim.worker for claim in store.worktree_claims(RUN_ID)] == [winner]


BAD_CLAIMS: list[tuple[str, tuple[Any, ...], str]] = [
    ("empty run id", ("", 1, "worker", 1), "invalid_run_id"),
    ("run id with a slash", ("runs/1", 1, "worker", 1), "invalid_run_id"),
    ("run id with a newline", (RUN_ID + "\n", 1, "worker", 1), "invalid_run_id"),
    ("run id of 65 characters", ("r" * 65, 1, "worker", 1), "invalid_run_id"),
    ("execution attempt 0", (RUN_ID, 0, "worker", 1), "invalid_execution_attempt"),
    ("negative execution attempt", (RUN_ID, -1, "worker", 1), "invalid_execution_attempt"),
    ("boolean execution attempt", (RUN_ID, True, "worker", 1), "invalid_execution_attempt"),
    ("worktree attempt 0", (RUN_ID, 1, "worker", 0), "invalid_worktree_attempt"),
    ("empty worker", (RUN_ID, 1, "", 1), "invalid_worker"),
    ("blank worker", (RUN_ID, 1, "   ", 1), "invalid_worker"),
    ("worker of 201 characters", (RUN_ID, 1, "w" * 201, 1), "invalid_worker"),
]


@pytest.mark.parametrize(
    ("arguments", "code"), [case[1:] for case in BAD_CLAIMS], ids=[case[0] for case in BAD_CLAIMS]
)
def test_a_bad_claim_is_refused_and_writes_nothing(
    store: Store, arguments: tuple[Any, ...], code: str
) -> None:
    with pytest.raises(InvalidInput) as invalid:
        store.claim_worktree_attempt(*arguments)
    assert invalid.value.code == code
    assert _rows(store) == []


def test_the_longest_run_id_and_worker_are_accepted(store: Store) -> None:
    run_id, worker = "r" * 64, "w" * 200
    store.claim_worktree_attempt(run_id, 1, worker, 1)
    assert [claim.worker for claim in store.worktree_claims(run_id)] == [worker]


def test_listing_the_claims_of_a_malformed_run_id_is_refused(store: Store) -> None:
    with pytest.raises(InvalidInput) as invalid:
        store.worktree_claims("no such/run")
    assert invalid.value.code == "invalid_run_id"


def test_migration_0006_upgrades_a_store_at_0005_and_downgrades_cleanly(database_url: str) -> None:
    from alembic import command

    parsed = parse_database_url(database_url)
    if parsed.get_backend_name() == "sqlite":
        assert parsed.database is not None
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_store_engine(parsed, create=True)
    config = alembic_config()
    try:
        with writing(engine).begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "0005")
        with engine.connect() as connection:
            assert not inspect(connection).has_table("worktree_claims")
        with writing(engine).begin() as connection:
            insert_legacy_actor(connection)
    finally:
        engine.dispose()

    with open_store(database_url) as upgraded:
        with upgraded.engine.connect() as connection:
            assert inspect(connection).has_table("worktree_claims")
            assert connection.scalar(text("SELECT version_num FROM alembic_version")) == SCHEMA_REVISION
        assert SCHEMA_REVISION >= "0006"  # 0006 and every later revision applied
        assert upgraded.keyless_actors() == ["alice"]
        upgraded.claim_worktree_attempt(RUN_ID, 1, "worker-a", 1)
        with pytest.raises(Refused):
            upgraded.claim_worktree_attempt(RUN_ID, 1, "worker-b", 1)

        with writing(upgraded.engine).begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0005")
        with upgraded.engine.connect() as connection:
            assert not inspect(connection).has_table("worktree_claims")
            assert connection.scalar(text("SELECT version_num FROM alembic_version")) == "0005"
            assert connection.scalar(text("SELECT count(*) FROM actors")) == 1

    with open_store(database_url) as upgraded_again:
        assert upgraded_again.worktree_claims(RUN_ID) == []
        upgraded_again.claim_worktree_attempt(RUN_ID, 1, "worker-b", 1)
