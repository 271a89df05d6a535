"""``worker``: what the worker does for itself before it polls."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from worker import compile_workflow_modules


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
