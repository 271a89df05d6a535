"""Mission Control reads no more than its limit of any request body, signed in or not, and a body
nested deeper than the JSON parser reads is a refusal, not an error page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from control.web.app import MAX_BODY_BYTES
from control.web.security import HEADERS
from store.database import open_store
from tests.control.web.test_app import _client, _signed_in
from tests.identity import STORE_ANCHOR, bootstrap


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    url = f"sqlite:///{tmp_path / 'specialists.db'}"
    with open_store(url, create=True, anchor=STORE_ANCHOR) as store:
        bootstrap(store)
    return _client(url)


def test_a_body_over_the_limit_is_refused_with_413_before_sign_in_and_the_hardening_headers(
    client: TestClient,
) -> None:
    answer = client.post("/sign-in", content=b"token=" + b"a" * MAX_BODY_BYTES)
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "request_too_large"
    for name, value in HEADERS.items():
        assert answer.headers[name] == value


def test_a_chunked_body_without_a_length_is_counted_and_refused_past_the_limit(client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(MAX_BODY_BYTES // 65536 + 2):
            yield b"a" * 65536

    answer = client.post(
        "/sign-in", content=chunks(), headers={"content-type": "application/x-www-form-urlencoded"}
    )
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "request_too_large"


def test_a_route_preview_nested_too_deeply_is_refused_as_invalid_json(client: TestClient) -> None:
    _signed_in(client)
    answer = client.post(
        "/api/route", content=b"[" * 30_000 + b"]" * 30_000, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 400
    assert answer.json()["error"] == {
        "code": "invalid_json",
        "message": "the body is nested too deeply to be read",
    }
