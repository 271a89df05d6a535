"""What ``show`` prints of an execution, on views made here (no server): the worktree location is
withheld unless ``--recovery`` — also where an error message or audit entry quotes its path — the
diff is printed only with ``--diff`` (inline, or where it is stored by reference), renames and
binary files read plainly, and untrusted paths are shown literally.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import re
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from contracts.enums import Tier
from contracts.execution import ExecutionRecord, WorktreeLocation
from contracts.runs import AuditEvent, RunError, RunStatus, RunView
from contracts.worktree import ChangedFile, ChangeEvidence, FileStatus, NumstatEntry
from control import show_run

AT = dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
RUN_ID = "SOR-0123456789ABCDEF"
BASE = "b" * 40
WORKTREE = f"/srv/specialists/state/worktrees/{RUN_ID}/attempt-2"
EVIDENCE = f"{WORKTREE}.evidence"
REPOSITORY = "/srv/repos/orders"
DIFF = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new\n"


def render_with(render: Callable[[Console], None]) -> str:
    buffer = io.StringIO()
    render(Console(file=buffer, width=250, force_terminal=False, color_system=None))
    return buffer.getvalue()


def evidence(*, by_reference: bool = False) -> ChangeEvidence:
    return ChangeEvidence(
        run_id=RUN_ID,
        attempt=2,
        base_commit=BASE,
        files=[
            ChangedFile(path="a.txt", status=FileStatus.MODIFIED, old_mode="100644", new_mode="100644"),
            ChangedFile(path="docs/new.md", status=FileStatus.RENAMED, old_path="docs/old.md"),
            ChangedFile(path="logo.png", status=FileStatus.ADDED, new_mode="100644"),
            ChangedFile(path="evil [/bold] \x1b[2J.txt", status=FileStatus.DELETED, old_mode="100644"),
        ],
        numstat=[
            NumstatEntry(path="a.txt", added=1, deleted=1),
            NumstatEntry(path="docs/new.md", added=0, deleted=0, old_path="docs/old.md"),
            NumstatEntry(path="logo.png"),
            NumstatEntry(path="evil [/bold] \x1b[2J.txt", added=0, deleted=3),
        ],
        files_changed=5,
        diff=None if by_reference else DIFF,
        diff_path=f"{EVIDENCE}/diff-{'d' * 64}.patch" if by_reference else None,
        diff_sha256="d" * 64,
        diff_bytes=300_000 if by_reference else len(DIFF),
    )


def location() -> WorktreeLocation:
    return WorktreeLocation(
        attempt=2, worktree=WORKTREE, evidence_dir=EVIDENCE, repository=REPOSITORY, base_commit=BASE
    )


def executed_view(*, by_reference: bool = False) -> RunView:
    return RunView(
        run_id=RUN_ID,
        status=RunStatus.AWAITING_DECISION,
        tier=Tier.WORKTREE,
        automatic=False,
        route=None,
        contract=None,
        contract_sha256="c" * 64,
        result=None,
        review=None,
        decision=None,
        request_digest="0" * 64,
        created_at=AT,
        audit=[AuditEvent(seq=1, at=AT, kind="worktree_executed", data={"attempt": 2})],
        execution=ExecutionRecord(
            actor="alice",
            evidence=evidence(by_reference=by_reference),
            patch_sha256="e" * 64,
            location=location(),
        ),
    )


def failed_view() -> RunView:
    """A run whose attempt failed closed with a message that quotes the worktree's path."""
    message = f"new worktree {WORKTREE} is at {'f' * 40}, not {BASE}"
    return executed_view().model_copy(
        update={
            "status": RunStatus.FAILED,
            "error": RunError(type="head_moved", message=message),
            "audit": [
                AuditEvent(
                    seq=1,
                    at=AT,
                    kind="worktree_failed",
                    data={"error_type": "head_moved", "message": message, "attempt": 2},
                )
            ],
            "execution": ExecutionRecord(actor="alice", location=location(), failure_type="head_moved"),
        }
    )


def show(view: RunView, **flags: bool) -> str:
    return render_with(lambda console: show_run.render_run(console, view, {}, **flags))


def show_json(view: RunView, **flags: bool) -> str:
    return json.dumps(show_run.run_json(view, **flags))


# ------------------------------------------------------------------------------------ the location


def test_show_withholds_the_worktree_location_unless_recovery_is_asked_for() -> None:
    view = executed_view()

    for out in (show(view), show(view, diff=True), show_json(view)):
        assert WORKTREE not in out and "attempt-2" not in out
    assert show_run.run_json(view)["execution"]["location"] is None
    assert "withheld: `show --recovery` prints it" in show(view)


def test_show_recovery_prints_the_location_and_that_it_is_detached_without_a_branch() -> None:
    view = executed_view()

    out = show(view, recovery=True)

    for value in (WORKTREE, EVIDENCE, REPOSITORY, BASE):
        assert value in out
    assert "detached at the base commit (no branch)" in out
    assert "withheld" not in out
    assert show_run.run_json(view, recovery=True)["execution"]["location"] == location().model_dump(
        mode="json"
    )


def test_a_failure_message_quoting_the_worktree_path_is_shown_with_a_placeholder_unless_recovery() -> None:
    view = failed_view()

    out, data = show(view), show_run.run_json(view)

    assert WORKTREE not in out and WORKTREE not in json.dumps(data)
    assert f"new worktree {show_run.WORKTREE_PLACEHOLDER} is at" in out
    assert data["error"]["message"].startswith(f"new worktree {show_run.WORKTREE_PLACEHOLDER} is at")
    assert data["audit"][0]["data"]["message"] == data["error"]["message"]
    assert "failure type" in out and "head_moved" in out
    recovered = show_run.run_json(view, recovery=True)
    assert recovered["error"] == view.model_dump(mode="json")["error"]
    assert f"new worktree {WORKTREE} is at" in show(view, recovery=True)


def test_show_of_a_run_that_was_never_executed_prints_no_execution() -> None:
    view = executed_view().model_copy(update={"execution": None})

    assert "execution" not in show(view)
    assert "has not been executed" in show(view, recovery=True)
    assert show_run.run_json(view, recovery=True)["execution"] is None


# ----------------------------------------------------------------------------------------- the change


def test_show_prints_each_changed_file_with_its_status_and_numstat() -> None:
    out = show(executed_view())

    assert re.search(r"│ modified\s*│ a\.txt\s*│ \+1\s*│ -1\s*│", out), out
    assert re.search(r"│ renamed\s*│ docs/old\.md → docs/new\.md\s*│ \+0\s*│ -0\s*│", out), out
    assert re.search(r"│ added\s*│ logo\.png\s*│ binary\s*│ binary\s*│", out), out
    assert re.search(r"files changed\s*│ 5\s", out), out
    assert re.search(rf"diff sha256\s*│ {'d' * 64}", out), out
    assert re.search(rf"diff size\s*│ {len(DIFF)} bytes", out), out


def test_untrusted_paths_are_shown_literally() -> None:
    out = show(executed_view())

    assert "evil [/bold] \\x1b[2J.txt" in out
    assert "\x1b" not in out


def test_the_diff_is_printed_only_with_diff() -> None:
    view = executed_view()

    assert "+new" not in show(view)
    assert show_run.run_json(view)["execution"]["evidence"]["diff"] is None
    out = show(view, diff=True)
    assert f"diff (sha256 {'d' * 64}, {len(DIFF)} bytes):" in out and "+new" in out
    assert "inline: printed below" in out and "`show --diff` prints it" in show(view)
    assert show_run.run_json(view, diff=True)["execution"]["evidence"]["diff"] == DIFF


def test_a_diff_stored_by_reference_is_described_by_sha256_and_size_and_its_path_needs_recovery() -> None:
    view = executed_view(by_reference=True)

    out = " ".join(show(view, diff=True).split())

    path = f"{EVIDENCE}/diff-{'d' * 64}.patch"
    assert "diff: 300000 bytes, stored by reference in the attempt's evidence directory" in out
    assert f"sha256 {'d' * 64}" in out and path not in out
    assert "stored by reference: `show --diff` prints it" in show(view)
    assert "stored by reference: described below" in show(view, diff=True)  # not a hint to do what it does
    assert "`show --diff` prints it" not in show(view, diff=True)
    assert path not in show(view) and path not in show_json(view)
    assert show_run.run_json(view, diff=True)["execution"]["evidence"]["diff_path"] is None
    assert f"stored by reference in {path}" in " ".join(show(view, diff=True, recovery=True).split())
    assert show_run.run_json(view, diff=True, recovery=True)["execution"]["evidence"]["diff_path"] == path


def test_show_reports_the_command_executors_exit_status_duration_isolation_and_output_sizes() -> None:
    from contracts.execution import CommandReport

    def shown(report: CommandReport) -> str:
        view = executed_view()
        assert view.execution is not None
        execution = view.execution.model_copy(
            update={"executor": "command", "patch_sha256": None, "command": report}
        )
        return show(view.model_copy(update={"execution": execution}))

    isolated = CommandReport(
        exit_status=0,
        duration_seconds=12.34,
        network_isolated=True,
        stdout="done\n",
        stdout_bytes=5,
        stderr_bytes=0,
    )
    out = shown(isolated)
    assert re.search(r"executor\W+command", out)
    assert re.search(r"agent exit status\W+0", out) and re.search(r"agent duration\W+12\.3 s", out)
    assert re.search(r"network isolated\W+yes", out)
    assert re.search(r"agent output\W+stdout 5 bytes, stderr 0 bytes", out)
    assert "done" not in out, "the agent's output itself is only in --json"

    assert re.search(r"confined\W+no \(run before commands were confined\)", out)
    confined = isolated.model_copy(update={"confined": True, "confinement": "bubblewrap 0.8.0: no network"})
    assert re.search(r"confined\W+yes: bubblewrap 0\.8\.0: no network", shown(confined))
    unconfined = isolated.model_copy(
        update={"confinement": "none: bubblewrap is not installed; allow_unconfined = true"}
    )
    assert re.search(r"confined\W+no: bubblewrap is not installed", shown(unconfined))

    not_isolated = isolated.model_copy(update={"network_isolated": False})
    assert re.search(r"network isolated\W+no: isolation is not available", shown(not_isolated))
    granted = not_isolated.model_copy(update={"network_granted": True})
    assert re.search(r"network isolated\W+no \(network = true was approved\)", shown(granted))
    timed_out = isolated.model_copy(update={"exit_status": None, "timed_out": True, "timeout_seconds": 30})
    assert re.search(r"agent exit status\W+none: killed after its 30 s budget", shown(timed_out))


def test_show_recovery_says_when_the_worktree_is_not_on_this_machine_and_gives_no_branch_advice() -> None:
    # WORKTREE is a path on a worker's host that does not exist here (pruned, or another machine).
    out = " ".join(show(executed_view(), recovery=True).split())

    assert "on this machine │ no: pruned, or kept on the worker's host" in out
    assert "git switch -c" not in out


def test_show_recovery_gives_the_branch_advice_for_a_worktree_that_is_here(tmp_path: Path) -> None:
    here = location().model_copy(update={"worktree": str(tmp_path)})
    view = executed_view()
    assert view.execution is not None
    view = view.model_copy(update={"execution": view.execution.model_copy(update={"location": here})})

    out = " ".join(show(view, recovery=True).split())

    assert "on this machine │ yes" in out and "git switch -c NAME" in out


def pr_ready_view() -> RunView:
    from contracts.execution import PrReadyPatch, VerificationResult

    view = executed_view()
    assert view.execution is not None
    execution = view.execution.model_copy(
        update={
            "verification": [
                VerificationResult(
                    argv=["make", "test"],
                    exit_status=2,
                    duration_seconds=3.21,
                    confined=True,
                    confinement="bubblewrap 0.8.0: no network",
                    stdout="1 failed, 4 passed\n",
                    stdout_bytes=19,
                    stderr_bytes=0,
                ),
                VerificationResult(argv=["ruff", "check", "."], exit_status=0, duration_seconds=0.5),
            ],
            "pr_patch": PrReadyPatch(sha256="9" * 64, size_bytes=1234, path=f"{EVIDENCE}/pr-ready.patch"),
        }
    )
    return view.model_copy(update={"tier": Tier.PR_READY, "execution": execution})


def test_show_prints_verification_results_and_the_patch_files_sha256_its_path_only_with_recovery() -> None:
    out = show(pr_ready_view())
    assert '["make", "test"]' in out and '["ruff", "check", "."]' in out
    assert re.search(r"\W2\W+3\.2 s\W+stdout 19 bytes, stderr 0 bytes\W+yes\W", out)
    assert re.search(r"\W0\W+0\.5 s\W+stdout 0 bytes, stderr 0 bytes\W+no \(run before", out)
    assert "1 failed, 4 passed" not in out, "the output itself needs --diff"
    assert re.search(r"pr-ready patch sha256\W+" + "9" * 64, out)
    assert "pr-ready.patch" not in out
    assert "1 failed, 4 passed" in show(pr_ready_view(), diff=True)
    assert f"{EVIDENCE}/pr-ready.patch" in show(pr_ready_view(), recovery=True)

    data = show_json(pr_ready_view())
    assert "pr-ready.patch" not in data and "1 failed, 4 passed" not in data and "9" * 64 in data
    assert "1 failed, 4 passed" in show_json(pr_ready_view(), diff=True)
    assert "pr-ready.patch" in show_json(pr_ready_view(), recovery=True)


def test_an_execution_record_without_verification_fields_still_decodes() -> None:
    old = {"actor": "alice", "executor": "patch", "patch_sha256": "e" * 64}
    record = ExecutionRecord.model_validate(old)
    assert record.verification == [] and record.pr_patch is None


PREVIOUS = "SOR-FEDCBA9876543210"


def test_a_worktree_run_that_follows_another_points_to_its_worktree_with_recovery() -> None:
    out = show(executed_view().model_copy(update={"follows": PREVIOUS}))
    assert f"follows {PREVIOUS}, the goal queue's previous run of this item" in out
    assert f"`specialists show {PREVIOUS} --recovery` says where its worktree is kept" in out


def test_a_read_only_run_that_follows_another_promises_no_worktree_of_it() -> None:
    view = executed_view().model_copy(update={"follows": PREVIOUS, "tier": Tier.READ_ONLY, "execution": None})
    out = show(view)
    assert f"the goal queue's previous run of this item (`specialists show {PREVIOUS}` shows it)" in out
    assert "--recovery" not in out
    assert "where its worktree is kept" not in out
