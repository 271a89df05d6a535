"""Confinement of the ``command`` executor's agent and of verify commands, through
``execute_worktree_attempt`` (docs/architecture.md "Worktree execution"): a hostile agent — here a
Python script run by the system's ``python3`` — tries to change the source repository (a file, a ref,
its HEAD, ``git commit`` + ``git reset`` there), to read the state directory, other runs' evidence,
other repositories and the worker's environment through ``/proc/1/environ``, to reach a listener on the
worker's loopback, to write through a symlink out of the worktree; every attempt fails and the source
repository is verified unchanged. Without bubblewrap the attempt fails closed before anything runs,
unless the configuration accepts running unconfined. Real bubblewrap, real git repositories, SQLite
store in ``tmp_path``."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.config import ActivityConfig
from activities.execution import ExecutionActivities
from activities.sandbox import SAFE_PATH, find_bubblewrap
from activities.store_access import SharedStore
from contracts.config import RepositoryConfig, RepositoryExecutor
from contracts.execution import CommandReport, ExecuteAttemptRequest, WorktreeExecution
from contracts.failures import WorktreeFailureDetail, failure_detail
from tests.activities.confined import SYSTEM_PYTHON, requires_bubblewrap
from tests.identity import STORE_ANCHOR, bootstrap
from tests.store.git_repository import git, make_working_tree, register_repository

pytestmark = requires_bubblewrap

RUN_ID = "SOR-CONFINEMENTTEST1"
ALIAS = "orders-service"
OTHER_ALIAS = "payments-service"
SECRETS = {
    "SPECIALISTS_ACTION_TOKEN": "action-token-secret-value-0001",
    "OPENAI_API_KEY": "sk-openai-secret-value-0002",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-value-0003",
}
PATCH = (
    "diff --git a/docs/README.md b/docs/README.md\n--- a/docs/README.md\n+++ b/docs/README.md\n"
    "@@ -1 +1,2 @@\n docs\n+an index note\n"
)

PROBING_AGENT = """
import json, os, socket, subprocess, sys
results = {}
def attempt(label, action):
    try:
        value = action()
    except OSError as error:
        results[label] = f"failed: {type(error).__name__}: {error.strerror}"
        return
    if isinstance(value, str) and value.startswith("exit "):
        results[label] = "failed: " + value
    elif value is None or value == 0:
        results[label] = "ok"
    else:
        results[label] = "ok: " + value
def write(path):
    with open(path, "a") as handle:
        handle.write("written by the agent\\n")
def read(path):
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8", "backslashreplace")
def run(*argv):
    done = subprocess.run(list(argv), capture_output=True, text=True)
    lines = done.stderr.strip().splitlines()
    return 0 if done.returncode == 0 else f"exit {done.returncode}: {lines[-1] if lines else ''}"
def connect(port):
    socket.create_connection(("127.0.0.1", port), timeout=3).close()
for label, kind, *args in json.loads(sys.argv[1]):
    if kind == "write":
        attempt(label, lambda: write(args[0]))
    elif kind == "read":
        attempt(label, lambda: read(args[0]))
    elif kind == "list":
        attempt(label, lambda: json.dumps(sorted(os.listdir(args[0]))))
    elif kind == "run":
        attempt(label, lambda: run(*args))
    elif kind == "connect":
        attempt(label, lambda: connect(int(args[0])))
    elif kind == "symlink":
        attempt(label, lambda: os.symlink(args[0], args[1]))
results["environment"] = sorted(os.environ)
print(json.dumps(results))
"""

GIT = ["git", "-c", "user.name=Agent", "-c", "user.email=agent@example.invalid", "-c", "commit.gpgSign=false"]


@dataclasses.dataclass(frozen=True)
class Setup:
    activities: ExecutionActivities
    shared: SharedStore
    base: str
    source: Path
    other: Path
    state: Path
    tmp_path: Path

    def with_bwrap(self, program: str) -> ExecutionActivities:
        """The activities of a worker whose bubblewrap is ``program``."""
        config = ActivityConfig(database_url="unused", state_dir=self.state)
        return ExecutionActivities(config, self.shared, bwrap_path=program)


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    source = make_working_tree(tmp_path / ALIAS)
    other = make_working_tree(tmp_path / OTHER_ALIAS)
    (other / "secret.txt").write_text("the other repository's file\n")
    state = tmp_path / "state"
    state.mkdir()
    (state / "secret.txt").write_text("a file of the state directory\n")
    other_run = state / "worktrees" / "SOR-ANOTHERRUN00001" / "attempt-1.evidence"
    other_run.mkdir(parents=True)
    (other_run / "secret.txt").write_text("another run's evidence\n")
    shared = SharedStore(f"sqlite:///{state / 'specialists.db'}", STORE_ANCHOR)
    store = shared.get()
    bootstrap(store)
    register_repository(store, ALIAS, source, "main", "alice")
    register_repository(store, OTHER_ALIAS, other, "main", "alice")
    config = ActivityConfig(database_url="unused", state_dir=state)
    return Setup(
        ExecutionActivities(config, shared),
        shared,
        git(source, "rev-parse", "HEAD"),
        source,
        other,
        state,
        tmp_path,
    )


def _request(base: str, config: RepositoryConfig, **fields: object) -> ExecuteAttemptRequest:
    return ExecuteAttemptRequest.model_validate(
        {
            "run_id": RUN_ID,
            "repo_alias": ALIAS,
            "base_commit": base,
            "patch": "",
            "executor": "command",
            "repository_config": config,
            "task_text": "task\n",
            "allow_unconfined": config.allow_unconfined,
            **fields,
        }
    )


def _run(activities: ExecutionActivities, request: ExecuteAttemptRequest) -> WorktreeExecution:
    environment = ActivityEnvironment()
    environment.info = dataclasses.replace(ActivityEnvironment.default_info(), attempt=1)
    result: WorktreeExecution = environment.run(activities.execute_worktree_attempt, request)
    return result


def _failure(activities: ExecutionActivities, request: ExecuteAttemptRequest) -> ApplicationError:
    with pytest.raises(ApplicationError) as failed:
        _run(activities, request)
    assert failed.value.non_retryable
    return failed.value


def _probe(*steps: list[str]) -> RepositoryConfig:
    return RepositoryConfig(
        executor=RepositoryExecutor.COMMAND,
        command=(SYSTEM_PYTHON, "-c", PROBING_AGENT, json.dumps(list(steps))),
        command_timeout_seconds=60,
    )


def _results(report: CommandReport) -> dict[str, object]:
    results: dict[str, object] = json.loads(report.stdout)
    return results


def _snapshot(repository: Path) -> dict[str, object]:
    """Everything of ``repository`` an agent could change: its refs and HEAD, its status, every file
    of its working tree and of its ``.git`` directory (their sha256) except the attempt worktrees'
    own metadata, which the worker writes. git reads it without taking optional locks, so reading
    never rewrites the index."""
    files = {}
    for path in sorted(repository.rglob("*")):
        relative = path.relative_to(repository)
        if path.is_file() and relative.parts[:2] != (".git", "worktrees"):
            files[str(relative)] = hashlib.sha256(path.read_bytes()).hexdigest()
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=repository,
        env={"PATH": os.environ["PATH"], "GIT_OPTIONAL_LOCKS": "0", "GIT_CONFIG_NOSYSTEM": "1"},
        capture_output=True,
        check=True,
    )
    return {
        "refs": git(repository, "for-each-ref", "--format=%(objectname) %(refname)"),
        "head": (git(repository, "rev-parse", "HEAD"), git(repository, "symbolic-ref", "HEAD")),
        "status": status.stdout,
        "files": files,
    }


def test_an_agent_cannot_change_the_source_repository_its_files_refs_head_or_history(
    setup: Setup,
) -> None:
    source, common = setup.source, setup.source / ".git"
    before = _snapshot(source)
    config = _probe(
        ["write a file of the source tree", "write", str(source / "docs" / "README.md")],
        ["create a file in the source tree", "write", str(source / "planted.txt")],
        ["write a ref", "write", str(common / "refs" / "heads" / "agent")],
        ["write HEAD", "write", str(common / "HEAD")],
        ["write the configuration", "write", str(common / "config")],
        ["write a hook", "write", str(common / "hooks" / "post-checkout")],
        ["commit in the source", "run", *GIT, "-C", str(source), "commit", "--allow-empty", "-qm", "x"],
        ["reset the source", "run", *GIT, "-C", str(source), "reset", "--hard", "-q", "HEAD"],
        [
            "update a ref of the source",
            "run",
            *GIT,
            "--git-dir",
            str(common),
            "update-ref",
            "refs/heads/x",
            "HEAD",
        ],
        ["branch from the worktree", "run", *GIT, "branch", "agent-branch"],
        ["tag from the worktree", "run", *GIT, "tag", "agent-tag"],
        ["commit in the worktree", "run", *GIT, "commit", "--allow-empty", "-qm", "agent commits"],
        ["reset the worktree", "run", *GIT, "reset", "-q", "--hard", "HEAD"],
        ["read the source's objects", "run", "git", "cat-file", "-e", "HEAD^{tree}"],
        ["read the source's configuration", "read", str(common / "config")],
    )
    result = _run(setup.activities, _request(setup.base, config))
    assert result.command is not None and result.command.confined
    results = _results(result.command)
    for label in (
        "write a file of the source tree",
        "create a file in the source tree",
        "write a ref",
        "write HEAD",
        "write the configuration",
        "write a hook",
        "commit in the source",
        "reset the source",
        "update a ref of the source",
        "branch from the worktree",
        "tag from the worktree",
        "commit in the worktree",
    ):
        assert str(results[label]).startswith("failed"), (label, results[label])
    for label in ("branch from the worktree", "tag from the worktree"):
        assert "Read-only file system" in str(results[label]), (label, results[label])
    assert "failed to write commit object" in str(results["commit in the worktree"])
    # git data the worktree needs stays readable, and git works in the worktree for reading.
    assert results["read the source's objects"] == "ok"
    assert results["reset the worktree"] == "ok"
    # Its configuration is a sanitised copy: no remote, no include, nothing but the format.
    shown = str(results["read the source's configuration"])
    assert "repositoryformatversion" in shown and "[remote" not in shown
    assert _snapshot(source) == before
    assert result.evidence.files_changed == 0


def test_a_remote_url_with_a_credential_in_the_source_configuration_is_not_visible(setup: Setup) -> None:
    git(setup.source, "remote", "add", "origin", "https://user:ghp_secretcredential@example.invalid/r.git")
    config = _probe(
        ["configuration", "read", str(setup.source / ".git" / "config")],
        ["remote", "run", "git", "config", "--get", "remote.origin.url"],
    )
    result = _run(setup.activities, _request(setup.base, config))
    assert result.command is not None
    assert "ghp_secretcredential" not in result.command.stdout
    assert str(_results(result.command)["remote"]).startswith("failed: exit 1")


def test_an_agent_sees_neither_the_state_directory_other_runs_other_repositories_nor_the_workers_environment(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    evidence = setup.state / "worktrees" / RUN_ID / "attempt-1.evidence"
    config = _probe(
        ["the database", "read", str(setup.state / "specialists.db")],
        ["a state file", "read", str(setup.state / "secret.txt")],
        [
            "another run's evidence",
            "read",
            str(setup.state / "worktrees" / "SOR-ANOTHERRUN00001" / "attempt-1.evidence" / "secret.txt"),
        ],
        ["its own recorded refs", "read", str(evidence / "source-refs.txt")],
        ["the state directory", "list", str(setup.state)],
        ["the worktrees", "list", str(setup.state / "worktrees")],
        ["another repository", "read", str(setup.other / "secret.txt")],
        ["the source's working tree", "read", str(setup.source / "docs" / "README.md")],
        ["the worker's home", "list", str(Path.home())],
        ["the shadow file", "read", "/etc/shadow"],
        ["init's environment", "read", "/proc/1/environ"],
        ["processes", "list", "/proc"],
        ["the worker's temporary directory", "list", str(setup.tmp_path)],
    )
    result = _run(setup.activities, _request(setup.base, config))
    assert result.command is not None
    results = _results(result.command)
    for label in (
        "the database",
        "a state file",
        "another run's evidence",
        "its own recorded refs",
        "another repository",
        "the source's working tree",
        "the worker's home",
        "the shadow file",
    ):
        assert str(results[label]).startswith("failed"), (label, results[label])
    # Of the state directory only the path to its own worktree exists (empty mount points).
    assert results["the state directory"] == 'ok: ["worktrees"]'
    assert results["the worktrees"] == f'ok: ["{RUN_ID}"]'
    assert OTHER_ALIAS not in str(results["the worker's temporary directory"])
    # /proc is the sandbox's: pid 1 is bubblewrap's init, whose environment is PATH and LANG only.
    environ = str(results["init's environment"])
    assert environ.startswith("ok: ") and set(environ[4:].split("\x00")) - {""} == {
        f"PATH={SAFE_PATH}",
        "LANG=C.UTF-8",
    }
    pids = [name for name in json.loads(str(results["processes"])[4:]) if name.isdigit()]
    assert len(pids) <= 4, pids  # init, the agent and its python; none of the worker's
    everything = result.command.model_dump_json()
    for value in SECRETS.values():
        assert value not in everything
    assert not [name for name in results["environment"] if name.startswith("SPECIALISTS_")]  # type: ignore[union-attr]


@pytest.fixture
def listener() -> Iterator[int]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


def test_an_agent_cannot_reach_a_listener_on_the_workers_loopback(setup: Setup, listener: int) -> None:
    result = _run(setup.activities, _request(setup.base, _probe(["connect", "connect", str(listener)])))
    assert result.command is not None and result.command.network_isolated
    assert str(_results(result.command)["connect"]).startswith("failed"), result.command.stdout


def test_writing_through_a_symlink_out_of_the_worktree_fails_and_the_attempt_fails_closed(
    setup: Setup,
) -> None:
    before = _snapshot(setup.source)
    config = _probe(
        ["link to the source tree", "symlink", str(setup.source / "docs" / "README.md"), "escape"],
        ["write through it", "write", "escape"],
        [
            "link to the source's configuration",
            "symlink",
            str(setup.source / ".git" / "config"),
            "docs/config",
        ],
        ["write through that", "write", "docs/config"],
    )
    error = _failure(setup.activities, _request(setup.base, config))
    assert error.type == "path_outside_worktree", error.message
    detail = failure_detail(error, WorktreeFailureDetail)
    assert detail is not None and detail.command is not None
    results = _results(detail.command)
    assert results["link to the source tree"] == "ok"
    assert str(results["write through it"]).startswith("failed")
    assert str(results["write through that"]).startswith("failed")
    assert _snapshot(setup.source) == before


@pytest.mark.parametrize(
    ("field", "name"),
    [
        ("env", "SPECIALISTS_ACTION_TOKEN"),
        ("model_credentials", "specialists_action_token"),
        ("env", "OPENAI_API_KEY"),
    ],
)
def test_a_captured_configuration_breaking_the_environment_rules_is_refused_before_anything_runs(
    setup: Setup, monkeypatch: pytest.MonkeyPatch, field: str, name: str
) -> None:
    # As a configuration captured before the rules existed would be: never registered through them.
    monkeypatch.setenv(name, "secret-value-0004")
    config = _probe(["nothing", "list", "."]).model_copy(update={field: (name,)})
    error = _failure(setup.activities, _request(setup.base, config))
    assert error.type == "invalid_repository_config" and name in error.message
    assert "secret-value-0004" not in error.message
    assert not (setup.state / "worktrees" / RUN_ID).exists()
    assert setup.shared.get().worktree_claims(RUN_ID) == []


def test_a_model_credential_reaches_the_agent_but_not_bubblewraps_command_line(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRETS["OPENAI_API_KEY"])
    config = _probe(
        ["bubblewrap's command line", "read", "/proc/1/cmdline"],
    ).model_copy(update={"model_credentials": ("OPENAI_API_KEY",)})
    result = _run(setup.activities, _request(setup.base, config))
    assert result.command is not None
    results = _results(result.command)
    assert "OPENAI_API_KEY" in results["environment"]  # type: ignore[operator]
    assert "--args" in str(results["bubblewrap's command line"])
    assert SECRETS["OPENAI_API_KEY"] not in result.command.stdout


def _fake_bwrap(directory: Path, body: str) -> str:
    program = directory / "bwrap"
    program.write_text("#!/bin/sh\n" + body)
    program.chmod(0o755)
    return str(program)


@pytest.mark.parametrize(
    "bwrap",
    ["missing", "cannot-create-namespaces"],
)
def test_without_a_working_bubblewrap_the_attempt_fails_closed_before_anything_runs(
    setup: Setup, bwrap: str
) -> None:
    if bwrap == "missing":
        program = str(setup.tmp_path / "no-such-bwrap")
    else:
        program = _fake_bwrap(
            setup.tmp_path,
            'echo "bwrap: Creating new namespace failed: Operation not permitted" >&2\nexit 1\n',
        )
    config = _probe(["marker", "write", "marker.txt"])
    error = _failure(setup.with_bwrap(program), _request(setup.base, config))
    assert error.type == "confinement_unavailable", error.message
    assert "allow_unconfined" in error.message
    assert not (setup.state / "worktrees" / RUN_ID).exists()
    assert setup.shared.get().worktree_claims(RUN_ID) == []


def test_a_pr_ready_run_whose_verify_commands_cannot_be_confined_fails_closed_before_the_patch_is_applied(
    setup: Setup,
) -> None:
    request = ExecuteAttemptRequest(
        run_id=RUN_ID,
        repo_alias=ALIAS,
        base_commit=setup.base,
        patch=PATCH,
        pr_ready=True,
        verify=[[SYSTEM_PYTHON, "-c", "print('checked')"]],
        verify_timeout_seconds=30,
        verify_budget_seconds=60,
    )
    error = _failure(setup.with_bwrap(str(setup.tmp_path / "no-such-bwrap")), request)
    assert error.type == "confinement_unavailable"
    assert not (setup.state / "worktrees" / RUN_ID).exists()


def test_a_sandbox_that_fails_to_set_up_at_run_time_fails_confinement_unavailable_and_runs_nothing(
    setup: Setup,
) -> None:
    # This bubblewrap passes the worker's probe, then cannot set up the attempt's sandbox.
    real = find_bubblewrap()
    program = _fake_bwrap(
        setup.tmp_path,
        'case " $* " in *" --args "*)\n'
        '  echo "bwrap: Creating new namespace failed: No space left" >&2; exit 1;;\n'
        "esac\n"
        f'exec {real} "$@"\n',
    )
    error = _failure(
        setup.with_bwrap(program), _request(setup.base, _probe(["marker", "write", "marker.txt"]))
    )
    assert error.type == "confinement_unavailable", error.message
    assert "No space left" in error.message
    detail = failure_detail(error, WorktreeFailureDetail)
    assert detail is not None and detail.command is not None and detail.command.confined
    assert not (Path(detail.location.worktree) / "marker.txt").exists()


def test_allow_unconfined_runs_the_commands_without_the_sandbox_and_the_reports_say_so(setup: Setup) -> None:
    config = RepositoryConfig(
        executor=RepositoryExecutor.COMMAND,
        command=(SYSTEM_PYTHON, "-c", "import pathlib; pathlib.Path('note.txt').write_text('unconfined\\n')"),
        verify=((SYSTEM_PYTHON, "-c", "print('verified')"),),
        allow_unconfined=True,
    )
    request = _request(
        setup.base,
        config,
        pr_ready=True,
        verify=[list(argv) for argv in config.verify],
        verify_timeout_seconds=30,
        verify_budget_seconds=60,
    )
    result = _run(setup.with_bwrap(str(setup.tmp_path / "no-such-bwrap")), request)
    report = result.command
    assert report is not None and report.exit_status == 0 and not report.confined
    assert report.confinement.startswith("none: ") and "allow_unconfined = true" in report.confinement
    (verified,) = result.verification
    assert not verified.confined and "verified" in verified.stdout
    assert [(f.path, f.status.value) for f in result.evidence.files] == [("note.txt", "added")]


def test_allow_unconfined_still_confines_when_bubblewrap_works(setup: Setup) -> None:
    config = _probe(["the database", "read", str(setup.state / "specialists.db")]).model_copy(
        update={"allow_unconfined": True}
    )
    result = _run(setup.activities, _request(setup.base, config))
    assert result.command is not None and result.command.confined
    assert str(_results(result.command)["the database"]).startswith("failed")
