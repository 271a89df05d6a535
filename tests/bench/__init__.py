"""Bench smoke tests: each runs one ``bench/*.py`` script end to end (:func:`bench_report`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"


def bench_report(script: str, *args: str, cwd: Path, timeout: float = 120) -> dict[str, Any]:
    """Run ``bench/<script>`` with ``args`` in ``cwd``, without any ``SPECIALISTS_*`` variable, and
    return the one JSON object it prints. Fails the test when it exits non-zero (with the end of its
    standard error) or prints anything but JSON."""
    completed = subprocess.run(
        [sys.executable, str(BENCH_DIR / script), *args],
        cwd=cwd,
        env={name: value for name, value in os.environ.items() if not name.startswith("SPECIALISTS_")},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    report: dict[str, Any] = json.loads(completed.stdout)
    return report
