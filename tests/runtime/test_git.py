"""``runtime.git``: the one git runner — argument vector, timeout, stdin, bounded output, and one
pinned environment and configuration whatever the caller's environment or global configuration."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from contracts.errors import Refused, ServiceUnavailable
from runtime.git import (
    PINNED_CONFIG,
    Git,
    GitNotFound,
    GitOutputTooLarge,
    GitTimedOut,
    git_argv,
    git_environment,
    run_git,
)
from tests.store.git_repository import git, make_working_tree


def _fake_git(directory: Path, script: str) -> Path:
    directory.mkdir()
    program = directory / "git"
    program.write_text("#!/bin/sh\n" + script)
    program.chmod(0o755)
    return directory


def test_only_path_home_and_tmpdir_of_the_caller_reach_git(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-git")
    monkeypatch.setenv("XDG_CONFIG_HOME", "/somewhere/config")
    monkeypatch.setenv("GIT_DIR", "/somewhere/else")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'core.hookspath'='/tmp/hooks'")
    environment = git_environment()
    assert {name for name in environment if not name.startswith("GIT_")} - {"LC_ALL"} <= {
        "PATH",
        "HOME",
        "TMPDIR",
    }
    assert "GIT_DIR" not in environment and "GIT_CONFIG_PARAMETERS" not in environment
    assert environment["GIT_CONFIG_GLOBAL"] == os.devnull
    assert environment["GIT_CONFIG_NOSYSTEM"] == "1"
    assert environment["GIT_TERMINAL_PROMPT"] == "0"
    assert environment["GIT_NO_REPLACE_OBJECTS"] == "1"
    assert environment["GIT_NO_LAZY_FETCH"] == "1"
    assert environment["LC_ALL"] == "C"


def test_every_call_carries_the_pins_before_the_callers_settings_and_arguments(tmp_path: Path) -> None:
    argv = git_argv(tmp_path, ("status",), (("filter.lfs.clean", ""),))
    assert argv[:6] == [
        "git",
        "--no-pager",
        "--no-replace-objects",
        "--literal-pathspecs",
        "-C",
        str(tmp_path),
    ]
    settings = [argv[i + 1] for i, item in enumerate(argv) if item == "-c"]
    assert settings[: len(PINNED_CONFIG)] == [f"{key}={value}" for key, value in PINNED_CONFIG]
    assert settings[-1] == "filter.lfs.clean="
    assert argv[-1] == "status"
    pinned = dict(PINNED_CONFIG)
    assert pinned["core.hooksPath"] == os.devnull
    assert pinned["protocol.allow"] == "never"
    assert pinned["gpg.program"] == os.devnull
    assert pinned["log.showSignature"] == "false"
    assert pinned["core.fsmonitor"] == "false"
    assert pinned["diff.external"] == ""


def test_the_users_global_configuration_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = make_working_tree(tmp_path / "repo")
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".gitconfig").write_text("[specialists]\n\tprobe = from-home\n")
    (home / ".config" / "git" / "config").write_text("[specialists]\n\tprobe = from-xdg\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    result = run_git(tree, "config", "--get", "specialists.probe")
    assert result.returncode == 1 and result.stdout == b""
    git(tree, "config", "specialists.probe", "from-the-repository")
    assert Git(tree).text("config", "--get", "specialists.probe") == "from-the-repository"


def test_stdin_is_given_or_closed(tmp_path: Path) -> None:
    tree = make_working_tree(tmp_path / "repo")
    digest = Git(tree).ok("hash-object", "--stdin", stdin=b"hello\n").strip()
    assert digest == b"ce013625030ba8dba906f756967f9e9ca394464a"
    closed = run_git(tree, "hash-object", "--stdin")
    assert closed.returncode == 0
    assert closed.stdout.strip() == b"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  # the empty blob


def test_a_failing_call_is_returned_and_ok_raises_git_failed(tmp_path: Path) -> None:
    tree = make_working_tree(tmp_path / "repo")
    result = run_git(tree, "rev-parse", "--verify", "--quiet", "refs/heads/absent")
    assert result.returncode != 0
    with pytest.raises(ServiceUnavailable) as failed:
        Git(tree).ok("cat-file", "-p", "0" * 40)
    assert failed.value.code == "git_failed"
    assert str(tree) in failed.value.message


def test_git_missing_from_path_is_git_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(GitNotFound) as missing:
        run_git(tmp_path, "status")
    assert isinstance(missing.value, ServiceUnavailable)
    assert missing.value.code == "git_unavailable"


def test_a_call_over_its_timeout_is_killed_and_git_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(_fake_git(tmp_path / "bin", f"exec {shutil.which('sleep')} 30\n")))
    with pytest.raises(GitTimedOut) as timed_out:
        run_git(tmp_path, "status", timeout=0.5)
    assert isinstance(timed_out.value, ServiceUnavailable)
    assert timed_out.value.code == "git_unavailable"
    assert "0.5 s" in timed_out.value.message


def test_output_over_the_bound_fails_and_is_never_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "PATH", str(_fake_git(tmp_path / "bin", f"{shutil.which('head')} -c 100000 /dev/zero\n"))
    )
    assert len(run_git(tmp_path, "cat-file", max_output=100_000).stdout) == 100_000
    with pytest.raises(GitOutputTooLarge) as too_large:
        run_git(tmp_path, "cat-file", max_output=99_999)
    assert isinstance(too_large.value, Refused)
    assert too_large.value.code == "git_output_too_large"


def test_the_callers_git_variables_do_not_redirect_a_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = make_working_tree(tmp_path / "repo")
    decoy = make_working_tree(tmp_path / "decoy")
    git(decoy, "checkout", "--quiet", "feature")
    monkeypatch.setenv("GIT_DIR", str(decoy / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(decoy))
    assert Git(tree).text("symbolic-ref", "--short", "HEAD") == "main"
