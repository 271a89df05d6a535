"""``make demo``'s fixed parts, without a Temporal server: the worktree run's work item has every
``replay:demo`` recording its jobs look up, the recorded change applies to the demo repository and
passes the executor's checks, and the diff stat the demo prints. (``make demo`` itself is the end to
end run.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from activities.change_evidence import check_and_collect
from activities.config import DEFAULT_RECORDINGS_DIR
from activities.patch_checks import apply_patch
from activities.worktree_lifecycle import create_attempt_worktree
from catalog.loader import load_catalog
from catalog.router import route
from contracts.execution import ExecutionRecord
from contracts.output import JobKind, SpecialistOutput, check_output_for_job
from control.demo import READ_ONLY_EXAMPLE, demo_repository, example_work_items, worktree_work_item
from control.demo_views import diff_stat_lines
from tests.store.git_repository import git


def _recording(profile: str, kind: str, title: str) -> dict[str, Any]:
    data = json.loads((DEFAULT_RECORDINGS_DIR / "demo.json").read_text(encoding="utf-8"))
    for entry in data["recordings"]:
        if (entry["profile"], entry["kind"], entry["title"]) == (profile, kind, title):
            return dict(entry["response"])
    raise AssertionError(f"no replay:demo recording for {profile} {kind} on {title!r}")


def _change() -> SpecialistOutput:
    item = worktree_work_item(dict(example_work_items())[READ_ONLY_EXAMPLE])
    decision = route(item, load_catalog())
    output = SpecialistOutput.model_validate(_recording(decision.primary, "change", item.title))
    check_output_for_job(
        output,
        kind=JobKind.ANALYSIS,
        profile_id=decision.primary,
        evidence_ids=list(item.evidence_refs),
        expects_patch=True,
    )
    review = SpecialistOutput.model_validate(_recording(decision.reviewer, "review", item.title))
    check_output_for_job(
        review, kind=JobKind.REVIEW, profile_id=decision.reviewer, evidence_ids=list(item.evidence_refs)
    )
    return output


def test_the_recorded_change_applies_to_the_demo_repository_and_passes_the_executors_checks(
    tmp_path: Path,
) -> None:
    patch = _change().patch
    assert patch is not None
    repository = demo_repository(tmp_path)
    base = git(repository, "rev-parse", "HEAD")
    attempt = create_attempt_worktree(repository, base, tmp_path / "state", "SOR-DEMOTEST00000001")
    apply_patch(attempt, patch)
    evidence = check_and_collect(attempt)
    assert evidence.base_commit == base and evidence.files_changed == 2
    assert git(attempt.worktree, "diff", "--check") == ""

    lines = diff_stat_lines(ExecutionRecord(actor="demo-operator", evidence=evidence))
    assert lines[:-1] == [
        "modified  README.md  +2 -0",
        "added     migrations/0001_orders_customer_created_idx.sql  +3 -0",
    ]
    assert lines[-1].startswith(f"2 files changed (diff sha256 {evidence.diff_sha256[:16]}")


def test_the_diff_stat_of_a_failed_execution_says_why() -> None:
    record = ExecutionRecord(actor="demo-operator", failure_type="patch_does_not_apply")
    assert diff_stat_lines(record) == ["no change evidence (execution failed: patch_does_not_apply)"]


def test_the_demo_says_how_to_open_mission_control_and_sign_in_as_its_operator(tmp_path: Path) -> None:
    from control.demo_views import mission_control_lines

    lines = mission_control_lines(tmp_path, "demo-operator")
    assert "specialists web` serves http://127.0.0.1:8400/" in lines[0]
    assert f"SPECIALISTS_STATE_DIR={tmp_path}" in lines[0]
    assert f"SPECIALISTS_ACTOR_KEY_FILE={tmp_path / 'demo-operator.key'}" in lines[1]
    assert "specialists web sign-in CODE --actor demo-operator" in lines[1]
