"""Domain ids: their shapes, random ones drawn from the whole alphabet, request ids mapped stably."""

from __future__ import annotations

import re

import pytest

from contracts.ids import (
    new_case_id,
    new_check_id,
    new_evidence_id,
    new_run_id,
    run_id_for_request,
    team_id_for_request,
)


@pytest.mark.parametrize(
    ("make", "pattern"),
    [
        (new_run_id, r"SOR-[0-9A-Z]{16}"),
        (new_case_id, r"RSC-[0-9A-Z]{12}"),
        (new_evidence_id, r"EVD-[0-9A-Z]{12}"),
        (new_check_id, r"SMC-[0-9A-Z]{16}"),
    ],
)
def test_a_random_id_has_its_prefix_and_length(make: object, pattern: str) -> None:
    assert callable(make)
    for _ in range(200):
        assert re.fullmatch(pattern, make())


def test_random_run_ids_use_every_character_at_every_position_and_do_not_repeat() -> None:
    ids = [new_run_id() for _ in range(4000)]
    assert len(set(ids)) == len(ids)
    for position in range(4, 20):
        # 4,000 draws of 36 symbols: a missing symbol at a position has odds below 1e-45.
        assert {run_id[position] for run_id in ids} == set("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def test_a_request_id_maps_to_the_same_id_every_time() -> None:
    assert run_id_for_request("ticket-7") == run_id_for_request("ticket-7")
    assert run_id_for_request("ticket-7") != run_id_for_request("ticket-8")
    assert team_id_for_request("ticket-7").removeprefix("RTM-") == run_id_for_request(
        "ticket-7"
    ).removeprefix("SOR-")


@pytest.mark.parametrize("request_id", ["", "x" * 201])
def test_an_empty_or_overlong_request_id_is_refused(request_id: str) -> None:
    with pytest.raises(ValueError, match=r"1\.\.200 characters"):
        run_id_for_request(request_id)
