"""``worker``: what the worker does for itself before it polls, and its readiness while its store opens."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

import pytest

from contracts.errors import ServiceUnavailable
from runtime.health import Health
from worker import compile_workflow_modules
from worker.process import open_store_until_ready


def _load(path: Path, name: str) -> type:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    workflow_class: type = module.Flow
    return workflow_class


def test_workflow_modules_get_a_bytecode_cache_even_when_python_writes_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The sandbox re-imports a workflow's module for every workflow it runs; without a cache each
    # import compiles the source again.
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    source = tmp_path / "cached_flow.py"
    source.write_text("class Flow:\n    pass\n", encoding="utf-8")
    flow = _load(source, "cached_flow")
    cached = Path(importlib.util.cache_from_source(str(source)))
    assert not cached.exists()
    try:
        compile_workflow_modules([flow])
    finally:
        sys.modules.pop("cached_flow", None)
    assert cached.exists() and cached.stat().st_mtime >= source.stat().st_mtime


class _FlakyStore:
    """A store whose first ``failures`` opens fail as an unreachable database does."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.opens = 0

    def get(self) -> object:
        self.opens += 1
        if self.opens <= self.failures:
            raise ServiceUnavailable(
                "database_unreachable", "cannot use the database at postgresql://u:***@db"
            )
        return object()


@pytest.mark.parametrize("failures", [0, 2])
def test_a_worker_is_ready_only_once_its_store_opens_and_keeps_trying_until_it_does(failures: int) -> None:
    store = _FlakyStore(failures)
    health = Health()
    readiness: list[bool] = []

    async def scenario() -> None:
        opening = asyncio.ensure_future(
            open_store_until_ready(store.get, health, asyncio.Event(), retry_s=0.01)
        )
        while not opening.done():
            readiness.append(health.readiness()[0] == 200)
            await asyncio.sleep(0)
        await opening

    asyncio.run(scenario())
    assert store.opens == failures + 1
    assert health.readiness() == (200, {"ready": True})
    assert not any(readiness[1:]) if failures else True


def test_a_worker_stopped_before_its_store_opens_never_becomes_ready() -> None:
    store = _FlakyStore(failures=10**6)
    health = Health()

    async def scenario() -> None:
        stop = asyncio.Event()
        opening = asyncio.ensure_future(open_store_until_ready(store.get, health, stop, retry_s=0.01))
        await asyncio.sleep(0.05)
        stop.set()
        await asyncio.wait_for(opening, 5)

    asyncio.run(scenario())
    assert store.opens >= 2
    assert health.readiness() == (503, {"ready": False})
