"""``specialists web`` at start-up (docs/architecture.md "Mission Control"): a console that has no
trust anchor — neither the action token nor ``SPECIALISTS_TRUST_ROOT`` — can verify nobody, so it
says on stderr that no sign-in can work until it has one, naming both variables; with either it
says nothing of the kind; a payload keys file it cannot use stops it before it listens. The console
runs as a process; no Temporal server is needed."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.control.cli_harness import Cli
from tests.control.web.browser import running_console


def _started(cli: Cli, logs: Path) -> tuple[str, str]:
    """What the console printed on stdout and on stderr by the time it answered and was stopped."""
    logs.mkdir()
    out, err = logs / "web.out", logs / "web.err"
    with running_console(cli, out, errors=err):
        pass  # running_console returns once the console answers /healthz
    return out.read_text(encoding="utf-8"), err.read_text(encoding="utf-8")


def test_a_console_without_a_trust_anchor_says_at_start_that_no_sign_in_can_work(tmp_path: Path) -> None:
    cli = Cli.isolated(tmp_path)
    cli.call("actors", "register", "alice", "--name", "Alice", "--json").ok()

    stdout, stderr = _started(cli.without_token(), tmp_path / "unanchored")

    assert "Mission Control on http://127.0.0.1:" in stdout
    assert "warning [trust_root_not_configured]" in stderr and "no sign-in can work" in stderr
    assert "SPECIALISTS_ACTION_TOKEN_FILE" in stderr and "SPECIALISTS_TRUST_ROOT" in stderr
    assert "warning" not in stdout


def test_a_console_with_the_token_or_the_pinned_trust_root_gives_no_such_warning(tmp_path: Path) -> None:
    cli = Cli.isolated(tmp_path)
    root = cli.call("actors", "register", "alice", "--name", "Alice", "--json").ok()["trust_root"]

    pinned = cli.without_token().with_env(SPECIALISTS_TRUST_ROOT=root)
    for name, anchored in (("token", cli), ("pinned", pinned)):
        stdout, stderr = _started(anchored, tmp_path / name)
        assert "Mission Control on http://127.0.0.1:" in stdout
        assert "trust_root_not_configured" not in stderr, stderr


def test_a_console_refuses_to_start_with_a_payload_keys_file_it_cannot_use(tmp_path: Path) -> None:
    missing = tmp_path / "absent-keys.json"
    cli = Cli.isolated(tmp_path, SPECIALISTS_CODEC_KEYS_FILE=str(missing))

    with socket.socket() as taken:  # were it not refused first, it would fail to listen, not hang
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        result = cli.call("web", "--port", str(taken.getsockname()[1]))

    assert result.exit_code == 2
    assert "codec_keys_unreadable" in result.stderr and "SPECIALISTS_CODEC_KEYS_FILE" in result.stderr
    assert "Mission Control on" not in result.stdout
