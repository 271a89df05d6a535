"""JSON shapes and renderings of the goal queue (``specialists queue …``; docs/architecture.md "Goal
queue" and "Operator contract").

``add``, ``show``, ``update``, ``approve`` and ``reject`` (``--json``)::

    {"item": {"key", "status", "blocker", "failure", "title", "repo_alias", "tier", "scope": {...},
              "evidence", "value", "urgency", "risk", "notes", "cycle", "runs", "rounds",
              "escalations", "events": [{"seq", "at", "kind", "actor", "data"}],
              "created_at", "updated_at"},
     "spec": {"complete": bool, "gaps": [...]}}

``approve`` adds ``"previous_key"`` (the key before a rename, else ``null``), ``dispatch`` the
``"run_id"`` it started, ``show`` the item's ``"attention"``: ``{"run_id", "run_status", "next"}`` when
its run waits for a person (``ready``, ``awaiting_approval``, ``approved``; ``next`` names the
command), else ``null``. ``list``::

    {"items": [{"key", "status", "blocker", "failure", "title", "repo_alias", "tier", "value",
                "urgency", "risk", "priority", "spec", "attention", "created_at", "updated_at"}],
     "counts": {status: n for every status}, "fleet": {"line": "occupied/slots", "occupied": [keys],
     "count", "slots", "free"}, "ready": [keys in dispatch order], "autopilot": bool,
     "grant": {"granted_by", "granted_at"} | null, "settings": {...}}

``capacity``, ``autopilot``, ``recovery-delay`` and ``escalation-model``: ``{"settings": {"slots",
"autopilot", "recovery_delay_seconds", "escalation_model"}, "fleet": {...}}``. ``events``:
``{"events": [{"key", "seq", "at", "kind", "actor", "data"}]}`` oldest first, a settings change with
``"key": null``, ``"seq": null`` and kind ``settings``. Times are ISO 8601 UTC with ``Z``.

Everything but the labels is operator text or queue data: it reaches the console only as
:func:`control.output.table` cells or through :func:`control.output.safe_text`.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from contracts.queue_approval import spec_completeness
from contracts.queue_dispatch import tracked_run
from contracts.queue_items import (
    SCOPE_HEADINGS,
    SCOPE_SECTIONS,
    DispatchedRun,
    QueueItem,
    QueueSettings,
    QueueStatus,
    RunOutcome,
)
from contracts.queue_priority import dispatch_order, occupancy, priority
from control.output import safe_text, table

if TYPE_CHECKING:
    from rich.console import Console

    from contracts.queue_messages import AutopilotGrant, QueueView
    from contracts.runs import RunStatus, RunView


_NEXT: dict[str, str] = {
    "ready": "specialists enqueue {run} --actor ID",
    "awaiting_approval": "specialists approve {run} --actor ID --contract-sha256 H",
    "approved": "specialists execute {run} --actor ID",
}
"""The command a person runs next for a dispatched run waiting in a status."""


def iso(value: dt.datetime) -> str:
    """ISO 8601 UTC with ``Z`` (docs/architecture.md "Values")."""
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


# ------------------------------------------------------------------------------------------------ JSON


def item_json(item: QueueItem, **extra: Any) -> dict[str, Any]:
    """``{"item": {...}, "spec": {"complete", "gaps"}}`` and ``extra``."""
    return {"item": item.model_dump(mode="json"), "spec": spec_completeness(item).model_dump(), **extra}


def attention(item: QueueItem, run_status: dict[str, RunStatus]) -> dict[str, Any] | None:
    """``{"run_id", "run_status", "next"}`` when the item's run waits for a person, else ``None``."""
    run_id = tracked_run(item)
    status = run_status.get(run_id) if run_id is not None else None
    if run_id is None or status is None or status.value not in _NEXT:
        return None
    return {"run_id": run_id, "run_status": status.value, "next": _NEXT[status.value].format(run=run_id)}


def summary_json(item: QueueItem, run_status: dict[str, RunStatus] | None = None) -> dict[str, Any]:
    """One item of ``list``."""
    data = item.model_dump(
        mode="json",
        include={
            "key",
            "status",
            "blocker",
            "failure",
            "title",
            "repo_alias",
            "tier",
            "value",
            "urgency",
            "risk",
            "created_at",
            "updated_at",
        },
    )
    data["priority"] = priority(item)
    data["spec"] = spec_completeness(item).model_dump()
    data["attention"] = attention(item, run_status or {})
    return data


def fleet_json(items: list[QueueItem], settings: QueueSettings) -> dict[str, Any]:
    """The fleet line: ``{"line": "occupied/slots", "occupied", "count", "slots", "free"}``."""
    fleet = occupancy(items, settings.slots)
    return {"line": fleet.text(), **fleet.to_json()}


def listing_json(
    view: QueueView, *, status: QueueStatus | None = None, since: dt.datetime | None = None
) -> dict[str, Any]:
    """``list``: the items (of ``status``, changed since ``since``), the counts of every status over the
    whole queue, the fleet line and the keys ready to dispatch."""
    shown = [
        item
        for item in view.items
        if (status is None or item.status is status) and (since is None or item.updated_at >= since)
    ]
    counts = {value.value: 0 for value in QueueStatus}
    for item in view.items:
        counts[item.status.value] += 1
    return {
        "items": [summary_json(item, view.run_status) for item in shown],
        "counts": counts,
        "fleet": fleet_json(view.items, view.settings),
        "ready": [item.key for item in dispatch_order(view.items)],
        "autopilot": view.settings.autopilot,
        "grant": None if view.autopilot_grant is None else grant_json(view.autopilot_grant),
        "settings": view.settings.model_dump(mode="json"),
        "main_writes": [write.model_dump(mode="json") for write in view.main_writes],
        "archived_count": view.archived_count,
        "tombstones_forgotten": view.tombstones_forgotten,
    }


def archived_json(rows: list[tuple[QueueItem, dt.datetime]], total: int) -> dict[str, Any]:
    """``archived``: the newest archived items (key, status, title, updated and archived times) and how
    many the archive holds."""
    return {
        "items": [
            {
                "key": item.key,
                "status": item.status.value,
                "title": item.title,
                "updated_at": iso(item.updated_at),
                "archived_at": iso(archived_at),
            }
            for item, archived_at in rows
        ],
        "total": total,
    }


def render_archived(console: Console, data: dict[str, Any]) -> None:
    """The ``archived`` table (titles are shown as text, never markup)."""
    rows = [[row["key"], row["status"], row["title"], row["archived_at"]] for row in data["items"]]
    console.print(table(f"archived items ({data['total']})", ["key", "status", "title", "archived"], rows))


def grant_json(grant: AutopilotGrant) -> dict[str, Any]:
    """The autopilot's standing grant: ``{"granted_by", "granted_at"}``."""
    return {"granted_by": grant.granted_by, "granted_at": iso(grant.granted_at)}


def settings_json(view_items: list[QueueItem], settings: QueueSettings) -> dict[str, Any]:
    """``capacity`` and ``autopilot``: the settings and the fleet line."""
    return {"settings": settings.model_dump(mode="json"), "fleet": fleet_json(view_items, settings)}


def events_json(view: QueueView, *, since: dt.datetime | None = None) -> dict[str, Any]:
    """``events``: every item's events and the settings changes (since ``since``), oldest first."""
    rows: list[tuple[dt.datetime, str, int, dict[str, Any]]] = []
    for item in view.items:
        for event in item.events:
            if since is None or event.at >= since:
                data = {"key": item.key, **event.model_dump(mode="json")}
                rows.append((event.at, item.key, event.seq, data))
    for index, change in enumerate(view.settings_changes):
        if since is None or change.at >= since:
            data = {
                "key": None,
                "seq": None,
                "at": iso(change.at),
                "kind": "settings",
                "actor": change.actor,
                "data": {"setting": change.setting, "from": change.before, "to": change.after},
            }
            rows.append((change.at, "", index, data))
    rows.sort(key=lambda row: (row[0], row[1], row[2]))
    return {"events": [row[3] for row in rows]}


# ------------------------------------------------------------------------------------------- rendering


def _text(value: object) -> str:
    return "-" if value is None or value == "" else str(value)


def handover_json(view: RunView) -> dict[str, Any]:
    """What ``queue done`` hands over: the accepted run, its tier and contract digest, the decision,
    the primary's and the reviewer's closing lines, the change (files and diff digest) of an executed
    run and, for a pr_ready run, its complete patch file (sha256, size and the path on the worker
    host: ``done`` is the protected action that hands it over). Nothing is merged, pushed or
    published."""
    execution = view.execution
    change = None
    if execution is not None and execution.evidence is not None:
        evidence = execution.evidence
        change = {
            "base_commit": evidence.base_commit,
            "files_changed": evidence.files_changed,
            "diff_sha256": evidence.diff_sha256,
        }
    patch = None
    if execution is not None and execution.pr_patch is not None:
        host = execution.location.host if execution.location is not None else None
        patch = {**execution.pr_patch.model_dump(mode="json"), "host": host}
    return {
        "run_id": view.run_id,
        "tier": view.tier.value if view.tier is not None else None,
        "contract_sha256": view.contract_sha256,
        "decision": None if view.decision is None else view.decision.outcome.value,
        "result": None if view.result is None else view.result.recommended_next_action,
        "review": None if view.review is None or view.review.verdict is None else view.review.verdict.value,
        "change": change,
        "patch": patch,
        "show": f"specialists show {view.run_id} --diff",
    }


def render_routed(console: Console, key: str, routed: dict[str, Any]) -> None:
    """What ``route-next`` did with ``key``: the tier the policy gave it, the route, and why."""
    what = (
        f"dispatched as automatic read_only run {routed['run_id']}"
        if routed["run_id"]
        else "recommended only (no run started; the item stays approved)"
    )
    console.print(
        safe_text(
            f"route-next {key}: {what}; policy mode {routed['policy_mode']}, primary "
            f"{routed['primary']}, reviewer {routed['reviewer']}, risk {routed['risk']}"
        )
    )
    for reason in routed["reasons"]:
        console.print(safe_text(f"  - {reason}"))


def render_handover(console: Console, handover: dict[str, Any]) -> None:
    """The hand-over of ``queue done``, one line per fact."""
    rows = [
        ["run", handover["run_id"]],
        ["tier", _text(handover["tier"])],
        ["contract sha256", _text(handover["contract_sha256"])],
        ["decision", _text(handover["decision"])],
        ["next action (primary)", _text(handover["result"])],
        ["review verdict", _text(handover["review"])],
    ]
    change = handover["change"]
    if change is not None:
        rows.append(["change", f"{change['files_changed']} files, diff sha256 {change['diff_sha256']}"])
    patch = handover["patch"]
    if patch is not None:
        where = patch["path"] + (f" on {patch['host']}" if patch["host"] else "")
        rows.append(["patch file", f"{where} ({patch['size_bytes']} bytes, sha256 {patch['sha256']})"])
    rows.append(["the full result", handover["show"]])
    console.print(table("handed over (nothing was merged, pushed or published)", ["", ""], rows))


def render_item(
    console: Console,
    item: QueueItem,
    *,
    previous_key: str | None = None,
    attention: dict[str, Any] | None = None,
    archived: dict[str, Any] | None = None,
) -> None:
    """An item: its fields, spec completeness, attention, scope, runs and events (and when it was
    archived, for an item read from the archive)."""
    spec = spec_completeness(item)
    status = item.status.value + (f" ({item.blocker.value})" if item.blocker else "")
    status += f" ({item.failure.value})" if item.failure else ""
    rows = [
        ["key", item.key + (f" (was {previous_key})" if previous_key else "")],
        ["status", status],
        ["title", item.title],
        ["repository", _text(item.repo_alias)],
        ["tier", item.tier.value],
        ["value / urgency / risk", " / ".join(_text(v) for v in (item.value, item.urgency, item.risk))],
        ["priority", _text(priority(item))],
        ["evidence", ", ".join(item.evidence) or "-"],
        ["spec", "complete" if spec.complete else "gaps: " + ", ".join(spec.gaps)],
        ["cycle", str(item.cycle)],
        ["created / updated", f"{iso(item.created_at)} / {iso(item.updated_at)}"],
    ]
    if attention is not None:
        rows.append(
            ["attention", f"run {attention['run_id']} is {attention['run_status']}: {attention['next']}"]
        )
    if item.notes:
        rows.append(["notes", item.notes])
    if archived is not None:
        rows.append(["archived", f"{archived['archived_at']} (read from the archive; it can no longer move)"])
    console.print(table(f"item {item.key}", ["field", "value"], rows))
    scope = [[SCOPE_HEADINGS[name], item.scope.section(name) or "-"] for name in SCOPE_SECTIONS]
    console.print(table("scope", ["section", "text"], scope))
    if item.runs:
        verdicts = {r.run_id: r.verdict.value for r in item.rounds}
        runs = [
            [run.run_id, str(run.cycle), run.kind.value, _run_outcome(run, verdicts), iso(run.at)]
            for run in item.runs
        ]
        console.print(table("runs", ["run", "cycle", "kind", "outcome", "at"], runs))
    if item.rounds:
        rounds = [
            [str(r.cycle), str(r.number), r.run_id, r.verdict.value, str(r.score), iso(r.at)]
            for r in item.rounds
        ]
        console.print(table("review rounds", ["cycle", "round", "run", "verdict", "score", "at"], rounds))
    events = [[str(e.seq), iso(e.at), e.kind.value, _text(e.actor), _event_text(e.data)] for e in item.events]
    console.print(table("events", ["seq", "at", "kind", "actor", "data"], events))


def _run_outcome(run: DispatchedRun, verdicts: dict[str, str]) -> str:
    """A run's outcome for the item, with its round's verdict when it was reviewed (a ``fail`` round's
    run is the one the queue rejected and followed with another)."""
    verdict = verdicts.get(run.run_id)
    if run.outcome is RunOutcome.REVIEWED and verdict is not None:
        return f"{run.outcome.value}: round verdict {verdict}"
    return run.outcome.value


def _event_text(data: dict[str, Any]) -> str:
    return ", ".join(f"{key}={value}" for key, value in data.items())


def _spec_cell(item: dict[str, Any]) -> str:
    """The spec column: whether the item could be approved; ``-`` for a rejected one, which nobody
    approves until it is reopened (``--json`` still gives its gaps)."""
    if item["status"] == QueueStatus.REJECTED.value:
        return "-"
    return "complete" if item["spec"]["complete"] else f"{len(item['spec']['gaps'])} gaps"


def render_listing(console: Console, data: dict[str, Any]) -> None:
    """``list``: the items, then the counts, the fleet line and the keys ready to dispatch."""
    rows = [
        [
            item["key"],
            item["status"] + (f" ({item['blocker']})" if item["blocker"] else ""),
            _text(item["priority"]),
            _text(item["risk"]),
            item["tier"],
            _text(item["repo_alias"]),
            _spec_cell(item),
            item["title"],
        ]
        for item in data["items"]
    ]
    columns = ["key", "status", "priority", "risk", "tier", "repository", "spec", "title"]
    total = sum(data["counts"].values())
    if rows:
        console.print(table("goal queue", columns, rows))
    elif total:
        console.print(
            safe_text(f"no item matches (--status and --since narrow the list; {total} in the queue)")
        )
    counts = ", ".join(f"{status} {n}" for status, n in data["counts"].items() if n)
    console.print(safe_text(f"counts (the whole queue): {counts or 'no items'}"))
    if data["archived_count"]:
        console.print(safe_text(f"archived: {data['archived_count']} (specialists queue archived)"))
    autopilot = "on" if data["autopilot"] else "off"
    grant = data["grant"]
    if grant is not None:
        autopilot += f" (runs created by {grant['granted_by']}, granted {grant['granted_at']})"
    elif data["autopilot"]:
        autopilot += " (no standing grant: it starts nothing until `queue autopilot on` is signed again)"
    console.print(safe_text(f"fleet: {data['fleet']['line']} slots occupied; autopilot {autopilot}"))
    settings = data["settings"]
    console.print(
        safe_text(
            f"recovery delay {settings['recovery_delay_seconds']} s; escalation model "
            f"{settings['escalation_model'] or 'none'}"
        )
    )
    console.print(safe_text(f"ready to dispatch: {', '.join(data['ready']) or '-'}"))
    for write in data.get("main_writes", []):
        console.print(
            safe_text(
                f"main_write {write['at']}: {write['repo_alias']} {write['branch']} moved "
                f"{write['before']} -> {write['after']} while open: {', '.join(write['items']) or '-'}"
            )
        )


def render_settings(console: Console, data: dict[str, Any]) -> None:
    """``capacity``, ``autopilot``, ``recovery-delay`` and ``escalation-model``."""
    settings = data["settings"]
    autopilot = "on" if settings["autopilot"] else "off"
    console.print(
        safe_text(
            f"slots {settings['slots']}, autopilot {autopilot}, recovery delay "
            f"{settings['recovery_delay_seconds']} s, escalation model "
            f"{settings['escalation_model'] or 'none'}; fleet {data['fleet']['line']} occupied"
        )
    )


def render_events(console: Console, data: dict[str, Any]) -> None:
    """``events``."""
    rows = [
        [_text(e["key"]), _text(e["seq"]), e["at"], e["kind"], _text(e["actor"]), _event_text(e["data"])]
        for e in data["events"]
    ]
    console.print(table("queue events", ["key", "seq", "at", "kind", "actor", "data"], rows))
