"""Fixtures shared by the ceiling, ramp and model-class tests: one loopback model server per module
(``wire``) and, per test, that server reset with its key variable set (``server``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.activities.providers.wire_server import WireServer, running
from tests.workflows.harness import LOOPBACK_KEY_ENV


@pytest.fixture(scope="module")
def wire() -> Iterator[WireServer]:
    with running() as server:
        yield server


@pytest.fixture
def server(wire: WireServer, monkeypatch: pytest.MonkeyPatch) -> WireServer:
    monkeypatch.setenv(LOOPBACK_KEY_ENV, "sk-loopback-test-key")
    wire.reset()
    return wire
