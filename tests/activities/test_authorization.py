"""The ``authorize_action`` activity: a registered human actor and a valid, fresh proof of the
deployment's action token for exactly this run, action, actor and digest, whose nonce no other
workflow execution has spent; otherwise a refusal code (returned, never raised, so the workflow can
audit it). The token itself is never logged."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.testing import ActivityEnvironment

from activities.authorization import AuthorizationActivities
from activities.config import ActivityConfig
from activities.store_access import SharedStore
from contracts.proofs import ActionProof
from contracts.runs import AuthorizeRequest
from tests.workflows.harness import ACTION_TOKEN, ACTOR, proof

RUN_ID = "SOR-0123456789ABCDEF"
OTHER_RUN = "SOR-FEDCBA9876543210"
DIGEST = "ab" * 32
NOW = dt.datetime.now(dt.UTC)


@pytest.fixture
def shared(tmp_path: Path) -> Iterator[SharedStore]:
    store = SharedStore(f"sqlite:///{tmp_path / 'state' / 'specialists.db'}")
    store.get().register_actor(ACTOR, "Alice Operator", None)
    yield store
    store.close()


def _authorize(
    shared: SharedStore,
    *,
    actor: str | None = ACTOR,
    signature: ActionProof | None = None,
    token: bytes | None = ACTION_TOKEN,
    action: str = "approve",
    digest: str = DIGEST,
    run_id: str = RUN_ID,
    workflow_run_id: str = "test-run",
    attempt: int = 1,
) -> tuple[bool, str | None]:
    config = ActivityConfig(database_url="sqlite://", action_token=token)
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
    "worker_without_token": ({"token": None}, "action_token_not_configured"),
    "no_proof": ({"signature": None}, "proof_missing"),
    "wrong_token": (
        {"signature": proof(RUN_ID, "approve", digest=DIGEST, token=b"not-the-deployment-token")},
        "proof_invalid",
    ),
    "another_run": ({"signature": proof(OTHER_RUN, "approve", digest=DIGEST)}, "proof_invalid"),
    "another_action": ({"signature": proof(RUN_ID, "cancel", digest=DIGEST)}, "proof_invalid"),
    "another_digest": ({"signature": proof(RUN_ID, "approve", digest="cd" * 32)}, "proof_invalid"),
    "another_actor": ({"signature": proof(RUN_ID, "approve", actor="bob", digest=DIGEST)}, "proof_invalid"),
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


def test_the_actor_is_checked_before_the_token_so_an_unregistered_actor_learns_nothing_about_it(
    shared: SharedStore,
) -> None:
    assert _authorize(shared, actor="mallory", token=None) == (False, "unknown_actor")


def test_the_decision_is_logged_without_the_token(
    shared: SharedStore, capsys: pytest.CaptureFixture[str]
) -> None:
    _authorize(shared, signature=proof(RUN_ID, "approve", digest=DIGEST))
    _authorize(shared, signature=proof(RUN_ID, "approve", digest=DIGEST, token=b"not-the-deployment-token"))
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


def test_a_refused_proof_spends_nothing(shared: SharedStore) -> None:
    # Only a proof that verified is spent: a refusal before that leaves the nonce for its real use.
    signature = proof(RUN_ID, "approve", digest=DIGEST)
    assert _authorize(shared, signature=signature, workflow_run_id=FIRST_EXECUTION, token=None) == (
        False,
        "action_token_not_configured",
    )
    assert _authorize(shared, signature=signature, workflow_run_id=SECOND_EXECUTION) == (True, None)


def test_the_replay_refusal_is_logged(shared: SharedStore, capsys: pytest.CaptureFixture[str]) -> None:
    signature = proof(RUN_ID, "approve", digest=DIGEST)
    _authorize(shared, signature=signature, workflow_run_id=FIRST_EXECUTION)
    _authorize(shared, signature=signature, workflow_run_id=SECOND_EXECUTION)
    captured = capsys.readouterr()
    assert "proof_replayed" in captured.out + captured.err
