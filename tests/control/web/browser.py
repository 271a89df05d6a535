"""Mission Control under test: the console as a process (``specialists web``) beside a worker, and
Debian's Chromium driven by Playwright (no browser download; as root the Chromium sandbox is off).
Screenshots of the main pages go to ``$MISSION_CONTROL_SCREENSHOTS`` when it is set (``make
screenshots`` sets it to ``docs/screenshots/``, which the README shows), else to the test's own
temporary directory."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.control.cli_harness import Cli

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOTS_ENV = "MISSION_CONTROL_SCREENSHOTS"


def require_chromium() -> None:
    """Skip where Debian's Chromium is absent (``.ci/run`` installs it)."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def running_console(
    cli: Cli, log_path: Path, *, timeout: float = 30.0, errors: Path | None = None
) -> Iterator[str]:
    """``specialists web`` on a free loopback port with the CLI's environment; yields its base URL.
    Its stdout goes to ``log_path``, and so does its stderr unless ``errors`` names another file."""
    port = free_port()
    with log_path.open("wb") as log, contextlib.ExitStack() as files:
        error_log = subprocess.STDOUT if errors is None else files.enter_context(errors.open("wb"))
        process = subprocess.Popen(
            [sys.executable, "-m", "control.cli", "web", "--port", str(port)],
            cwd=cli.cwd,
            env=cli.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=error_log,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=1) as answer:  # noqa: S310 - loopback
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None:
                raise AssertionError(f"console exited with {process.returncode}: {log_path.read_text()}")
            if time.monotonic() >= deadline:
                raise AssertionError(f"console not answering after {timeout}s: {log_path.read_text()}")
            time.sleep(0.1)
        yield base
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


@contextlib.contextmanager
def browser() -> Iterator[Any]:
    """A headless Chromium (Playwright's sync API)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


def sign_in(page: Any, base: str, cli: Cli, actor: str) -> None:
    """Sign ``page`` in as ``actor``: read the challenge, sign it with the actor's CLI, paste the token."""
    page.goto(f"{base}/sign-in")
    command = page.get_by_test_id("sign-in-command").inner_text()
    code = command.split()[3]
    token = cli.run("web", "sign-in", code, "--actor", actor, "--json").ok()["token"]
    page.fill("#token", token)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")
    assert page.get_by_test_id("actor").inner_text() == actor


def screenshot(page: Any, name: str, fallback: Path) -> Path:
    """A full-page PNG of ``page`` named ``name`` (see the module docstring for where)."""
    directory = Path(os.environ.get(SCREENSHOTS_ENV) or fallback)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def api(page: Any, base: str, path: str) -> dict[str, Any]:
    """A JSON twin fetched with the page's session."""
    answer = page.request.get(f"{base}{path}")
    return dict(json.loads(answer.text()))
