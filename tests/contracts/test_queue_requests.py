"""Request ids of ``queue add`` (contracts.queue_requests): the item keeps the id and the proposal's
digest, a repeated add finds it, the same id with another proposal is refused, and the id is bound
into what the operator's proof signs."""

from __future__ import annotations

import datetime as dt

import pytest
from pydantic import ValidationError

from contracts.queue_items import ItemProposal, QueueRefused, added_with, new_item
from contracts.queue_messages import AddRequest
from contracts.queue_requests import AddedBy

AT = dt.datetime(2026, 12, 4, tzinfo=dt.UTC)


def _request(title: str, request_id: str | None) -> AddRequest:
    return AddRequest(actor="alice", proposal=ItemProposal(title=title), request_id=request_id)


def test_an_item_added_with_a_request_id_keeps_it_and_the_proposals_digest() -> None:
    request = _request("Slow orders", "r-1")
    item = new_item(request.proposal, key="Q-1", at=AT, actor="alice", added_by=request.added_by())
    assert item.added_by == AddedBy(request_id="r-1", proposal_sha256=request.proposal_digest())
    assert item.events[0].data == {"key": "Q-1", "request_id": "r-1"}


def test_an_add_without_a_request_id_keeps_nothing_and_signs_the_proposal_alone() -> None:
    request = _request("Slow orders", None)
    assert request.added_by() is None
    assert request.digest() == request.proposal_digest()
    item = new_item(request.proposal, key="Q-1", at=AT, actor="alice")
    assert item.added_by is None and item.events[0].data == {"key": "Q-1"}


def test_the_request_id_is_part_of_what_the_proof_signs() -> None:
    assert _request("Slow orders", "r-1").digest() != _request("Slow orders", "r-2").digest()
    assert _request("Slow orders", "r-1").digest() != _request("Slow orders", None).digest()


def test_added_with_finds_the_earlier_item_and_refuses_another_proposal_under_the_same_id() -> None:
    first = _request("Slow orders", "r-1")
    item = new_item(first.proposal, key="Q-1", at=AT, actor="alice", added_by=first.added_by())
    plain = new_item(ItemProposal(title="Other"), key="Q-2", at=AT, actor="alice")
    assert added_with([plain, item], "r-1", first.proposal_digest()) is item
    assert added_with([plain, item], "r-2", first.proposal_digest()) is None
    with pytest.raises(QueueRefused) as refused:
        added_with([item], "r-1", _request("Fast orders", "r-1").proposal_digest())
    assert refused.value.code == "request_id_conflict" and refused.value.extra == {"key": "Q-1"}


@pytest.mark.parametrize("bad", ["", "x" * 201, "two\nlines", "bell\x07"])
def test_a_request_id_is_one_line_of_1_to_200_printable_characters(bad: str) -> None:
    with pytest.raises(ValidationError):
        _request("Slow orders", bad)


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        ("", "must not be empty or blank"),
        ("   ", "must not be empty or blank"),
        ("\u00a0", "must not be empty or blank"),
        ("x" * 201, "at most 200 characters, not 201"),
        ("a\nb", "one line"),
        ("zero\u200bwidth", r"U\+200B"),
    ],
)
def test_every_request_id_follows_one_rule_and_says_which_it_breaks(bad: str, said: str) -> None:
    from contracts.ids import check_request_id
    from contracts.research_teams import TeamStartInput

    with pytest.raises(ValueError, match=said):
        check_request_id(bad)
    with pytest.raises(ValidationError, match=said):
        TeamStartInput(request_id=bad)
    assert check_request_id("deploy 2026-12-04 #3") == "deploy 2026-12-04 #3"
