"""Registering actors: the first without a registrar, every later one by a registered actor."""

from __future__ import annotations

import datetime as dt

import pytest

from contracts.errors import InvalidInput, NotFound, Refused
from store import Store


def test_first_actor_registers_without_a_registrar(store: Store) -> None:
    record = store.register_actor("alice", "Alice Operator", None)
    assert record.id == "alice"
    assert record.name == "Alice Operator"
    assert record.registered_by is None
    assert record.registered_at.tzinfo is not None
    assert record.registered_at.utcoffset() == dt.timedelta(0)
    assert store.list_actors() == [record]
    assert store.actor_exists("alice")


def test_second_actor_needs_a_registrar(store: Store, actor: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        store.register_actor("bob", "Bob", None)
    assert raised.value.code == "actor_required"
    assert not store.actor_exists("bob")


def test_second_actor_registered_by_a_registered_actor(store: Store, actor: str) -> None:
    record = store.register_actor("bob@example.org", "Bob", actor)
    assert record.registered_by == actor
    assert [listed.id for listed in store.list_actors()] == [actor, "bob@example.org"]


@pytest.mark.parametrize("registrar", ["mallory", "Not An Id"])
def test_unknown_registrar_is_refused_and_nothing_written(store: Store, actor: str, registrar: str) -> None:
    with pytest.raises(NotFound) as raised:
        store.register_actor("bob", "Bob", registrar)
    assert raised.value.code == "unknown_actor"
    assert [listed.id for listed in store.list_actors()] == [actor]


def test_unknown_registrar_of_the_first_actor_is_refused(store: Store) -> None:
    with pytest.raises(NotFound):
        store.register_actor("alice", "Alice", "alice")
    assert store.list_actors() == []


def test_duplicate_actor_is_refused_and_the_original_kept(store: Store, actor: str) -> None:
    before = store.list_actors()
    with pytest.raises(Refused) as raised:
        store.register_actor(actor, "Someone Else", actor)
    assert raised.value.code == "duplicate_actor"
    assert raised.value.exit_code == 4
    assert store.list_actors() == before


@pytest.mark.parametrize("actor_id", ["", "Alice", "-alice", ".alice", "a" * 65, "al ice", "alice\n"])
def test_malformed_actor_id_is_invalid_input(store: Store, actor_id: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        store.register_actor(actor_id, "Alice", None)
    assert raised.value.code == "invalid_actor_id"
    assert store.list_actors() == []


@pytest.mark.parametrize("name", ["", "   ", "x" * 121, "Alice\nOperator", "Alice\x00"])
def test_malformed_actor_name_is_invalid_input(store: Store, name: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        store.register_actor("alice", name, None)
    assert raised.value.code == "invalid_actor_name"
    assert store.list_actors() == []


def test_longest_actor_id_and_name_are_accepted(store: Store) -> None:
    record = store.register_actor("a" * 64, "N" * 120, None)
    assert store.list_actors() == [record]


def test_unregistered_actor_does_not_exist(store: Store) -> None:
    assert not store.actor_exists("nobody")
