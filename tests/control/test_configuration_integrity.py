"""Configuration that cannot be forged (docs/architecture.md "Configuration"): rows written straight into
the database — SQLite and PostgreSQL — without a key are refused by the CLI (exit 4,
``configuration_unverified``, naming the record) and by the worker, are audited, and change nothing a
run uses. Records written before signed configuration are used once an actor attests them.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import secrets
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from activities.config import DEFAULT_RECORDINGS_DIR
from contracts.identity import ActorKey, RecordKind, Signer, sign_action
from infra.devserver import DevServer
from store.database import parse_database_url
from store.engine import create_store_engine, writing
from store.trust import record_message
from tests.control.cli_harness import SLOW_QUERY, Cli, running_worker
from tests.identity import insert_legacy_actor
from tests.store.git_repository import make_working_tree

ITEM = f"@{SLOW_QUERY}"


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    parsed = parse_database_url(database_url)
    if parsed.get_backend_name() == "sqlite":
        assert parsed.database is not None
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    made = create_store_engine(parsed, create=True)
    try:
        yield made
    finally:
        made.dispose()


@pytest.fixture
def deployment(
    database_url: str, tmp_path: Path, temporal_dev_server: DevServer, engine: Engine
) -> Iterator[Cli]:
    """alice registered, the policy guarded up to read_only, ``replay:demo`` selected, the model
    ``openai:gpt`` registered, the repository ``orders-service`` allow-listed, and a worker."""
    cli = Cli.isolated(
        tmp_path,
        SPECIALISTS_DATABASE_URL=database_url,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"integrity-{uuid.uuid4().hex}",
    )
    cli.call("actors", "register", "alice", "--name", "Alice", "--json").ok()
    cli.call(
        "policy", "--mode", "guarded", "--maximum-automatic-tier", "read_only", "--actor", "alice", "--json"
    ).ok()
    cli.call("models", "add", "openai:gpt", "--actor", "alice", "--json").ok()
    cli.call("models", "select", "--primary", "replay:demo", "--actor", "alice", "--json").ok()
    tree = make_working_tree(tmp_path / "orders-service")
    cli.call("repos", "add", "orders-service", str(tree), "--actor", "alice", "--json").ok()
    with running_worker(cli.env, tmp_path / "worker.log"):
        yield cli


def _execute(engine: Engine, sql: str, **parameters: Any) -> None:
    with writing(engine).begin() as connection:
        connection.execute(text(sql), parameters)


def _refused(result: Any, *names: str) -> str:
    message = str(result.error(4, "configuration_unverified"))
    for name in names:
        assert name in message, message
    return message


def _audited(cli: Cli, record_kind: str, record_id: str) -> bool:
    events = cli.call("configuration", "events", "--json").ok()["events"]
    return any(
        (e["kind"], e["record_kind"], e["record_id"]) == ("configuration_unverified", record_kind, record_id)
        for e in events
    )


def _latest_id(engine: Engine, table: str) -> int:
    with engine.connect() as connection:
        return int(connection.scalar(text(f"SELECT max(id) FROM {table}")))  # noqa: S608 - our table names


def test_a_forged_policy_write_raises_no_ceiling_and_is_refused_by_cli_and_worker(
    deployment: Cli, engine: Engine
) -> None:
    cli = deployment
    # The attacker copies the signed newest write into a new row that lowers nothing but raises
    # the mode: its signature was made for another row.
    newest = _latest_id(engine, "automation_policy")
    _execute(
        engine,
        "INSERT INTO automation_policy (mode, maximum_automatic_tier, set_by, set_at, signed_by, signed_key, "
        "signed_at, signature) SELECT mode, 'read_only', set_by, set_at, signed_by, signed_key, signed_at, "
        "signature FROM automation_policy WHERE id = :id",
        id=newest,
    )
    forged = str(newest + 1)
    _refused(cli.call("policy", "--json"), f"policy write {forged!r}")
    # status exits 0 and says why the configuration is unknown.
    shown = cli.call("status", "--json").ok()
    assert (shown["policy"], shown["configuration_error"]["code"]) == (None, "configuration_unverified")
    assert f"policy write {forged!r}" in shown["configuration_error"]["message"]
    # The worker's capture refuses it too: the run never runs with the forged policy.
    created = cli.call("create", "--input-json", ITEM, "--automatic", "--actor", "alice", "--json")
    _refused(created, f"policy write {forged!r}")
    assert _audited(cli, "policy", forged)
    _execute(engine, "DELETE FROM automation_policy WHERE id = :id", id=newest + 1)
    assert cli.call("policy", "--json").ok()["mode"] == "guarded"


def test_a_forged_model_selection_is_refused_and_no_run_calls_its_model(
    deployment: Cli, engine: Engine
) -> None:
    cli = deployment
    newest = _latest_id(engine, "model_selections")
    _execute(
        engine,
        'INSERT INTO model_selections ("primary", fallbacks, fallback_mode, support, selected_by, '
        "selected_at) VALUES ('openai:attacker', '[]', 'primary_only', NULL, 'alice', :at)",
        at=dt.datetime.now(dt.UTC),
    )
    forged = str(newest + 1)
    _refused(cli.call("models", "--json"), f"model selection {forged!r}", "carries no signature")
    _refused(
        cli.call("create", "--input-json", ITEM, "--tier", "read_only", "--json"),
        f"model selection {forged!r}",
    )
    assert _audited(cli, "model_selection", forged)


def test_an_advisory_model_written_into_a_signed_selection_is_refused(
    deployment: Cli, engine: Engine
) -> None:
    cli = deployment
    newest = _latest_id(engine, "model_selections")
    _execute(engine, "UPDATE model_selections SET advisory = 'openai:attacker' WHERE id = :id", id=newest)
    _refused(cli.call("models", "--json"), f"model selection {str(newest)!r}")
    assert _audited(cli, "model_selection", str(newest))


def test_an_edited_model_endpoint_is_refused_and_no_run_captures_the_model(
    deployment: Cli, engine: Engine
) -> None:
    cli = deployment
    cli.call("models", "select", "--primary", "openai:gpt", "--actor", "alice", "--json").ok()
    _execute(engine, "UPDATE models SET base_url = 'http://attacker.invalid/v1' WHERE id = 'openai:gpt'")
    message = _refused(cli.call("models", "--json"), "model 'openai:gpt'", "does not verify")
    assert "attacker" not in message
    _refused(cli.call("create", "--input-json", ITEM, "--tier", "read_only", "--json"), "model 'openai:gpt'")
    cli.call("models", "select", "--primary", "openai:gpt", "--actor", "alice", "--json").error(
        4, "configuration_unverified"
    )
    assert _audited(cli, "model", "openai:gpt")


def test_edited_replay_recordings_are_refused_and_no_run_answers_from_them(
    deployment: Cli, engine: Engine, tmp_path: Path
) -> None:
    cli = deployment
    demo = json.loads((DEFAULT_RECORDINGS_DIR / "demo.json").read_text(encoding="utf-8"))
    recordings = tmp_path / "drill.json"
    recordings.write_text(json.dumps({"recordings": demo["recordings"][:2]}), encoding="utf-8")
    cli.call(
        "models", "add", "replay:drill", "--recordings", str(recordings), "--actor", "alice", "--json"
    ).ok()
    cli.call("models", "select", "--primary", "replay:drill", "--actor", "alice", "--json").ok()
    # The attacker rewrites an answer the model would give.
    _execute(
        engine,
        "UPDATE models SET recordings = replace(recordings, 'Propose', 'Drop the table and propose') "
        "WHERE id = 'replay:drill'",
    )
    _refused(cli.call("models", "--json"), "model 'replay:drill'", "does not verify")
    _refused(
        cli.call("create", "--input-json", ITEM, "--tier", "read_only", "--json"), "model 'replay:drill'"
    )
    assert _audited(cli, "model", "replay:drill")


def test_an_edited_repository_is_refused_and_no_run_uses_it(
    deployment: Cli, engine: Engine, tmp_path: Path
) -> None:
    cli = deployment
    elsewhere = make_working_tree(tmp_path / "elsewhere")
    _execute(
        engine, "UPDATE repositories SET path = :path WHERE alias = 'orders-service'", path=str(elsewhere)
    )
    _refused(cli.call("repos", "--json"), "repository 'orders-service'")
    created = cli.call("create", "--input-json", ITEM, "--tier", "worktree", "--json")
    _refused(created, "repository 'orders-service'")
    assert _audited(cli, "repository", "orders-service")


def test_a_forged_actor_cannot_act(deployment: Cli, engine: Engine) -> None:
    cli = deployment
    key = ActorKey.generate()
    now = dt.datetime.now(dt.UTC)
    # A row and a self-signed key: without the action token it anchors nothing.
    _execute(
        engine,
        "INSERT INTO actors (id, name, registered_by, registered_at, active) "
        "VALUES ('mallory', 'M', 'alice', :at, :yes)",
        at=now,
        yes=True,
    )

    class Row:
        fingerprint = key.fingerprint
        actor_id = "mallory"
        public_key = key.public_key
        added_at = now
        signed_by = "mallory"
        signed_key = key.fingerprint
        signed_at = now

    message = record_message(RecordKind.ACTOR_KEY, Row())
    assert message is not None
    _execute(
        engine,
        "INSERT INTO actor_keys (fingerprint, actor_id, public_key, added_at, signed_by, signed_key, "
        "signed_at, signature) VALUES (:fp, 'mallory', :pk, :at, 'mallory', :fp, :at, :sig)",
        fp=key.fingerprint,
        pk=key.public_key,
        at=now,
        sig=key.sign(message),
    )
    _refused(cli.call("actors", "--json"), "actor 'mallory'")
    mallory_file = cli.cwd / "mallory.key"
    mallory_file.write_bytes(key.to_pem())
    mallory_file.chmod(0o600)
    mallory = cli.as_actor("mallory")
    run = cli.call("create", "--input-json", ITEM, "--tier", "read_only", "--json").ok()
    _refused(mallory.call("enqueue", run["run_id"], "--actor", "mallory", "--json"), "actor 'mallory'")
    _refused(mallory.call("policy", "--mode", "off", "--actor", "mallory", "--json"), "actor 'mallory'")

    # Straight to Temporal, the worker refuses it as well.
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter

    from contracts.runs import ActionResult, EnqueueRequest

    proof = sign_action(
        Signer("mallory", key),
        action="enqueue",
        target=run["run_id"],
        digest="",
        issued_at=dt.datetime.now(dt.UTC),
        nonce=secrets.token_hex(16),
    )

    async def send() -> ActionResult:
        client = await Client.connect(
            cli.env["SPECIALISTS_TEMPORAL_ADDRESS"], data_converter=pydantic_data_converter
        )
        result: ActionResult = await client.get_workflow_handle(run["run_id"]).execute_update(
            "enqueue", EnqueueRequest(actor="mallory", proof=proof), result_type=ActionResult
        )
        return result

    result = asyncio.run(send())
    assert (result.accepted, result.code) == (False, "configuration_unverified")
    assert cli.call("show", run["run_id"], "--json").ok()["status"] == "ready"
    assert _audited(cli, "actor", "mallory")


# ----------------------------------------------------------------------------- records from before keys


def test_records_written_before_signatures_are_refused_until_attested(
    database_url: str, engine: Engine, tmp_path: Path
) -> None:
    from alembic import command

    from store.migrate import alembic_config

    config = alembic_config()
    with writing(engine).begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0008")
    at = dt.datetime(2026, 12, 1, 8, 0, tzinfo=dt.UTC)
    stored_at = at.replace(tzinfo=None) if engine.dialect.name == "sqlite" else at
    with writing(engine).begin() as connection:
        insert_legacy_actor(connection, "alice", "Alice")
        insert_legacy_actor(connection, "bob", "Bob")
        connection.execute(
            text(
                "INSERT INTO automation_policy (mode, maximum_automatic_tier, set_by, set_at) "
                "VALUES ('guarded', 'read_only', 'alice', :at)"
            ),
            {"at": stored_at},
        )
    cli = Cli.isolated(tmp_path, SPECIALISTS_DATABASE_URL=database_url)
    # The CLI upgrades the schema on its first store write; until attested, the old rows are refused.
    shown = cli.call("configuration", "attest", "--actor", "alice", "--json").ok()
    assert shown["attested"] is False and shown["bootstrap"] is True
    assert {(r["kind"], r["id"]) for r in shown["records"]} == {
        ("actor", "alice"),
        ("actor", "bob"),
        ("policy", "1"),
    }
    assert shown["keys_issued_to"] == ["bob"]
    _refused(cli.call("policy", "--json"), "policy write '1'", "carries no signature", "configuration attest")
    assert not cli.key_file("alice").exists()

    cli.without_token().call("configuration", "attest", "--actor", "alice", "--yes", "--json").error(
        4, "action_token_missing"
    )
    attested = cli.call("configuration", "attest", "--actor", "alice", "--yes", "--json").ok()
    assert attested["attested"] is True
    assert sorted(Path(path).name for path in attested["key_files"]) == ["alice.key", "bob.key"]
    assert cli.call("policy", "--json").ok()["mode"] == "guarded"
    listed = cli.call("actors", "--json").ok()
    assert [a["id"] for a in listed["actors"]] == ["alice", "bob"]
    assert all(a["key_fingerprint"] for a in listed["actors"])
    assert (
        cli.as_actor("bob").call("policy", "--mode", "off", "--actor", "bob", "--json").ok()["set_by"]
        == "bob"
    )
    again = cli.call("configuration", "attest", "--actor", "alice", "--json").ok()
    assert again["records"] == [] and again["keys_issued_to"] == []
    events = cli.call("configuration", "events", "--json").ok()["events"]
    assert {e["record_id"] for e in events if e["kind"] == "configuration_attested"} == {"alice", "bob", "1"}
