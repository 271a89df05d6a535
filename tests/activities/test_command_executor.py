"""The ``command`` executor through ``execute_worktree_attempt``: the repository's agent (here a small
Python script run by the system's ``python3``, the only kind of program the sandbox can see) runs
confined by bubblewrap in the fresh worktree with a reduced environment, no network, a wall-clock
budget and bounded output; every fail-closed check of the patch executor still applies after it exits.
Real bubblewrap, real git repository and SQLite store in ``tmp_path``."""

from __future__ import annotations

import dataclasses
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

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
from tests.activities.confined import SYSTEM_PYTHON, requires_bubblewrap
from tests.identity import STORE_ANCHOR, bootstrap
from tests.store.git_repository import git, make_working_tree, register_repository

pytestmark = requires_bubblewrap

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

SLEEPER_MARK = "60.4242"
"""The sleeping agent's child sleeps this long: the test finds it on the host by this argument."""

SLEEPING_AGENT = f"""
import subprocess, time
child = subprocess.Popen(["sleep", "{SLEEPER_MARK}"])
print("started", flush=True)
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
import pathlib, subprocess, sys
readme = pathlib.Path("docs/README.md")
readme.write_text(readme.read_text() + "committed by the agent\\n")
git = ["git", "-c", "user.name=Agent", "-c", "user.email=agent@example.invalid", "-c", "commit.gpgSign=false"]
done = subprocess.run([*git, "commit", "--quiet", "-am", "agent commits"], capture_output=True, text=True)
print("commit exit", done.returncode, done.stderr.strip().splitlines()[:1], file=sys.stderr)
sys.exit(done.returncode)
"""


@pytest.fixture
def setup(tmp_path: Path) -> tuple[ExecutionActivities, str, Path]:
    tree = make_working_tree(tmp_path / ALIAS)
    shared = SharedStore(f"sqlite:///{tmp_path / 'specialists.db'}", STORE_ANCHOR)
    store = shared.get()
    bootstrap(store)
    register_repository(store, ALIAS, tree, "main", "alice")
    config = ActivityConfig(database_url="unused", state_dir=tmp_path / "state")
    return ExecutionActivities(config, shared), git(tree, "rev-parse", "HEAD"), tmp_path


def _config(tmp_path: Path, source: str, *args: str, **settings: object) -> RepositoryConfig:
    return RepositoryConfig.model_validate(
        {"executor": RepositoryExecutor.COMMAND, "command": [SYSTEM_PYTHON, "-c", source, *args], **settings}
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
    assert report.confined and report.confinement.startswith("bubblewrap")
    assert report.network_isolated and not report.network_granted
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
    # PWD is bubblewrap's: it sets it to the directory it starts the command in, the worktree.
    assert set(environment) == {"PATH", "LANG", "HOME", "TMPDIR", "PWD", HARMLESS[0]}
    assert environment["PWD"] == str(tmp_path / "state" / "worktrees" / RUN_ID / "attempt-1")
    assert environment["PATH"] == "/usr/local/bin:/usr/bin:/bin" and environment["LANG"] == "C.UTF-8"
    assert environment[HARMLESS[0]] == HARMLESS[1]
    everything = report.model_dump_json() + raised
    for value in SECRETS.values():
        assert value not in everything
    assert HARMLESS[1] in everything
    assert report.confined and report.network_isolated
    assert "connect: failed" in report.stdout


def test_a_network_grant_runs_the_agent_without_isolation_and_says_so(
    setup: tuple[ExecutionActivities, str, Path], listener: int
) -> None:
    activities, base, tmp_path = setup
    config = _config(tmp_path, ENVIRONMENT_AGENT, str(listener), "0", network=True)
    report = _run(activities, base, config).command
    assert report is not None and not report.network_isolated and report.network_granted
    assert report.confined and "the worker's network (network = true was approved)" in report.confinement
    assert "connect: ok" in report.stdout


def _running_with(argument: str) -> list[int]:
    """The host's processes, still running (not zombies), with ``argument`` in their command line."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
            status = (entry / "status").read_text().splitlines()
            state = next(line for line in status if line.startswith("State:"))
        except (OSError, StopIteration):
            continue
        if argument.encode() in words and "Z" not in state.split()[1]:
            found.append(int(entry.name))
    return found


def _none_left(argument: str) -> bool:
    """No process with ``argument`` is running within 5 s (SIGKILL is delivered asynchronously)."""
    deadline = time.monotonic() + 5
    while _running_with(argument) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _running_with(argument)


def test_an_agent_over_its_budget_fails_command_timeout_and_its_process_group_is_gone(
    setup: tuple[ExecutionActivities, str, Path],
) -> None:
    activities, base, tmp_path = setup
    error = _failure(activities, base, _config(tmp_path, SLEEPING_AGENT, command_timeout_seconds=1))
    assert error.type == "command_timeout"
    report = _report(error)
    assert report.timed_out and report.exit_status is None and 1 <= report.duration_seconds < 10
    assert report.stdout == "started\n" and report.confined
    # Killing bubblewrap's process group ended the sandbox's process namespace: the agent's
    # background child, which had its own session inside, is gone too.
    assert _none_left(SLEEPER_MARK), f"still running: {_running_with(SLEEPER_MARK)}"


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


def test_an_agent_that_commits_in_its_worktree_cannot_write_the_objects_and_fails_command_failed(
    setup: tuple[ExecutionActivities, str, Path],
) -> None:
    activities, base, tmp_path = setup
    source = tmp_path / ALIAS
    objects_before = sorted(p.name for p in (source / ".git" / "objects").rglob("*"))
    error = _failure(activities, base, _config(tmp_path, COMMITTING_AGENT))
    assert error.type == "command_failed", error.message
    report = _report(error)
    assert report.exit_status not in (0, None) and "Read-only file system" in report.stderr
    assert git(source, "rev-parse", "HEAD") == base
    assert sorted(p.name for p in (source / ".git" / "objects").rglob("*")) == objects_before


def test_the_command_executor_without_a_command_configuration_is_refused(
    setup: tuple[ExecutionActivities, str, Path],
) -> None:
    activities, base, _ = setup
    error = _failure(activities, base, RepositoryConfig())
    assert error.type == "execution_failed"
