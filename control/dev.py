"""``specialists dev``: the embedded Temporal dev server plus a worker, stopped together on Ctrl-C."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys

from contracts.errors import InvalidInput
from infra.devserver import DevServer
from runtime.settings import TEMPORAL_DB_FILENAME, Settings, parse_address


def dev_server_for(settings: Settings, *, headless: bool = False) -> DevServer:
    """The dev server the settings describe: loopback, persistent SQLite file in the state directory."""
    host, port = parse_address(settings.temporal_address)
    return DevServer(
        state_dir=settings.state_dir,
        db_filename=settings.state_dir / TEMPORAL_DB_FILENAME,
        host=host,
        port=port,
        ui_port=settings.temporal_ui_port,
        namespace=settings.namespace,
        headless=headless,
    )


async def _serve(server_only: bool) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    if server_only:
        await stop.wait()
        return
    import worker

    await worker.run_worker(stop)


def _require_local_connection(settings: Settings) -> None:
    """The worker ``dev`` runs connects like every client (:mod:`runtime.connection`): refuse when
    the SDK's environment configuration sends it somewhere other than the server ``dev`` starts."""
    from runtime.connection import load_connection

    connection = load_connection(settings)
    if connection.address != settings.temporal_address or connection.uses_tls or connection.api_key:
        raise InvalidInput(
            "dev_connection_elsewhere",
            f"`specialists dev` serves Temporal on {settings.temporal_address} without TLS, but the "
            f"connection is configured for {connection.address}"
            + (" with TLS" if connection.uses_tls else "")
            + " (TEMPORAL_ADDRESS, TEMPORAL_TLS*, TEMPORAL_API_KEY or a profile of "
            "TEMPORAL_CONFIG_FILE): unset those for the embedded server, or use `specialists worker`",
        )


def run_dev(*, server_only: bool = False) -> int:
    """Start the server (and a worker unless ``server_only``), print where they are, run until stopped.

    Returns the exit code. The worker stops before the server, so no worker is left without one.
    """
    settings = Settings.from_env()
    if not server_only:
        _require_local_connection(settings)
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    with dev_server_for(settings) as server:
        print(f"Temporal dev server: {server.address} (namespace {settings.namespace})", flush=True)
        if server.ui_url:
            print(f"Temporal UI: {server.ui_url}", flush=True)
        print("Press Ctrl-C to stop.", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_serve(server_only))
    sys.stdout.write("stopped\n")
    return 0
