"""``run_probe``: an approved probe runs confined by bubblewrap in a fresh worktree of the run's
repository, at a recorded commit, and what it did — exit status, complete output, the paths git
reports changed — is the evidence. Real git repository, real SQLite store, real bubblewrap."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.config import ActivityConfig
from activities.probes import ProbeActivities
from activities.store_access import SharedStore
from contracts.failures import ProbeFailureDetail, failure_detail
from contracts.probes import ProbeEvidence, ProbeRequest, RunProbeRequest
from tests.activities.confined import SYSTEM_PYTHON, requires_bubblewrap
from tests.identity import STORE_ANCHOR, bootstrap
from tests.store.git_repository import git, make_working_tree, register_repository

RUN_ID = "SOR-PROBETEST0000001"
ALIAS = "orders-service"

PROBE_SCRIPT = (
    "import os, sys\n"
    "print('cwd', os.path.basename(os.getcwd()))\n"
    "print('stdin', sys.stdin.read().strip())\n"
    "open('probe-note.txt', 'w').write('seen')\n"
    "print('oops', file=sys.stderr)\n"
    "sys.exit(3)\n"
)


@pytest.fixture
def setup(tmp_path: Path) -> tuple[ProbeActivities, str, Path]:
    tree = make_working_tree(tmp_path / ALIAS)
    shared = SharedStore(f"sqlite:///{tmp_path / 'specialists.db'}", STORE_ANCHOR)
    store = shared.get()
    bootstrap(store)
    register_repository(store, ALIAS, tree, "main", "alice")
    config = ActivityConfig(database_url="unused", state_dir=tmp_path / "state")
    return ProbeActivities(config, shared), git(tree, "rev-parse", "HEAD"), tree


def probe(argv: list[str], cwd: str = ".", inputs: list[str] | None = None) -> ProbeRequest:
    return ProbeRequest(
        hypothesis="the docs directory is read by the report",
        argv=argv,
        cwd=cwd,
        inputs=inputs or [],
        expected_confirming="it prints the docs directory",
        expected_falsifying="it fails",
        anticipated_effects="writes probe-note.txt",
    )


def run(
    activities: ProbeActivities, request: ProbeRequest, base: str | None, attempt: int = 1
) -> ProbeEvidence:
    environment = ActivityEnvironment()
    environment.info = dataclasses.replace(ActivityEnvironment.default_info(), attempt=attempt)
    call = RunProbeRequest(
        run_id=RUN_ID, index=1, probe_sha256="0" * 64, probe=request, repo_alias=ALIAS, base_commit=base
    )
    evidence: ProbeEvidence = environment.run(activities.run_probe, call)
    return evidence


@requires_bubblewrap
def test_a_probe_runs_confined_in_its_cwd_with_its_inputs_and_git_reports_what_it_changed(
    setup: tuple[ProbeActivities, str, Path],
) -> None:
    activities, base, tree = setup
    evidence = run(activities, probe([SYSTEM_PYTHON, "-c", PROBE_SCRIPT], cwd="docs", inputs=["hello"]), base)
    assert evidence.commit == base and evidence.commit_source == "base_commit"
    assert evidence.exit_status == 3, "a non-zero exit is evidence, not a failure"
    assert evidence.stdout == "cwd docs\nstdin hello\n" and evidence.stderr == "oops\n"
    assert evidence.stdout_bytes == len(evidence.stdout) and len(evidence.stdout_sha256) == 64
    assert evidence.confined and evidence.network_isolated
    assert [(c.path, c.status) for c in evidence.changed] == [("docs/probe-note.txt", "??")]
    assert evidence.changed_count == 1
    assert Path(evidence.worktree).is_dir(), "the probe's worktree is kept"
    assert git(tree, "status", "--porcelain") == "", "the source repository is untouched"


@requires_bubblewrap
def test_without_a_base_commit_the_probe_runs_at_the_base_branch_head_resolved_now(
    setup: tuple[ProbeActivities, str, Path],
) -> None:
    activities, _, tree = setup
    (tree / "later.txt").write_text("later\n")
    git(tree, "add", "later.txt")
    git(tree, "commit", "--quiet", "--no-gpg-sign", "-m", "later")
    head = git(tree, "rev-parse", "main")
    evidence = run(activities, probe(["/bin/ls"]), None)
    assert (evidence.commit, evidence.commit_source, evidence.branch) == (head, "branch_head", "main")
    assert "later.txt" in evidence.stdout and evidence.exit_status == 0


@requires_bubblewrap
def test_a_cwd_that_escapes_the_worktree_through_a_symlink_is_refused_and_nothing_runs(
    setup: tuple[ProbeActivities, str, Path],
) -> None:
    activities, base, tree = setup
    (tree / "escape").symlink_to("/etc")
    git(tree, "add", "escape")
    git(tree, "commit", "--quiet", "--no-gpg-sign", "-m", "a symlink out")
    base = git(tree, "rev-parse", "HEAD")
    with pytest.raises(ApplicationError) as refused:
        run(activities, probe(["/bin/ls"], cwd="escape"), base)
    assert refused.value.type == "probe_cwd_outside_worktree" and refused.value.non_retryable
    detail = failure_detail(refused.value, ProbeFailureDetail)
    assert detail is not None and detail.evidence.exit_status is None and detail.evidence.commit == base


@requires_bubblewrap
def test_output_over_the_bound_fails_the_probe_rather_than_cutting_it(
    setup: tuple[ProbeActivities, str, Path],
) -> None:
    activities, base, _ = setup
    loud = probe([SYSTEM_PYTHON, "-c", "import sys; sys.stdout.write('x' * 200000)"])
    with pytest.raises(ApplicationError) as failed:
        run(activities, loud, base)
    assert failed.value.type == "command_output_too_large"


def test_a_worker_that_cannot_confine_refuses_the_probe_before_any_worktree_is_made(
    setup: tuple[ProbeActivities, str, Path], tmp_path: Path
) -> None:
    _, base, _ = setup
    shared = SharedStore(f"sqlite:///{tmp_path / 'specialists.db'}", STORE_ANCHOR)
    config = ActivityConfig(database_url="unused", state_dir=tmp_path / "state")
    activities = ProbeActivities(config, shared, bwrap_path=str(tmp_path / "no-bwrap"))
    with pytest.raises(ApplicationError) as refused:
        run(activities, probe(["/bin/true"]), base)
    assert refused.value.type == "confinement_unavailable"
    assert not (tmp_path / "state" / "worktrees").exists()


def test_a_probe_refused_for_confinement_says_probes_always_run_confined_and_how_to_get_bubblewrap(
    setup: tuple[ProbeActivities, str, Path], tmp_path: Path
) -> None:
    _, base, _ = setup
    shared = SharedStore(f"sqlite:///{tmp_path / 'specialists.db'}", STORE_ANCHOR)
    config = ActivityConfig(database_url="unused", state_dir=tmp_path / "state")
    activities = ProbeActivities(config, shared, bwrap_path=str(tmp_path / "no-bwrap"))
    with pytest.raises(ApplicationError) as refused:
        run(activities, probe(["/bin/true"]), base)
    message = str(refused.value)
    assert "a probe always runs confined, whatever the repository configuration says" in message
    assert "install bubblewrap on the worker's host" in message and "nothing was run" in message
    assert "allow_unconfined" not in message and "does not accept" not in message


@requires_bubblewrap
def test_a_probes_worktree_is_listed_with_its_run_and_pruned_with_it(
    setup: tuple[ProbeActivities, str, Path], tmp_path: Path
) -> None:
    from activities.worktree_housekeeping import prune_run
    from runtime.worktree_attempts import list_attempts

    activities, base, tree = setup
    evidence = run(activities, probe([SYSTEM_PYTHON, "-c", "print(1)"]), base)
    state = tmp_path / "state"
    (listed,) = list_attempts(state, [tree], run_id=RUN_ID)
    assert (listed.run_id, listed.probe, listed.attempt, listed.worktree) == (RUN_ID, 1, 1, evidence.worktree)
    assert listed.exists and listed.git_known and listed.locked
    assert [a.probe for a in list_attempts(state, [tree])] == [1]
    (pruned,) = prune_run(state, RUN_ID, [tree], host="here")
    assert (pruned.probe, pruned.removed_worktree, pruned.removed_from_git) == (1, True, True)
    assert list_attempts(state, [tree]) == []
    assert not (state / "worktrees" / f"{RUN_ID}-probe-1").exists()
