"""``specialists models test``: one tiny call through a worker process, which holds the keys.

One worker process serves the module; its environment holds the key variable, the CLI's does not, so
a passing check proves the key was read on the worker. The model endpoints are a scripted wire
server on loopback speaking the OpenAI-compatible and Anthropic formats.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from temporalio.client import Client
from temporalio.service import RPCError

from contracts.errors import ServiceUnavailable
from contracts.ids import new_check_id
from contracts.model_jobs import ModelCheckRequest
from control.model_checks import run_model_check
from infra.devserver import DevServer
from tests.activities.providers.wire_server import (
    Scripted,
    WireServer,
    anthropic_error,
    anthropic_message,
    openai_completion,
    openai_error,
    running,
)
from tests.control.cli_harness import SLOW_QUERY, Cli, running_worker
from tests.workflows.harness import recorded_response

KEY_ENV = "CHECK_TEST_MODEL_API_KEY"
KEY = "sk-check-0123456789abcdef"
CHECK_ID = r"SMC-[0-9A-Z]{16}"
CHECK_KEYS = {"check_id", "model", "ok", "latency_ms", "input_tokens", "output_tokens"}


@pytest.fixture(scope="module")
def wire() -> Iterator[WireServer]:
    with running() as server:
        yield server


@pytest.fixture(scope="module")
def cli(
    temporal_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory, wire: WireServer
) -> Iterator[Cli]:
    """The CLI with ``alice``, three registered models on the wire server and a worker whose
    environment (only) holds the key."""
    root = tmp_path_factory.mktemp("cli-model-test")
    cli = Cli.isolated(
        root,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"cli-model-test-{uuid.uuid4().hex}",
    )
    assert cli.call("actors", "register", "alice", "--name", "Alice").exit_code == 0
    for args in (
        ["openai:model-a", "--base-url", wire.base_url, "--api-key-env", KEY_ENV],
        ["anthropic:model-b", "--base-url", wire.root_url, "--api-key-env", KEY_ENV],
        ["openai:keyless", "--base-url", wire.base_url, "--api-key-env", "CHECK_TEST_UNSET_API_KEY"],
    ):
        assert cli.call("models", "add", *args, "--timeout-s", "5", "--actor", "alice").exit_code == 0
    assert KEY_ENV not in cli.env
    with running_worker({**cli.env, KEY_ENV: KEY}, root / "worker.log"):
        yield cli


@pytest.fixture
def server(wire: WireServer) -> WireServer:
    wire.reset()
    return wire


def test_a_replay_model_checks_ok_without_any_endpoint(cli: Cli) -> None:
    data = cli.call("models", "test", "replay:demo", "--actor", "alice", "--json").ok()
    assert set(data) == CHECK_KEYS
    assert data["ok"] is True and data["model"] == "replay:demo"


def test_a_working_endpoint_checks_ok_with_the_workers_key_latency_and_tokens(
    cli: Cli, server: WireServer
) -> None:
    server.script(Scripted(200, openai_completion('{"status": "ok"}', prompt_tokens=31, completion_tokens=4)))
    data = cli.call("models", "test", "openai:model-a", "--actor", "alice", "--json").ok()
    assert set(data) == CHECK_KEYS
    assert data["ok"] is True and data["model"] == "openai:model-a"
    assert (data["input_tokens"], data["output_tokens"]) == (31, 4)
    assert isinstance(data["latency_ms"], int) and data["latency_ms"] >= 0
    (request,) = server.received
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body["model"] == "model-a"
    # The check asks for output the way runs do, so it also proves the endpoint takes that request.
    assert request.body["response_format"]["type"] == "json_schema"

    human = cli.call("models", "test", "replay:demo", "--actor", "alice")
    assert human.exit_code == 0 and "replay:demo: ok" in human.stdout


def test_a_rejected_key_exits_6_with_the_error_class_and_no_key_in_the_answer(
    cli: Cli, server: WireServer
) -> None:
    server.script(
        Scripted(401, openai_error(f"Incorrect API key provided: {KEY}", type="invalid_request_error"))
    )
    result = cli.call("models", "test", "openai:model-a", "--actor", "alice", "--json")
    assert result.exit_code == 6, result
    data = result.json()
    assert data["ok"] is False and data["error"]["code"] == "model_authentication"
    assert KEY not in result.stdout and KEY not in result.stderr


def test_an_overloaded_anthropic_endpoint_reports_provider_unavailable_once(
    cli: Cli, server: WireServer
) -> None:
    server.script(Scripted(529, anthropic_error("overloaded_error", "Overloaded")))
    result = cli.call("models", "test", "anthropic:model-b", "--actor", "alice", "--json")
    assert result.exit_code == 6, result
    assert result.json()["error"]["code"] == "model_provider_unavailable"
    assert len(server.received) == 1, "a check calls once: no retry, no fallback"
    headers = server.received[0].headers
    assert KEY in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer "))

    server.reset()
    server.script(Scripted(200, anthropic_message(text='{"status": "ok"}', input_tokens=9, output_tokens=2)))
    data = cli.call("models", "test", "anthropic:model-b", "--actor", "alice", "--json").ok()
    assert data["ok"] is True and (data["input_tokens"], data["output_tokens"]) == (9, 2)


def test_a_key_variable_missing_on_the_worker_is_model_not_configured(cli: Cli, server: WireServer) -> None:
    result = cli.call("models", "test", "openai:keyless", "--actor", "alice", "--json")
    assert result.exit_code == 6, result
    error = result.json()["error"]
    assert error["code"] == "model_not_configured" and "CHECK_TEST_UNSET_API_KEY" in error["message"]
    assert server.received == [], "nothing is sent without the key"


@pytest.mark.parametrize(
    ("args", "exit_code", "code"),
    [
        (["openai:not-registered", "--actor", "alice"], 3, "unknown_model"),
        (["replay:demo", "--actor", "mallory"], 3, "unknown_actor"),
        (["replay:demo"], 2, "actor_required"),
        (["no-colon", "--actor", "alice"], 2, "invalid_model_id"),
    ],
)
def test_bad_checks_are_refused_before_anything_is_sent(
    cli: Cli, server: WireServer, args: list[str], exit_code: int, code: str
) -> None:
    cli.call("models", "test", *args, "--json").error(exit_code, code)
    assert server.received == []


def test_a_check_needs_the_actors_key(cli: Cli, server: WireServer) -> None:
    cli.without_key().call("models", "test", "replay:demo", "--actor", "alice", "--json").error(
        4, "actor_key_missing"
    )
    wrong = cli.stranger()
    wrong.call("models", "test", "openai:model-a", "--actor", "alice", "--json").error(
        4, "actor_key_mismatch"
    )
    assert server.received == []


async def test_a_check_with_no_worker_polling_is_refused_before_anything_is_started(
    temporal_client: Client,
) -> None:
    request = ModelCheckRequest(check_id=new_check_id(), model_id="replay:demo", actor="alice")
    queue = f"nobody-{uuid.uuid4().hex}"
    with pytest.raises(ServiceUnavailable) as raised:
        await run_model_check(temporal_client, request, task_queue=queue, wait_seconds=1.0)
    assert raised.value.code == "no_worker"
    assert queue in raised.value.message and "specialists worker" in raised.value.message
    with pytest.raises(RPCError):  # no check workflow was started
        await temporal_client.get_workflow_handle(request.check_id).describe()


async def test_a_check_no_worker_answers_is_reported_and_terminated(temporal_client: Client) -> None:
    # A worker that stops after the check was started (nobody polls here: the check is left alone).
    request = ModelCheckRequest(check_id=new_check_id(), model_id="replay:demo", actor="alice")
    with pytest.raises(ServiceUnavailable) as raised:
        await run_model_check(
            temporal_client,
            request,
            task_queue=f"nobody-{uuid.uuid4().hex}",
            wait_seconds=1.0,
            check_worker=False,
        )
    assert raised.value.code == "check_not_answered"
    description = await temporal_client.get_workflow_handle(request.check_id).describe()
    assert description.status is not None and description.status.name == "TERMINATED"


def test_a_read_only_run_uses_an_openai_compatible_endpoint_chosen_with_models_select(
    cli: Cli, server: WireServer
) -> None:
    """`models add` + `models select` is all it takes: no code names the endpoint."""
    title = json.loads(SLOW_QUERY.read_text(encoding="utf-8"))["title"]
    analysis = json.dumps(recorded_response("analysis", "database-optimizer", title))
    review = json.dumps(recorded_response("review", "backend-architect", title))
    server.script(
        Scripted(200, openai_completion(analysis, prompt_tokens=900, completion_tokens=300)),
        Scripted(200, openai_completion(review, prompt_tokens=1000, completion_tokens=200)),
    )
    cli.call("models", "select", "--primary", "openai:model-a", "--actor", "alice", "--json").ok()
    try:
        created = cli.run(
            "create", "--input-json", f"@{SLOW_QUERY}", "--tier", "read_only", "--enqueue",
            "--actor", "alice", "--wait", "--json",
        ).ok()  # fmt: skip
    finally:
        cli.call("models", "select", "--primary", "replay:demo", "--actor", "alice", "--json").ok()
    assert created["status"] == "awaiting_decision", created.get("error")
    assert created["contract"]["model"]["primary"] == "openai:model-a"
    attempts = [event["data"] for event in created["audit"] if event["kind"] == "model_attempt"]
    assert [(a["kind"], a["model"], a["outcome"]) for a in attempts] == [
        ("analysis", "openai:model-a", "ok"),
        ("review", "openai:model-a", "ok"),
    ]
    assert [(a["input_tokens"], a["output_tokens"]) for a in attempts] == [(900, 300), (1000, 200)]
    assert [request.body["model"] for request in server.received] == ["model-a", "model-a"]
    assert KEY not in json.dumps(created)
