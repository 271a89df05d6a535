"""Actors and their keys: the first actor is the trust root (registered with the action token), every
later one is registered by an active actor; keys rotate, actors are deactivated, and history stays."""

from __future__ import annotations

import datetime as dt

import pytest

from contracts.errors import InvalidInput, NotFound, Refused
from contracts.identity import ActorKey, Signer, TrustAnchor
from contracts.policy import AutomationPolicy
from store import Store, open_store
from tests.identity import STORE_TOKEN, bootstrap, key_of, register
from tests.identity import signer as actor_signer


def test_first_actor_is_registered_with_the_action_token_and_holds_its_key(store: Store) -> None:
    record = store.bootstrap_actor("alice", "Alice Operator", key_of("alice"), STORE_TOKEN)
    assert record.id == "alice"
    assert record.name == "Alice Operator"
    assert record.registered_by is None
    assert record.registered_at.utcoffset() == dt.timedelta(0)
    assert record.active and record.deactivated_by is None
    assert record.key_fingerprint == key_of("alice").fingerprint
    assert [key.fingerprint for key in record.keys] == [key_of("alice").fingerprint]
    assert record.keys[0].added_by == "alice" and record.keys[0].retired_at is None
    assert store.list_actors() == [record]
    assert store.actor_exists("alice")


def test_a_second_bootstrap_is_refused(store: Store, signer: Signer) -> None:
    with pytest.raises(InvalidInput) as raised:
        store.bootstrap_actor("bob", "Bob", key_of("bob"), STORE_TOKEN)
    assert raised.value.code == "actor_required"
    assert not store.actor_exists("bob")


def test_bootstrap_with_another_deployments_token_is_refused(store: Store) -> None:
    store.adopt_token_fingerprint("0" * 64)
    with pytest.raises(Refused) as raised:
        store.bootstrap_actor("alice", "Alice", key_of("alice"), STORE_TOKEN)
    assert raised.value.code == "action_token_mismatch"
    assert store.list_actors() == []


def test_second_actor_registered_by_a_registered_actor(store: Store, signer: Signer) -> None:
    record = store.register_actor("bob@example.org", "Bob", key_of("bob@example.org").public_key, signer)
    assert record.registered_by == "alice"
    assert record.key_fingerprint == key_of("bob@example.org").fingerprint
    assert record.keys[0].added_by == "alice"
    assert [listed.id for listed in store.list_actors()] == ["alice", "bob@example.org"]


@pytest.mark.parametrize("registrar", ["mallory", "Not An Id"])
def test_unknown_registrar_is_refused_and_nothing_written(
    store: Store, signer: Signer, registrar: str
) -> None:
    with pytest.raises(NotFound) as raised:
        store.register_actor("bob", "Bob", key_of("bob").public_key, actor_signer(registrar))
    assert raised.value.code == "unknown_actor"
    assert [listed.id for listed in store.list_actors()] == ["alice"]


def test_a_registrar_signing_with_another_actors_key_is_refused(store: Store, signer: Signer) -> None:
    register(store, "bob", signer)
    with pytest.raises(Refused) as raised:
        store.register_actor("carol", "Carol", key_of("carol").public_key, Signer("bob", key_of("alice")))
    assert raised.value.code == "actor_key_mismatch"
    assert "belongs to 'alice'" in raised.value.message
    assert not store.actor_exists("carol")


def test_duplicate_actor_is_refused_and_the_original_kept(store: Store, signer: Signer) -> None:
    before = store.list_actors()
    with pytest.raises(Refused) as raised:
        store.register_actor("alice", "Someone Else", ActorKey.generate().public_key, signer)
    assert raised.value.code == "duplicate_actor"
    assert raised.value.exit_code == 4
    assert store.list_actors() == before


def test_a_key_another_actor_holds_is_refused(store: Store, signer: Signer) -> None:
    with pytest.raises(Refused) as raised:
        store.register_actor("bob", "Bob", key_of("alice").public_key, signer)
    assert raised.value.code == "duplicate_key"
    assert not store.actor_exists("bob")


@pytest.mark.parametrize("actor_id", ["", "Alice", "-alice", ".alice", "a" * 65, "al ice", "alice\n"])
def test_malformed_actor_id_is_invalid_input(store: Store, actor_id: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        store.bootstrap_actor(actor_id, "Alice", key_of("alice"), STORE_TOKEN)
    assert raised.value.code == "invalid_actor_id"
    assert store.list_actors() == []


@pytest.mark.parametrize("name", ["", "   ", "x" * 121, "Alice\nOperator", "Alice\x00"])
def test_malformed_actor_name_is_invalid_input(store: Store, name: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        store.bootstrap_actor("alice", name, key_of("alice"), STORE_TOKEN)
    assert raised.value.code == "invalid_actor_name"
    assert store.list_actors() == []


def test_longest_actor_id_and_name_are_accepted(store: Store) -> None:
    record = store.bootstrap_actor("a" * 64, "N" * 120, key_of("a" * 64), STORE_TOKEN)
    assert store.list_actors() == [record]


def test_unregistered_actor_does_not_exist(store: Store) -> None:
    assert not store.actor_exists("nobody")


# ---------------------------------------------------------------------------------------- deactivation


def test_a_deactivated_actor_stays_listed_and_can_sign_nothing(store: Store, signer: Signer) -> None:
    bob = register(store, "bob", signer)
    record = store.deactivate_actor("bob", signer)
    assert (record.active, record.deactivated_by) == (False, "alice")
    assert record.deactivated_at is not None
    assert [(listed.id, listed.active) for listed in store.list_actors()] == [("alice", True), ("bob", False)]
    with pytest.raises(Refused) as raised:
        store.set_policy(AutomationPolicy(), bob)
    assert raised.value.code == "actor_deactivated"
    with pytest.raises(Refused) as again:
        store.deactivate_actor("bob", signer)
    assert again.value.code == "actor_deactivated"


def test_what_a_deactivated_actor_signed_before_stays_in_force(store: Store, signer: Signer) -> None:
    bob = register(store, "bob", signer)
    written = store.set_policy(AutomationPolicy(), bob)
    register(store, "carol", bob)
    store.deactivate_actor("bob", signer)
    assert store.get_policy() == written
    assert store.actor_exists("carol")


def test_an_actor_may_deactivate_its_registrar_and_both_stay_verified(store: Store, signer: Signer) -> None:
    bob = register(store, "bob", signer)
    store.deactivate_actor("alice", bob)
    assert [(listed.id, listed.active) for listed in store.list_actors()] == [("alice", False), ("bob", True)]
    assert store.set_policy(AutomationPolicy(), bob).set_by == "bob"


def test_the_last_active_actor_cannot_be_deactivated(store: Store, signer: Signer) -> None:
    bob = register(store, "bob", signer)
    store.deactivate_actor("bob", signer)
    with pytest.raises(Refused) as raised:
        store.deactivate_actor("alice", signer)
    assert raised.value.code == "last_active_actor"
    assert store.get_actor("alice").active
    del bob


def test_an_actor_may_deactivate_itself_while_another_is_active(store: Store, signer: Signer) -> None:
    register(store, "bob", signer)
    assert not store.deactivate_actor("alice", signer).active
    assert store.get_actor("bob").active


def test_deactivating_an_unknown_actor_is_not_found(store: Store, signer: Signer) -> None:
    with pytest.raises(NotFound) as raised:
        store.deactivate_actor("nobody", signer)
    assert raised.value.code == "unknown_actor"


# -------------------------------------------------------------------------------------------- rotation


def test_a_rotated_key_replaces_the_old_one_which_is_kept_as_history(store: Store, signer: Signer) -> None:
    new = ActorKey.generate()
    record = store.rotate_actor_key(signer, new)
    assert record.key_fingerprint == new.fingerprint
    assert [key.fingerprint for key in record.keys] == [key_of("alice").fingerprint, new.fingerprint]
    assert record.keys[0].retired_at == record.keys[1].added_at
    with pytest.raises(Refused) as raised:
        store.set_policy(AutomationPolicy(), signer)
    assert raised.value.code == "actor_key_retired"
    assert store.set_policy(AutomationPolicy(), Signer("alice", new)).set_by == "alice"


def test_records_signed_with_a_key_before_it_was_rotated_stay_verified(store: Store, signer: Signer) -> None:
    written = store.set_policy(AutomationPolicy(), signer)
    bob = register(store, "bob", signer)
    store.rotate_actor_key(signer, ActorKey.generate())
    assert store.get_policy() == written
    assert store.get_actor("bob").active
    del bob


def test_a_rotation_needs_the_key_in_force(store: Store, signer: Signer) -> None:
    stranger = Signer("alice", ActorKey.generate())
    with pytest.raises(Refused) as raised:
        store.rotate_actor_key(stranger, ActorKey.generate())
    assert raised.value.code == "actor_key_mismatch"
    assert len(store.get_actor("alice").keys) == 1


def test_proof_keys_are_checked_against_the_actors_key_in_force(store: Store, signer: Signer) -> None:
    register(store, "bob", signer)
    assert store.action_key("alice", key_of("alice").fingerprint) == key_of("alice").public_key
    with pytest.raises(Refused) as other:
        store.action_key("bob", key_of("alice").fingerprint)
    assert other.value.code == "proof_invalid"
    with pytest.raises(Refused) as unknown:
        store.action_key("bob", ActorKey.generate().fingerprint)
    assert unknown.value.code == "actor_key_unknown"
    with pytest.raises(NotFound):
        store.action_key("nobody", key_of("alice").fingerprint)
    old = key_of("alice").fingerprint
    store.rotate_actor_key(signer, ActorKey.generate())
    with pytest.raises(Refused) as retired:
        store.action_key("alice", old)
    assert retired.value.code == "actor_key_retired"


# ---------------------------------------------------------------------------------------- trust anchor


def test_another_deployments_token_verifies_nothing(database_url: str) -> None:
    with open_store(database_url, anchor=TrustAnchor(token=STORE_TOKEN)) as store:
        bootstrap(store)
    other_token = TrustAnchor(token=b"another-deployment-token")
    with open_store(database_url, anchor=other_token) as other, pytest.raises(Refused) as raised:
        other.list_actors()
    assert raised.value.code == "configuration_unverified"
    assert "trust root" in raised.value.message


def test_a_pinned_trust_root_verifies_without_the_token(database_url: str) -> None:
    with open_store(database_url, anchor=TrustAnchor(token=STORE_TOKEN)) as store:
        alice = bootstrap(store)
        store.set_policy(AutomationPolicy(), alice)
    with open_store(database_url, anchor=TrustAnchor(root_fingerprint=alice.fingerprint)) as pinned:
        assert pinned.get_policy().set_by == "alice"
    pinned_elsewhere = TrustAnchor(root_fingerprint="0" * 64, token=STORE_TOKEN)
    with open_store(database_url, anchor=pinned_elsewhere) as wrong, pytest.raises(Refused) as raised:
        wrong.get_policy()
    assert raised.value.code == "configuration_unverified"


def test_without_any_anchor_signed_records_cannot_be_read(database_url: str) -> None:
    with open_store(database_url, anchor=TrustAnchor(token=STORE_TOKEN)) as store:
        bootstrap(store)
    with open_store(database_url) as bare:
        assert bare.get_policy().set_by is None  # nothing signed to read: the default
        with pytest.raises(Refused) as raised:
            bare.list_actors()
    assert raised.value.code == "trust_root_not_configured"


def test_the_refusal_without_an_anchor_names_both_variables_and_where_the_demo_keeps_its_token(
    database_url: str,
) -> None:
    with open_store(database_url, anchor=TrustAnchor(token=STORE_TOKEN)) as store:
        bootstrap(store)
    with open_store(database_url) as bare, pytest.raises(Refused) as raised:
        bare.list_actors()
    message = raised.value.message
    assert "SPECIALISTS_ACTION_TOKEN_FILE" in message and "SPECIALISTS_TRUST_ROOT" in message
    assert ".specialists/action-token" in message
    # `actors --json` is refused the same way without an anchor: the hint says so.
    assert "only where one of the two is set already" in message
