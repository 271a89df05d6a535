"""PR-ready execution through ``execute_worktree_attempt``: after the patch is applied and checked, the
repository's ``verify`` commands run confined by bubblewrap in the worktree (reduced environment, no
network, a wall-clock bound, bounded output); a failing command is evidence, a timeout or too much
output fails closed, a command that changes the tree fails ``verification_changed_tree``; the complete
patch file is written to the state directory and applies cleanly to a fresh clone at the base commit.
Real bubblewrap, real git repository and SQLite store in ``tmp_path``."""

from __future__ import annotations

import dataclasses
import hashlib
import subprocess
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.config import ActivityConfig
from activities.execution import ExecutionActivities
from activities.store_access import SharedStore
from contracts.context_packs import ContextPack
from contracts.execution import (
    MAX_COMMAND_OUTPUT_BYTES,
    ChangeUnderReview,
    ExecuteAttemptRequest,
    WorktreeExecution,
)
from contracts.failures import WorktreeFailureDetail, failure_detail
from contracts.output import JobKind
from contracts.pack_text import render_pack
from tests.activities.confined import SYSTEM_PYTHON, requires_bubblewrap
from tests.identity import STORE_ANCHOR, bootstrap
from tests.store.git_repository import git, make_working_tree, register_repository

pytestmark = requires_bubblewrap

RUN_ID = "SOR-PRREADYEXECTEST1"
ALIAS = "orders-service"

PATCH = """diff --git a/docs/README.md b/docs/README.md
--- a/docs/README.md
+++ b/docs/README.md
@@ -1 +1,2 @@
 docs
+Orders report: add an index on orders (merchant_id, created_at).
diff --git a/db/indexes.sql b/db/indexes.sql
new file mode 100644
--- /dev/null
+++ b/db/indexes.sql
@@ -0,0 +1 @@
+CREATE INDEX CONCURRENTLY orders_merchant_created ON orders (merchant_id, created_at);
"""

CHECK_INDEX = "import pathlib, sys; t = pathlib.Path('db/indexes.sql').read_text(); print('index ok', len(t))"
FAILING = "import sys; print('1 test failed', file=sys.stderr); sys.exit(3)"


@pytest.fixture
def setup(tmp_path: Path) -> tuple[ExecutionActivities, str, Path]:
    tree = make_working_tree(tmp_path / ALIAS)
    shared = SharedStore(f"sqlite:///{tmp_path / 'specialists.db'}", STORE_ANCHOR)
    store = shared.get()
    bootstrap(store)
    register_repository(store, ALIAS, tree, "main", "alice")
    config = ActivityConfig(database_url="unused", state_dir=tmp_path / "state")
    return ExecutionActivities(config, shared), git(tree, "rev-parse", "HEAD"), tree


def _run(
    activities: ExecutionActivities, base: str, verify: list[list[str]], timeout: float = 30
) -> WorktreeExecution:
    environment = ActivityEnvironment()
    environment.info = dataclasses.replace(ActivityEnvironment.default_info(), attempt=1)
    request = ExecuteAttemptRequest(
        run_id=RUN_ID,
        repo_alias=ALIAS,
        base_commit=base,
        patch=PATCH,
        pr_ready=True,
        verify=verify,
        verify_timeout_seconds=timeout,
        verify_budget_seconds=120,
    )
    result: WorktreeExecution = environment.run(activities.execute_worktree_attempt, request)
    return result


def _failure(
    activities: ExecutionActivities, base: str, verify: list[list[str]], timeout: float = 30
) -> ApplicationError:
    with pytest.raises(ApplicationError) as failed:
        _run(activities, base, verify, timeout)
    assert failed.value.non_retryable
    return failed.value


def test_passing_and_failing_verify_commands_are_recorded_and_the_patch_file_applies_to_a_fresh_clone(
    setup: tuple[ExecutionActivities, str, Path], tmp_path: Path
) -> None:
    activities, base, tree = setup
    result = _run(activities, base, [[SYSTEM_PYTHON, "-c", CHECK_INDEX], [SYSTEM_PYTHON, "-c", FAILING]])
    passed, failed = result.verification
    assert passed.argv == [SYSTEM_PYTHON, "-c", CHECK_INDEX]
    assert passed.exit_status == 0 and "index ok" in passed.stdout and passed.stdout_bytes > 0
    assert failed.exit_status == 3 and "1 test failed" in failed.stderr
    assert passed.duration_seconds >= 0 and not passed.timed_out
    assert passed.confined and failed.confined and passed.network_isolated
    assert "no network" in passed.confinement

    # The complete patch file, in the attempt's evidence directory, with its sha256.
    assert result.pr_patch is not None
    patch_file = Path(result.pr_patch.path)
    assert patch_file == result.attempt.evidence_dir / "pr-ready.patch"
    data = patch_file.read_bytes()
    assert (
        hashlib.sha256(data).hexdigest() == result.pr_patch.sha256 and len(data) == result.pr_patch.size_bytes
    )
    assert b"db/indexes.sql" in data and b"new file mode" in data

    # It applies cleanly with `git apply` to a fresh clone at the base commit.
    clone = tmp_path / "fresh-clone"
    subprocess.run(["git", "clone", "--quiet", str(tree), str(clone)], check=True)
    git(clone, "checkout", "--quiet", "--detach", base)
    subprocess.run(["git", "apply", "--check", str(patch_file)], cwd=clone, check=True)
    subprocess.run(["git", "apply", str(patch_file)], cwd=clone, check=True)
    assert (clone / "db" / "indexes.sql").read_text().startswith("CREATE INDEX CONCURRENTLY")
    assert "add an index" in (clone / "docs" / "README.md").read_text()
    # Nothing was committed anywhere.
    assert git(result.attempt.worktree, "rev-parse", "HEAD") == base
    assert git(tree, "rev-parse", "HEAD") == base


def test_verify_commands_get_the_reduced_environment(setup: tuple[ExecutionActivities, str, Path]) -> None:
    activities, base, _ = setup
    script = "import json, os; print(json.dumps(sorted(os.environ)))"
    (result,) = _run(activities, base, [[SYSTEM_PYTHON, "-c", script]]).verification
    assert result.exit_status == 0
    assert set(result.stdout.strip().strip("[]").replace('"', "").split(", ")) <= {
        "PATH",
        "LANG",
        "HOME",
        "TMPDIR",
        "PYTHONDONTWRITEBYTECODE",
        "PWD",  # bubblewrap's: the worktree it starts the command in
        "LC_CTYPE",  # Python may set it itself
    }


def test_a_verify_command_over_its_budget_fails_command_timeout(
    setup: tuple[ExecutionActivities, str, Path],
) -> None:
    activities, base, _ = setup
    error = _failure(activities, base, [[SYSTEM_PYTHON, "-c", "import time; time.sleep(30)"]], timeout=1)
    assert error.type == "command_timeout"
    detail = failure_detail(error, WorktreeFailureDetail)
    assert detail is not None and detail.command is not None
    assert Path(detail.location.worktree).is_dir() and detail.command.timed_out is True


def test_verify_output_over_the_bound_fails_command_output_too_large(
    setup: tuple[ExecutionActivities, str, Path],
) -> None:
    activities, base, _ = setup
    chatty = f"import sys; sys.stdout.write('x' * {MAX_COMMAND_OUTPUT_BYTES + 10})"
    error = _failure(activities, base, [[SYSTEM_PYTHON, "-c", chatty]])
    assert error.type == "command_output_too_large"


@pytest.mark.parametrize(
    "script",
    [
        "import pathlib; pathlib.Path('db/indexes.sql').write_text('DROP TABLE orders;\\n')",
        "import pathlib; pathlib.Path('generated.txt').write_text('written by the tests\\n')",
    ],
)
def test_a_verify_command_that_changes_the_tree_fails_closed(
    setup: tuple[ExecutionActivities, str, Path], script: str
) -> None:
    activities, base, _ = setup
    error = _failure(activities, base, [[SYSTEM_PYTHON, "-c", script]])
    assert error.type == "verification_changed_tree"


def test_the_reviewer_context_shows_the_verification_evidence(
    setup: tuple[ExecutionActivities, str, Path],
) -> None:

    activities, base, _ = setup
    result = _run(activities, base, [[SYSTEM_PYTHON, "-c", CHECK_INDEX], [SYSTEM_PYTHON, "-c", FAILING]])
    change = ChangeUnderReview.from_evidence(result.evidence, result.verification)
    pack = ContextPack.model_construct(
        job_kind=JobKind.REVIEW,
        findings_under_review=[],
        repository=None,
        objective="o",
        task="t",
        questions=[],
        evidence=[],
        change=change,
        excluded=[],
        output_contract="c",
        stop_rule="s",
    )
    text = render_pack(pack)
    assert "## Verification" in text
    assert f'"{SYSTEM_PYTHON}", "-c"' in text
    assert "exit status 0" in text and "exit status 3" in text
    assert "index ok" in text and "1 test failed" in text


def test_the_runs_remaining_budget_bounds_the_verify_commands(
    setup: tuple[ExecutionActivities, str, Path],
) -> None:
    activities, base, _ = setup
    environment = ActivityEnvironment()
    environment.info = dataclasses.replace(ActivityEnvironment.default_info(), attempt=1)
    request = ExecuteAttemptRequest(
        run_id=RUN_ID,
        repo_alias=ALIAS,
        base_commit=base,
        patch=PATCH,
        pr_ready=True,
        verify=[[SYSTEM_PYTHON, "-c", "import time; time.sleep(30)"]],
        verify_timeout_seconds=600,
        verify_budget_seconds=1,
    )
    with pytest.raises(ApplicationError) as failed:
        environment.run(activities.execute_worktree_attempt, request)
    assert failed.value.type == "command_timeout"


def test_a_command_executor_run_is_verified_too(
    setup: tuple[ExecutionActivities, str, Path], tmp_path: Path
) -> None:
    from contracts.config import RepositoryConfig, RepositoryExecutor

    activities, base, _ = setup
    agent = "import pathlib; pathlib.Path('db').mkdir(); pathlib.Path('db/indexes.sql').write_text('x\\n')\n"
    config = RepositoryConfig.model_validate(
        {
            "executor": RepositoryExecutor.COMMAND,
            "command": [SYSTEM_PYTHON, "-c", agent],
            "verify": [[SYSTEM_PYTHON, "-c", CHECK_INDEX]],
        }
    )
    environment = ActivityEnvironment()
    environment.info = dataclasses.replace(ActivityEnvironment.default_info(), attempt=1)
    request = ExecuteAttemptRequest(
        run_id=RUN_ID,
        repo_alias=ALIAS,
        base_commit=base,
        patch="",
        executor="command",
        repository_config=config,
        task_text="task\n",
        pr_ready=True,
        verify=[list(argv) for argv in config.verify],
        verify_timeout_seconds=30,
        verify_budget_seconds=60,
    )
    result: WorktreeExecution = environment.run(activities.execute_worktree_attempt, request)
    assert result.command is not None and result.command.exit_status == 0
    (verified,) = result.verification
    assert verified.exit_status == 0 and "index ok 2" in verified.stdout
    assert result.pr_patch is not None and b"db/indexes.sql" in Path(result.pr_patch.path).read_bytes()
