"""Per-person credentials (docs/architecture.md "Protected actions", "Configuration"): the first actor is
registered with the action token, every later one by an active actor; each holds its own key file
(private, written once); every protected command signs with the actor's key; alice's key cannot act
as bob; keys rotate and actors are deactivated; and neither the token nor a private key shows up in
output, history or the store.

Commands that must be refused before anything happens use fresh state directories (no server is
needed). Run actions use one worker process for the module (its own task queue and state directory,
``alice`` and ``bob`` registered, ``replay:demo`` selected), on the shared dev server.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import secrets
import stat
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contracts.identity import ActorKey, Signer, sign_action
from contracts.proofs import ActionProof
from infra.devserver import DevServer
from tests.control.cli_harness import (
    ACTION_TOKEN,
    KEY_ENV,
    KEY_FILE_ENV,
    ROOT,
    SLOW_QUERY,
    TOKEN_ENV,
    TOKEN_FILE_ENV,
    Cli,
    raw_history,
    running_worker,
    token_leaks,
    transcript_texts,
    wait_until,
)
from tests.store.git_repository import make_working_tree

ITEM = f"@{SLOW_QUERY}"
OTHER_TOKEN = "another-deployment-token-41c8e0"
"""A well-formed token that is not the test deployment's."""


def _configuration_changes(tree: Path) -> list[list[str]]:
    """One change of each kind of configuration (all protected)."""
    return [
        ["policy", "--mode", "guarded", "--actor", "alice"],
        ["models", "select", "--primary", "replay:demo", "--actor", "alice"],
        ["models", "add", "openai:x", "--actor", "alice"],
        ["repos", "add", "app", str(tree), "--actor", "alice"],
        ["actors", "register", "bob", "--name", "Bob", "--actor", "alice"],
    ]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_working_tree(tmp_path / "app")


def _configured(root: Path, **extra: str) -> Cli:
    """A deployment (with the test token) in which ``alice`` is registered: its key is ``root/alice.key``."""
    cli = Cli.isolated(root, **extra)
    cli.call("actors", "register", "alice", "--name", "Alice", "--json").ok()
    return cli


def _status(cli: Cli) -> dict[str, Any]:
    return cli.call("status", "--json").ok()


def _private_file(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def _key(path: Path) -> ActorKey:
    return ActorKey.from_pem(path.read_bytes())


# ------------------------------------------------------------------------------- the first actor


def test_the_first_actor_is_registered_with_the_token_and_gets_a_private_key_file(tmp_path: Path) -> None:
    cli = Cli.isolated(tmp_path)
    registered = cli.call("actors", "register", "alice", "--name", "Alice", "--json").ok()
    key_file = Path(registered["key_file"])
    assert key_file == cli.key_file("alice")
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = _key(key_file)
    assert registered["actor"]["key_fingerprint"] == key.fingerprint == registered["trust_root"]
    listed = cli.call("actors", "--json").ok()
    assert listed["trust_root"] == key.fingerprint
    assert [(a["id"], a["active"], a["key_fingerprint"]) for a in listed["actors"]] == [
        ("alice", True, key.fingerprint)
    ]


def test_the_first_actor_needs_the_action_token_and_nothing_is_created_without_it(tmp_path: Path) -> None:
    bare = Cli.isolated(tmp_path, token=None)
    message = bare.call("actors", "register", "alice", "--name", "Alice", "--json").error(
        4, "action_token_missing"
    )
    assert TOKEN_ENV in message
    assert not bare.state_dir.exists()
    assert not bare.key_file("alice").exists()


def test_a_key_file_is_never_overwritten(tmp_path: Path) -> None:
    cli = Cli.isolated(tmp_path)
    existing = _private_file(cli.key_file("alice"), "not a key\n")
    cli.call("actors", "register", "alice", "--name", "Alice", "--json").error(4, "key_file_exists")
    assert existing.read_text() == "not a key\n"
    assert not cli.state_dir.exists()
    chosen = tmp_path / "keys-alice.pem"
    registered = cli.call(
        "actors", "register", "alice", "--name", "Alice", "--key-file", str(chosen), "--json"
    )
    assert Path(registered.ok()["key_file"]) == chosen


def test_a_refused_registration_leaves_no_key_file(tmp_path: Path) -> None:
    cli = _configured(tmp_path)
    cli.call("actors", "register", "bob", "--name", "Bob", "--json").error(2, "actor_required")
    cli.call("actors", "register", "bob", "--name", "Bob", "--actor", "zed", "--json").error(
        3, "unknown_actor"
    )
    cli.call("actors", "register", "alice", "--name", "A", "--actor", "alice", "--json").error(
        4, "duplicate_actor"
    )
    assert not cli.key_file("bob").exists()
    assert [a["id"] for a in cli.call("actors", "--json").ok()["actors"]] == ["alice"]


# ------------------------------------------------------------------------------- configuration, no key


def test_configuration_change_without_a_key_creates_no_store(tmp_path: Path, tree: Path) -> None:
    bare = Cli.isolated(tmp_path).without_key()
    for args in _configuration_changes(tree):
        message = bare.call(*args, "--json").error(4, "actor_key_missing")
        assert KEY_FILE_ENV in message
        assert not bare.state_dir.exists(), args


def test_configuration_change_without_a_key_changes_nothing(tmp_path: Path, tree: Path) -> None:
    cli = _configured(tmp_path)
    before = _status(cli)
    for args in _configuration_changes(tree):
        cli.without_key().call(*args, "--json").error(4, "actor_key_missing")
    assert _status(cli) == before
    assert not cli.key_file("bob").exists()


def test_a_configuration_change_signed_with_another_actors_key_is_refused(tmp_path: Path, tree: Path) -> None:
    cli = _configured(tmp_path)
    cli.call("actors", "register", "bob", "--name", "Bob", "--actor", "alice", "--json").ok()
    before = _status(cli)
    for args in _configuration_changes(tree)[:-1]:
        message = cli.as_actor("bob").call(*args, "--json").error(4, "actor_key_mismatch")
        assert "belongs to 'bob'" in message
    assert _status(cli) == before


def test_a_create_that_names_its_creator_needs_their_key_though_the_tier_is_not_protected(
    tmp_path: Path,
) -> None:
    cli = _configured(tmp_path)
    cli.call("actors", "register", "bob", "--name", "Bob", "--actor", "alice", "--json").ok()
    item = json.dumps({"title": "Slow orders query", "description": "p95 went from 40 ms to 900 ms"})
    create = ("create", "--input-json", item, "--tier", "recommend", "--json")
    cli.without_key().call(*create, "--actor", "alice").error(4, "actor_key_missing")
    message = cli.call(*create, "--actor", "bob").error(4, "actor_key_mismatch")  # alice's key
    assert "is not the key of 'bob': it belongs to 'alice'" in message
    assert "set SPECIALISTS_ACTOR_KEY_FILE to the key file of 'bob'" in message
    cli.call(*create, "--actor", "zed").error(3, "unknown_actor")
    cli.call(*create, "--actor", " ").error(2, "actor_required")
    cli.call("actors", "deactivate", "bob", "--actor", "alice", "--json").ok()
    cli.as_actor("bob").call(*create, "--actor", "bob").error(4, "actor_deactivated")


def test_missing_key_without_json_is_one_line_on_stderr(tmp_path: Path) -> None:
    result = _configured(tmp_path).without_key().call("policy", "--mode", "off", "--actor", "alice")
    assert result.exit_code == 4, result
    assert result.stdout == ""
    assert result.stderr.startswith("error [actor_key_missing]: ")
    assert result.stderr.count("\n") == 1


# ------------------------------------------------------------------------------------- key file, format


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_key_file_readable_by_others_is_refused(tmp_path: Path, mode: int) -> None:
    cli = _configured(tmp_path)
    cli.key_file("alice").chmod(mode)
    message = cli.call("policy", "--mode", "off", "--actor", "alice", "--json").error(
        4, "actor_key_file_insecure"
    )
    assert "chmod 600" in message


def test_the_key_itself_in_the_variable_is_the_same_key_as_its_file(tmp_path: Path) -> None:
    cli = _configured(tmp_path)
    pem = cli.key_file("alice").read_text()
    inline = cli.without_key().with_env(**{KEY_ENV: pem})
    assert inline.call("policy", "--mode", "off", "--actor", "alice", "--json").ok()["set_by"] == "alice"


def test_both_key_variables_are_ambiguous(tmp_path: Path) -> None:
    cli = _configured(tmp_path)
    both = cli.with_env(**{KEY_ENV: cli.key_file("alice").read_text()})
    message = both.call("policy", "--mode", "off", "--actor", "alice", "--json").error(
        2, "actor_key_ambiguous"
    )
    assert KEY_ENV in message and KEY_FILE_ENV in message


@pytest.mark.parametrize("content", ["", "-----BEGIN PRIVATE KEY-----\nbroken\n-----END PRIVATE KEY-----\n"])
def test_a_key_file_that_holds_no_key_is_invalid(tmp_path: Path, content: str) -> None:
    cli = _configured(tmp_path)
    bad = _private_file(tmp_path / "bad.key", content)
    cli.with_env(**{KEY_FILE_ENV: str(bad)}).call(
        "policy", "--mode", "off", "--actor", "alice", "--json"
    ).error(2, "actor_key_invalid")


def test_a_missing_key_file_is_invalid(tmp_path: Path) -> None:
    cli = _configured(tmp_path)
    missing = cli.with_env(**{KEY_FILE_ENV: str(tmp_path / "no-such.key")})
    missing.call("policy", "--mode", "off", "--actor", "alice", "--json").error(2, "actor_key_invalid")


@pytest.mark.parametrize("mode", [0o644, 0o640])
def test_token_file_readable_by_others_is_refused(tmp_path: Path, mode: int) -> None:
    token_file = _private_file(tmp_path / "token", ACTION_TOKEN, mode)
    cli = Cli.isolated(tmp_path).with_token_file(token_file)
    message = cli.call("actors", "register", "alice", "--name", "Alice", "--json").error(
        4, "action_token_file_insecure"
    )
    assert "chmod 600" in message
    assert not cli.state_dir.exists()


def test_both_token_variables_are_ambiguous(tmp_path: Path) -> None:
    token_file = _private_file(tmp_path / "token", ACTION_TOKEN)
    both = Cli.isolated(tmp_path).with_env(**{TOKEN_FILE_ENV: str(token_file)})
    message = both.call("actors", "register", "alice", "--name", "Alice", "--json").error(
        2, "action_token_ambiguous"
    )
    assert TOKEN_ENV in message and TOKEN_FILE_ENV in message
    assert not both.state_dir.exists()


@pytest.mark.parametrize("token", ["short-token-15c", "x", "   padded-12   "])
def test_short_token_is_invalid(tmp_path: Path, token: str) -> None:
    cli = Cli.isolated(tmp_path, token=token)
    message = cli.call("actors", "register", "alice", "--name", "Alice", "--json").error(
        2, "action_token_invalid"
    )
    assert "16" in message and token.strip() not in message
    assert not cli.state_dir.exists()


# ------------------------------------------------------------------------------------- the trust anchor


def test_reading_configuration_needs_a_trust_anchor(tmp_path: Path, tree: Path) -> None:
    cli = _configured(tmp_path)
    for args in _configuration_changes(tree):
        cli.call(*args, "--json").ok()
    root = cli.call("actors", "--json").ok()["trust_root"]
    bare = cli.without_token()
    for args in (["policy"], ["models"], ["repos"], ["actors"]):
        bare.call(*args, "--json").error(4, "trust_root_not_configured")
    bare.call("list", "--json").ok()  # the run projection is no configuration
    # status reports the rest and why the configuration is unknown (tests/control/test_cli_status.py)
    assert bare.call("status", "--json").ok()["configuration_error"]["code"] == "trust_root_not_configured"
    pinned = bare.with_env(SPECIALISTS_TRUST_ROOT=root)
    for args in (["status"], ["policy"], ["models"], ["repos"], ["actors"]):
        pinned.call(*args, "--json").ok()
    # Pinned, alice changes configuration without the token.
    assert pinned.call("policy", "--mode", "off", "--actor", "alice", "--json").ok()["mode"] == "off"
    bare.with_env(SPECIALISTS_TRUST_ROOT="0" * 64).call("actors", "--json").error(
        4, "configuration_unverified"
    )
    bare.with_env(SPECIALISTS_TRUST_ROOT="not-a-fingerprint").call("actors", "--json").error(
        2, "invalid_setting"
    )


def test_another_deployments_token_verifies_nothing_here(tmp_path: Path, tree: Path) -> None:
    cli = _configured(tmp_path)
    before = _status(cli)
    other = cli.with_token(OTHER_TOKEN)
    shown = other.call("status", "--json").ok()  # status reports why, and exits 0
    assert (shown["actors"], shown["configuration_error"]["code"]) == (None, "configuration_unverified")
    for args in _configuration_changes(tree):
        message = other.call(*args, "--json").error(4, "configuration_unverified")
        assert OTHER_TOKEN not in message and ACTION_TOKEN not in message
    assert _status(cli) == before


def test_another_deployment_has_its_own_root(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first = _configured(tmp_path / "one")
    second = Cli.isolated(tmp_path / "two", token=OTHER_TOKEN)
    second.call("actors", "register", "alice", "--name", "Alice", "--json").ok()
    second.call("policy", "--mode", "off", "--actor", "alice", "--json").ok()
    first.call("policy", "--mode", "off", "--actor", "alice", "--json").ok()
    # One deployment's alice is not the other's.
    first.with_env(**{KEY_FILE_ENV: str(second.key_file("alice"))}).call(
        "policy", "--mode", "guarded", "--actor", "alice", "--json"
    ).error(4, "actor_key_mismatch")


# ------------------------------------------------------------------------------ deactivation, rotation


def test_a_deactivated_actor_is_listed_as_such_and_can_change_nothing(tmp_path: Path, tree: Path) -> None:
    cli = _configured(tmp_path)
    cli.call("actors", "register", "bob", "--name", "Bob", "--actor", "alice", "--json").ok()
    bob = cli.as_actor("bob")
    bob.call("policy", "--mode", "off", "--actor", "bob", "--json").ok()
    deactivated = cli.call("actors", "deactivate", "bob", "--actor", "alice", "--json").ok()["actor"]
    assert (deactivated["active"], deactivated["deactivated_by"]) == (False, "alice")
    listed = {a["id"]: a for a in cli.call("actors", "--json").ok()["actors"]}
    assert (listed["bob"]["active"], listed["alice"]["active"]) == (False, True)
    assert "deactivated by alice" in cli.call("actors").stdout
    bob.call("policy", "--mode", "guarded", "--actor", "bob", "--json").error(4, "actor_deactivated")
    # What bob set before stays in force.
    assert cli.call("policy", "--json").ok()["set_by"] == "bob"
    cli.call("actors", "deactivate", "bob", "--actor", "alice", "--json").error(4, "actor_deactivated")
    cli.call("actors", "deactivate", "alice", "--actor", "alice", "--json").error(4, "last_active_actor")
    cli.call("actors", "deactivate", "nobody", "--actor", "alice", "--json").error(3, "unknown_actor")
    events = cli.call("configuration", "events", "--json").ok()["events"]
    assert [(e["kind"], e["actor"], e["record_id"]) for e in events if e["kind"] == "actor_deactivated"] == [
        ("actor_deactivated", "alice", "bob")
    ]


def test_rotating_a_key_writes_the_new_key_and_retires_the_old(tmp_path: Path) -> None:
    cli = _configured(tmp_path)
    old = _key(cli.key_file("alice"))
    new_file = tmp_path / "alice-2.key"
    rotated = cli.call("actors", "rotate-key", "--actor", "alice", "--key-file", str(new_file), "--json").ok()
    assert stat.S_IMODE(new_file.stat().st_mode) == 0o600
    new = _key(new_file)
    actor = rotated["actor"]
    assert actor["key_fingerprint"] == new.fingerprint
    assert [(k["fingerprint"], k["retired_at"] is None) for k in actor["keys"]] == [
        (old.fingerprint, False),
        (new.fingerprint, True),
    ]
    cli.call("policy", "--mode", "off", "--actor", "alice", "--json").error(4, "actor_key_retired")
    with_new = cli.with_env(**{KEY_FILE_ENV: str(new_file)})
    assert with_new.call("policy", "--mode", "off", "--actor", "alice", "--json").ok()["set_by"] == "alice"
    # The trust root is still the first key: what was signed before the rotation stays verified.
    assert with_new.call("actors", "--json").ok()["trust_root"] == old.fingerprint
    cli.call("actors", "rotate-key", "--actor", "alice", "--key-file", str(new_file), "--json").error(
        4, "key_file_exists"
    )


# ----------------------------------------------------------------------------- run actions (a worker)


@pytest.fixture(scope="module")
def deployment(temporal_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """A deployment with the test token, ``alice`` and ``bob`` registered, ``replay:demo`` selected, a
    worker."""
    root = tmp_path_factory.mktemp("cli-identity")
    cli = _configured(
        root,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"cli-identity-{uuid.uuid4().hex}",
    )
    cli.call("actors", "register", "bob", "--name", "Bob", "--actor", "alice", "--json").ok()
    cli.call("models", "select", "--primary", "replay:demo", "--actor", "alice", "--json").ok()
    with running_worker(cli.env, root / "worker.log"):
        yield cli


def _ready(cli: Cli) -> str:
    """A new ``ready`` read_only run (a plain create is not protected)."""
    run = cli.without_key().call("create", "--input-json", ITEM, "--tier", "read_only", "--json").ok()
    assert run["status"] == "ready"
    return str(run["run_id"])


def _show(cli: Cli, run_id: str) -> dict[str, Any]:
    return cli.call("show", run_id, "--json").ok()


def _run_id_for(request_id: str) -> str:
    return "SOR-" + hashlib.sha256(request_id.encode()).hexdigest()[:16].upper()


def _signed(key: ActorKey, actor: str, run_id: str, action: str, digest: str = "") -> ActionProof:
    return sign_action(
        Signer(actor, key),
        action=action,
        target=run_id,
        digest=digest,
        issued_at=dt.datetime.now(dt.UTC),
        nonce=secrets.token_hex(16),
    )


def _enqueue_directly(cli: Cli, run_id: str, actor: str, proof: ActionProof) -> Any:
    """Send ``enqueue`` straight to Temporal, as someone bypassing the CLI's own checks would."""
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter

    from contracts.runs import ActionResult, EnqueueRequest

    async def send() -> ActionResult:
        client = await Client.connect(
            cli.env["SPECIALISTS_TEMPORAL_ADDRESS"], data_converter=pydantic_data_converter
        )
        handle = client.get_workflow_handle(run_id)
        result: ActionResult = await handle.execute_update(
            "enqueue", EnqueueRequest(actor=actor, proof=proof), result_type=ActionResult
        )
        return result

    return asyncio.run(send())


@pytest.mark.parametrize(
    "args",
    [
        ["enqueue", "{run}", "--actor", "alice"],
        ["decide", "{run}", "--actor", "alice", "--accept"],
        ["cancel", "{run}", "--actor", "alice"],
        ["approve", "{run}", "--actor", "alice", "--contract-sha256", "{digest}"],
        ["execute", "{run}", "--actor", "alice"],
    ],
    ids=lambda args: args[0],
)
def test_run_action_without_a_key_is_refused_and_changes_nothing(deployment: Cli, args: list[str]) -> None:
    run_id = _ready(deployment)
    before = _show(deployment, run_id)
    filled = [arg.format(run=run_id, digest=before["contract_sha256"]) for arg in args]
    assert KEY_FILE_ENV in deployment.without_key().call(*filled, "--json").error(4, "actor_key_missing")
    after = _show(deployment, run_id)
    assert (after["status"], after["audit"]) == ("ready", before["audit"])


@pytest.mark.parametrize(
    "flags", [["--tier", "read_only", "--enqueue"], ["--automatic"]], ids=["enqueue", "automatic"]
)
def test_protected_create_without_a_key_starts_nothing(deployment: Cli, flags: list[str]) -> None:
    request_id = f"no-key-{uuid.uuid4().hex}"
    created = deployment.without_key().call(
        "create", "--input-json", ITEM, *flags, "--actor", "alice", "--request-id", request_id, "--json"
    )
    created.error(4, "actor_key_missing")
    deployment.call("show", _run_id_for(request_id), "--json").error(3, "unknown_run")


def test_alices_key_cannot_act_as_bob(deployment: Cli) -> None:
    run_id = _ready(deployment)
    before = _show(deployment, run_id)

    # The CLI refuses it before sending anything.
    refused = deployment.call("enqueue", run_id, "--actor", "bob", "--json")
    assert "belongs to 'alice'" in refused.error(4, "actor_key_mismatch")
    assert _show(deployment, run_id)["audit"] == before["audit"]

    # Sent straight to Temporal, the worker refuses it and audits the refusal.
    alice_key = _key(deployment.key_file("alice"))
    result = _enqueue_directly(deployment, run_id, "bob", _signed(alice_key, "bob", run_id, "enqueue"))
    assert (result.accepted, result.code) == (False, "proof_invalid")
    after = _show(deployment, run_id)
    assert after["status"] == "ready"
    new_events = after["audit"][len(before["audit"]) :]
    assert [(e["kind"], e["actor"], e["data"]["code"]) for e in new_events] == [
        ("action_refused", "bob", "proof_invalid")
    ]
    # A key no actor holds, and a proof of the shared token, are refused too.
    stranger = _enqueue_directly(
        deployment, run_id, "bob", _signed(ActorKey.generate(), "bob", run_id, "enqueue")
    )
    assert (stranger.accepted, stranger.code) == (False, "actor_key_unknown")

    # Bob's own key does enqueue it.
    assert (
        deployment.as_actor("bob").call("enqueue", run_id, "--actor", "bob", "--json").ok()["status"]
        != "ready"
    )
    deployment.as_actor("bob").call("cancel", run_id, "--actor", "bob", "--json").ok()


def test_a_create_signed_with_another_actors_key_ends_failed_without_running(deployment: Cli) -> None:
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter

    from contracts.enums import Tier
    from contracts.ids import run_id_for_request
    from contracts.runs import RunInput
    from contracts.work_item import WorkItem
    from control.runs import create_run, request_digest

    request_id = f"forged-create-{uuid.uuid4().hex}"
    item = WorkItem.model_validate_json(SLOW_QUERY.read_text(encoding="utf-8"))
    draft = RunInput(
        run_id=run_id_for_request(request_id),
        work_item=item,
        requested_tier=Tier.READ_ONLY,
        automatic=False,
        enqueue=True,
        request_id=request_id,
        request_digest="",
        created_by="alice",
    )
    inp = draft.model_copy(update={"request_digest": request_digest(draft)})
    bob_key = _key(deployment.key_file("bob"))
    inp = inp.model_copy(
        update={"proof": _signed(bob_key, "alice", inp.run_id, "create", inp.request_digest)}
    )

    async def go() -> None:
        client = await Client.connect(
            deployment.env["SPECIALISTS_TEMPORAL_ADDRESS"], data_converter=pydantic_data_converter
        )
        await create_run(client, inp, task_queue=deployment.env["SPECIALISTS_TASK_QUEUE"])

    asyncio.run(go())
    run = wait_until(lambda: (shown := _show(deployment, inp.run_id))["status"] == "failed" and shown)
    assert run["error"]["type"] == "proof_invalid"
    assert (run["contract"], run["result"]) == (None, None)


def test_an_actor_deactivated_after_approving_leaves_the_approval_standing(
    deployment: Cli, tmp_path: Path
) -> None:
    cli = deployment
    cli.call("actors", "register", "carol", "--name", "Carol", "--actor", "alice", "--json").ok()
    carol = cli.as_actor("carol")
    created = carol.call(
        "create",
        "--input-json",
        ITEM,
        "--tier",
        "read_only",
        "--enqueue",
        "--actor",
        "carol",
        "--wait",
        "--json",
    ).ok()
    assert created["status"] == "awaiting_decision"
    cli.call("actors", "deactivate", "carol", "--actor", "alice", "--json").ok()
    # Her accepted action stands; her new ones are refused, locally and by the worker.
    decide = ("decide", created["run_id"], "--actor", "carol", "--accept", "--json")
    carol.call(*decide).error(4, "actor_deactivated")
    carol_key = _key(cli.key_file("carol"))
    ready = _ready(cli)
    direct = _enqueue_directly(cli, ready, "carol", _signed(carol_key, "carol", ready, "enqueue"))
    assert (direct.accepted, direct.code) == (False, "actor_deactivated")
    shown = _show(cli, created["run_id"])
    assert shown["audit"][0]["actor"] == "carol" and shown["status"] == "awaiting_decision"
    assert (
        cli.call("decide", created["run_id"], "--actor", "alice", "--accept", "--json").ok()["status"]
        == "accepted"
    )


def test_a_rotated_out_key_is_refused_by_the_worker(deployment: Cli, tmp_path: Path) -> None:
    cli = deployment
    cli.call("actors", "register", "dave", "--name", "Dave", "--actor", "alice", "--json").ok()
    old = _key(cli.key_file("dave"))
    new_file = cli.cwd / f"dave-{uuid.uuid4().hex[:8]}.key"
    cli.as_actor("dave").call(
        "actors", "rotate-key", "--actor", "dave", "--key-file", str(new_file), "--json"
    ).ok()
    run_id = _ready(cli)
    retired = _enqueue_directly(cli, run_id, "dave", _signed(old, "dave", run_id, "enqueue"))
    assert (retired.accepted, retired.code) == (False, "actor_key_retired")
    dave = cli.with_env(**{KEY_FILE_ENV: str(new_file)})
    assert dave.call("enqueue", run_id, "--actor", "dave", "--json").ok()["status"] != "ready"
    dave.call("cancel", run_id, "--actor", "dave", "--json").ok()


def test_a_worker_pinning_the_trust_root_works_without_the_token(
    temporal_dev_server: DevServer, tmp_path: Path
) -> None:
    cli = _configured(
        tmp_path,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"cli-identity-pinned-{uuid.uuid4().hex}",
    )
    cli.call("models", "select", "--primary", "replay:demo", "--actor", "alice", "--json").ok()
    root = cli.call("actors", "--json").ok()["trust_root"]
    pinned = cli.without_token().with_env(SPECIALISTS_TRUST_ROOT=root)
    with running_worker(pinned.env, tmp_path / "worker.log"):
        run_id = _ready(pinned)
        assert pinned.call("enqueue", run_id, "--actor", "alice", "--json").ok()["status"] != "ready"
        pinned.call("cancel", run_id, "--actor", "alice", "--json").ok()


def test_a_worker_without_a_trust_anchor_refuses_every_protected_action(
    temporal_dev_server: DevServer, tmp_path: Path
) -> None:
    cli = _configured(
        tmp_path,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"cli-identity-none-{uuid.uuid4().hex}",
    )
    cli.call("models", "select", "--primary", "replay:demo", "--actor", "alice", "--json").ok()
    log = tmp_path / "worker.log"
    with running_worker(cli.without_token().env, log):
        assert "SPECIALISTS_TRUST_ROOT" in log.read_text()
        created = cli.call("create", "--input-json", ITEM, "--tier", "read_only", "--json")
        # The worker cannot even verify the configuration a contract is captured from.
        assert created.error(4, "trust_root_not_configured")


def test_worker_refuses_to_start_with_an_insecure_token_file(tmp_path: Path) -> None:
    token_file = _private_file(tmp_path / "token", ACTION_TOKEN, 0o644)
    env = Cli.isolated(tmp_path).with_token_file(token_file).env
    completed = subprocess.run(
        [sys.executable, "-m", "worker"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 4, completed
    assert "[action_token_file_insecure]" in completed.stderr
    assert ACTION_TOKEN not in completed.stdout + completed.stderr


# ------------------------------------------------------------------------------------------------ secrets


def test_no_token_and_no_private_key_anywhere(deployment: Cli) -> None:
    """Neither the deployment's token nor any private key is printed, stored, logged or in history."""
    run_id = deployment.call(
        "create",
        "--input-json",
        ITEM,
        "--tier",
        "read_only",
        "--enqueue",
        "--actor",
        "alice",
        "--wait",
        "--json",
    ).ok()["run_id"]
    deployment.as_actor("bob").call("decide", run_id, "--actor", "alice", "--reject", "--json")
    deployment.call("decide", run_id, "--actor", "alice", "--reject", "--json").ok()
    projected = wait_until(
        lambda: any(
            r["run_id"] == run_id and r["status"] == "rejected"
            for r in deployment.call("list", "--json").ok()["runs"]
        )
    )
    assert projected

    run_ids = [r["run_id"] for r in deployment.call("list", "--limit", "1000", "--json").ok()["runs"]]
    histories = [deployment.call("show", r, "--history", "--json").ok() for r in run_ids]
    address = deployment.env["SPECIALISTS_TEMPORAL_ADDRESS"]
    blobs = [raw_history(address, r) for r in run_ids]
    private_keys = []
    for key_file in deployment.cwd.glob("*.key"):
        pem = key_file.read_text()
        body = "".join(line for line in pem.splitlines() if not line.startswith("-----"))
        private_keys.append(body)
    assert private_keys
    # The places searched hold plain text: what is not found there is not there.
    assert token_leaks(["alice"], blobs=blobs)
    assert token_leaks([run_id], files=[deployment.state_dir])
    leaks = token_leaks(
        [ACTION_TOKEN, *private_keys],
        texts=[*transcript_texts(deployment), *(json.dumps(h) for h in histories)],
        files=[deployment.state_dir, deployment.cwd / "worker.log"],
        blobs=blobs,
    )
    assert leaks == []
    assert len(run_ids) >= 5
