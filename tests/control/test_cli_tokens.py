"""The action token (docs/architecture.md "Configuration", "Protected actions"): every protected command needs
it, a token file must be private, configuration changes need the token the deployment adopted, a worker
refuses proofs made with another token, and the token never shows up in output, history or the store.

Commands that must be refused before anything happens use fresh state directories (no server is
needed). Run actions use one worker process for the module (its own task queue and state directory,
``alice`` registered, ``replay:demo`` selected, the test token), on the shared dev server.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.devserver import DevServer
from tests.control.cli_harness import (
    ACTION_TOKEN,
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
MISSING_TOKEN_HINT = "SPECIALISTS_ACTION_TOKEN"


def _configuration_changes(tree: Path) -> list[list[str]]:
    """One change of each kind of configuration (all protected)."""
    return [
        ["policy", "--mode", "guarded", "--actor", "alice"],
        ["models", "select", "--primary", "replay:demo", "--actor", "alice"],
        ["repos", "add", "app", str(tree), "--actor", "alice"],
        ["actors", "register", "bob", "--name", "Bob", "--actor", "alice"],
    ]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_working_tree(tmp_path / "app")


def _configured(root: Path, **extra: str) -> Cli:
    """A deployment (with the test token) in which ``alice`` is registered."""
    cli = Cli.isolated(root, **extra)
    cli.call("actors", "register", "alice", "--name", "Alice", "--json").ok()
    return cli


def _status(cli: Cli) -> dict[str, Any]:
    return cli.call("status", "--json").ok()


def _private_file(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


# ------------------------------------------------------------------------------ configuration, no token


def test_configuration_change_without_a_token_creates_no_store(tmp_path: Path, tree: Path) -> None:
    bare = Cli.isolated(tmp_path, token=None)
    first_actor = ["actors", "register", "alice", "--name", "Alice"]
    for args in [first_actor, *_configuration_changes(tree)]:
        message = bare.call(*args, "--json").error(4, "action_token_missing")
        assert MISSING_TOKEN_HINT in message
        assert not bare.state_dir.exists(), args


def test_configuration_change_without_a_token_changes_nothing(tmp_path: Path, tree: Path) -> None:
    cli = _configured(tmp_path)
    before = _status(cli)
    bare = cli.without_token()
    for args in _configuration_changes(tree):
        bare.call(*args, "--json").error(4, "action_token_missing")
    assert _status(cli) == before
    assert cli.call("repos", "--json").ok() == {"repositories": []}


def test_missing_token_without_json_is_one_line_on_stderr(tmp_path: Path) -> None:
    result = Cli.isolated(tmp_path, token=None).call("actors", "register", "alice", "--name", "Alice")
    assert result.exit_code == 4, result
    assert result.stdout == ""
    assert result.stderr.startswith("error [action_token_missing]: ")
    assert result.stderr.count("\n") == 1


def test_reading_configuration_needs_no_token(tmp_path: Path) -> None:
    cli = _configured(tmp_path)
    bare = cli.without_token()
    for args in (["status"], ["policy"], ["models"], ["repos"], ["actors"], ["list"]):
        bare.call(*args, "--json").ok()
    assert [a["id"] for a in bare.call("actors", "--json").ok()["actors"]] == ["alice"]


# ------------------------------------------------------------------------------------ token file, format


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_token_file_readable_by_others_is_refused(tmp_path: Path, mode: int) -> None:
    token_file = _private_file(tmp_path / "token", ACTION_TOKEN, mode)
    cli = Cli.isolated(tmp_path).with_token_file(token_file)

    message = cli.call("actors", "register", "alice", "--name", "Alice", "--json").error(
        4, "action_token_file_insecure"
    )
    assert "chmod 600" in message
    assert not cli.state_dir.exists()


def test_private_token_file_is_the_same_token_as_the_variable(tmp_path: Path) -> None:
    # A trailing newline (as `echo TOKEN > file` writes) is not part of the token.
    token_file = _private_file(tmp_path / "token", ACTION_TOKEN + "\n")
    from_file = Cli.isolated(tmp_path).with_token_file(token_file)

    from_file.call("actors", "register", "alice", "--name", "Alice", "--json").ok()
    # The deployment adopted the file's token; the same token from the variable is accepted.
    from_env = from_file.with_token(ACTION_TOKEN)
    from_env.call("policy", "--mode", "off", "--actor", "alice", "--json").ok()
    from_file.call("models", "select", "--primary", "replay:demo", "--actor", "alice", "--json").ok()
    assert _status(from_file)["policy"]["mode"] == "off"


def test_owner_only_file_with_mode_0400_is_accepted(tmp_path: Path) -> None:
    token_file = _private_file(tmp_path / "token", ACTION_TOKEN, 0o400)
    cli = Cli.isolated(tmp_path).with_token_file(token_file)
    cli.call("actors", "register", "alice", "--name", "Alice", "--json").ok()


def test_both_token_variables_are_ambiguous(tmp_path: Path) -> None:
    token_file = _private_file(tmp_path / "token", ACTION_TOKEN)
    both = Cli.isolated(tmp_path).with_env(**{TOKEN_FILE_ENV: str(token_file)})
    assert both.env[TOKEN_ENV] == ACTION_TOKEN

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
    assert "16" in message
    assert token.strip() not in message
    assert not cli.state_dir.exists()


def test_token_of_sixteen_characters_is_enough(tmp_path: Path) -> None:
    cli = Cli.isolated(tmp_path, token="0123456789abcdef")
    cli.call("actors", "register", "alice", "--name", "Alice", "--json").ok()


@pytest.mark.parametrize("content", ["", "short\n"])
def test_short_token_file_is_invalid(tmp_path: Path, content: str) -> None:
    cli = Cli.isolated(tmp_path).with_token_file(_private_file(tmp_path / "token", content))
    cli.call("actors", "register", "alice", "--name", "Alice", "--json").error(2, "action_token_invalid")
    assert not cli.state_dir.exists()


def test_missing_token_file_is_invalid(tmp_path: Path) -> None:
    cli = Cli.isolated(tmp_path).with_token_file(tmp_path / "no-such-token")
    cli.call("actors", "register", "alice", "--name", "Alice", "--json").error(2, "action_token_invalid")
    assert not cli.state_dir.exists()


# ------------------------------------------------------------------------------- the adopted token


def test_first_configuration_change_adopts_the_token(tmp_path: Path, tree: Path) -> None:
    cli = _configured(tmp_path)  # adopted ACTION_TOKEN
    before = _status(cli)
    other = cli.with_token(OTHER_TOKEN)

    for args in _configuration_changes(tree):
        message = other.call(*args, "--json").error(4, "action_token_mismatch")
        assert OTHER_TOKEN not in message and ACTION_TOKEN not in message

    assert _status(cli) == before
    # The adopted token still works.
    cli.call("policy", "--mode", "guarded", "--actor", "alice", "--json").ok()


def test_another_deployment_adopts_its_own_token(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first = _configured(tmp_path / "one")
    second = Cli.isolated(tmp_path / "two", token=OTHER_TOKEN)
    second.call("actors", "register", "alice", "--name", "Alice", "--json").ok()
    second.call("policy", "--mode", "off", "--actor", "alice", "--json").ok()
    first.call("policy", "--mode", "off", "--actor", "alice", "--json").ok()


def test_the_store_keeps_no_token(tmp_path: Path, tree: Path) -> None:
    cli = _configured(tmp_path)
    for args in _configuration_changes(tree):
        cli.call(*args, "--json").ok()
    cli.with_token(OTHER_TOKEN).call("policy", "--mode", "off", "--actor", "alice", "--json")
    assert token_leaks([ACTION_TOKEN, OTHER_TOKEN], files=[cli.state_dir], texts=transcript_texts(cli)) == []


# ---------------------------------------------------------------------------- run actions (a worker)


@pytest.fixture(scope="module")
def deployment(temporal_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """A deployment with the test token, ``alice`` registered, ``replay:demo`` selected, a worker."""
    root = tmp_path_factory.mktemp("cli-tokens")
    cli = _configured(
        root,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"cli-tokens-{uuid.uuid4().hex}",
    )
    cli.call("models", "select", "--primary", "replay:demo", "--actor", "alice", "--json").ok()
    with running_worker(cli.env, root / "worker.log"):
        yield cli


@pytest.fixture(scope="module")
def ready_run(deployment: Cli) -> str:
    """A ``ready`` read_only run, created without a token (a plain create is not protected)."""
    created = deployment.without_token().call("create", "--input-json", ITEM, "--tier", "read_only", "--json")
    run = created.ok()
    assert run["status"] == "ready"
    return str(run["run_id"])


def _show(cli: Cli, run_id: str) -> dict[str, Any]:
    return cli.call("show", run_id, "--json").ok()


def _run_id_for(request_id: str) -> str:
    return "SOR-" + hashlib.sha256(request_id.encode()).hexdigest()[:16].upper()


@pytest.mark.parametrize(
    "flags", [["--tier", "read_only", "--enqueue"], ["--automatic"]], ids=["enqueue", "automatic"]
)
def test_protected_create_without_a_token_starts_nothing(deployment: Cli, flags: list[str]) -> None:
    request_id = f"no-token-{uuid.uuid4().hex}"
    bare = deployment.without_token()
    created = bare.call(
        "create", "--input-json", ITEM, *flags, "--actor", "alice", "--request-id", request_id, "--json"
    )
    assert MISSING_TOKEN_HINT in created.error(4, "action_token_missing")
    deployment.call("show", _run_id_for(request_id), "--json").error(3, "unknown_run")


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
def test_run_action_without_a_token_is_refused_and_changes_nothing(
    deployment: Cli, ready_run: str, args: list[str]
) -> None:
    before = _show(deployment, ready_run)
    filled = [arg.format(run=ready_run, digest=before["contract_sha256"]) for arg in args]

    result = deployment.without_token().call(*filled, "--json")

    assert MISSING_TOKEN_HINT in result.error(4, "action_token_missing")
    after = _show(deployment, ready_run)
    assert (after["status"], after["audit"]) == ("ready", before["audit"])


def test_enqueue_with_another_token_is_refused_by_the_worker(deployment: Cli) -> None:
    run_id = deployment.call("create", "--input-json", ITEM, "--tier", "read_only", "--json").ok()["run_id"]
    before = _show(deployment, run_id)

    refused = deployment.with_token(OTHER_TOKEN).call("enqueue", run_id, "--actor", "alice", "--json")

    refused.error(4, "proof_invalid")
    after = _show(deployment, run_id)
    assert after["status"] == "ready"
    assert after["audit"][: len(before["audit"])] == before["audit"]
    new_events = after["audit"][len(before["audit"]) :]
    assert [(e["kind"], e["actor"]) for e in new_events] == [("action_refused", "alice")]
    assert new_events[0]["data"]["action"] == "enqueue"
    assert new_events[0]["data"]["code"] == "proof_invalid"

    # The refusal spends nothing: the deployment's token still enqueues the run.
    assert deployment.call("enqueue", run_id, "--actor", "alice", "--json").ok()["status"] != "ready"
    deployment.call("cancel", run_id, "--actor", "alice", "--json").ok()


def test_decide_needs_the_deployments_token(deployment: Cli) -> None:
    created = deployment.call(
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
    ).ok()
    run_id = created["run_id"]
    assert created["status"] == "awaiting_decision"
    assert created["audit"][0]["actor"] == "alice"

    decide = ("decide", run_id, "--actor", "alice", "--accept", "--json")
    deployment.without_token().call(*decide).error(4, "action_token_missing")
    deployment.with_token(OTHER_TOKEN).call(*decide).error(4, "proof_invalid")
    shown = _show(deployment, run_id)
    assert (shown["status"], shown["decision"]) == ("awaiting_decision", None)
    assert shown["audit"][-1]["kind"] == "action_refused"
    assert shown["audit"][-1]["data"]["action"] == "decide"

    assert deployment.call(*decide).ok()["status"] == "accepted"


def test_create_with_another_token_is_refused_and_the_run_ends_failed_without_running(
    deployment: Cli,
) -> None:
    request_id = f"refused-create-{uuid.uuid4().hex}"
    run_id = "SOR-" + hashlib.sha256(request_id.encode()).hexdigest()[:16].upper()
    deployment.with_token(OTHER_TOKEN).call(
        "create",
        "--input-json",
        ITEM,
        "--tier",
        "read_only",
        "--enqueue",
        "--actor",
        "alice",
        "--request-id",
        request_id,
        "--json",
    ).error(4, "proof_invalid")
    run = _show(deployment, run_id)
    assert run["status"] == "failed"
    assert run["error"]["type"] == "proof_invalid"
    assert (run["contract"], run["result"]) == (None, None)
    refusals = [e for e in run["audit"] if e["kind"] == "action_refused"]
    assert [(e["actor"], e["data"]["action"], e["data"]["code"]) for e in refusals] == [
        ("alice", "create", "proof_invalid")
    ]


def test_cancel_with_another_token_is_refused_by_the_worker(deployment: Cli) -> None:
    run_id = deployment.call("create", "--input-json", ITEM, "--tier", "read_only", "--json").ok()["run_id"]

    refused = deployment.with_token(OTHER_TOKEN).call("cancel", run_id, "--actor", "alice", "--json")

    refused.error(4, "proof_invalid")
    shown = _show(deployment, run_id)
    assert shown["status"] == "ready"
    assert shown["audit"][-1]["kind"] == "action_refused"
    assert shown["audit"][-1]["data"]["action"] == "cancel"
    assert deployment.call("cancel", run_id, "--actor", "alice", "--json").ok()["status"] == "cancelled"


def test_worker_without_a_token_refuses_every_protected_action(
    temporal_dev_server: DevServer, tmp_path: Path
) -> None:
    cli = _configured(
        tmp_path,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"cli-tokens-none-{uuid.uuid4().hex}",
    )
    cli.call("models", "select", "--primary", "replay:demo", "--actor", "alice", "--json").ok()
    log = tmp_path / "worker.log"
    with running_worker(cli.without_token().env, log):
        assert "no action token" in log.read_text()
        run_id = cli.call("create", "--input-json", ITEM, "--tier", "read_only", "--json").ok()["run_id"]

        cli.call("enqueue", run_id, "--actor", "alice", "--json").error(4, "action_token_not_configured")

        shown = _show(cli, run_id)
        assert shown["status"] == "ready"
        assert shown["audit"][-1]["data"]["code"] == "action_token_not_configured"


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


def test_no_token_anywhere(deployment: Cli) -> None:
    """Neither the deployment's token nor a wrong one is printed, stored, logged or in history."""
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
    deployment.with_token(OTHER_TOKEN).call("decide", run_id, "--actor", "alice", "--reject", "--json")
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
    # The places searched hold plain text: what is not found there is not there.
    assert token_leaks(["alice"], blobs=blobs)
    assert token_leaks([run_id], files=[deployment.state_dir])
    leaks = token_leaks(
        [ACTION_TOKEN, OTHER_TOKEN],
        texts=[*transcript_texts(deployment), *(json.dumps(h) for h in histories)],
        files=[deployment.state_dir, deployment.cwd / "worker.log"],
        blobs=blobs,
    )
    assert leaks == []
    assert len(run_ids) >= 5
