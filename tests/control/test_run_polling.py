"""``control.runs.wait_for_view`` polls query ``status`` and fetches the whole view (query ``view``)
only when the status or the number of audit events changed; a run whose worker has no ``status``
query is polled by its view. No Temporal: the client answers from a script."""

from __future__ import annotations

import datetime as dt
from typing import Any

from temporalio.client import WorkflowQueryFailedError

from contracts.audit import AuditKind
from contracts.runs import AuditEvent, RunProgress, RunStatus, RunView
from contracts.temporal_names import RunMessage
from control.runs import wait_for_view

RUN_ID = "SOR-0123456789ABCDEF"
AT = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _view(status: RunStatus, events: int) -> RunView:
    return RunView(
        run_id=RUN_ID,
        status=status,
        tier=None,
        automatic=False,
        route=None,
        contract=None,
        contract_sha256=None,
        result=None,
        review=None,
        decision=None,
        request_digest="",
        created_at=AT,
        audit=[AuditEvent(seq=seq, at=AT, kind=AuditKind.RUN_CREATED) for seq in range(1, events + 1)],
    )


class _Handle:
    """Answers ``view`` with the run's current view and ``status`` with its progress, advancing
    the run by one entry of ``script`` after every ``status`` query."""

    def __init__(self, script: list[tuple[RunStatus, int]], *, has_status: bool = True) -> None:
        self.script = script
        self.position = 0
        self.has_status = has_status
        self.asked: list[str] = []

    def _current(self) -> tuple[RunStatus, int]:
        return self.script[min(self.position, len(self.script) - 1)]

    async def query(self, name: str, *, result_type: type, rpc_timeout: Any) -> Any:
        self.asked.append(name)
        status, events = self._current()
        if name == RunMessage.VIEW:
            return _view(status, events)
        if not self.has_status:
            raise WorkflowQueryFailedError("unknown queryType status")
        self.position += 1
        return RunProgress(status=status, audit_events=events)


class _Client:
    def __init__(self, handle: _Handle) -> None:
        self.handle = handle

    def get_workflow_handle(self, run_id: str) -> _Handle:
        assert run_id == RUN_ID
        return self.handle


async def test_the_view_is_fetched_only_when_status_or_audit_changed() -> None:
    handle = _Handle(
        [
            (RunStatus.RUNNING, 3),
            (RunStatus.RUNNING, 3),
            (RunStatus.RUNNING, 4),  # an audit event without a status change (a refusal, say)
            (RunStatus.RUNNING, 4),
            (RunStatus.AWAITING_DECISION, 6),
        ]
    )
    seen: list[tuple[RunStatus, int]] = []

    view = await wait_for_view(
        _Client(handle),  # type: ignore[arg-type]
        RUN_ID,
        lambda v: v.status is RunStatus.AWAITING_DECISION,
        on_change=lambda v: seen.append((v.status, len(v.audit))),
    )

    assert (view.status, len(view.audit)) == (RunStatus.AWAITING_DECISION, 6)
    assert handle.asked == [
        RunMessage.VIEW,  # the first poll: the whole view
        RunMessage.STATUS,  # unchanged: the view already fetched is the view
        RunMessage.STATUS,
        RunMessage.STATUS,  # one more audit event: fetch the view
        RunMessage.VIEW,
        RunMessage.STATUS,
        RunMessage.STATUS,  # the status changed
        RunMessage.VIEW,
    ]
    assert seen == [(RunStatus.RUNNING, 3), (RunStatus.AWAITING_DECISION, 6)]


async def test_a_run_without_the_status_query_is_polled_by_its_view() -> None:
    handle = _Handle([(RunStatus.RUNNING, 3)], has_status=False)

    view = await wait_for_view(
        _Client(handle),  # type: ignore[arg-type]
        RUN_ID,
        lambda v: False,
        timeout=0.25,
    )

    assert view.status is RunStatus.RUNNING
    assert handle.asked[0] == RunMessage.VIEW
    assert handle.asked[1:] and set(handle.asked[1:]) == {RunMessage.STATUS, RunMessage.VIEW}
    assert handle.asked.count(RunMessage.VIEW) == handle.asked.count(RunMessage.STATUS) + 1
