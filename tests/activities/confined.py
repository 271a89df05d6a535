"""What tests of confined commands share: the system's ``python3`` (the sandbox sees only the system
directories, so a virtual environment's interpreter is not there) and the one reason such a test may
skip — bubblewrap is not installed (``.ci/run`` installs it)."""

from __future__ import annotations

import shutil
from typing import Final

import pytest

from activities.sandbox import SAFE_PATH, find_bubblewrap

SYSTEM_PYTHON: Final = shutil.which("python3", path=SAFE_PATH) or "python3"
"""The system's Python, which confined test agents and verify commands run with."""

requires_bubblewrap = pytest.mark.skipif(
    find_bubblewrap() is None,
    reason=f"bubblewrap (bwrap) is not installed on {SAFE_PATH}: commands cannot be confined here "
    "(.ci/run installs it with apt-get)",
)
"""Skip a test that runs a confined command only when bubblewrap is absent; anywhere it is installed
the test runs, and a bubblewrap that cannot set up its sandbox fails it."""
