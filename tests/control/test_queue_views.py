"""``queue show`` for a person: each run the item dispatched with how it ended for the item — a
reviewed run with its round's verdict, so a run the queue rejected after a FAIL round reads as such."""

from __future__ import annotations

import datetime as dt

from contracts.queue_items import (
    DispatchedRun,
    DispatchKind,
    ItemProposal,
    ReviewRound,
    RoundVerdict,
    RunOutcome,
    new_item,
)
from control.queue_views import render_item
from tests.control.test_untrusted_display import render_with

AT = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
FAILED_ROUND_RUN = "SOR-0000000000000001"
PASSED_ROUND_RUN = "SOR-0000000000000002"
PENDING_RUN = "SOR-0000000000000003"


def _run(run_id: str, kind: DispatchKind, outcome: RunOutcome) -> DispatchedRun:
    ended = None if outcome is RunOutcome.PENDING else AT
    return DispatchedRun(run_id=run_id, cycle=1, kind=kind, at=AT, outcome=outcome, ended_at=ended)


def _round(run_id: str, number: int, verdict: RoundVerdict) -> ReviewRound:
    return ReviewRound(
        run_id=run_id, cycle=1, number=number, verdict=verdict, reviewer_verdict=None, score=0, at=AT
    )


def test_a_reviewed_run_shows_its_round_s_verdict_and_a_pending_one_its_outcome() -> None:
    item = new_item(
        ItemProposal(title="Index the orders report", repo_alias="demo"), key="ORD-1", at=AT, actor="a"
    )
    item = item.model_copy(
        update={
            "runs": [
                _run(FAILED_ROUND_RUN, DispatchKind.DISPATCH, RunOutcome.REVIEWED),
                _run(PASSED_ROUND_RUN, DispatchKind.REDISPATCH, RunOutcome.REVIEWED),
                _run(PENDING_RUN, DispatchKind.REDISPATCH, RunOutcome.PENDING),
            ],
            "rounds": [
                _round(FAILED_ROUND_RUN, 1, RoundVerdict.FAIL),
                _round(PASSED_ROUND_RUN, 2, RoundVerdict.PASS),
            ],
        }
    )

    lines = render_with(lambda console: render_item(console, item)).splitlines()

    def row(run_id: str) -> str:
        return next(line for line in lines if run_id in line and ("reviewed" in line or "pending" in line))

    assert "reviewed: round verdict FAIL" in row(FAILED_ROUND_RUN)
    assert "reviewed: round verdict PASS" in row(PASSED_ROUND_RUN)
    assert "pending" in row(PENDING_RUN) and "verdict" not in row(PENDING_RUN)
