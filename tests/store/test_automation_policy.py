"""The automation policy: built-in default, history of writes, verified writes."""

from __future__ import annotations

import datetime as dt

import pytest

from contracts.config import PolicyRecord
from contracts.enums import AutomationMode, Tier
from contracts.errors import NotFound, OperatorError
from contracts.identity import Signer
from contracts.policy import AutomationPolicy
from store import Store
from tests.identity import signer as actor_signer

GUARDED = AutomationPolicy(mode=AutomationMode.GUARDED, maximum_automatic_tier=Tier.READ_ONLY)
OFF = AutomationPolicy(mode=AutomationMode.OFF)


def test_default_policy_when_none_was_set(store: Store) -> None:
    assert store.get_policy() == PolicyRecord(policy=AutomationPolicy())
    assert store.get_policy().policy.mode is AutomationMode.RECOMMEND
    assert store.get_policy().policy.maximum_automatic_tier is Tier.RECOMMEND
    assert store.policy_history() == []


def test_set_policy_is_in_force_and_recorded(store: Store, signer: Signer) -> None:
    record = store.set_policy(GUARDED, signer)
    assert record.policy == GUARDED
    assert record.set_by == signer.actor_id
    assert record.set_at is not None
    assert record.set_at.utcoffset() == dt.timedelta(0)
    assert store.get_policy() == record


def test_policy_history_is_newest_first(store: Store, signer: Signer) -> None:
    first = store.set_policy(GUARDED, signer)
    second = store.set_policy(OFF, signer)
    third = store.set_policy(AutomationPolicy(), signer)
    assert store.get_policy() == third
    assert store.policy_history() == [third, second, first]
    assert store.policy_history(limit=2) == [third, second]


def test_policy_from_unknown_actor_is_refused_and_nothing_written(store: Store, signer: Signer) -> None:
    store.set_policy(OFF, signer)
    with pytest.raises(NotFound) as raised:
        store.set_policy(GUARDED, actor_signer("mallory"))
    assert raised.value.code == "unknown_actor"
    assert store.get_policy().policy == OFF
    assert len(store.policy_history()) == 1


def test_policy_without_any_actor_is_refused(store: Store) -> None:
    with pytest.raises(NotFound):
        store.set_policy(GUARDED, actor_signer("alice"))
    assert store.policy_history() == []


def test_policy_write_that_does_not_read_back_is_unverified(
    store: Store, signer: Signer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "get_policy", lambda: PolicyRecord(policy=AutomationPolicy()))
    with pytest.raises(OperatorError) as raised:
        store.set_policy(GUARDED, signer)
    assert raised.value.code == "policy_write_unverified"


def test_a_policy_row_removed_while_it_is_signed_is_an_unverified_write_not_a_crash(
    store: Store, signer: Signer
) -> None:
    from sqlalchemy import text

    from store.engine import writing

    if store.engine.dialect.name != "sqlite":
        pytest.skip("the trigger is SQLite's; the mapping is the same on every backend")
    before = store.get_policy()
    with writing(store.engine).begin() as connection:
        connection.execute(
            text(
                "CREATE TRIGGER lose_policy AFTER INSERT ON automation_policy "
                "BEGIN DELETE FROM automation_policy WHERE id = NEW.id; END"
            )
        )
    with pytest.raises(OperatorError) as raised:
        store.set_policy(GUARDED, signer)
    assert raised.value.code == "policy_write_unverified"
    assert store.get_policy() == before
