"""The ``project_run`` activity: idempotent writes of a run's summary and audit events to the SQL
projection (a repeated call stores nothing twice; an older summary never overwrites a newer one)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.config import ActivityConfig
from activities.projection import ProjectionActivities
from activities.store_access import SharedStore
from contracts.enums import RiskLevel, Tier
from contracts.runs import AuditEvent, ProjectRunRequest, RunStatus, RunSummary

RUN_ID = "SOR-0123456789ABCDEF"
T0 = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[SharedStore]:
    store = SharedStore(f"sqlite:///{tmp_path / 'state' / 'specialists.db'}")
    try:
        yield store
    finally:
        store.close()


def _project(shared: SharedStore, summary: RunSummary, events: list[AuditEvent]) -> None:
    activities = ProjectionActivities(ActivityConfig(database_url="sqlite://"), shared)
    ActivityEnvironment().run(activities.project_run, ProjectRunRequest(summary=summary, events=events))


def _summary(status: RunStatus, seconds: int, run_id: str = RUN_ID) -> RunSummary:
    return RunSummary(
        run_id=run_id,
        status=status,
        tier=Tier.READ_ONLY,
        automatic=False,
        primary="database-optimizer",
        reviewer="backend-architect",
        risk=RiskLevel.LOW,
        repo_alias="orders-service",
        title="Audit the slow query",
        contract_sha256="a" * 64,
        request_id=None,
        created_at=T0,
        updated_at=T0 + dt.timedelta(seconds=seconds),
    )


def _event(seq: int, kind: str = "status_changed") -> AuditEvent:
    return AuditEvent(seq=seq, at=T0 + dt.timedelta(seconds=seq), kind=kind, actor=None, data={"seq": seq})


def test_projecting_the_same_summary_and_events_twice_stores_them_once(shared: SharedStore) -> None:
    events = [_event(1, "run_created"), _event(2, "contract_captured"), _event(3)]
    _project(shared, _summary(RunStatus.READY, 1), events)
    _project(shared, _summary(RunStatus.READY, 1), events)

    (run,) = shared.get().list_runs()
    assert run == _summary(RunStatus.READY, 1)
    assert shared.get().run_events(RUN_ID) == events


def test_events_are_appended_across_calls_and_overlaps_are_skipped(shared: SharedStore) -> None:
    _project(shared, _summary(RunStatus.READY, 1), [_event(1), _event(2)])
    _project(shared, _summary(RunStatus.QUEUED, 2), [_event(2), _event(3), _event(4)])
    assert [e.seq for e in shared.get().run_events(RUN_ID)] == [1, 2, 3, 4]
    assert shared.get().list_runs()[0].status is RunStatus.QUEUED


def test_an_older_summary_never_overwrites_a_newer_one_but_its_events_are_kept(shared: SharedStore) -> None:
    _project(shared, _summary(RunStatus.AWAITING_DECISION, 10), [_event(1)])
    _project(shared, _summary(RunStatus.RUNNING, 5), [_event(2)])

    (run,) = shared.get().list_runs()
    assert run.status is RunStatus.AWAITING_DECISION
    assert run.updated_at == T0 + dt.timedelta(seconds=10)
    assert [e.seq for e in shared.get().run_events(RUN_ID)] == [1, 2]


def test_a_newer_summary_replaces_the_stored_one(shared: SharedStore) -> None:
    _project(shared, _summary(RunStatus.AWAITING_DECISION, 10), [])
    _project(shared, _summary(RunStatus.ACCEPTED, 11), [])
    assert [r.status for r in shared.get().list_runs()] == [RunStatus.ACCEPTED]
    assert shared.get().list_runs(status="accepted")[0].run_id == RUN_ID
    assert shared.get().list_runs(status="awaiting_decision") == []


def test_runs_are_projected_separately(shared: SharedStore) -> None:
    other = "SOR-FEDCBA9876543210"
    _project(shared, _summary(RunStatus.READY, 1), [_event(1)])
    _project(shared, _summary(RunStatus.RECOMMENDED, 1, run_id=other), [_event(1), _event(2)])
    assert {r.run_id: r.status for r in shared.get().list_runs()} == {
        RUN_ID: RunStatus.READY,
        other: RunStatus.RECOMMENDED,
    }
    assert len(shared.get().run_events(RUN_ID)) == 1
    assert len(shared.get().run_events(other)) == 2


def test_an_unreachable_store_is_a_retryable_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("", encoding="utf-8")
    shared = SharedStore(f"sqlite:///{blocker / 'specialists.db'}")
    with pytest.raises(ApplicationError) as raised:
        _project(shared, _summary(RunStatus.READY, 1), [_event(1)])
    assert raised.value.type == "database_unreachable"
    assert not raised.value.non_retryable
