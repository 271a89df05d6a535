"""``specialists setup``: the one-shot job a deployment runs before its workers start — the store at
the newest schema and the custom search attributes on the namespace — and running it again changes
nothing. Real components: the CLI as a process, the shared dev server, SQLite."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from pathlib import Path

from google.protobuf.duration_pb2 import Duration
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client

from contracts.search_attributes import SEARCH_ATTRIBUTES
from infra.devserver import DevServer
from store.migrate import head_revision
from tests.control.cli_harness import Cli


async def _new_namespace(address: str) -> str:
    name = f"setup-{uuid.uuid4().hex[:8]}"
    client = await Client.connect(address)
    retention = Duration()
    retention.FromTimedelta(timedelta(days=1))
    await client.workflow_service.register_namespace(
        RegisterNamespaceRequest(namespace=name, workflow_execution_retention_period=retention)
    )
    return name


def test_setup_migrates_the_store_and_registers_the_search_attributes_once(
    temporal_dev_server: DevServer, tmp_path: Path
) -> None:
    namespace = asyncio.run(_new_namespace(temporal_dev_server.address))
    cli = Cli.isolated(tmp_path).with_env(
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address, SPECIALISTS_NAMESPACE=namespace
    )
    first = cli.run("setup", "--json", timeout=90).ok()
    assert first == {
        "schema_revision": head_revision(),
        "namespace": namespace,
        "search_attributes_added": list(SEARCH_ATTRIBUTES),
    }
    again = cli.run("setup", "--json", timeout=90).ok()
    assert again["search_attributes_added"] == [] and again["schema_revision"] == head_revision()
    assert cli.run("status", "--json").ok()["database"]["schema"]["migration_needed"] is False


def test_setup_without_a_reachable_temporal_is_an_exit_5_error(tmp_path: Path) -> None:
    cli = Cli.isolated(tmp_path).with_env(SPECIALISTS_TEMPORAL_ADDRESS="127.0.0.1:9")
    result = cli.run("setup", "--json", timeout=90)
    assert result.exit_code == 5
    assert "temporal_unreachable" in result.stdout + result.stderr
