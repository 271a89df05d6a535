"""The ``command`` executor through ``execute_worktree_attempt``: the repository's agent (here a small
Python script) runs in the fresh worktree with a reduced environment, no network where the machine
allows it, a wall-clock budget and bounded output; every fail-closed check of the patch executor still
applies after it exits. Real git repository and SQLite store in ``tmp_path``."""

from __future__ import annotations

import dataclasses
import json
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.command_executor import network_isolation_available
from activities.config import ActivityConfig
from activities.execution import ExecutionActivities
from activities.store_access import SharedStore
from contracts.config import RepositoryConfig, RepositoryExecutor
from contracts.execution import (
    MAX_COMMAND_OUTPUT_BYTES,
    CommandReport,
    ExecuteAttemptRequest,
    WorktreeExecution,
    command_task_text,
)
from contracts.failures import WorktreeFailureDetail, failure_detail
from tests.store.git_repository import git, make_working_tree, register_repository

RUN_ID = "SOR-COMMANDEXECTEST1"
ALIAS = "orders-service"
TASK_TEXT = command_task_text("Add an index note to the docs.", ["file:docs/README.md"], ["max 40 files"])
SECRETS = {
    "OPENAI_API_KEY": "sk-openai-secret-value-0001",
    "ANTHROPIC_API_KEY": "sk-ant-secret-value-0002",
    "SPECIALISTS_ACTION_TOKEN": "action-token-secret-value-0003",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-value-0004",
}
HARMLESS = ("AGENT_MODE", "harmless-visible-value")

EDITING_AGENT = """
import pathlib, sys
task = sys.stdin.read()
readme = pathlib.Path("docs/README.md")
readme.write_text(readme.read_text() + "an index note\\n")
pathlib.Path("notes").mkdir()
pathlib.Path("notes/task.txt").write_text(task)
print("edited docs/README.md")
"""

ENVIRONMENT_AGENT = """
import json, os, socket, sys
print(json.dumps(dict(os.environ), sort_keys=True))
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3).close()
    print("connect: ok")
except OSError as error:
    print("connect: failed", type(error).__name__)
sys.stdout.flush()
sys.exit(int(sys.argv[2]))
"""

SLEEPING_AGENT = """
import os, subprocess, sys, time
child = subprocess.Popen(["sleep", "60"])
print(os.getpid(), child.pid, flush=True)
time.sleep(60)
"""

CHATTY_AGENT = f"""
import sys
sys.stdout.write("x" * {MAX_COMMAND_OUTPUT_BYTES + 10})
"""

FAILING_AGENT = """
import sys
print("giving up", file=sys.stderr)
sys.exit(7)
"""

COMMITTING_AGENT = """
import pathlib, subprocess
readme = pathlib.Path("docs/README.md")
readme.write_text(readme.read_text() + "committed by the agent\\n")
git = ["git", "-c", "user.name=Agent", "-c", "user.email=agent@example.invalid", "-c", "commit.gpgSign=false"]
subprocess.run([*git, "commit", "--quiet", "-am", "agent commits"], check=True)
"""


@pytest.fixture
def setup(tmp_path: Path) -> tuple[ExecutionActivities, str, Path]:
    tree = make_working_tree(tmp_path / ALIAS)
    shared = SharedStore(f"sqlite:///{tmp_path / 'specialists.db'}")
    store = shared.get()
    store.register_actor("alice", "Alice", None)
    register_repository(store, ALIAS, tree, "main", "alice")
    config = ActivityConfig(database_url="unused", state_dir=tmp_path / "state")
    return ExecutionActivities(config, shared), git(tree, "rev-parse", "HEAD"), tmp_path


def _config(tmp_path: Path, source: str, *args: str, **settings: object) -> RepositoryConfig:
    script = tmp_path / "agent.py"
    script.write_text(source)
    return RepositoryConfig.model_validate(
        {"executor": RepositoryExecutor.COMMAND, "command": [sys.executable, str(script), *args], **settings}
    )


def _run(activities: ExecutionActivities, base: str, config: RepositoryConfig) -> WorktreeExecution:
    environment = ActivityEnvironment()
    environment.info = dataclasses.replace(ActivityEnvironment.default_info(), attempt=1)
    request = ExecuteAttemptRequest(
        run_id=RUN_ID,
        repo_alias=ALIAS,
        base_commit=base,
        patch="",
        executor="command",
        repository_config=config,
        task_text=TASK_TEXT,
    )
    result: WorktreeExecution = environment.run(activities.execute_worktree_attempt, request)
    return result


def _failure(activities: ExecutionActivities, base: str, config: RepositoryConfig) -> ApplicationError:
    with pytest.raises(ApplicationError) as failed:
        _run(activities, base, config)
    assert failed.value.non_retryable
    return failed.value


def _report(error: ApplicationError) -> CommandReport:
    detail = failure_detail(error, WorktreeFailureDetail)
    assert detail is not None and Path(detail.location.worktree).is_dir()
    assert detail.command is not None
    return detail.command


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port on loopback the test listens on."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(0.1)
        yield server.getsockname()[1]


def test_the_agent_edits_the_worktree_with_the_task_on_stdin_and_the_evidence_is_gits(
    setup: tuple[ExecutionActivities, str, Path],
) -> None:
    activities, base, tmp_path = setup
    result = _run(activities, base, _config(tmp_path, EDITING_AGENT))
    assert result.applied is None
    report = result.command
    assert report is not None and report.exit_status == 0 and not report.timed_out
    assert report.stdout == "edited docs/README.md\n" and report.stdout_bytes == len(report.stdout)
    assert report.network_isolated is network_isolation_available() and not report.network_granted
    evidence = result.evidence
    assert {(f.path, f.status.value) for f in evidence.files} == {
        ("docs/README.md", "modified"),
        ("notes/task.txt", "added"),
    }
    assert evidence.diff is not None and "+an index note" in evidence.diff
    assert (result.attempt.worktree / "notes" / "task.txt").read_text() == TASK_TEXT
    assert "Add an index note" in TASK_TEXT and "file:docs/README.md" in TASK_TEXT
    # The agent's HOME and TMPDIR are fresh directories beside the worktree, not part of the change.
    assert (result.attempt.evidence_dir / "command-home").is_dir()


@pytest.mark.parametrize("exit_status", [0, 3], ids=["exits-0", "exits-3"])
def test_the_agent_sees_only_the_reduced_environment_and_no_network(
    setup: tuple[ExecutionActivities, str, Path],
    monkeypatch: pytest.MonkeyPatch,
    listener: int,
    exit_status: int,
) -> None:
    activities, base, tmp_path = setup
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(*HARMLESS)
    config = _config(
        tmp_path, ENVIRONMENT_AGENT, str(listener), str(exit_status), env=[HARMLESS[0], "UNSET_VARIABLE"]
    )
    if exit_status == 0:
        report = _run(activities, base, config).command
        assert report is not None
        raised = ""
    else:
        error = _failure(activities, base, config)
        assert error.type == "command_failed" and "status 3" in error.message
        report = _report(error)
        raised = f"{error.message} {error.details!r}"
    environment = json.loads(report.stdout.splitlines()[0])
    assert set(environment) == {"PATH", "LANG", "HOME", "TMPDIR", HARMLESS[0]}
    assert environment["PATH"] == "/usr/local/bin:/usr/bin:/bin" and environment["LANG"] == "C.UTF-8"
    assert environment[HARMLESS[0]] == HARMLESS[1]
    everything = report.model_dump_json() + raised
    for value in SECRETS.values():
        assert value not in everything
    assert HARMLESS[1] in everything
    if network_isolation_available():
        assert report.network_isolated
        assert "connect: failed" in report.stdout
    else:
        assert not report.network_isolated, "the report must say the agent was not isolated"


def test_a_network_grant_runs_the_agent_without_isolation_and_says_so(
    setup: tuple[ExecutionActivities, str, Path], listener: int
) -> None:
    activities, base, tmp_path = setup
    config = _config(tmp_path, ENVIRONMENT_AGENT, str(listener), "0", network=True)
    report = _run(activities, base, config).command
    assert report is not None and not report.network_isolated and report.network_granted
    assert "connect: ok" in report.stdout


def _gone(pid: int) -> bool:
    """``pid`` has stopped running within 5 s (SIGKILL is delivered asynchronously)."""
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    state = next(line for line in status.splitlines() if line.startswith("State:"))
    return "Z" not in state.split()[1]  # a zombie waiting for its reaper has stopped running


def test_an_agent_over_its_budget_fails_command_timeout_and_its_process_group_is_gone(
    setup: tuple[ExecutionActivities, str, Path],
) -> None:
    activities, base, tmp_path = setup
    error = _failure(activities, base, _config(tmp_path, SLEEPING_AGENT, command_timeout_seconds=1))
    assert error.type == "command_timeout"
    report = _report(error)
    assert report.timed_out and report.exit_status is None and 1 <= report.duration_seconds < 10
    agent, child = (int(pid) for pid in report.stdout.split())
    assert _gone(agent) and _gone(child)


def test_output_over_the_bound_fails_command_output_too_large(
    setup: tuple[ExecutionActivities, str, Path],
) -> None:
    activities, base, tmp_path = setup
    error = _failure(activities, base, _config(tmp_path, CHATTY_AGENT))
    assert error.type == "command_output_too_large" and "stdout" in error.message
    report = _report(error)
    assert report.output_too_large and report.stdout_bytes == MAX_COMMAND_OUTPUT_BYTES


def test_a_non_zero_exit_fails_command_failed_with_the_status(
    setup: tuple[ExecutionActivities, str, Path],
) -> None:
    activities, base, tmp_path = setup
    error = _failure(activities, base, _config(tmp_path, FAILING_AGENT))
    assert error.type == "command_failed" and "exited with status 7" in error.message
    report = _report(error)
    assert report.exit_status == 7 and report.stderr == "giving up\n"


def test_an_agent_that_commits_fails_new_commit(setup: tuple[ExecutionActivities, str, Path]) -> None:
    activities, base, tmp_path = setup
    error = _failure(activities, base, _config(tmp_path, COMMITTING_AGENT))
    assert error.type == "new_commit", error.message
    assert _report(error).exit_status == 0


def test_the_command_executor_without_a_command_configuration_is_refused(
    setup: tuple[ExecutionActivities, str, Path],
) -> None:
    activities, base, _ = setup
    error = _failure(activities, base, RepositoryConfig())
    assert error.type == "execution_failed"
