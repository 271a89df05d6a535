"""Research cases as the CLI shows them (docs/architecture.md "Research team", "Operator contract").

JSON shapes (``--json``): a case is ``{"case_id", "subject", "created_by", "created_at", "evidence":
[{"evidence_id", "kind", "factual", "source_ref", "sha256", "active", "size_bytes", "added_by",
"added_at", "deactivated_by", "deactivated_at"}], "evidence_digest", "status", "status_changed_by",
"status_changed_at"}`` (``evidence_digest`` over the active records; ``case-show --content`` adds
each record's ``"content"``); ``cases`` prints ``{"cases": [{"case_id", "kind", "identifier",
"title", "evidence_active", "evidence_total", "created_at", "status"}]}``. Evidence content is shown
only with ``--content``. Everything shown but the labels is untrusted text: the human view prints it
only as :func:`control.output.table` cells or through
:func:`control.output.safe_text`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from contracts.research import ResearchCase


def _time(value: Any) -> str:
    """ISO 8601 UTC with ``Z`` (docs/architecture.md "Values")."""
    import datetime as dt

    return str(value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z"))


def case_json(case: ResearchCase, *, content: bool = False) -> dict[str, Any]:
    """A case as ``--json`` prints it (see the module docstring); ``content`` adds each record's content."""
    evidence = []
    for record in case.evidence:
        item: dict[str, Any] = {
            "evidence_id": record.evidence_id,
            "kind": record.kind.value,
            "factual": record.kind.factual,
            "source_ref": record.source_ref,
            "sha256": record.sha256,
            "active": record.active,
            "size_bytes": len(record.content.encode("utf-8")),
            "added_by": record.added_by,
            "added_at": _time(record.added_at),
            "deactivated_by": record.deactivated_by,
            "deactivated_at": _time(record.deactivated_at) if record.deactivated_at else None,
        }
        if content:
            item["content"] = record.content
        evidence.append(item)
    return {
        "case_id": case.case_id,
        "subject": case.subject.model_dump(mode="json"),
        "created_by": case.created_by,
        "created_at": _time(case.created_at),
        "evidence": evidence,
        "evidence_digest": case.evidence_digest,
        "status": case.status.value,
        "status_changed_by": case.status_changed_by,
        "status_changed_at": _time(case.status_changed_at) if case.status_changed_at else None,
    }


def cases_json(cases: list[ResearchCase]) -> dict[str, Any]:
    """``research cases --json``: ``{"cases": [...]}`` (see the module docstring), newest first."""
    return {
        "cases": [
            {
                "case_id": case.case_id,
                "kind": case.subject.kind,
                "identifier": case.subject.identifier,
                "title": case.subject.title,
                "evidence_active": len(case.active_evidence),
                "evidence_total": len(case.evidence),
                "created_at": _time(case.created_at),
                "status": case.status.value,
            }
            for case in cases
        ]
    }


def render_case(console: Console, data: dict[str, Any]) -> None:
    """The human view of :func:`case_json` ``data``: the case, its evidence table and, when ``data``
    holds content, each record's content (shown literally)."""
    from control.output import safe_text, table

    subject = data["subject"]
    console.print(
        table(
            f"research case {data['case_id']}",
            ["field", "value"],
            [
                ["kind", subject["kind"]],
                ["identifier", subject["identifier"]],
                ["title", subject["title"]],
                ["created by", data["created_by"]],
                ["created at", data["created_at"]],
                ["status", data["status"]],
                ["evidence digest", data["evidence_digest"]],
            ],
        )
    )
    console.print(
        table(
            "evidence",
            ["id", "kind", "factual", "active", "bytes", "sha256", "source", "added by", "added at"],
            [
                [
                    item["evidence_id"],
                    item["kind"],
                    "yes" if item["factual"] else "no",
                    "yes"
                    if item["active"]
                    else f"no (by {item['deactivated_by']} at {item['deactivated_at']})",
                    str(item["size_bytes"]),
                    item["sha256"][:12],
                    item["source_ref"],
                    item["added_by"],
                    item["added_at"],
                ]
                for item in data["evidence"]
            ],
        )
    )
    for item in data["evidence"]:
        if "content" in item:
            state = "active" if item["active"] else "inactive"
            console.print(safe_text(f"── {item['evidence_id']} ({item['kind']}, {state}) ──", style="bold"))
            console.print(safe_text(item["content"]))


def render_cases(console: Console, cases: list[ResearchCase]) -> None:
    """The ``research cases`` table."""
    from control.output import table

    if not cases:
        console.print("no research cases — create one with `specialists research case-create`")
        return
    rows = cases_json(cases)["cases"]
    console.print(
        table(
            "research cases",
            ["case", "status", "kind", "identifier", "title", "evidence (active/total)", "created at"],
            [
                [
                    row["case_id"],
                    row["status"],
                    row["kind"],
                    row["identifier"],
                    row["title"],
                    f"{row['evidence_active']}/{row['evidence_total']}",
                    row["created_at"],
                ]
                for row in rows
            ],
        )
    )


def emit_case(case: ResearchCase, as_json: bool, *, content: bool) -> None:
    """Print ``case`` (``--json``: :func:`case_json`; ``content`` adds each record's content)."""
    from control.output import emit

    data = case_json(case, content=content)
    emit(data, as_json, lambda console: render_case(console, data))
