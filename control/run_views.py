"""JSON shapes and renderings of runs (docs/architecture.md "Operator contract")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from contracts.audit import AuditKind
from contracts.enums import Tier
from contracts.pass_records import ApprovalControl, PassControls
from control.output import safe_text, table, utc
from control.views import orchestration_rows

if TYPE_CHECKING:
    from rich.console import Console

    from contracts.errors import OperatorError
    from contracts.model_classes import ModelClass
    from contracts.runs import AuditEvent, RunSummary, RunView

PROJECTION_SOURCE = "projection"
"""``show --json`` ``source`` when the run's workflow could not be asked (else ``workflow``)."""


def run_json(view: RunView) -> dict[str, Any]:
    """``{"run_id", "status", "tier", "automatic", "route", "contract", "contract_sha256", "result",
    "review", "decision", "audit", ...}``. Context packs are large and shown on request only
    (:func:`packs_json`, ``show --pack``)."""
    return view.model_dump(mode="json", exclude={"context_packs"})


def packs_json(view: RunView) -> list[dict[str, Any]]:
    """``show --pack --json``: ``[{"sha256", "pack": {...}}]``, one per completed model job."""
    return [record.model_dump(mode="json") for record in view.context_packs]


def controls_text(requested: PassControls | None, observed: PassControls | None) -> str:
    """A pass's controls in words: its sandbox, tools and network, and the approval asked for with
    the one seen (``-`` for a record made before controls were recorded)."""
    if requested is None:
        return "-"
    tools = ", ".join(requested.tools) or "no tools"
    text = f"{requested.sandbox.value}, {tools}, {'network' if requested.network else 'no network'}"
    if requested.approval is ApprovalControl.NOT_REQUIRED:
        return f"{text}; approval not required"
    seen = observed.approved_by if observed is not None else None
    if seen is None or observed is None:
        return f"{text}; approval of the contract digest: NONE SEEN"
    matches = "the contract's digest" if observed.digest_matches else "ANOTHER digest"
    return f"{text}; approved by {seen} ({matches})"


def _model(model_class: ModelClass | None, model_id: str | None) -> str:
    return f"{model_class.value if model_class else '-'} / {model_id or '-'}"


def _render_wave(console: Console, view: RunView) -> None:
    """A review wave: each pass (profile, axes, class and model, outcome, verdict, independence and
    controls) and the consolidation."""
    wave = view.wave
    assert wave is not None
    rows = [
        [
            str(p.index),
            p.profile,
            ", ".join(p.axes),
            _model(p.model_class, p.model_id),
            p.outcome.value if p.outcome else "running",
            p.output.verdict.value if p.output and p.output.verdict else (p.error_type or "-"),
        ]
        for p in wave.passes
    ]
    console.print(
        table(
            f"review wave (at most {wave.max_in_flight} in flight)",
            ["#", "profile", "axes", "class / model", "outcome", "verdict"],
            rows,
        )
    )
    records = []
    for p in wave.passes:
        records.append(
            [str(p.index), "independent", ("yes: " if p.independent else "no: ") + "; ".join(p.independence)]
        )
        records.append([str(p.index), "controls", controls_text(p.controls_requested, p.controls_observed)])
    console.print(table("wave pass records", ["#", "", ""], records))
    if wave.consolidation is not None:
        c = wave.consolidation
        lines = [["agreement", a] for a in c.agreements]
        lines += [["conflict", f"{x.about} ({x.resolution})"] for x in c.conflicts]
        lines += [["gap", g] for g in c.gaps]
        console.print(table("consolidation", ["", ""], lines))


def render_run(console: Console, view: RunView, extra: dict[str, Any]) -> None:
    """A summary table, then findings, review, decision and the audit trail.

    Everything here but the labels is untrusted (model output, provider errors, audit data, notes):
    it reaches the console only as :func:`control.output.table` cells or through ``safe_text``.
    """
    rows = [
        ["run", view.run_id],
        ["status", view.status.value],
        ["tier", view.tier.value if view.tier else "-"],
        ["automatic", "yes" if view.automatic else "no"],
    ]
    title = _created_title(view.audit)
    if title is not None:
        rows.append(["title", title])
    if extra.get("deduplicated"):
        rows.append(["deduplicated", "yes: this request id already had this run"])
    if view.route is not None:
        rows += [
            ["primary", view.route.primary],
            ["reviewer", view.route.reviewer],
            ["risk", view.route.risk.value],
            ["evidence gaps", "; ".join(view.route.evidence_gaps) or "-"],
        ]
        if view.route.override is not None:
            rows.append(["override", f"{view.route.override.profile}: {view.route.override.reason}"])
        rows.extend(["route reason", reason] for reason in view.route.reasons)
    if view.contract is not None:
        rows.append(["evidence", ", ".join(view.contract.evidence_refs) or "-"])
    if view.contract_sha256:
        rows.append(["contract sha256", view.contract_sha256])
    if view.contract is not None and view.contract.model is not None:
        rows.append(["model", view.contract.model.primary])
    if view.contract is not None and view.contract.orchestration is not None:
        rows += orchestration_rows(view.contract.orchestration)
    if view.contract is not None and view.contract.repo_alias is not None:
        # What an approval covers: the repository and the exact commit the run starts from.
        rows.append(["repository", view.contract.repo_alias])
        rows.append(["base commit", view.contract.base_commit or "-"])
        rows.append(["task type", view.contract.task_type.value])
        rows.append(["budget", f"{view.contract.budgets.runtime_seconds} s runtime"])
    if view.error is not None:
        rows.append(["error", f"{view.error.type}: {view.error.message}"])
    console.print(table(f"run {view.run_id}", ["", ""], rows))
    if view.contract is not None:
        task_title = "task (the contract's, as the specialist is given it)"
        console.print(table(task_title, [""], [[view.contract.task]]))
    for label, output in (("result", view.result), ("review", view.review)):
        if output is None:
            continue
        shown = _wave_review_label(view) if label == "review" and view.wave is not None else label
        title = f"{shown}: confidence {output.confidence:.2f} ({output.confidence_band.value})"
        if output.verdict is not None:
            title += f", verdict {output.verdict.value}"
        console.print(
            table(
                title,
                ["severity", "finding", "evidence"],
                [[f.severity.value, f.title, ", ".join(f.evidence_refs)] for f in output.findings],
            )
        )
    if view.passes:
        rows = [
            [
                p.kind.value, p.profile, _model(p.model_class, p.model_id),
                p.outcome.value if p.outcome else "running", "yes" if p.independent else "no",
                "; ".join(p.independence),
            ]
            for p in view.passes
        ]  # fmt: skip
        headers = ["kind", "profile", "class / model", "outcome", "independent", "why"]
        console.print(table("passes", headers, rows))
        controls = [
            [p.kind.value, controls_text(p.controls_requested, p.controls_observed)] for p in view.passes
        ]
        console.print(table("pass controls (sandbox, tools, network; approval)", ["kind", ""], controls))
    if view.wave is not None:
        _render_wave(console, view)
    if view.decision is not None:
        decision = view.decision
        console.print(
            safe_text(
                f"decision: {decision.outcome.value} by {decision.actor} — {decision.note or 'no note'}"
            )
        )
    console.print(
        table(
            "audit",
            ["seq", "at", "kind", "actor", "data"],
            [[str(e.seq), utc(e.at), e.kind, e.actor or "-", _short(e.data)] for e in view.audit],
        )
    )
    if "history" in extra:
        console.print(
            table(
                "Temporal history",
                ["id", "time", "type"],
                [[str(h["event_id"]), h["event_time"], str(h["event_type"])] for h in extra["history"]],
            )
        )
    if "context_packs" in extra:
        from contracts.pack_text import render_pack

        if not view.context_packs:
            console.print(safe_text(f"context packs: {_no_packs(view)}"))
        for record in view.context_packs:
            pack = record.pack
            console.print(safe_text(f"\ncontext pack of the {pack.job_kind.value} job ({pack.profile_id})"))
            console.print(
                safe_text(f"sha256 {record.sha256}; guidance sha256 {pack.profile_guidance_sha256}")
            )
            console.print(safe_text(render_pack(pack)))


def _wave_review_label(view: RunView) -> str:
    """What the ``review`` of a wave run is: one pass's review (the first that came back), not the
    wave's verdict — each pass's verdict is in the wave's table."""
    assert view.wave is not None
    first = next((p for p in view.wave.passes if p.output is not None and p.output == view.review), None)
    which = f"pass {first.index}, {first.profile}" if first is not None else "one pass"
    return f"review ({which}, of the wave's {len(view.wave.passes)}: every pass under 'review wave')"


def _no_packs(view: RunView) -> str:
    """Why ``show --pack`` has no pack to show: a recommend run never makes a model job, a run that
    has ended will make none more, any other may still."""
    if view.tier is Tier.RECOMMEND:
        return "none (a recommend run makes no model job)"
    if view.status.terminal:
        return f"none (the run ended {view.status.value} before any model job finished)"
    return "none yet (a pack is shown once its model job has ended)"


def _created_title(audit: list[AuditEvent]) -> str | None:
    """The work item's title, as the run's ``run_created`` audit event records it (a run refused at
    capture has no contract, so this is the one place its title is kept)."""
    for event in audit:
        if event.kind == AuditKind.RUN_CREATED:
            title = event.data.get("title")
            return title if isinstance(title, str) else None
    return None


def _short(data: dict[str, Any]) -> str:
    text = ", ".join(f"{key}={value}" for key, value in data.items() if value not in (None, [], {}, ""))
    return text if len(text) <= 100 else text[:99] + "…"


def summary_json(summary: RunSummary) -> dict[str, Any]:
    """One ``list --json`` row: ``run_id, status, tier, primary, reviewer, risk, created_at`` (+ more)."""
    return summary.model_dump(mode="json")


def list_json(runs: list[RunSummary]) -> dict[str, Any]:
    """``{"runs": [...]}``, newest first."""
    return {"runs": [summary_json(run) for run in runs]}


def render_list(
    console: Console, runs: list[RunSummary], *, no_store: str | None = None, more: bool = False
) -> None:
    """The runs as a table; ``no_store`` is the store URL when there is no store there yet (said, so a
    mistyped ``SPECIALISTS_DATABASE_URL`` or state directory shows); ``more`` when more runs match
    than are listed (said, with how to see them)."""
    if no_store is not None:
        console.print(safe_text(f"no runs: no store yet at {no_store} (nothing has been configured there)"))
        return
    if not runs:
        console.print("no runs")
        return
    console.print(
        table(
            "runs (newest first)",
            ["run", "status", "tier", "primary", "reviewer", "risk", "created", "title"],
            [
                [
                    r.run_id,
                    r.status.value,
                    r.tier.value if r.tier else "-",
                    r.primary or "-",
                    r.reviewer or "-",
                    r.risk.value if r.risk else "-",
                    utc(r.created_at),
                    r.title,
                ]
                for r in runs
            ],
        )
    )
    if more:
        console.print(
            safe_text(
                f"only the newest {len(runs)} are listed: more runs match "
                "(--limit N lists up to 1000; --status and --tier narrow the list)"
            )
        )


def projection_json(summary: RunSummary, events: list[AuditEvent], reason: OperatorError) -> dict[str, Any]:
    """``show --json`` when the run's workflow cannot be asked: the keys of a view (what the
    projection does not hold — route, contract, result, review, decision, approval, error,
    execution — is ``null``), the projected summary's own keys, ``source: "projection"``,
    ``projected_at`` (when it was written) and ``unanswered`` (``{"code", "message"}``: why the
    workflow was not asked)."""
    data: dict[str, Any] = {
        key: None
        for key in (
            "route",
            "contract",
            "result",
            "review",
            "decision",
            "approval",
            "error",
            "request_digest",
            "execution",
        )
    }
    data.update(summary.model_dump(mode="json"))
    data["audit"] = [event.model_dump(mode="json") for event in events]
    data["source"] = PROJECTION_SOURCE
    data["projected_at"] = data["updated_at"]
    data["unanswered"] = reason.to_json()["error"]
    return data


def render_projection(
    console: Console, summary: RunSummary, events: list[AuditEvent], reason: OperatorError
) -> None:
    """The last projected state of a run, labelled as such, with why the workflow was not asked."""
    at = utc(summary.updated_at)
    console.print(
        safe_text(
            f"{summary.run_id}: the LAST PROJECTED STATE, written at {at}, not the run's current view: "
            f"{reason.message}"
        )
    )
    rows = [
        ["run", summary.run_id],
        ["status", f"{summary.status.value} (as projected at {at})"],
        ["tier", summary.tier.value if summary.tier else "-"],
        ["automatic", "yes" if summary.automatic else "no"],
        ["primary", summary.primary or "-"],
        ["reviewer", summary.reviewer or "-"],
        ["risk", summary.risk.value if summary.risk else "-"],
        ["repository", summary.repo_alias or "-"],
        ["title", summary.title],
        ["contract sha256", summary.contract_sha256 or "-"],
        ["created", utc(summary.created_at)],
        ["projected at", at],
    ]
    console.print(table(f"run {summary.run_id} (last projected state)", ["", ""], rows))
    console.print(
        table(
            "audit (as projected)",
            ["seq", "at", "kind", "actor", "data"],
            [[str(e.seq), utc(e.at), e.kind, e.actor or "-", _short(e.data)] for e in events],
        )
    )
