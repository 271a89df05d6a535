"""requirements.lock pins every dependency pyproject.toml declares, at a version its specifier allows,
with hashes: a platform engineer's `pip install --require-hashes -r requirements.lock` installs what
the tests ran against."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==([^\s\\;]+)")


def _declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    return [Requirement(text) for text in [*project["dependencies"], *extras["dev"], *extras["dev-server"]]]


def _pins() -> tuple[dict[str, str], dict[str, int]]:
    pins: dict[str, str] = {}
    hashes: dict[str, int] = {}
    current = None
    for line in (ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines():
        match = PIN.match(line)
        if match:
            current = canonicalize_name(match.group(1))
            pins[current] = match.group(3)
            hashes[current] = 0
        elif current and line.strip().startswith("--hash=sha256:"):
            hashes[current] += 1
    return pins, hashes


def test_every_declared_dependency_is_pinned_at_a_version_its_specifier_allows() -> None:
    pins, _ = _pins()
    for requirement in _declared():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not in requirements.lock: run `make lock`"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"requirements.lock pins {name}=={pins[name]}, outside {requirement}: run `make lock`"
        )


def test_every_pin_carries_its_hashes() -> None:
    pins, hashes = _pins()
    assert len(pins) > 50
    assert [name for name, count in hashes.items() if count == 0] == []
