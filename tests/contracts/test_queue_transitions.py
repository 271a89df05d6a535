"""The goal queue's one transition table: every allowed move, every refused one (all pairs), who may
make each, and the refusal that names the current status and the allowed moves."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from contracts.queue_items import (
    ItemFailure,
    ItemProposal,
    QueueBlocker,
    QueueEventKind,
    QueueItem,
    QueueRefused,
    QueueStatus,
    new_item,
)
from contracts.queue_transitions import (
    TRANSITIONS,
    Mover,
    QueueMove,
    allowed_moves,
    apply_move,
    check_move,
    check_transition,
    move_help,
    transition_help,
)

S = QueueStatus
OP, SYS = Mover.OPERATOR, Mover.SYSTEM
AT = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)

# The table of docs/architecture.md "Goal queue", written out by hand: (from, to) -> movers.
EXPECTED: dict[tuple[QueueStatus, QueueStatus], set[Mover]] = {
    (S.PROPOSAL, S.APPROVED): {OP},
    (S.PROPOSAL, S.REJECTED): {OP},
    (S.APPROVED, S.ACTIVE): {OP, SYS},
    (S.APPROVED, S.BLOCKED): {OP, SYS},
    (S.ACTIVE, S.AI_REVIEW): {SYS},
    (S.ACTIVE, S.FAILED): {SYS},
    (S.AI_REVIEW, S.HUMAN_REVIEW): {SYS},
    (S.AI_REVIEW, S.ACTIVE): {SYS, OP},
    (S.AI_REVIEW, S.FAILED): {SYS},
    (S.AI_REVIEW, S.BLOCKED): {SYS},
    (S.HUMAN_REVIEW, S.DONE): {OP},
    (S.HUMAN_REVIEW, S.REJECTED): {OP},
    (S.HUMAN_REVIEW, S.ACTIVE): {OP},
    (S.FAILED, S.ACTIVE): {SYS, OP},
    (S.FAILED, S.BLOCKED): {OP},
    (S.BLOCKED, S.APPROVED): {OP},
    (S.DONE, S.APPROVED): {OP},
}
BLOCKERS = {
    (S.APPROVED, S.BLOCKED): {QueueBlocker.SERIALIZED, QueueBlocker.DECISION},
    (S.AI_REVIEW, S.BLOCKED): {QueueBlocker.DECISION},
    (S.FAILED, S.BLOCKED): {QueueBlocker.PARKED},
}
ALL_PAIRS = list(itertools.product(QueueStatus, QueueStatus, Mover))


def blocker_for(source: QueueStatus, target: QueueStatus) -> QueueBlocker | None:
    allowed = BLOCKERS.get((source, target))
    return min(allowed) if allowed else None


def test_the_table_is_exactly_the_documented_one() -> None:
    assert {(row.source, row.target): set(row.movers) for row in TRANSITIONS} == EXPECTED
    assert len(TRANSITIONS) == len(EXPECTED)  # one row per pair


def test_each_status_has_at_most_one_row_per_move() -> None:
    keys = [(row.source, row.move) for row in TRANSITIONS]
    assert len(keys) == len(set(keys))


def test_only_an_operator_moves_an_item_to_done() -> None:
    into_done = [row for row in TRANSITIONS if row.target is S.DONE]
    assert into_done and all(row.movers == {OP} for row in into_done)


def test_rejected_is_the_only_final_status() -> None:
    assert [status for status in QueueStatus if not allowed_moves(status)] == [S.REJECTED]


def test_every_status_but_proposal_is_reachable() -> None:
    reached = {row.target for row in TRANSITIONS}
    assert reached == set(QueueStatus) - {S.PROPOSAL}


def test_blocked_rows_name_their_blockers_and_failed_rows_their_failure() -> None:
    for row in TRANSITIONS:
        assert set(row.blockers) == BLOCKERS.get((row.source, row.target), set())
    failures = {(row.source, row.target): row.failure for row in TRANSITIONS if row.target is S.FAILED}
    assert failures == {
        (S.ACTIVE, S.FAILED): ItemFailure.RUN_FAILED,
        (S.AI_REVIEW, S.FAILED): ItemFailure.REVIEW_CAP_REACHED,
    }
    assert all(row.failure is None for row in TRANSITIONS if row.target is not S.FAILED)


@pytest.mark.parametrize(("source", "target", "mover"), ALL_PAIRS, ids=lambda v: v.value)
def test_every_pair_is_allowed_exactly_when_the_table_says_and_refused_otherwise(
    source: QueueStatus, target: QueueStatus, mover: Mover
) -> None:
    blocker = blocker_for(source, target)
    if mover in EXPECTED.get((source, target), set()):
        row = check_transition(source, target, mover, blocker=blocker)
        assert (row.source, row.target) == (source, target)
        return
    with pytest.raises(QueueRefused) as refused:
        check_transition(source, target, mover, blocker=blocker, key="ORD-7")
    error = refused.value
    assert error.code == "transition_refused"
    assert error.exit_code == 4
    assert error.message.startswith(f"ORD-7 is {source.value}: ")
    allowed = [(move["move"], move["to"]) for move in error.extra["allowed"]]
    assert allowed == [(row.move.value, row.target.value) for row in allowed_moves(source)]
    assert error.extra["status"] == source.value
    assert error.extra["by"] == mover.value
    for row in allowed_moves(source):
        assert f"{row.move.value} → {row.target.value}" in error.message


@pytest.mark.parametrize(("status", "move", "mover"), list(itertools.product(QueueStatus, QueueMove, Mover)))
def test_every_named_move_from_every_status_by_each_mover_is_checked_against_the_table(
    status: QueueStatus, move: QueueMove, mover: Mover
) -> None:
    rows = [row for row in TRANSITIONS if row.source is status and row.move is move]
    blocker = min(rows[0].blockers) if rows and rows[0].blockers else None
    if rows and mover in rows[0].movers:
        assert check_move(status, move, mover, blocker=blocker) is rows[0]
    else:
        with pytest.raises(QueueRefused, match=r"allowed from|is final") as refused:
            check_move(status, move, mover, blocker=blocker)
        assert refused.value.code == "transition_refused"
        assert refused.value.extra["attempted"] == move.value


def test_a_move_the_system_may_not_make_says_whose_move_it_is() -> None:
    with pytest.raises(QueueRefused) as refused:
        check_move(S.HUMAN_REVIEW, QueueMove.DONE, SYS, key="ORD-2")
    assert refused.value.message == (
        "ORD-2 is human-review: done from human-review is the operator's move only (allowed from "
        "human-review: done → done (operator); reject → rejected (operator); dispatch → active (operator))"
    )


def test_a_move_out_of_the_final_status_says_it_is_final() -> None:
    with pytest.raises(QueueRefused) as refused:
        check_move(S.REJECTED, QueueMove.REOPEN, OP)
    assert refused.value.message == (
        "the item is rejected: 'reopen' is not a move from rejected (rejected is final: no move leaves it)"
    )
    assert refused.value.extra["allowed"] == []


def test_the_refusal_json_carries_the_allowed_moves_as_data() -> None:
    with pytest.raises(QueueRefused) as refused:
        check_move(S.APPROVED, QueueMove.DONE, OP, key="ORD-1")
    error = refused.value.to_json()["error"]
    assert error["code"] == "transition_refused"
    assert error["allowed"] == [
        {"move": "dispatch", "to": "active", "by": ["operator", "system"], "blockers": []},
        {
            "move": "block",
            "to": "blocked",
            "by": ["operator", "system"],
            "blockers": ["serialized", "decision"],
        },
    ]
    assert (error["key"], error["status"], error["attempted"], error["by"]) == (
        "ORD-1",
        "approved",
        "done",
        "operator",
    )


@pytest.mark.parametrize(
    ("source", "move", "blocker"),
    [
        (S.APPROVED, QueueMove.BLOCK, None),
        (S.APPROVED, QueueMove.BLOCK, QueueBlocker.PARKED),
        (S.FAILED, QueueMove.PARK, QueueBlocker.DECISION),
        (S.AI_REVIEW, QueueMove.BLOCK, QueueBlocker.SERIALIZED),
        (S.PROPOSAL, QueueMove.APPROVE, QueueBlocker.PARKED),
    ],
)
def test_a_move_with_a_blocker_it_does_not_allow_is_refused(
    source: QueueStatus, move: QueueMove, blocker: QueueBlocker | None
) -> None:
    mover = SYS if source is S.AI_REVIEW else OP
    with pytest.raises(QueueRefused, match="blocker") as refused:
        check_move(source, move, mover, blocker=blocker)
    assert refused.value.code == "transition_refused"


def item(status: QueueStatus, **fields: object) -> QueueItem:
    base = new_item(ItemProposal(title="Slow orders", repo_alias="orders"), key="ORD-1", at=AT, actor=None)
    return base.model_copy(update={"status": status, **fields})


def test_apply_move_sets_the_status_and_records_who_moved_it() -> None:
    moved = apply_move(item(S.PROPOSAL), QueueMove.REJECT, OP, at=AT, actor="alice", reason="duplicate")
    assert moved.status is S.REJECTED
    event = moved.events[-1]
    assert (event.kind, event.actor, event.seq) == (QueueEventKind.MOVED, "alice", 2)
    assert event.data == {
        "from": "proposal",
        "to": "rejected",
        "move": "reject",
        "by": "operator",
        "reason": "duplicate",
    }


def test_apply_move_sets_the_blocker_into_blocked_and_clears_it_on_release() -> None:
    parked = apply_move(
        item(S.FAILED, failure=ItemFailure.RUN_FAILED),
        QueueMove.PARK,
        OP,
        at=AT,
        actor="alice",
        blocker=QueueBlocker.PARKED,
    )
    assert (parked.status, parked.blocker, parked.failure) == (S.BLOCKED, QueueBlocker.PARKED, None)
    assert parked.events[-1].data["blocker"] == "parked"
    released = apply_move(parked, QueueMove.RELEASE, OP, at=AT, actor="alice")
    assert (released.status, released.blocker) == (S.APPROVED, None)


def test_apply_move_records_the_failure_of_a_move_into_failed() -> None:
    failed = apply_move(item(S.ACTIVE), QueueMove.FAIL, SYS, at=AT, actor=None)
    assert failed.failure is ItemFailure.RUN_FAILED
    assert failed.events[-1].data["failure"] == "run_failed"


@pytest.mark.parametrize(
    ("status", "move", "fields"),
    [
        (S.BLOCKED, QueueMove.RELEASE, {"blocker": QueueBlocker.DECISION}),
        (S.DONE, QueueMove.REOPEN, {}),
        (S.HUMAN_REVIEW, QueueMove.DISPATCH, {}),
    ],
)
def test_a_persons_release_reopen_or_send_back_starts_a_new_review_cycle(
    status: QueueStatus, move: QueueMove, fields: dict[str, object]
) -> None:
    moved = apply_move(item(status, **fields), move, OP, at=AT, actor="alice")
    assert moved.cycle == 2
    assert moved.events[-1].data["cycle"] == 2


@pytest.mark.parametrize(
    ("status", "move", "mover"),
    [
        (S.APPROVED, QueueMove.DISPATCH, SYS),
        (S.AI_REVIEW, QueueMove.DISPATCH, SYS),
        (S.FAILED, QueueMove.DISPATCH, OP),
    ],
)
def test_the_queues_own_dispatches_and_recoveries_stay_in_the_cycle(
    status: QueueStatus, move: QueueMove, mover: Mover
) -> None:
    fields = {"failure": ItemFailure.RUN_FAILED} if status is S.FAILED else {}
    assert apply_move(item(status, **fields), move, mover, at=AT, actor=None).cycle == 1


def test_a_refused_move_changes_nothing() -> None:
    before = item(S.APPROVED)
    with pytest.raises(QueueRefused):
        apply_move(before, QueueMove.DONE, OP, at=AT, actor="alice")
    assert before == item(S.APPROVED)


def test_the_help_text_comes_from_the_table() -> None:
    text = transition_help()
    assert len(text.splitlines()) == len(TRANSITIONS) + 1
    for row in TRANSITIONS:
        assert row.meaning in text
    assert text.splitlines()[-1] == "final: rejected"
    assert (
        move_help(QueueMove.PARK)
        == "failed → blocked (by operator, sets parked): park the item: nothing retries it"
    )
    assert len(move_help(QueueMove.DISPATCH).splitlines()) == 4
