"""Goal-queue keys: the series derived from a repository's alias, collisions, registered series, and
an allocator that never issues a key twice and survives continue-as-new as plain data."""

from __future__ import annotations

import itertools
import json

import pytest

from contracts.queue_items import ITEM_KEY_PATTERN, QueueRefusalCode, QueueRefused
from contracts.queue_keys import KeyAllocator, alias_letters, series_candidates


@pytest.mark.parametrize(
    ("alias", "series"),
    [
        ("orders", "ORD"),
        ("Orders-API", "ORD"),
        ("svc2", "SVC"),
        ("my.repo", "MYR"),
        ("ab", "AB"),
        ("a1", "AX"),
        ("7", "XX"),
        ("x-y", "XY"),
    ],
)
def test_a_repository_without_a_registered_series_gets_the_first_three_letters_of_its_alias(
    alias: str, series: str
) -> None:
    _, key = KeyAllocator().allocate(alias)
    assert key == f"{series}-1"


def test_the_candidates_are_longer_prefixes_then_one_then_two_extra_letters() -> None:
    candidates = list(series_candidates("orders"))
    assert candidates[:5] == ["ORD", "ORDE", "ORDER", "ORDA", "ORDB"]
    assert candidates[-1] == "ORDZZ"
    # ORDE and ORDER are prefixes already, so they are not tried again as ORD + E and ORD + ER.
    assert len(candidates) == len(set(candidates)) == 3 + 26 + 26 * 26 - 2
    assert all(2 <= len(c) <= 5 and c.isalpha() and c.isupper() for c in candidates)


def test_a_two_letter_alias_grows_from_its_two_letters() -> None:
    assert list(itertools.islice(series_candidates("ab"), 3)) == ["AB", "ABA", "ABB"]
    assert alias_letters("") == "XX"


def test_a_colliding_alias_takes_the_next_candidate_and_keeps_it() -> None:
    allocator, first = KeyAllocator().allocate("orders")
    allocator, second = allocator.allocate("order-service")
    allocator, third = allocator.allocate("ordinal")
    allocator, fourth = allocator.allocate("order-service")
    assert [first, second, third, fourth] == ["ORD-1", "ORDE-1", "ORDI-1", "ORDE-2"]
    assert allocator.series == {"orders": "ORD", "order-service": "ORDE", "ordinal": "ORDI"}


def test_the_derivation_depends_only_on_which_series_are_already_held_so_first_come_keeps_the_shortest() -> (
    None
):
    one = KeyAllocator().allocate("orders")[0].allocate("ordinal")[1]
    two = KeyAllocator().allocate("orders")[0].allocate("ordinal")[1]
    assert one == two == "ORDI-1"
    assert KeyAllocator().allocate("ordinal")[0].allocate("orders")[1] == "ORDE-1"


def test_when_every_derived_series_is_held_the_refusal_asks_for_a_registered_one() -> None:
    held = {f"repo{index}": series for index, series in enumerate(series_candidates("ord"))}
    with pytest.raises(QueueRefused) as refused:
        KeyAllocator(series=held).allocate("ord")
    assert refused.value.code == QueueRefusalCode.SERIES_EXHAUSTED
    assert "register a series" in refused.value.message


def test_a_registered_series_wins_and_later_keys_use_it() -> None:
    allocator, derived = KeyAllocator().allocate("orders")
    allocator, registered = allocator.allocate("orders", registered="OR")
    allocator, again = allocator.allocate("orders")
    assert [derived, registered, again] == ["ORD-1", "OR-1", "OR-2"]


def test_a_registered_series_of_another_repository_is_a_conflict() -> None:
    allocator, _ = KeyAllocator().allocate("orders")
    with pytest.raises(QueueRefused) as refused:
        allocator.allocate("billing", registered="ORD")
    assert refused.value.code == QueueRefusalCode.SERIES_CONFLICT
    assert refused.value.extra == {"series": "ORD", "repo_alias": "billing", "held_by": "orders"}


@pytest.mark.parametrize("series", ["Q", "A", "ORDERS", "ord", "OR1", "ÖR"])
def test_a_malformed_registered_series_is_refused(series: str) -> None:
    with pytest.raises(ValueError, match="2 to 5 upper-case letters"):
        KeyAllocator().allocate("orders", registered=series)


def test_numbers_only_grow_so_no_key_is_issued_twice_even_when_a_series_changes_hands() -> None:
    allocator, first = KeyAllocator().allocate("orders")
    allocator, _ = allocator.allocate("orders", registered="OR")  # ORD is free again
    allocator, reused_series = allocator.allocate("ordinal")
    assert (first, reused_series) == ("ORD-1", "ORD-2")


def test_items_without_a_repository_get_provisional_keys_in_their_own_sequence() -> None:
    allocator, q1 = KeyAllocator().allocate(None)
    allocator, ord1 = allocator.allocate("orders")
    allocator, q2 = allocator.allocate(None)
    assert (q1, ord1, q2) == ("Q-1", "ORD-1", "Q-2")


def test_every_issued_key_matches_the_item_key_pattern() -> None:
    allocator = KeyAllocator()
    for alias in ["orders", None, "ab", "7", "order-service", "x" * 64]:
        allocator, key = allocator.allocate(alias)
        assert ITEM_KEY_PATTERN.fullmatch(key), key


def test_allocation_leaves_the_allocator_it_was_called_on_unchanged() -> None:
    start = KeyAllocator()
    start.allocate("orders")
    start.allocate(None)
    assert start == KeyAllocator()


def test_the_allocator_survives_a_json_round_trip_as_continue_as_new_carries_it() -> None:
    allocator = KeyAllocator()
    for alias in ["orders", "order-service", None, "orders"]:
        allocator, _ = allocator.allocate(alias)
    carried = KeyAllocator.model_validate(json.loads(allocator.model_dump_json()))
    assert carried == allocator
    assert carried.allocate("orders")[1] == allocator.allocate("orders")[1] == "ORD-3"
