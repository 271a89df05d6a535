"""The ``authorize_action`` activity: a registered, verified, active human actor and that actor's
valid, fresh signature (made with its key in force) of exactly this run, action and digest, whose nonce
no other workflow execution has spent; otherwise a refusal code (returned, never raised, so the
workflow can audit it). The action token, which anchors the store's trust, is never logged."""

from __future__ import annotations

import dataclasses
import datetime as dt
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.testing import ActivityEnvironment

from activities.authorization import AuthorizationActivities
from activities.config import ActivityConfig
from activities.store_access import SharedStore
from contracts.identity import ActorKey, Signer, TrustAnchor, sign_action, sign_delegation
from contracts.proofs import ActionProof
from contracts.runs import AuthorizeRequest
from tests.identity import key_of, signer
from tests.workflows.harness import ACTION_TOKEN, ACTOR, proof, register_actor, token_proof

RUN_ID = "SOR-0123456789ABCDEF"
OTHER_RUN = "SOR-FEDCBA9876543210"
DIGEST = "ab" * 32
NOW = dt.datetime.now(dt.UTC)


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'state' / 'specialists.db'}"


@pytest.fixture
def shared(url: str) -> Iterator[SharedStore]:
    """The store of a deployment where alice (the trust root) registered bob and carol, and carol was
    deactivated, as a worker holding the action token opens it."""
    store = SharedStore(url, TrustAnchor(token=ACTION_TOKEN))
    store.get().bootstrap_actor(ACTOR, "Alice Operator", key_of(ACTOR), ACTION_TOKEN)
    register_actor(store.get(), "bob", "Bob Operator")
    register_actor(store.get(), "carol", "Carol Operator")
    store.get().deactivate_actor("carol", signer(ACTOR))
    yield store
    store.close()


@pytest.fixture
def anchorless(url: str, shared: SharedStore) -> Iterator[SharedStore]:
    """The same store as a worker with neither the action token nor a pinned trust root opens it."""
    store = SharedStore(url)
    yield store
    store.close()


def _authorize(
    shared: SharedStore,
    *,
    actor: str | None = ACTOR,
    signature: ActionProof | None = None,
    action: str = "approve",
    digest: str = DIGEST,
    run_id: str = RUN_ID,
    workflow_run_id: str = "test-run",
    attempt: int = 1,
) -> tuple[bool, str | None]:
    config = ActivityConfig(database_url="sqlite://")
    activities = AuthorizationActivities(config, shared)
    request = AuthorizeRequest(run_id=run_id, action=action, actor=actor, digest=digest, proof=signature)
    environment = ActivityEnvironment()
    environment.info = dataclasses.replace(
        ActivityEnvironment.default_info(),
        workflow_id=run_id,
        workflow_run_id=workflow_run_id,
        attempt=attempt,
    )
    result = environment.run(activities.authorize_action, request)
    assert result.allowed == (result.code is None)
    return result.allowed, result.code


def test_a_registered_actor_with_a_fresh_proof_of_exactly_this_action_is_allowed(shared: SharedStore) -> None:
    assert _authorize(shared, signature=proof(RUN_ID, "approve", digest=DIGEST)) == (True, None)


_REFUSALS = {
    "no_actor": ({"actor": None}, "actor_required"),
    "unregistered_actor": ({"actor": "mallory"}, "unknown_actor"),
    "deactivated_actor": (
        {"actor": "carol", "signature": proof(RUN_ID, "approve", actor="carol", digest=DIGEST)},
        "actor_deactivated",
    ),
    "deactivated_actor_without_proof": ({"actor": "carol", "signature": None}, "actor_deactivated"),
    "no_proof": ({"signature": None}, "proof_missing"),
    "a_key_nobody_holds": (
        {"signature": proof(RUN_ID, "approve", digest=DIGEST, key=ActorKey.generate())},
        "actor_key_unknown",
    ),
    "alice_signing_as_bob": (
        {
            "actor": "bob",
            "signature": proof(RUN_ID, "approve", actor="bob", digest=DIGEST, key=key_of(ACTOR)),
        },
        "proof_invalid",
    ),
    "bob_signing_as_alice": (
        {"signature": proof(RUN_ID, "approve", digest=DIGEST, key=key_of("bob"))},
        "proof_invalid",
    ),
    "a_proof_of_the_shared_token": (
        {"signature": token_proof(RUN_ID, "approve", digest=DIGEST)},
        "proof_invalid",
    ),
    "another_run": ({"signature": proof(OTHER_RUN, "approve", digest=DIGEST)}, "proof_invalid"),
    "another_action": ({"signature": proof(RUN_ID, "cancel", digest=DIGEST)}, "proof_invalid"),
    "another_digest": ({"signature": proof(RUN_ID, "approve", digest="cd" * 32)}, "proof_invalid"),
    "made_by_bob_for_bob_sent_as_alice": (
        {"signature": proof(RUN_ID, "approve", actor="bob", digest=DIGEST)},
        "proof_invalid",
    ),
    "stale": (
        {"signature": proof(RUN_ID, "approve", digest=DIGEST, issued_at=NOW - dt.timedelta(minutes=20))},
        "proof_expired",
    ),
    "from_the_future": (
        {"signature": proof(RUN_ID, "approve", digest=DIGEST, issued_at=NOW + dt.timedelta(minutes=10))},
        "proof_expired",
    ),
}


@pytest.mark.parametrize(("kwargs", "code"), list(_REFUSALS.values()), ids=list(_REFUSALS))
def test_each_refusal_has_its_code(shared: SharedStore, kwargs: dict[str, object], code: str) -> None:
    arguments: dict[str, object] = {"signature": proof(RUN_ID, "approve", digest=DIGEST), **kwargs}
    assert _authorize(shared, **arguments) == (False, code)  # type: ignore[arg-type]


def test_a_rotated_out_key_is_refused_as_actor_key_retired(shared: SharedStore) -> None:
    old = ActorKey.generate()
    register_actor(shared.get(), "dave", "Dave Operator")
    shared.get().rotate_actor_key(signer("dave"), old)
    made_with_the_new = proof(RUN_ID, "approve", actor="dave", digest=DIGEST, key=old)
    assert _authorize(shared, actor="dave", signature=made_with_the_new) == (True, None)
    made_with_the_old = proof(RUN_ID, "approve", actor="dave", digest=DIGEST)
    assert _authorize(shared, actor="dave", signature=made_with_the_old) == (False, "actor_key_retired")


def test_a_worker_without_a_trust_anchor_verifies_nobody(anchorless: SharedStore) -> None:
    signature = proof(RUN_ID, "approve", digest=DIGEST)
    assert _authorize(anchorless, signature=signature) == (False, "trust_root_not_configured")


def test_a_worker_pinning_the_trust_root_needs_no_token(url: str, shared: SharedStore) -> None:
    pinned = SharedStore(url, TrustAnchor(root_fingerprint=key_of(ACTOR).fingerprint))
    try:
        assert _authorize(pinned, signature=proof(RUN_ID, "approve", digest=DIGEST)) == (True, None)
    finally:
        pinned.close()


def test_the_decision_is_logged_without_the_token(
    shared: SharedStore, capsys: pytest.CaptureFixture[str]
) -> None:
    _authorize(shared, signature=proof(RUN_ID, "approve", digest=DIGEST))
    _authorize(shared, signature=proof(RUN_ID, "approve", digest=DIGEST, key=key_of("bob")))
    captured = capsys.readouterr()
    logged = captured.out + captured.err
    assert "action_authorised" in logged and "proof_invalid" in logged
    assert ACTION_TOKEN.decode() not in logged


CHECK_ID = "SMC-0123456789ABCDEF"
MODEL_ID = "openai:mini"
FIRST_EXECUTION = "0199a0c2-0000-7000-8000-000000000001"
SECOND_EXECUTION = "0199a0c2-0000-7000-8000-000000000002"


def test_a_proof_replayed_by_another_execution_of_the_same_workflow_id_is_refused(
    shared: SharedStore,
) -> None:
    # A ModelCheck's proof is bound to its check id, which is its workflow id: a proof copied out of a
    # finished check's history and sent to a new execution with the same id verifies, but its nonce
    # was spent by the first execution.
    signature = proof(CHECK_ID, "test_model", digest=MODEL_ID)
    assert _check_model(shared, signature, FIRST_EXECUTION) == (True, None)
    assert _check_model(shared, signature, SECOND_EXECUTION) == (False, "proof_replayed")


def _check_model(shared: SharedStore, signature: ActionProof, execution: str) -> tuple[bool, str | None]:
    return _authorize(
        shared,
        signature=signature,
        action="test_model",
        digest=MODEL_ID,
        run_id=CHECK_ID,
        workflow_run_id=execution,
    )


def test_a_retry_in_the_same_execution_is_allowed_again(shared: SharedStore) -> None:
    signature = proof(RUN_ID, "approve", digest=DIGEST)
    assert _authorize(shared, signature=signature, workflow_run_id=FIRST_EXECUTION) == (True, None)
    assert _authorize(shared, signature=signature, workflow_run_id=FIRST_EXECUTION, attempt=2) == (True, None)
    assert _authorize(shared, signature=signature, workflow_run_id=SECOND_EXECUTION) == (
        False,
        "proof_replayed",
    )
    assert _authorize(shared, signature=signature, workflow_run_id=FIRST_EXECUTION, attempt=3) == (True, None)


def test_a_refused_proof_spends_nothing(shared: SharedStore, anchorless: SharedStore) -> None:
    # Only a proof that verified is spent: a refusal before that leaves the nonce for its real use.
    signature = proof(RUN_ID, "approve", digest=DIGEST)
    assert _authorize(anchorless, signature=signature, workflow_run_id=FIRST_EXECUTION) == (
        False,
        "trust_root_not_configured",
    )
    assert _authorize(shared, signature=signature, workflow_run_id=SECOND_EXECUTION) == (True, None)


def test_the_replay_refusal_is_logged(shared: SharedStore, capsys: pytest.CaptureFixture[str]) -> None:
    signature = proof(RUN_ID, "approve", digest=DIGEST)
    _authorize(shared, signature=signature, workflow_run_id=FIRST_EXECUTION)
    _authorize(shared, signature=signature, workflow_run_id=SECOND_EXECUTION)
    captured = capsys.readouterr()
    assert "proof_replayed" in captured.out + captured.err


# ------------------------------------------------------------ session keys (Mission Control sign-in)

SESSION = ActorKey.generate()


def _delegated(
    *,
    actor: str = ACTOR,
    by: ActorKey | None = None,
    session: ActorKey = SESSION,
    signing: ActorKey | None = None,
    issued_at: dt.datetime | None = None,
    lasts: dt.timedelta = dt.timedelta(hours=8),
    run_id: str = RUN_ID,
    action: str = "approve",
) -> ActionProof:
    """A proof of ``action`` on ``run_id`` signed by ``signing`` (default: the session key) and
    carrying ``by``'s (default: ``actor``'s own key) delegation to ``session``."""
    start = issued_at or dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)
    delegation = sign_delegation(
        Signer(actor, by or key_of(actor)),
        session_key=session.public_key,
        issued_at=start,
        expires_at=start + lasts,
    )
    made = sign_action(
        Signer(actor, signing or session),
        action=action,
        target=run_id,
        digest=DIGEST,
        issued_at=dt.datetime.now(dt.UTC),
        nonce=secrets.token_hex(16),
    )
    return made.model_copy(update={"delegation": delegation})


def test_a_session_key_the_actor_delegated_to_acts_for_that_actor(shared: SharedStore) -> None:
    assert _authorize(shared, signature=_delegated()) == (True, None)
    assert _authorize(shared, actor="bob", signature=_delegated(actor="bob")) == (True, None)


_DELEGATION_REFUSALS = {
    "alices_session_sent_as_bob": ({"actor": "bob", "signature": _delegated()}, "proof_invalid"),
    "delegation_signed_by_another_actors_key": (
        {"actor": "bob", "signature": _delegated(actor="bob", by=key_of(ACTOR))},
        "proof_invalid",
    ),
    "action_signed_by_another_key_than_the_session": (
        {"signature": _delegated(signing=ActorKey.generate())},
        "proof_invalid",
    ),
    "another_run": ({"signature": _delegated(run_id=OTHER_RUN)}, "proof_invalid"),
    "a_session_longer_than_twelve_hours": (
        {"signature": _delegated(lasts=dt.timedelta(hours=13))},
        "proof_invalid",
    ),
    "an_ended_session": (
        {"signature": _delegated(issued_at=NOW - dt.timedelta(hours=9), lasts=dt.timedelta(hours=8))},
        "session_expired",
    ),
    "a_session_that_begins_later": (
        {"signature": _delegated(issued_at=NOW + dt.timedelta(hours=1))},
        "session_expired",
    ),
    "a_deactivated_actors_session": (
        {"actor": "carol", "signature": _delegated(actor="carol")},
        "actor_deactivated",
    ),
    "a_delegation_by_a_key_nobody_holds": (
        {"signature": _delegated(by=ActorKey.generate())},
        "actor_key_unknown",
    ),
}


@pytest.mark.parametrize(
    ("kwargs", "code"), list(_DELEGATION_REFUSALS.values()), ids=list(_DELEGATION_REFUSALS)
)
def test_each_session_refusal_has_its_code(shared: SharedStore, kwargs: dict[str, object], code: str) -> None:
    assert _authorize(shared, **kwargs) == (False, code)  # type: ignore[arg-type]


def test_a_delegated_proof_is_spent_once(shared: SharedStore) -> None:
    made = _delegated()
    assert _authorize(shared, signature=made, workflow_run_id="first") == (True, None)
    assert _authorize(shared, signature=made, workflow_run_id="second") == (False, "proof_replayed")


def test_a_standing_grant_holds_while_its_actor_is_registered_and_active_and_needs_no_proof(
    shared: SharedStore,
) -> None:
    config = ActivityConfig(database_url="sqlite://")
    activities = AuthorizationActivities(config, shared)

    def granted(actor: str) -> tuple[bool, str | None]:
        request = AuthorizeRequest(run_id=RUN_ID, action="create", actor=actor, standing_grant=True)
        result = ActivityEnvironment().run(activities.authorize_action, request)
        return result.allowed, result.code

    register_actor(shared.get(), "erin", "Erin Operator")
    assert granted("erin") == (True, None)
    assert granted("mallory") == (False, "unknown_actor")
    shared.get().deactivate_actor("erin", signer(ACTOR))
    assert granted("erin") == (False, "actor_deactivated")
    # Without the grant mode the same request needs a proof.
    assert _authorize(shared, actor=ACTOR, action="create") == (False, "proof_missing")
