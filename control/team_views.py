"""JSON shapes and renderings of research teams (``research team-start``, ``team-show``, ``adjudicate``,
``team-cancel`` and ``teams``; docs/architecture.md "Research team" and "Operator contract").

A team (``--json``)::

    {"team_id", "case_id", "request_id", "status", "started_by", "created_at", "deadline_at",
     "current_stage", "jobs_used", "jobs_limit", "block", "error", "capture": {...} | null,
     "stages": [{"number", "name", "profile", "reviewer", "state",
                 "analysis": {"job_id", "sha256", "model", "findings", "max_severity"} | null,
                 "review": {... the same, plus "verdict"} | null,
                 "limitations", "adjudication", "omitted": {"analysis": [...], "review": [...]},
                 "drew_on", "jobs"}],
     "audit": [{"seq", "at", "kind", "actor", "data"}]}

``team-start`` adds ``"deduplicated"``. ``teams --json`` is ``{"teams": [{"team_id", "case_id",
"status", "started_at", "closed_at"}]}``. Times are ISO 8601 UTC with ``Z``.

Everything shown here but the labels is untrusted — the case's title came from an operator's file,
limitations and verdicts from models, notes and audit data from people and providers: it reaches the
console only as :func:`control.output.table` cells or through :func:`control.output.safe_text`.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any, Final

from control.output import safe_text, table

if TYPE_CHECKING:
    from rich.console import Console

    from contracts.research_teams import JobOutputRef, StageRecord, TeamView

AUDIT_TAIL: Final = 8
"""How many of the latest audit events the human view shows (``--json`` carries them all)."""
NOTHING_APPROVED: Final = (
    "Nothing here is approved or published: a team only analyses. Its stage results are model output "
    "for people to review."
)


def iso(value: dt.datetime | None) -> str | None:
    """ISO 8601 UTC with ``Z`` (docs/architecture.md "Values"); ``None`` stays ``None``."""
    if value is None:
        return None
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


# ------------------------------------------------------------------------------------------------ JSON


def _output_json(ref: JobOutputRef | None, *, review: bool) -> dict[str, Any] | None:
    if ref is None:
        return None
    data: dict[str, Any] = {
        "job_id": ref.job_id,
        "sha256": ref.sha256,
        "model": ref.model_id,
        "findings": ref.findings,
        "max_severity": None if ref.max_severity is None else ref.max_severity.value,
    }
    if review:
        data["verdict"] = None if ref.verdict is None else ref.verdict.value
    return data


def stage_json(stage: StageRecord) -> dict[str, Any]:
    """One entry of ``"stages"`` (module docstring)."""
    adjudication = None
    if stage.adjudication is not None:
        adjudication = stage.adjudication.model_dump(mode="json")
        adjudication["at"] = iso(stage.adjudication.at)
    return {
        "number": stage.number,
        "name": stage.name,
        "profile": stage.profile_id,
        "reviewer": stage.reviewer_id,
        "state": stage.state,
        "analysis": _output_json(stage.analysis, review=False),
        "review": _output_json(stage.review, review=True),
        "limitations": list(stage.limitations),
        "adjudication": adjudication,
        "omitted": {
            "analysis": list(stage.omitted.get("analysis", [])),
            "review": list(stage.omitted.get("review", [])),
        },
        "drew_on": list(stage.drew_on),
        "jobs": stage.jobs,
    }


def team_json(view: TeamView) -> dict[str, Any]:
    """The team as ``--json`` prints it (module docstring; without ``"deduplicated"``)."""
    return {
        "team_id": view.team_id,
        "case_id": view.case_id,
        "request_id": view.request_id,
        "status": view.status.value,
        "started_by": view.started_by,
        "created_at": iso(view.created_at),
        "deadline_at": iso(view.deadline_at),
        "current_stage": view.current_stage,
        "jobs_used": view.jobs_used,
        "jobs_limit": view.jobs_limit,
        "block": None if view.block is None else view.block.model_dump(mode="json"),
        "error": None if view.error is None else view.error.model_dump(mode="json"),
        "capture": None if view.capture is None else view.capture.model_dump(mode="json"),
        "stages": [stage_json(stage) for stage in view.stages],
        "audit": [
            {
                "seq": event.seq,
                "at": iso(event.at),
                "kind": event.kind,
                "actor": event.actor,
                "data": event.model_dump(mode="json")["data"],
            }
            for event in view.audit
        ],
    }


def teams_json(teams: list[dict[str, Any]]) -> dict[str, Any]:
    """``research teams --json``: ``{"teams": [{"team_id", "case_id", "status", "started_at",
    "closed_at"}]}``, newest first (rows of :func:`control.research_teams.list_teams`)."""
    keys = ("team_id", "case_id", "status", "started_at", "closed_at")
    return {"teams": [{key: team.get(key) for key in keys} for team in teams]}


# ----------------------------------------------------------------------------------------------- human


def render_team(console: Console, view: TeamView, extra: dict[str, Any] | None = None) -> None:
    """A header, the stages, the block or error, what the team waits for, and the audit tail."""
    from contracts.research_teams import TeamStatus

    extra = extra or {}
    stage = "-" if view.current_stage is None else f"{view.current_stage} of {len(view.stages)}"
    rows = [
        ["team", view.team_id],
        ["case", view.case_id],
        ["status", view.status.value],
        ["stage", stage],
        ["jobs used", f"{view.jobs_used}/{view.jobs_limit}"],
        ["deadline", iso(view.deadline_at) or "-"],
        ["request id", view.request_id],
        ["started by", view.started_by],
        ["created at", iso(view.created_at) or "-"],
    ]
    if extra.get("deduplicated"):
        rows.append(["deduplicated", "yes: this request id already had this team"])
    if view.capture is not None:
        capture = view.capture
        rows += [
            ["subject", f"{capture.subject_kind} {capture.subject_identifier}: {capture.subject_title}"],
            ["evidence", f"{len(capture.evidence)} active records, digest {capture.evidence_digest[:12]}"],
            ["models", ", ".join(capture.model.chain)],
        ]
    console.print(table(f"research team {view.team_id}", ["field", "value"], rows))
    console.print(
        table(
            "stages",
            ["#", "stage", "profile", "reviewer", "state", "analysis", "review", "jobs", "adjudication"],
            [_stage_row(record) for record in view.stages],
        )
    )
    for record in view.stages:
        for limitation in record.limitations:
            console.print(safe_text(f"stage {record.number} limitation: {limitation}"))
        if record.adjudication is not None and record.adjudication.note:
            console.print(
                safe_text(f"stage {record.number} adjudication note ({record.adjudication.actor}): ")
                + safe_text(record.adjudication.note)
            )
    if view.block is not None:
        block = view.block
        console.print(
            safe_text(
                f"blocked at stage {block.stage} ({block.kind.value} job): "
                f"{block.error_type}: {block.message}",
                style="bold",
            )
        )
    if view.error is not None:
        console.print(safe_text(f"error: {view.error.type}: {view.error.message}", style="bold"))
    console.print(safe_text(_next_step(view)))
    console.print(safe_text(NOTHING_APPROVED))
    if view.status is TeamStatus.AWAITING_HUMAN_REVIEW:
        console.print(
            safe_text(
                "The results await human review: read each stage's analysis, review and limitations "
                "before anything is used.",
                style="bold",
            )
        )
    tail = view.audit[-AUDIT_TAIL:]
    title = "audit" if len(tail) == len(view.audit) else f"audit (last {len(tail)} of {len(view.audit)})"
    console.print(
        table(
            title,
            ["seq", "at", "kind", "actor", "data"],
            [[str(e.seq), iso(e.at) or "-", e.kind, e.actor or "-", _short(e.data)] for e in tail],
        )
    )


def _stage_row(record: StageRecord) -> list[str]:
    analysis = "-"
    if record.analysis is not None:
        severity = record.analysis.max_severity.value if record.analysis.max_severity else "none"
        analysis = f"{record.analysis.findings} findings, max {severity}"
    review = "-"
    if record.review is not None:
        review = record.review.verdict.value if record.review.verdict else "no verdict"
    adjudication = "-"
    if record.adjudication is not None:
        adjudication = f"{record.adjudication.outcome.value} by {record.adjudication.actor}"
    return [
        str(record.number),
        record.name,
        record.profile_id,
        record.reviewer_id or "-",
        record.state,
        analysis,
        review,
        str(record.jobs),
        adjudication,
    ]


def _next_step(view: TeamView) -> str:
    """What the team waits for, in one line."""
    from contracts.research_teams import BLOCK_OUTCOMES, DISAGREEMENT_OUTCOMES, TeamStatus

    stage = view.current_stage
    if view.status is TeamStatus.AWAITING_ADJUDICATION:
        choices = " | ".join(sorted(outcome.value for outcome in DISAGREEMENT_OUTCOMES))
        return (
            f"The team waits for a person: stage {stage}'s reviewer disagrees materially. Record an "
            f"outcome with `specialists research adjudicate --actor ID --id {view.team_id} --stage "
            f"{stage} --outcome {choices}`; `specialists research team-results {view.team_id}` shows "
            "the findings and the review."
        )
    if view.status is TeamStatus.BLOCKED:
        choices = " | ".join(sorted(outcome.value for outcome in BLOCK_OUTCOMES))
        return (
            f"The team waits for a person: stage {stage} is blocked. Choose with `specialists research "
            f"adjudicate --actor ID --id {view.team_id} --stage {stage} --outcome {choices}` (a retry "
            "counts against the job budget)."
        )
    if view.status.final:
        return f"The team has ended ({view.status.value}); it runs nothing more."
    return f"The team is {view.status.value}."


def _short(data: dict[str, Any]) -> str:
    text = ", ".join(f"{key}={value}" for key, value in data.items() if value not in (None, [], {}, ""))
    return text if len(text) <= 100 else text[:99] + "…"


def render_teams(console: Console, teams: list[dict[str, Any]]) -> None:
    """The ``research teams`` table."""
    if not teams:
        console.print("no research teams — start one with `specialists research team-start`")
        return
    rows = teams_json(teams)["teams"]
    console.print(
        table(
            "research teams (newest first)",
            ["team", "case", "status", "started at", "closed at"],
            [
                [
                    row["team_id"],
                    row["case_id"] or "-",
                    row["status"] or "-",
                    row["started_at"] or "-",
                    row["closed_at"] or "-",
                ]
                for row in rows
            ],
        )
    )


# ----------------------------------------------------------------------------------- team results


def results_json(view: TeamView, outputs: dict[str, Any]) -> dict[str, Any]:
    """``research team-results --json``: every stage's stored analysis and review in full, each with
    its job id, the sha256 the team recorded and whether the stored output still hashes to it
    (``digest_ok``), plus the stage's limitations, adjudication and omissions. ``outputs`` maps job
    ids to stored records (``contracts.research.JobOutputRecord``); a missing one is ``null``."""
    from contracts.hashing import canonical_sha256

    def one(ref: JobOutputRef | None) -> dict[str, Any] | None:
        if ref is None:
            return None
        record = outputs.get(ref.job_id)
        if record is None:
            return {"job_id": ref.job_id, "sha256": ref.sha256, "stored": False}
        return {
            "job_id": ref.job_id,
            "sha256": ref.sha256,
            "stored": True,
            "digest_ok": canonical_sha256(record.output) == ref.sha256 == record.output_sha256,
            "profile": record.profile_id,
            "model": record.model_id,
            "output": record.output,
        }

    return {
        "team_id": view.team_id,
        "case_id": view.case_id,
        "status": view.status.value,
        "note": "model output for human review: nothing here is approved, published or evidence",
        "stages": [
            {
                "number": stage.number,
                "name": stage.name,
                "analysis": one(stage.analysis),
                "review": one(stage.review),
                "limitations": list(stage.limitations),
                "adjudication": stage.adjudication.model_dump(mode="json") if stage.adjudication else None,
                "omitted": {kind: list(items) for kind, items in stage.omitted.items()},
                "drew_on": list(stage.drew_on),
            }
            for stage in view.stages
        ],
    }


def render_results(console: Console, data: dict[str, Any]) -> None:
    """The human form of :func:`results_json`: per stage, the analysis's findings, gaps and next
    action, then the review's verdict and findings. All of it is model text, shown literally."""
    console.print(
        safe_text(
            f"team {data['team_id']} ({data['status']}) on case {data['case_id']}: "
            "model output for human review; nothing here is approved, published or evidence",
            style="bold",
        )
    )
    for stage in data["stages"]:
        console.print(safe_text(f"\nstage {stage['number']} {stage['name']}", style="bold"))
        for label in ("analysis", "review"):
            part = stage[label]
            if part is None:
                console.print(safe_text(f"  {label}: not run"))
                continue
            if not part["stored"]:
                console.print(safe_text(f"  {label} {part['job_id']}: not in this store"))
                continue
            output = part["output"]
            check = "" if part["digest_ok"] else "  (STORED OUTPUT DOES NOT MATCH ITS RECORDED SHA256)"
            verdict = f" verdict {output.get('verdict')}" if output.get("verdict") else ""
            console.print(
                safe_text(
                    f"  {label} by {part['profile']} ({part['model']}){verdict}, confidence "
                    f"{output.get('confidence')}{check}"
                )
            )
            for finding in output.get("findings", []):
                refs = ", ".join(finding.get("evidence_refs", []))
                console.print(safe_text(f"    - [{finding.get('severity')}] {finding.get('title')}"))
                if finding.get("detail"):
                    console.print(safe_text(f"      {finding['detail']}"))
                if refs:
                    console.print(safe_text(f"      cites: {refs}"))
            for gap in output.get("gaps", []):
                console.print(safe_text(f"    gap: {gap}"))
            if output.get("recommended_next_action"):
                console.print(safe_text(f"    next: {output['recommended_next_action']}"))
        for limitation in stage["limitations"]:
            console.print(safe_text(f"  limitation: {limitation}"))
        if stage["adjudication"]:
            adjudication = stage["adjudication"]
            console.print(
                safe_text(
                    f"  adjudicated {adjudication['outcome']} by {adjudication['actor']}"
                    + (f": {adjudication['note']}" if adjudication.get("note") else "")
                )
            )
        if stage["drew_on"]:
            console.print(safe_text(f"  drew on: {', '.join(stage['drew_on'])}"))
