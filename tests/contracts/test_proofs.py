"""An actor's signature of a protected action binds it to exactly one action, target, actor, digest and
key, and ages out; configuration records are signed in a canonical form that names their kind and id;
the proof payload recorded before per-person keys (an HMAC of the shared token) still decodes."""

from __future__ import annotations

import datetime as dt

import pytest
from pydantic import ValidationError

from contracts.identity import (
    ActorKey,
    KeyMaterialError,
    RecordKind,
    Signer,
    action_signature_valid,
    anchor_mac,
    anchor_matches,
    canonical_record,
    fingerprint_of,
    proof_is_fresh,
    sign_action,
    verify_signature,
)
from contracts.proofs import PROOF_MAX_AGE, ActionProof, token_fingerprint

ALICE = Signer("alice", ActorKey.generate())
NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)
ACTION = {"target": "SOR-0123456789ABCDEF", "action": "approve", "digest": "ab" * 32}


def _proof(signer: Signer = ALICE, issued_at: dt.datetime = NOW, **overrides: str) -> ActionProof:
    fields = {**ACTION, **overrides}
    return sign_action(signer, issued_at=issued_at, nonce="0" * 32, **fields)


def _valid(proof: ActionProof, public_key: str = ALICE.key.public_key, actor: str = "alice") -> bool:
    return action_signature_valid(public_key, proof, actor=actor, **ACTION)


def test_a_signature_of_exactly_this_action_by_this_actor_verifies() -> None:
    proof = _proof()
    assert proof.signed and proof.key == ALICE.fingerprint and proof.mac is None
    assert _valid(proof)


@pytest.mark.parametrize("field", ["target", "action", "digest"], ids=lambda f: f"made-for-another-{f}")
def test_a_signature_made_for_anything_else_does_not_verify(field: str) -> None:
    assert not _valid(_proof(**{field: "something-else"}))


def test_a_signature_does_not_verify_for_another_actor_or_with_another_key() -> None:
    bob = Signer("bob", ActorKey.generate())
    assert not _valid(_proof(), actor="bob")  # alice's signature claimed for bob
    assert not _valid(_proof(Signer("alice", bob.key)))  # bob's key claiming to be alice
    # (Which key is alice's is the store's to say: ``Store.action_key`` refuses bob's key for alice.)


def test_a_tampered_signature_or_key_fingerprint_does_not_verify() -> None:
    proof = _proof()
    flipped = ("A" if proof.signature and proof.signature[0] != "A" else "B") + (proof.signature or "")[1:]
    assert not _valid(proof.model_copy(update={"signature": flipped}))
    assert not _valid(proof.model_copy(update={"key": "1" * 64}))


def test_a_proof_is_fresh_for_fifteen_minutes_and_two_minutes_of_clock_skew() -> None:
    proof = _proof()
    assert proof_is_fresh(proof, NOW + PROOF_MAX_AGE)
    assert not proof_is_fresh(proof, NOW + PROOF_MAX_AGE + dt.timedelta(seconds=1))
    assert proof_is_fresh(proof, NOW - dt.timedelta(minutes=2))
    assert not proof_is_fresh(proof, NOW - dt.timedelta(minutes=3))


def test_the_proof_recorded_before_per_person_keys_still_decodes() -> None:
    recorded = {"issued_at": "2026-11-29T12:00:00Z", "nonce": "0" * 32, "mac": "ab" * 32}
    proof = ActionProof.model_validate(recorded)
    assert not proof.signed and proof.key is None
    assert not _valid(proof)


@pytest.mark.parametrize(
    "payload",
    [
        {"mac": "ab" * 32, "key": "cd" * 32, "signature": "A" * 86 + "=="},
        {"key": "cd" * 32},
        {"signature": "A" * 86 + "=="},
        {},
    ],
    ids=["both-forms", "key-without-signature", "signature-without-key", "neither"],
)
def test_a_proof_carries_exactly_one_form(payload: dict[str, str]) -> None:
    with pytest.raises(ValidationError):
        ActionProof.model_validate({"issued_at": NOW.isoformat(), "nonce": "0" * 32, **payload})


def test_a_key_round_trips_through_its_pem_and_its_fingerprint_is_of_the_public_key() -> None:
    again = ActorKey.from_pem(ALICE.key.to_pem())
    assert again.fingerprint == ALICE.fingerprint == fingerprint_of(ALICE.key.public_key)
    assert "PRIVATE" not in repr(ALICE.key) and ALICE.key.to_pem().decode() not in repr(ALICE)
    for bad in (b"", b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", b"x" * 5000):
        with pytest.raises(KeyMaterialError):
            ActorKey.from_pem(bad)


def test_a_record_signature_names_its_kind_and_id_so_it_cannot_be_moved() -> None:
    content = {"mode": "guarded", "maximum_automatic_tier": "read_only"}
    signed = {"signed_by": "alice", "signed_key": ALICE.fingerprint, "signed_at": NOW}
    message = canonical_record(RecordKind.POLICY, "7", content, **signed)
    signature = ALICE.sign(message)
    assert verify_signature(ALICE.key.public_key, signature, message)
    for other in (
        canonical_record(RecordKind.POLICY, "8", content, **signed),
        canonical_record(RecordKind.MODEL_SELECTION, "7", content, **signed),
        canonical_record(
            RecordKind.POLICY, "7", {**content, "maximum_automatic_tier": "recommend"}, **signed
        ),
        canonical_record(RecordKind.POLICY, "7", content, **{**signed, "signed_by": "bob"}),
    ):
        assert not verify_signature(ALICE.key.public_key, signature, other)
    # Sorted keys: the same content in another order is the same record.
    assert canonical_record(RecordKind.POLICY, "7", dict(reversed(content.items())), **signed) == message


def test_the_trust_anchor_is_an_hmac_of_the_root_record_under_the_token() -> None:
    message = canonical_record(
        RecordKind.ACTOR_KEY, ALICE.fingerprint, {"actor_id": "alice"}, signed_by="alice",
        signed_key=ALICE.fingerprint, signed_at=NOW,
    )  # fmt: skip
    mac = anchor_mac(b"the-deployment-token", message)
    assert anchor_matches(b"the-deployment-token", message, mac)
    assert not anchor_matches(b"another-deployment-token", message, mac)
    assert "the-deployment-token" not in mac


def test_the_token_fingerprint_is_stable_and_reveals_nothing() -> None:
    assert token_fingerprint(b"x" * 20) == token_fingerprint(b"x" * 20) != token_fingerprint(b"y" * 20)
