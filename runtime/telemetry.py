"""Metrics and traces for a long-running process — the worker and the web console
(docs/architecture.md "Observability").

:func:`install` is called once at the start of such a process, before it connects to Temporal:

- ``SPECIALISTS_METRICS_ADDRESS`` (``host:port``) makes the Temporal runtime serve Prometheus metrics
  there: the SDK's own (task latencies, slots, polls, sticky-cache hits) and the project's
  (``contracts.metric_names``), which the workflows and activities record through the SDK's meter.
- ``SPECIALISTS_TRACING=otlp`` sends OpenTelemetry spans of client calls, workflows and activities to
  the OTLP/HTTP collector the standard ``OTEL_EXPORTER_OTLP_*`` variables name (the ``tracing``
  extra). Spans carry Temporal's names and ids only: no payload is ever an attribute.

A command-line invocation never calls it: one operator command must not bind the metrics port a
worker on the same host serves.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from contracts.errors import InvalidInput
from runtime.settings import format_address, parse_address

ENV_METRICS_ADDRESS: Final = "SPECIALISTS_METRICS_ADDRESS"
ENV_TRACING: Final = "SPECIALISTS_TRACING"
TRACING_MODES: Final = ("off", "otlp")
DEFAULT_SERVICE_NAME: Final = "specialist-orchestrator"


@dataclass
class Telemetry:
    """What :func:`install` set up: the client plugins every connection of this process uses and the
    flush to call at shutdown (spans still buffered are exported then)."""

    plugins: list[Any] = field(default_factory=list)
    shutdowns: list[Callable[[], object]] = field(default_factory=list)

    def shutdown(self) -> None:
        for shutdown in self.shutdowns:
            shutdown()
        self.shutdowns.clear()


_installed = Telemetry()


def client_plugins() -> list[Any]:
    """The plugins :func:`runtime.temporal.connect` passes to every client of this process (none
    unless :func:`install` enabled tracing)."""
    return list(_installed.plugins)


def metrics_address(environ: Mapping[str, str] = os.environ) -> tuple[str, int] | None:
    """``SPECIALISTS_METRICS_ADDRESS`` as ``(host, port)``; ``None`` when unset (no metrics)."""
    value = environ.get(ENV_METRICS_ADDRESS, "").strip()
    return parse_address(value, variable=ENV_METRICS_ADDRESS) if value else None


def tracing_mode(environ: Mapping[str, str] = os.environ) -> str:
    """``SPECIALISTS_TRACING``: ``off`` (the default) or ``otlp``."""
    value = environ.get(ENV_TRACING, "").strip().lower() or "off"
    if value not in TRACING_MODES:
        raise InvalidInput(
            "invalid_setting",
            f"{ENV_TRACING}={environ.get(ENV_TRACING)!r}: expected one of {', '.join(TRACING_MODES)}",
        )
    return value


def install(environ: Mapping[str, str] = os.environ, *, service: str = DEFAULT_SERVICE_NAME) -> Telemetry:
    """Set up this process's metrics endpoint and tracing from ``environ`` (both optional).

    Settings are all read and checked before anything starts, so a malformed one changes nothing.
    Must run before the process's first connection: the Prometheus endpoint belongs to the Temporal
    runtime every client of the process then uses. ``service`` names the process in traces when
    ``OTEL_SERVICE_NAME`` is unset.
    """
    address = metrics_address(environ)
    mode = tracing_mode(environ)
    if address is not None:
        _serve_metrics(address)
    if mode == "otlp":
        plugin, shutdown = _otlp_tracing(environ.get("OTEL_SERVICE_NAME") or service)
        _installed.plugins.append(plugin)
        _installed.shutdowns.append(shutdown)
    return _installed


def _serve_metrics(address: tuple[str, int]) -> None:
    from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

    bind = format_address(*address)
    try:
        runtime = Runtime(telemetry=TelemetryConfig(metrics=PrometheusConfig(bind_address=bind)))
    except Exception as error:  # the native runtime reports a port it cannot bind as a plain error
        raise InvalidInput(
            "invalid_setting", f"{ENV_METRICS_ADDRESS}={bind}: cannot serve metrics there ({error})"
        ) from None
    Runtime.set_default(runtime, error_if_already_set=False)


def _otlp_tracing(service: str) -> tuple[Any, Callable[[], object]]:
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from temporalio.contrib.opentelemetry import OpenTelemetryPlugin, create_tracer_provider
    except ImportError as error:
        raise InvalidInput(
            "tracing_unavailable",
            f"{ENV_TRACING}=otlp needs the tracing extra ({error.name} is not installed): "
            "pip install 'specialist-orchestrator[tracing]'",
        ) from None
    provider = create_tracer_provider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return OpenTelemetryPlugin(add_temporal_spans=True), provider.shutdown
