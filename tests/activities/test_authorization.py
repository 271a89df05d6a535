"""The ``authorize_action`` activity: a registered human actor and a valid, fresh proof of the
deployment's action token for exactly this run, action, actor and digest; otherwise a refusal code
(returned, never raised, so the workflow can audit it). The token itself is never logged."""

from __future__ import annotations

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
) -> tuple[bool, str | None]:
    config = ActivityConfig(database_url="sqlite://", action_token=token)
    activities = AuthorizationActivities(config, shared)
    request = AuthorizeRequest(run_id=RUN_ID, action=action, actor=actor, digest=digest, proof=signature)
    result = ActivityEnvironment().run(activities.authorize_action, request)
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
