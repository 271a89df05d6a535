"""Proofs of the action token bind to exactly one run, action, actor and digest, and age out."""

from __future__ import annotations

import datetime as dt

import pytest

from contracts.proofs import PROOF_MAX_AGE, sign_action, token_fingerprint, verify_action

TOKEN = b"a-deployment-token-of-some-length"
NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)
ACTION = {"run_id": "SOR-0123456789ABCDEF", "action": "approve", "actor": "alice", "digest": "ab" * 32}


def _proof(token: bytes = TOKEN, issued_at: dt.datetime = NOW, **overrides: str):  # type: ignore[no-untyped-def]
    return sign_action(token, issued_at=issued_at, nonce="0" * 32, **{**ACTION, **overrides})


def test_a_fresh_proof_of_exactly_this_action_verifies() -> None:
    assert verify_action(TOKEN, _proof(), now=NOW + dt.timedelta(seconds=5), **ACTION) is None


def test_no_proof_is_refused_as_missing() -> None:
    refusal = verify_action(TOKEN, None, now=NOW, **ACTION)
    assert refusal is not None and refusal[0] == "proof_missing"


@pytest.mark.parametrize(
    "field", ["run_id", "action", "actor", "digest"], ids=lambda f: f"proof-for-another-{f}"
)
def test_a_proof_made_for_anything_else_is_invalid(field: str) -> None:
    proof = _proof(**{field: "something-else"})
    refusal = verify_action(TOKEN, proof, now=NOW, **ACTION)
    assert refusal is not None and refusal[0] == "proof_invalid"


def test_a_proof_made_with_another_token_is_invalid() -> None:
    refusal = verify_action(TOKEN, _proof(token=b"some-other-token-value"), now=NOW, **ACTION)
    assert refusal is not None and refusal[0] == "proof_invalid"


def test_a_proof_older_than_the_limit_is_expired() -> None:
    refusal = verify_action(TOKEN, _proof(), now=NOW + PROOF_MAX_AGE + dt.timedelta(seconds=1), **ACTION)
    assert refusal is not None and refusal[0] == "proof_expired"


def test_a_proof_from_the_future_beyond_the_skew_is_expired() -> None:
    refusal = verify_action(TOKEN, _proof(issued_at=NOW + dt.timedelta(minutes=10)), now=NOW, **ACTION)
    assert refusal is not None and refusal[0] == "proof_expired"


def test_the_mac_does_not_contain_the_token_and_the_fingerprint_is_stable() -> None:
    proof = _proof()
    assert TOKEN.decode() not in proof.model_dump_json()
    assert token_fingerprint(TOKEN) == token_fingerprint(TOKEN) != token_fingerprint(b"x" * 20)
