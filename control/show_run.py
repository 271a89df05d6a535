"""What ``show`` (and every command that prints a run) shows of a run's worktree execution.

A run's view (:class:`contracts.runs.RunView`) carries its execution (:class:`ExecutionRecord`): the
evidence of what git says changed, and where the attempt's worktree is kept. This module decides how
much of it the operator sees:

- always: who executed it, the changed files (status, path, lines added and deleted), how many paths
  changed, the diff's sha256 and size, and the fail-closed failure type when the attempt failed; for
  the ``command`` executor, the agent's exit status, duration, whether it was network-isolated and the
  sizes of its stdout and stderr (``--json`` carries its report, output included);
- with ``--diff``: the full diff (inline), or where it is stored by reference (with its sha256);
- with ``--recovery``: the worktree location (worktree, evidence directory, repository, base commit,
  attempt; detached at the base commit, no branch).

Without ``--recovery`` the location is withheld everywhere: ``execution.location`` is ``null`` in
``--json``, and the worktree and evidence paths are replaced by ``<worktree>`` / ``<evidence dir>``
wherever else they appear (an error message or audit entry that quotes them). Without ``--diff`` the
diff itself (``execution.evidence.diff`` and ``diff_path``) is ``null`` in ``--json``; its sha256 and
size are always there.

Everything shown here but the labels is untrusted (paths and diff come from the model's patch): it
reaches the console only as :func:`control.output.table` cells or through ``safe_text``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contracts.enums import Tier
from control import run_views
from control.output import safe_text, table
from control.probe_views import render_probes
from control.repository_views import render_contract_repository_config

if TYPE_CHECKING:
    from rich.console import Console

    from contracts.execution import ExecutionRecord, WorktreeLocation
    from contracts.runs import RunView

WORKTREE_PLACEHOLDER = "<worktree>"
EVIDENCE_PLACEHOLDER = "<evidence dir>"
RECOVERY_HINT = "withheld: `show --recovery` prints it"


def run_json(view: RunView, *, diff: bool = False, recovery: bool = False) -> dict[str, Any]:
    """:func:`control.run_views.run_json`, with the execution's location withheld unless ``recovery``
    and its diff (inline text or stored path) withheld unless ``diff``."""
    data = run_views.run_json(view)
    execution = data.get("execution")
    if not isinstance(execution, dict):
        return data
    if not recovery:
        data = _redacted(data, _location_paths(view))
        execution = data["execution"]
        execution["location"] = None
    evidence = execution.get("evidence")
    if isinstance(evidence, dict):
        if not diff:
            evidence["diff"] = None
        if not (diff and recovery):  # the stored diff's path is inside the attempt's evidence dir
            evidence["diff_path"] = None
    pr_patch = execution.get("pr_patch")
    if isinstance(pr_patch, dict) and not recovery:
        pr_patch["path"] = None
    if not diff:  # verification output is shown with the diff
        for item in execution.get("verification") or []:
            if isinstance(item, dict):
                item["stdout"] = None
                item["stderr"] = None
    result = data.get("result")
    if isinstance(result, dict) and not diff:
        # The model's own patch text: withheld with git's diff, which is the evidence.
        result["patch"] = None
    return data


def shown_view(view: RunView, *, recovery: bool = False) -> RunView:
    """``view`` as the human output may show it: without ``recovery``, the worktree and evidence
    paths are replaced by placeholders wherever they appear (error message, audit data)."""
    paths = [] if recovery else _location_paths(view)
    if not paths:
        return view
    from contracts.runs import RunView

    return RunView.model_validate(_redacted(view.model_dump(mode="json"), paths))


def render_run(
    console: Console,
    view: RunView,
    extra: dict[str, Any],
    *,
    diff: bool = False,
    recovery: bool = False,
) -> None:
    """The run as :func:`control.run_views.render_run` shows it (the review included, whatever the
    tier), then its execution: changed files, counts and digests; the diff with ``diff``; the worktree
    location with ``recovery``."""
    run_views.render_run(console, shown_view(view, recovery=recovery), extra)
    if view.follows is not None:
        console.print(
            safe_text(
                f"follows {view.follows}, the goal queue's previous run of this item "
                + (
                    f"(`specialists show {view.follows} --recovery` says where its worktree is kept)"
                    if view.tier in (Tier.WORKTREE, Tier.PR_READY)
                    else f"(`specialists show {view.follows}` shows it)"
                )
            )
        )
    render_contract_repository_config(console, view)
    render_execution(console, view, diff=diff, recovery=recovery)
    render_probes(console, view)


def render_execution(console: Console, view: RunView, *, diff: bool = False, recovery: bool = False) -> None:
    """The execution part of ``show`` (nothing for a run that was never executed, unless ``recovery``
    or ``diff`` asked for something it does not have)."""
    execution = view.execution
    if execution is None:
        if recovery or diff:
            console.print(safe_text("execution: none (this run has not been executed)"))
        return
    console.print(table("execution", ["", ""], _execution_rows(execution, recovery, diff)))
    evidence = execution.evidence
    if evidence is not None:
        console.print(
            table(
                f"changed files (git, against base commit {evidence.base_commit[:12]})",
                ["status", "path", "added", "deleted"],
                _file_rows(execution),
            )
        )
    if execution.verification:
        console.print(
            table(
                "verification (the repository's verify commands in the worktree, no network; "
                "a non-zero exit is evidence, not a failure)",
                ["argv", "exit", "duration", "output", "confined"],
                [
                    [
                        json.dumps(item.argv),
                        "none (killed)" if item.exit_status is None else str(item.exit_status),
                        f"{item.duration_seconds:.1f} s",
                        f"stdout {item.stdout_bytes} bytes, stderr {item.stderr_bytes} bytes",
                        _confinement(item.confined, "" if item.confined else item.confinement),
                    ]
                    for item in execution.verification
                ],
            )
        )
    if diff:
        _render_diff(console, execution, recovery)
        for number, item in enumerate(execution.verification, 1):
            for name, text in (("stdout", item.stdout), ("stderr", item.stderr)):
                if text:
                    console.print(safe_text(f"verify command {number} {name}:"))
                    console.print(safe_text(text))
    if recovery:
        _render_location(console, execution.location)


def _execution_rows(execution: ExecutionRecord, recovery: bool, diff: bool) -> list[list[str]]:
    rows = [["executed by", execution.actor], ["executor", execution.executor]]
    evidence = execution.evidence
    if execution.failure_type is not None:
        rows.append(["failure type", execution.failure_type])
    if evidence is not None:
        rows += [
            ["files changed", str(evidence.files_changed)],
            ["diff sha256", evidence.diff_sha256],
            ["diff size", f"{evidence.diff_bytes} bytes"],
            [
                "diff",
                _diff_row(evidence.diff is not None, diff),
            ],
        ]
    elif execution.failure_type is None:
        rows.append(["evidence", "none yet (the change has not been made)"])
    if execution.patch_sha256 is not None:
        rows.append(["patch sha256", execution.patch_sha256])
    rows += _command_rows(execution)
    if execution.pr_patch is not None:
        rows.append(["pr-ready patch sha256", execution.pr_patch.sha256])
        rows.append(["pr-ready patch size", f"{execution.pr_patch.size_bytes} bytes"])
        rows.append(["pr-ready patch file", execution.pr_patch.path if recovery else RECOVERY_HINT])
    if not recovery and execution.location is not None:
        rows.append(["worktree", RECOVERY_HINT])
    return rows


def _diff_row(inline: bool, diff: bool) -> str:
    """Where the diff is and where this ``show`` puts it: below with ``--diff`` (an inline diff in
    full, one stored by reference described), else the flag that prints it."""
    if not diff:
        return ("inline" if inline else "stored by reference") + ": `show --diff` prints it"
    return "inline: printed below" if inline else "stored by reference: described below"


def _command_rows(execution: ExecutionRecord) -> list[list[str]]:
    """The ``command`` executor's report: exit status, duration, confinement, network isolation,
    output sizes."""
    report = execution.command
    if report is None:
        return []
    if report.timed_out:
        status = f"none: killed after its {report.timeout_seconds:g} s budget"
    elif report.exit_status is None:
        status = "none (not started)"
    elif report.exit_status < 0:
        status = f"killed by signal {-report.exit_status}"
    else:
        status = str(report.exit_status)
    if report.network_isolated:
        network = "yes (own network namespace)"
    elif report.network_granted:
        network = "no (network = true was approved)"
    else:
        network = "no: isolation is not available on the worker, the agent had the network"
    confined = _confinement(report.confined, report.confinement)
    output = f"stdout {report.stdout_bytes} bytes, stderr {report.stderr_bytes} bytes"
    if report.output_too_large:
        output += " (over the bound: the agent was stopped)"
    return [
        ["agent exit status", status],
        ["agent duration", f"{report.duration_seconds:.1f} s"],
        ["confined", confined],
        ["network isolated", network],
        ["agent output", output],
    ]


def _confinement(confined: bool, how: str) -> str:
    """How a command was confined, for the ``confined`` row and column."""
    if confined:
        return f"yes: {how}" if how else "yes"
    return f"no: {how.removeprefix('none: ')}" if how else "no (run before commands were confined)"


def _file_rows(execution: ExecutionRecord) -> list[list[str]]:
    evidence = execution.evidence
    assert evidence is not None
    counts = {entry.path: entry for entry in evidence.numstat}
    rows = []
    for changed in evidence.files:
        path = changed.path if changed.old_path is None else f"{changed.old_path} → {changed.path}"
        entry = counts.pop(changed.path, None)
        rows.append([changed.status.value, path, *_counts(entry)])
    for entry in counts.values():  # numstat paths git's file list did not name (not expected)
        rows.append(["-", entry.path, *_counts(entry)])
    return rows


def _counts(entry: Any) -> list[str]:
    if entry is None:
        return ["-", "-"]
    if entry.added is None or entry.deleted is None:
        return ["binary", "binary"]
    return [f"+{entry.added}", f"-{entry.deleted}"]


def _render_diff(console: Console, execution: ExecutionRecord, recovery: bool = False) -> None:
    evidence = execution.evidence
    if evidence is None:
        console.print(safe_text("diff: none (no change was recorded)"))
    elif evidence.diff is not None:
        console.print(safe_text(f"diff (sha256 {evidence.diff_sha256}, {evidence.diff_bytes} bytes):"))
        console.print(safe_text(evidence.diff))
    else:
        console.print(
            safe_text(
                f"diff: {evidence.diff_bytes} bytes, stored by reference "
                + (f"in {evidence.diff_path} " if recovery else "in the attempt's evidence directory ")
                + f"(sha256 {evidence.diff_sha256}; `show --recovery --diff` names the file)"
            )
        )


def _render_location(console: Console, location: WorktreeLocation | None) -> None:
    if location is None:
        console.print(safe_text("recovery: no worktree was made for this run (yet)"))
        return
    # The path is the worker's; on this machine it may be gone (pruned) or never have been.
    present = Path(location.worktree).is_dir()
    rows = [
        ["attempt", str(location.attempt)],
        ["worktree", location.worktree],
        [
            "on this machine",
            "yes"
            if present
            else "no: pruned, or kept on the worker's host"
            + (f" ({location.host})" if location.host else ""),
        ],
        ["evidence dir", location.evidence_dir or "-"],
        ["repository", location.repository or "-"],
        ["base commit", location.base_commit],
        ["HEAD", "detached at the base commit (no branch)"],
    ]
    console.print(table("recovery: worktree location", ["", ""], rows))
    if not present:
        return
    console.print(
        safe_text(
            f"The worktree is detached at {location.base_commit} and has no branch: to keep its change, "
            "create a branch there (git switch -c NAME) before committing."
        )
    )


def _location_paths(view: RunView) -> list[tuple[str, str]]:
    """``(path, placeholder)`` for the execution's evidence directory and worktree (longest first:
    the evidence directory's path begins with the worktree's)."""
    location = view.execution.location if view.execution is not None else None
    if location is None:
        return []
    paths = [(location.worktree, WORKTREE_PLACEHOLDER)]
    if location.evidence_dir:
        paths.append((location.evidence_dir, EVIDENCE_PLACEHOLDER))
    return sorted((p for p in paths if p[0]), key=lambda p: len(p[0]), reverse=True)


def _redacted(data: dict[str, Any], paths: list[tuple[str, str]]) -> dict[str, Any]:
    """``data`` (a JSON-mode view) with ``paths`` replaced in every string, except the execution's
    location and evidence (the location is withheld as a whole; the diff is shown exactly as git
    made it, or not at all)."""
    if not paths:
        return data

    def scrub(value: Any) -> Any:
        if isinstance(value, str):
            for path, placeholder in paths:
                value = value.replace(path, placeholder)
            return value
        if isinstance(value, dict):
            return {key: scrub(item) for key, item in value.items()}
        if isinstance(value, list):
            return [scrub(item) for item in value]
        return value

    result: dict[str, Any] = {}
    for key, value in data.items():
        if key == "execution" and isinstance(value, dict):
            kept = {"location", "evidence"}
            result[key] = {k: (v if k in kept else scrub(v)) for k, v in value.items()}
        else:
            result[key] = scrub(value)
    return result
