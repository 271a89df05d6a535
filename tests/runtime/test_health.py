"""A worker's health endpoints: liveness follows the event loop's heartbeat, readiness follows the
worker polling with its store open and drops when it drains; a real worker process serves them."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from contracts.errors import InvalidInput
from infra.devserver import DevServer, free_port
from runtime.health import ENV_HEALTH_ADDRESS, STALE_AFTER_S, Health, HealthServer, health_address
from tests.control.cli_harness import Cli, running_worker, wait_until


def _get(port: int, path: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_liveness_fails_once_the_loop_stops_beating_and_readiness_follows_the_worker() -> None:
    clock = _Clock()
    health = Health(clock)
    with HealthServer(health, "127.0.0.1", 0) as server:
        assert _get(server.port, "/healthz") == (200, {"alive": True, "loop_beat_age_s": 0.0})
        assert _get(server.port, "/readyz") == (503, {"ready": False})
        health.set_ready(True)
        assert _get(server.port, "/readyz") == (200, {"ready": True})
        clock.now += STALE_AFTER_S + 1
        status, body = _get(server.port, "/healthz")
        assert status == 503 and body["alive"] is False
        health.beat()
        assert _get(server.port, "/healthz")[0] == 200
        assert _get(server.port, "/metrics") == (404, {"error": "not_found"})


def test_the_address_is_host_and_port_or_nothing() -> None:
    assert health_address({}) is None
    assert health_address({ENV_HEALTH_ADDRESS: "10.0.0.5:8081"}) == ("10.0.0.5", 8081)
    with pytest.raises(InvalidInput, match=ENV_HEALTH_ADDRESS):
        health_address({ENV_HEALTH_ADDRESS: "8081"})


def test_a_worker_process_is_live_and_ready_once_it_polls(
    temporal_dev_server: DevServer, tmp_path: Path
) -> None:
    port = free_port()
    cli = Cli.isolated(tmp_path).with_env(
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_HEALTH_ADDRESS=f"127.0.0.1:{port}",
    )
    with running_worker(cli.env, tmp_path / "worker.log"):
        assert _get(port, "/healthz")[0] == 200
        assert wait_until(lambda: _get(port, "/readyz")[0] == 200)


def test_a_worker_process_whose_store_cannot_be_opened_is_live_but_not_ready_and_says_why(
    temporal_dev_server: DevServer, tmp_path: Path
) -> None:
    port = free_port()
    password = "db-password-never-logged"
    cli = Cli.isolated(tmp_path).with_env(
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_HEALTH_ADDRESS=f"127.0.0.1:{port}",
        SPECIALISTS_DATABASE_URL=f"postgresql+psycopg://postgres:{password}@127.0.0.1:{free_port()}/none",
    )
    log = tmp_path / "worker.log"
    with running_worker(cli.env, log):
        assert wait_until(lambda: "store_unavailable" in log.read_text(encoding="utf-8"))
        assert _get(port, "/healthz")[0] == 200
        assert _get(port, "/readyz") == (503, {"ready": False})
    (line,) = [json.loads(text) for text in log.read_text().splitlines() if "store_unavailable" in text]
    assert (line["level"], line["code"]) == ("warning", "database_unreachable")
    assert "postgres:***@127.0.0.1" in line["message"]
    assert password not in log.read_text(encoding="utf-8")
