"""``specialists codec-server`` and ``specialists codec-key`` (control/codec_server.py,
control/commands/codec.py; docs/architecture.md "Encrypted history"): the Temporal UI's remote codec
protocol, for callers with the token only, and the keys file they manage."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from temporalio.api.common.v1 import Payload

from control.cli import main
from control.codec_server import MAX_BODY_BYTES, create_codec_app, load_token, payloads_json
from infra.devserver import DevServer, free_port
from runtime.codec import load_key_ring
from runtime.settings import Settings
from runtime.temporal import connect
from tests.codec_keys import KEYS, codec, keys_document, write_keys_file

ROOT = Path(__file__).resolve().parents[2]
TOKEN = b"codec-token-" + b"x" * 40
UI = "http://127.0.0.1:8233"
SECRET = b'"the index on orders.customer_id is missing"'


def plain(data: bytes = SECRET) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=data)


@pytest.fixture
def server() -> TestClient:
    return TestClient(create_codec_app(codec("key-2", "key-1", "key-2"), TOKEN, ui_origin=UI))


def bearer(token: bytes = TOKEN) -> dict[str, str]:
    return {"Authorization": "Bearer " + token.decode()}


def body(*payloads: Payload) -> dict[str, Any]:
    return payloads_json(list(payloads))


def decoded(response: Any) -> list[Payload]:
    assert response.status_code == 200, response.text
    return [
        Payload(
            metadata={k: base64.b64decode(v) for k, v in item.get("metadata", {}).items()},
            data=base64.b64decode(item.get("data", "")),
        )
        for item in response.json()["payloads"]
    ]


# ----------------------------------------------------------------------------------------- protocol


async def test_decode_with_the_right_token_returns_the_original_payloads(server: TestClient) -> None:
    encrypted = await codec("key-1").encode([plain(), plain(b"2")])
    response = server.post("/decode", json=body(*encrypted), headers=bearer())
    assert decoded(response) == [plain(), plain(b"2")]
    assert response.headers["cache-control"] == "no-store"


def test_encode_then_decode_round_trips_and_encodes_under_the_current_key(server: TestClient) -> None:
    encoded = decoded(server.post("/encode", json=body(plain()), headers=bearer()))
    assert [p.metadata["encryption-key-id"] for p in encoded] == [b"key-2"]
    assert SECRET not in encoded[0].data
    assert decoded(server.post("/decode", json=body(*encoded), headers=bearer())) == [plain()]


def test_decode_passes_unencrypted_payloads_through(server: TestClient) -> None:
    assert decoded(server.post("/decode", json=body(plain()), headers=bearer())) == [plain()]


@pytest.mark.parametrize(
    "headers",
    [
        {},
        bearer(b"codec-token-" + b"y" * 40),
        bearer(TOKEN[:-1]),
        {"Authorization": TOKEN.decode()},
        {"Authorization": "Basic " + base64.b64encode(b"u:" + TOKEN).decode()},
        {"Authorization": "bearer " + TOKEN.decode()},
    ],
    ids=["missing", "wrong", "a prefix", "no scheme", "basic", "lower-case scheme"],
)
@pytest.mark.parametrize("path", ["/decode", "/encode"])
async def test_a_missing_or_wrong_token_is_401_and_nothing_is_decoded(
    server: TestClient, headers: dict[str, str], path: str
) -> None:
    encrypted = await codec("key-1").encode([plain()])
    response = server.post(path, json=body(*encrypted), headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.json() == {
        "error": {"code": "unauthorised", "message": "send Authorization: Bearer <the codec server's token>"}
    }
    assert SECRET.decode() not in response.text


def test_a_401_comes_before_the_body_is_read_so_bad_json_without_a_token_is_still_401(
    server: TestClient,
) -> None:
    assert server.post("/decode", content=b"{not json", headers={}).status_code == 401


ONLY_FIELDS = "payloads[0] must be an object with metadata and data only"


@pytest.mark.parametrize(
    ("content", "code", "message"),
    [
        (b"{not json", "invalid_json", "the body is not JSON (Expecting property name enclosed in double "
         "quotes at line 1 column 2)"),
        (b"\xff\xfe", "invalid_json", "the body is not UTF-8 JSON"),
        (b"[]", "invalid_request", 'expected {"payloads": [...]} and nothing else'),
        (b'{"payloads": {}}', "invalid_request", 'expected {"payloads": [...]} and nothing else'),
        (b'{"payloads": [], "x": 1}', "invalid_request", 'expected {"payloads": [...]} and nothing else'),
        (b'{"payloads": [1]}', "invalid_payload", ONLY_FIELDS),
        (b'{"payloads": [{"data": "", "size": 1}]}', "invalid_payload", ONLY_FIELDS),
        (b'{"payloads": [{"metadata": []}]}', "invalid_payload", "payloads[0].metadata must be an object"),
        (b'{"payloads": [{}, {"metadata": {"encoding": "%%%"}}]}', "invalid_payload",
         "payloads[1].metadata.encoding is not valid base64"),
        (b'{"payloads": [{"data": 5}]}', "invalid_payload", "payloads[0].data must be a base64 string"),
        (b'{"payloads": [{"data": "abc"}]}', "invalid_payload", "payloads[0].data is not valid base64"),
        (b"[" * 30_000 + b"]" * 30_000, "invalid_json", "the body is nested too deeply to be read"),
    ],
)  # fmt: skip
def test_a_bad_body_is_400_with_a_specific_message(
    server: TestClient, content: bytes, code: str, message: str
) -> None:
    response = server.post("/decode", content=content, headers=bearer())
    assert response.status_code == 400
    assert response.json() == {"error": {"code": code, "message": message}}


def test_a_body_over_the_limit_is_413_and_not_read_past_it(server: TestClient) -> None:
    response = server.post("/decode", content=b" " * (MAX_BODY_BYTES + 1), headers=bearer())
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"


async def test_a_payload_under_an_unknown_key_or_tampered_is_422_naming_the_key_id() -> None:
    only_key_1 = TestClient(create_codec_app(codec("key-1"), TOKEN, ui_origin=UI))
    [under_key_2] = await codec("key-2").encode([plain()])
    response = only_key_1.post("/decode", json=body(under_key_2), headers=bearer())
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "codec_key_unknown"
    assert "'key-2'" in response.json()["error"]["message"]

    [under_key_1] = await codec("key-1").encode([plain()])
    under_key_1.data = under_key_1.data[:-1] + bytes([under_key_1.data[-1] ^ 1])
    response = only_key_1.post("/decode", json=body(under_key_1), headers=bearer())
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "codec_payload_invalid"
    for key in KEYS.values():
        assert base64.b64encode(key).decode() not in response.text


def test_cors_allows_the_configured_ui_origin_only(server: TestClient) -> None:
    preflight = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type,x-namespace",
    }
    allowed = server.options("/decode", headers={"Origin": UI, **preflight})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == UI
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()

    other = server.options("/decode", headers={"Origin": "http://evil.example", **preflight})
    assert other.status_code == 400
    assert "access-control-allow-origin" not in other.headers
    response = server.post(
        "/decode", json=body(plain()), headers={"Origin": "http://evil.example", **bearer()}
    )
    assert "access-control-allow-origin" not in response.headers
    response = server.post("/decode", json=body(plain()), headers={"Origin": UI, **bearer()})
    assert response.headers["access-control-allow-origin"] == UI


# ------------------------------------------------------------------------------------------ settings


def _token_file(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "codec-token"
    path.write_text(text, encoding="utf-8")
    os.chmod(path, mode)
    return path


def test_the_token_is_read_from_its_file(tmp_path: Path) -> None:
    path = _token_file(tmp_path, TOKEN.decode() + "\n")
    assert load_token({"SPECIALISTS_CODEC_SERVER_TOKEN_FILE": str(path)}) == TOKEN


@pytest.mark.parametrize(
    ("text", "mode", "code"),
    [
        (TOKEN.decode(), 0o644, "codec_token_insecure"),
        ("short-token", 0o600, "codec_token_invalid"),
        ("a token with spaces in it that is long enough", 0o600, "codec_token_invalid"),
    ],
)
def test_a_bad_token_file_is_refused_naming_the_variable_and_never_the_token(
    tmp_path: Path, text: str, mode: int, code: str
) -> None:
    from contracts.errors import InvalidInput

    path = _token_file(tmp_path, text, mode)
    with pytest.raises(InvalidInput) as raised:
        load_token({"SPECIALISTS_CODEC_SERVER_TOKEN_FILE": str(path)})
    assert raised.value.code == code
    assert raised.value.message.startswith("SPECIALISTS_CODEC_SERVER_TOKEN_FILE=")
    assert text not in raised.value.message


def _cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], env: dict[str, str], *args: str
) -> tuple[int, Any]:
    for name in list(os.environ):
        if name.startswith("SPECIALISTS_"):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    if args[0] == "codec-server":  # a server prints no JSON: its error is one line on stderr
        code = main(list(args))
        return code, capsys.readouterr().err
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else None


@pytest.mark.parametrize(
    ("keys", "token", "args", "code"),
    [
        (False, True, [], "codec_keys_not_configured"),
        (True, False, [], "codec_token_not_configured"),
        (True, True, ["--ui-origin", "http://127.0.0.1:8233/ui"], "invalid_origin"),
        (True, True, ["--ui-origin", "*"], "invalid_origin"),
    ],
)
def test_the_codec_server_refuses_to_start_without_keys_a_token_or_a_valid_origin(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    keys: bool,
    token: bool,
    args: list[str],
    code: str,
) -> None:
    env = {}
    if keys:
        env["SPECIALISTS_CODEC_KEYS_FILE"] = str(write_keys_file(tmp_path / "k.json", keys_document("key-1")))
    if token:
        env["SPECIALISTS_CODEC_SERVER_TOKEN_FILE"] = str(_token_file(tmp_path, TOKEN.decode()))
    exit_code, stderr = _cli(monkeypatch, capsys, env, "codec-server", *args)
    assert exit_code == 2
    assert stderr.startswith(f"error [{code}]: ")


# ---------------------------------------------------------------------------------------- codec-key


def test_codec_key_add_use_and_list_manage_the_file_and_never_print_a_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "keys.json"
    env = {"SPECIALISTS_CODEC_KEYS_FILE": str(path)}
    printed: list[str] = []

    def run(*args: str) -> tuple[int, Any]:
        code, data = _cli(monkeypatch, capsys, env, "codec-key", *args)
        printed.append(json.dumps(data))
        return code, data

    assert run("add", "2026-01") == (0, {"keys_file": str(path), "current": "2026-01", "ids": ["2026-01"]})
    assert path.stat().st_mode & 0o777 == 0o600
    # A second key is added beside the first, not current until the operator says so.
    assert run("add", "2026-02")[1]["current"] == "2026-01"
    assert run("use", "2026-02")[1] == {
        "keys_file": str(path),
        "current": "2026-02",
        "ids": ["2026-01", "2026-02"],
    }
    assert path.stat().st_mode & 0o777 == 0o600
    ring = load_key_ring(path)
    assert ring.current == "2026-02" and all(len(key) == 32 for key in ring.keys.values())
    assert ring.keys["2026-01"] != ring.keys["2026-02"]
    assert run("add", "2026-03", "--current")[1]["current"] == "2026-03"
    assert run("list")[1]["ids"] == ["2026-01", "2026-02", "2026-03"]

    assert run("add", "2026-01")[0] == 2  # codec_key_duplicate
    assert run("use", "2027-01")[0] == 3  # codec_key_unknown
    assert run("add", "bad id")[0] == 2  # codec_key_id_invalid
    fresh = tmp_path / "absent" / "keys.json"  # a fresh host: the directory is made, for keys only
    assert run("add", "k", "--file", str(fresh))[1]["ids"] == ["k"]
    assert (fresh.parent.stat().st_mode & 0o777, fresh.stat().st_mode & 0o777) == (0o700, 0o600)
    blocked = tmp_path / "a-file" / "keys.json"
    blocked.parent.write_text("")
    assert run("add", "k", "--file", str(blocked)) == (
        2,
        {"error": {"code": "codec_keys_unwritable", "message": (
            f"cannot write the payload keys file {str(blocked)!r} (Not a directory)"
        )}},
    )  # fmt: skip
    keys = [base64.b64encode(key).decode() for key in load_key_ring(path).keys.values()]
    assert [text for text in printed for key in keys if key in text] == []


# ------------------------------------------------------------------------------- served, with the CLI


@pytest.fixture
def codec_server_process(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """``specialists codec-server`` as a process on a free loopback port; yields its URL and env."""
    port = free_port()
    env = {name: value for name, value in os.environ.items() if not name.startswith("SPECIALISTS_")}
    env["SPECIALISTS_CODEC_KEYS_FILE"] = str(write_keys_file(tmp_path / "keys.json", keys_document("key-1")))
    env["SPECIALISTS_CODEC_SERVER_TOKEN_FILE"] = str(_token_file(tmp_path, TOKEN.decode()))
    process = subprocess.Popen(
        [sys.executable, "-m", "control.cli", "codec-server", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                answer = httpx.post(url + "/decode", content=b"{}", timeout=1)
                assert answer.status_code == 401  # it answers, and not without the token
                break
            except httpx.TransportError:
                assert process.poll() is None, process.stdout.read() if process.stdout else ""
                assert time.monotonic() < deadline, "the codec server did not answer within 20 s"
                time.sleep(0.1)
        yield url, env
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def test_the_temporal_cli_shows_an_encrypted_history_decoded_through_the_codec_server(
    temporal_dev_server: DevServer, codec_server_process: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    url, env = codec_server_process
    settings = Settings.from_env(
        {
            "SPECIALISTS_TEMPORAL_ADDRESS": temporal_dev_server.address,
            "SPECIALISTS_CODEC_KEYS_FILE": env["SPECIALISTS_CODEC_KEYS_FILE"],
        }
    )
    client = await connect(settings)
    workflow_id = f"codec-server-{uuid.uuid4().hex}"
    # No worker polls this queue: the start alone records the encrypted input in history.
    handle = await client.start_workflow(
        "NoSuchWorkflow", "finding: orders.customer_id lacks an index", id=workflow_id, task_queue=workflow_id
    )
    try:
        temporal = Path(sys.executable).parent / "temporal"
        common = [
            "workflow",
            "show",
            "-w",
            workflow_id,
            "--address",
            temporal_dev_server.address,
            "-o",
            "json",
        ]

        def started_input(*extra: str) -> tuple[int, dict[str, Any] | None]:
            """The exit code of ``temporal workflow show`` and the first event's input payload."""
            done = subprocess.run(
                [str(temporal), *common, *extra], capture_output=True, text=True, timeout=30
            )
            if done.returncode != 0:
                return done.returncode, None
            event = json.loads(done.stdout)["events"][0]
            payload: dict[str, Any] = event["workflowExecutionStartedEventAttributes"]["input"]["payloads"][0]
            return 0, payload

        def encoding(payload: dict[str, Any] | None) -> bytes:
            assert payload is not None
            return base64.b64decode(payload["metadata"]["encoding"])

        code, stored = started_input()
        assert code == 0 and encoding(stored) == b"binary/encrypted"
        code, shown = started_input("--codec-endpoint", url, "--codec-auth", "Bearer " + TOKEN.decode())
        assert code == 0 and encoding(shown) == b"json/plain"
        assert shown is not None
        assert base64.b64decode(shown["data"]) == b'"finding: orders.customer_id lacks an index"'
        # With a wrong token the server answers 401: the CLI shows nothing decoded.
        code, refused = started_input("--codec-endpoint", url, "--codec-auth", "Bearer nope")
        assert refused is None or encoding(refused) == b"binary/encrypted"
    finally:
        await asyncio.wait_for(handle.terminate("test finished"), timeout=10)
