"""How the operator surface shows a run's probe requests (docs/architecture.md "Probe requests"): each
probe's index, status, digest and what it asks (hypothesis, argv, cwd, inputs, expected outcomes,
anticipated effects) — model output, untrusted, printed only as plain table cells — then, for a probe
that ran, the operator-run evidence (commit, exit status, duration, output sizes and digests, the paths
git reports changed; the output itself with ``output``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from control.output import safe_text, table, utc

if TYPE_CHECKING:
    from rich.console import Console

    from contracts.probes import ProbeRecord
    from contracts.runs import RunView


def probes_json(view: RunView) -> dict[str, Any]:
    """``probes --json``: ``{"run_id", "status", "contract_sha256", "probes": [ProbeRecord ...]}``."""
    return {
        "run_id": view.run_id,
        "status": view.status.value,
        "contract_sha256": view.contract_sha256,
        "probes": [record.model_dump(mode="json") for record in view.probes],
    }


def render_probes(console: Console, view: RunView, *, output: bool = False) -> None:
    """The probes section of ``show`` and ``probes`` (nothing when the analysis asked for none)."""
    if not view.probes:
        return
    console.print(
        safe_text(
            "probe requests (asked for by the analysis, never run by it; text below is the model's, "
            "untrusted; an approved probe's evidence is the operator's, not the specialist's):"
        )
    )
    for record in view.probes:
        console.print(table(f"probe {record.index}: {record.status.value}", ["", ""], _rows(record)))
        evidence = record.evidence
        if evidence is not None and evidence.changed:
            console.print(
                table(
                    f"probe {record.index}: paths git reports changed in its worktree",
                    ["status", "path"],
                    [[change.status, change.path] for change in evidence.changed],
                )
            )
        if output and evidence is not None:
            for name, text in (("stdout", evidence.stdout), ("stderr", evidence.stderr)):
                if text:
                    console.print(safe_text(f"probe {record.index} {name}:"))
                    console.print(safe_text(text))


def _rows(record: ProbeRecord) -> list[list[str]]:
    request = record.request
    rows = [
        ["sha256", record.sha256],
        ["hypothesis", request.hypothesis],
        ["argv", json.dumps(request.argv)],
        ["cwd", request.cwd],
        ["inputs", json.dumps(request.inputs)],
        ["confirming", request.expected_confirming],
        ["falsifying", request.expected_falsifying],
        ["anticipated effects", request.anticipated_effects],
    ]
    if record.approved_by is not None:
        when = utc(record.approved_at) if record.approved_at else ""
        rows.append(["approved by", f"{record.approved_by} at {when}"])
    evidence = record.evidence
    if evidence is not None:
        rows += [
            ["commit", f"{evidence.commit} ({evidence.commit_source})"],
            [
                "exit",
                "none (killed or not run)" if evidence.exit_status is None else str(evidence.exit_status),
            ],
            ["duration", f"{evidence.duration_seconds:.2f} s"],
            ["stdout", f"{evidence.stdout_bytes} bytes, sha256 {evidence.stdout_sha256}"],
            ["stderr", f"{evidence.stderr_bytes} bytes, sha256 {evidence.stderr_sha256}"],
            [
                "confined",
                ("yes, no network" if evidence.network_isolated else "yes") if evidence.confined else "no",
            ],
            ["changed paths", str(evidence.changed_count)],
        ]
    if record.error_type is not None:
        rows.append(["error", f"{record.error_type}: {record.error or ''}"])
    return rows
