"""Keeping a bench's standard output for its JSON report alone.

The Temporal SDK's core writes its own log lines (a warning such as "Task not found when completing")
straight to file descriptor 1, which would corrupt the JSON a bench prints. While a bench runs, file
descriptor 1 is pointed at standard error; the report is written to the real standard output.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def report_on_stdout() -> Iterator[Callable[[str], None]]:
    """Inside, anything written to file descriptor 1 goes to standard error; the function it yields
    writes its text (plus a newline) to the real standard output."""
    sys.stdout.flush()
    real_stdout = os.dup(1)
    os.dup2(2, 1)

    def emit(text: str) -> None:
        data = (text + "\n").encode("utf-8")
        while data:
            data = data[os.write(real_stdout, data) :]

    try:
        yield emit
    finally:
        sys.stdout.flush()
        os.dup2(real_stdout, 1)
        os.close(real_stdout)
