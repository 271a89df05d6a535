"""What ``make demo`` prints (:mod:`control.demo`): the route table, the summary of its runs with each
executed run's change as git computed it, the research team's stages, and the commands to look at it
all afterwards."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from catalog.router import route
from contracts.output import ReviewVerdict
from contracts.pass_records import PassOutcome
from control.output import console, table

if TYPE_CHECKING:
    from catalog.loaded import LoadedCatalog
    from contracts.execution import ExecutionRecord
    from contracts.research_teams import TeamView
    from contracts.review_waves import WavePass
    from contracts.runs import RunView
    from contracts.work_item import WorkItem


def print_routes(catalog: LoadedCatalog, items: list[tuple[str, WorkItem]]) -> None:
    """The route table: one row per example."""
    rows = []
    for name, item in items:
        decision = route(item, catalog)
        rows.append(
            [
                name,
                item.title,
                decision.primary,
                decision.reviewer,
                decision.risk.value,
                f"{decision.confidence:.2f}",
                "; ".join(decision.evidence_gaps) or "-",
            ]
        )
    console().print(
        table(
            f"routes on catalog {catalog.version} (sha256 {catalog.sha256[:16]}…)",
            ["example", "title", "primary", "reviewer", "risk", "confidence", "evidence gaps"],
            rows,
        )
    )


def print_team(view: TeamView) -> None:
    """The demo team's stages: analysis and review, the review's verdict, limitations, omissions."""
    out = console()
    rows = []
    for stage in view.stages:
        verdict = stage.review.verdict.value if stage.review and stage.review.verdict else "-"
        rows.append(
            [
                str(stage.number),
                stage.name,
                stage.profile_id,
                stage.reviewer_id or "-",
                verdict,
                str(len(stage.limitations)),
                str(sum(len(items) for items in stage.omitted.values())),
            ]
        )
    out.print(
        table(
            f"research team {view.team_id}: {view.status.value} "
            f"({view.jobs_used} of {view.jobs_limit} model jobs)",
            ["stage", "name", "analysis by", "reviewed by", "verdict", "limitations", "omitted"],
            rows,
        )
    )
    for stage in view.stages:
        for limitation in stage.limitations:
            out.print(f"limitation: {limitation}")
    writer = view.stages[-1]
    out.print(
        f"the writer drew on {len(writer.drew_on)} stored stage results; nothing was approved or published"
    )


def verification_lines(execution: ExecutionRecord) -> list[str]:
    """A pr_ready run's verification evidence and its patch file (path relative to the state directory)."""
    lines = []
    for item in execution.verification:
        status = "killed" if item.exit_status is None else str(item.exit_status)
        lines.append(f"verify {item.argv[0]} … exit {status} in {item.duration_seconds:.1f} s")
        lines += [f"  | {line}" for line in (item.stdout + item.stderr).splitlines()[:5]]
    if execution.pr_patch is not None:
        kept = "/".join(Path(execution.pr_patch.path).parts[-4:])
        lines.append(
            f"pr-ready patch file ({execution.pr_patch.size_bytes} bytes, sha256 "
            f"{execution.pr_patch.sha256[:16]}…) kept in the state directory: {kept}"
        )
    return lines


def diff_stat_lines(execution: ExecutionRecord) -> list[str]:
    """What git says an executed run changed: one line per file (status, path, ``+added -deleted``),
    then ``N files changed``; one line saying why when there is no change evidence."""
    evidence = execution.evidence
    if evidence is None:
        return [f"no change evidence (execution failed: {execution.failure_type or 'unknown'})"]
    counts = {entry.path: entry for entry in evidence.numstat}
    lines = []
    for changed in evidence.files:
        entry = counts.get(changed.path)
        if entry is None or entry.added is None or entry.deleted is None:
            stat = "binary" if entry is not None else ""
        else:
            stat = f"+{entry.added} -{entry.deleted}"
        lines.append(f"{changed.status.value:<9} {changed.path}  {stat}".rstrip())
    plural = "file" if evidence.files_changed == 1 else "files"
    lines.append(f"{evidence.files_changed} {plural} changed (diff sha256 {evidence.diff_sha256[:16]}…)")
    return lines


def _pass_label(wave_pass: WavePass) -> str:
    return f"pass {wave_pass.index} ({wave_pass.profile} on {', '.join(wave_pass.axes)})"


def _pass_result(wave_pass: WavePass) -> str:
    """What one wave pass came back with: its verdict and confidence, or why it did not."""
    output = wave_pass.output
    if wave_pass.outcome is PassOutcome.COMPLETED and output is not None and output.verdict is not None:
        return f"{output.verdict.value} (confidence {output.confidence})"
    if wave_pass.outcome is None:
        return "not finished"
    return f"failed ({wave_pass.error_type or 'no answer'})"


def _agrees(wave_pass: WavePass) -> bool:
    output = wave_pass.output
    return (
        wave_pass.outcome is PassOutcome.COMPLETED
        and output is not None
        and output.verdict is ReviewVerdict.AGREE
    )


def review_lines(view: RunView) -> list[str]:
    """The run's independent review in words. A single review: its verdict and confidence. A wave:
    ``agree`` only when every pass came back agreeing, else how many of its passes agree and what the
    others did; then one line per pass (its verdict and confidence, or why it failed)."""
    if view.wave is None:
        review = view.review
        if review is None or review.verdict is None:
            return []
        return [f"independent review: {review.verdict.value} (confidence {review.confidence})"]
    passes = view.wave.passes
    agreeing = sum(1 for wave_pass in passes if _agrees(wave_pass))
    if agreeing == len(passes):
        headline = f"independent review: agree (every one of the wave's {len(passes)} passes)"
    else:
        headline = f"independent review: NOT agreed: {agreeing} of the wave's {len(passes)} passes agree"
    return [headline] + [f"  {_pass_label(p)}: {_pass_result(p)}" for p in passes]


def failed_review_passes(results: list[tuple[str, RunView]]) -> list[str]:
    """Every wave pass of the runs that did not come back (``RUN pass N (profile on axes): failed
    (error)``), for the demo to report as unfinished."""
    return [
        f"{view.run_id} {_pass_label(p)}: {_pass_result(p)}"
        for _, view in results
        if view.wave is not None
        for p in view.wave.passes
        if p.outcome is not PassOutcome.COMPLETED
    ]


def print_summary(results: list[tuple[str, RunView]]) -> None:
    """One row per run, then each analysed run's findings, review and decision, and each executed
    run's diff stat."""
    out = console()
    out.print(
        table(
            "demo runs",
            ["run", "example", "tier", "status", "primary", "reviewer", "risk", "contract sha256"],
            [
                [
                    view.run_id,
                    name,
                    view.tier.value if view.tier else "-",
                    view.status.value,
                    view.route.primary if view.route else "-",
                    view.route.reviewer if view.route else "-",
                    view.route.risk.value if view.route else "-",
                    (view.contract_sha256 or "-")[:16],
                ]
                for name, view in results
            ],
        )
    )
    for _, view in results:
        if view.result is None:
            continue
        out.print(
            table(
                f"{view.run_id} findings ({view.route.primary if view.route else ''})",
                ["severity", "finding"],
                [[f.severity.value, f.title] for f in view.result.findings],
            )
        )
        if view.execution is not None:
            out.print(f"{view.run_id} change (computed by git):")
            for line in diff_stat_lines(view.execution) + verification_lines(view.execution):
                out.print(f"  {line}")
        for line in review_lines(view):
            out.print(line)
        if view.decision is not None:
            note = f": {view.decision.note}" if view.decision.note else ""
            out.print(f"decision: {view.decision.outcome.value} by {view.decision.actor}{note}")
    for _, view in results:
        if view.approval is not None:
            executed = f", executed by {view.execution.actor}" if view.execution is not None else ""
            out.print(
                f"{view.run_id}: {view.status.value} — contract {view.approval.contract_sha256} approved by "
                f"{view.approval.actor}{executed}"
            )
            location = view.execution.location if view.execution is not None else None
            if location is not None:
                kept = "/".join(Path(location.worktree).parts[-3:])
                out.print(f"  worktree attempt {location.attempt} is kept in the state directory: {kept}")


def afterwards_lines(
    state_dir: Path, actor: str, anchor: str, cli: str, temporal_ui: str, port: int = 8400
) -> list[str]:
    """How to look at the demo's runs afterwards — the Temporal UI with ``make dev``, the CLI, and
    Mission Control signed in as the demo's operator — with every variable those commands need: the
    state directory, the trust anchor (``anchor``, an assignment such as
    ``SPECIALISTS_ACTION_TOKEN_FILE=...``) and the operator's key file the demo made. ``cli`` is how
    the CLI is called (its path when it is not on ``PATH``)."""
    state = shlex.quote(str(state_dir))
    key = shlex.quote(str(state_dir / f"{actor}.key"))
    return [
        "afterwards, in each shell you open in the clone (make dev, the CLI and Mission Control all need "
        "these):",
        f"  export SPECIALISTS_STATE_DIR={state} {anchor} SPECIALISTS_ACTOR_KEY_FILE={key}",
        f"  make dev    # the Temporal server again (its UI: {temporal_ui}) and a worker; leave it running",
        f"  {cli} list    # the demo's runs, from the projection",
        f"  {cli} web    # in another shell: Mission Control on http://127.0.0.1:{port}/",
        f"  {cli} web sign-in CODE --actor {actor}    # signs in as {actor}: CODE is what the "
        "sign-in page shows; paste the token this prints into it",
    ]
