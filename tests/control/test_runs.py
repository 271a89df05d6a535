"""``control.runs.check_run_id``: what the refusal of a malformed run id says — the id as given (a
long one shortened, never echoed whole), and which command shows a research team's or case's id
given where a run id belongs."""

from __future__ import annotations

import pytest

from contracts.errors import InvalidInput
from control.runs import check_run_id


def refusal(run_id: str) -> InvalidInput:
    with pytest.raises(InvalidInput) as raised:
        check_run_id(run_id)
    assert raised.value.code == "invalid_run_id"
    return raised.value


def test_a_well_formed_run_id_passes() -> None:
    check_run_id("SOR-0123456789ABCDEF")


def test_a_malformed_run_id_is_refused_naming_it_and_the_shape() -> None:
    message = refusal("SOR-123").message
    assert message == "'SOR-123' is not a run id (SOR- followed by 16 of 0-9A-Z)"


def test_a_very_long_run_id_is_shortened_in_the_refusal() -> None:
    message = refusal("A" * 5000).message
    assert len(message) < 200
    assert "(5000 characters)" in message


def test_a_research_team_id_given_as_a_run_id_points_to_team_show() -> None:
    assert "specialists research team-show" in refusal("RTM-E826C212CF0D36FC").message


def test_a_research_case_id_given_as_a_run_id_points_to_case_show() -> None:
    assert "specialists research case-show" in refusal("RSC-JAPWUGBLSTRN").message
