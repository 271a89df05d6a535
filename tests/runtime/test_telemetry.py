"""A worker's metrics and traces: the SDK's and the project's metrics on the Prometheus endpoint of
``SPECIALISTS_METRICS_ADDRESS``, and OpenTelemetry spans of the run's workflows and activities sent
to an OTLP/HTTP collector (a stand-in on loopback that keeps what it receives)."""

from __future__ import annotations

import http.server
import json
import re
import threading
import urllib.request
import uuid
from collections.abc import Iterator

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from contracts.errors import InvalidInput
from contracts.metric_names import MODEL_CALLS, QUEUE_SLOTS_OCCUPIED, RUN_STATUS_CHANGES
from infra.devserver import DevServer, free_port
from runtime.telemetry import (
    ENV_METRICS_ADDRESS,
    ENV_TRACING,
    client_plugins,
    install,
    metrics_address,
    tracing_mode,
)
from tests.control.cli_harness import SLOW_QUERY, Cli, running_worker, wait_until

TITLE = json.loads(SLOW_QUERY.read_text())["title"]


class _Collector(http.server.ThreadingHTTPServer):
    """An OTLP/HTTP trace collector stand-in: every export request it received, raw and decoded."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _CollectorHandler)
        self.bodies: list[bytes] = []
        self.span_names: list[str] = []

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _CollectorHandler(http.server.BaseHTTPRequestHandler):
    server: _Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path != "/v1/traces":
            self.send_response(404)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.server.bodies.append(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                self.server.span_names.extend(span.name for span in scope.spans)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def collector() -> Iterator[_Collector]:
    server = _Collector()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def observed_run(
    temporal_dev_server: DevServer, collector: _Collector, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[int, str]]:
    """A worker with metrics and tracing on, one read_only run it took to its decision, accepted, and
    a goal queue with one proposal: yields the metrics port and the run id."""
    root = tmp_path_factory.mktemp("telemetry")
    port = free_port()
    cli = Cli.isolated(
        root,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"telemetry-{uuid.uuid4().hex}",
    )
    assert cli.call("actors", "register", "alice", "--name", "Alice").exit_code == 0
    assert cli.call("models", "select", "--primary", "replay:demo", "--actor", "alice").exit_code == 0
    worker_env = dict(
        cli.env,
        SPECIALISTS_METRICS_ADDRESS=f"127.0.0.1:{port}",
        SPECIALISTS_TRACING="otlp",
        OTEL_EXPORTER_OTLP_ENDPOINT=collector.endpoint,
        OTEL_BSP_SCHEDULE_DELAY="100",
    )
    with running_worker(worker_env, root / "worker.log"):
        run = cli.run(
            "create", f"--input-json=@{SLOW_QUERY}", "--tier", "read_only", "--enqueue", "--actor", "alice",
            "--wait", "--json",
        ).ok()  # fmt: skip
        assert run["status"] == "awaiting_decision"
        decided = cli.run("decide", run["run_id"], "--actor", "alice", "--accept", "--json").ok()
        assert decided["status"] == "accepted"
        item = json.dumps({"title": "Measure the queue"})
        assert cli.call("queue", "add", "--input-json", item, "--actor", "alice", "--json").exit_code == 0
        yield port, run["run_id"]


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        return answer.read().decode()


def _samples(text: str, name: str) -> list[tuple[str, float]]:
    """``(labels, value)`` of every sample of metric ``name``."""
    pattern = re.compile(rf"^{re.escape(name)}(\{{[^}}]*\}})? (\S+)$", re.MULTILINE)
    return [(match.group(1) or "", float(match.group(2))) for match in pattern.finditer(text)]


def test_the_metrics_address_is_host_and_port_or_nothing() -> None:
    assert metrics_address({}) is None
    assert metrics_address({ENV_METRICS_ADDRESS: "10.0.0.5:9464"}) == ("10.0.0.5", 9464)
    with pytest.raises(InvalidInput, match=ENV_METRICS_ADDRESS):
        metrics_address({ENV_METRICS_ADDRESS: "9464"})


def test_tracing_is_off_unless_set_to_otlp_and_anything_else_is_refused() -> None:
    assert tracing_mode({}) == "off"
    assert tracing_mode({ENV_TRACING: "OTLP"}) == "otlp"
    with pytest.raises(InvalidInput, match=f"{ENV_TRACING}='jaeger'"):
        tracing_mode({ENV_TRACING: "jaeger"})


def test_a_malformed_setting_installs_nothing() -> None:
    with pytest.raises(InvalidInput, match=ENV_TRACING):
        install({ENV_METRICS_ADDRESS: "127.0.0.1:1", ENV_TRACING: "zipkin"})
    assert client_plugins() == []


def test_the_worker_serves_the_sdks_metrics_and_the_projects_own(observed_run: tuple[int, str]) -> None:
    port, _ = observed_run
    text = _scrape(port)
    assert _samples(text, "temporal_workflow_task_execution_latency_count")
    assert _samples(text, "temporal_activity_execution_latency_count")

    statuses = _samples(text, RUN_STATUS_CHANGES)
    for status in ("awaiting_decision", "accepted"):
        assert any(
            f'status="{status}"' in labels and 'tier="read_only"' in labels and value >= 1
            for labels, value in statuses
        )
    calls = _samples(text, MODEL_CALLS)
    for kind in ("analysis", "review"):  # the primary's pass and the reviewer's
        assert any(
            f'kind="{kind}"' in labels and 'model="replay:demo"' in labels and 'outcome="ok"' in labels
            for labels, value in calls
            if value >= 1
        )


def test_the_goal_queue_reports_its_occupied_slots(observed_run: tuple[int, str]) -> None:
    port, _ = observed_run
    slots = _samples(_scrape(port), QUEUE_SLOTS_OCCUPIED)
    assert slots and all(value == 0 for _, value in slots), "a proposal occupies no slot"
    assert all('slots="' in labels for labels, _ in slots)


def test_no_metric_label_carries_a_run_id(observed_run: tuple[int, str]) -> None:
    port, run_id = observed_run
    text = _scrape(port)
    assert run_id not in text
    assert TITLE not in text


def test_the_runs_workflows_and_activities_are_traced_to_the_collector(
    observed_run: tuple[int, str], collector: _Collector
) -> None:
    assert wait_until(lambda: "RunWorkflow:SpecialistRun" in collector.span_names)  # when it closed
    names = set(collector.span_names)
    assert {"StartChildWorkflow:ModelJob", "RunWorkflow:ModelJob"} <= names  # the primary's and reviewer's
    assert {"StartActivity:call_model", "RunActivity:call_model", "RunActivity:capture_contract"} <= names
    assert "HandleSignal:decide" in names or "HandleUpdate:decide" in names


def test_no_span_carries_the_work_items_text(observed_run: tuple[int, str], collector: _Collector) -> None:
    assert wait_until(lambda: bool(collector.bodies))
    for body in collector.bodies:
        assert TITLE.encode() not in body
