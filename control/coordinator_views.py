"""The research coordinator as ``specialists research coordinator`` shows it (docs/architecture.md
"Research team")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from contracts.research_coordinator import CoordinatorView


def coordinator_json(view: CoordinatorView | None) -> dict[str, Any]:
    """``research coordinator --json``: ``{"running": false}`` before the first team, else the state:
    ``active``, ``active_count``, ``max_active``, ``waiting`` ([{team_id, stage}]), ``cycle``,
    ``granted_this_cycle`` (``team:stage``), ``advances_per_cycle``, ``cycle_seconds``,
    ``recent_cycles`` ([{cycle, at, granted}]), ``runs`` (continue-as-new count + 1), ``history_events``."""
    if view is None:
        return {"running": False}
    data: dict[str, Any] = {"running": True, **view.model_dump(mode="json")}
    for cycle in data["recent_cycles"]:
        cycle["at"] = cycle["at"].replace("+00:00", "Z")
    return data


def render_coordinator(console: Console, view: CoordinatorView | None) -> None:
    """The human view: one summary line, then each active team and each advance waiting."""
    if view is None:
        console.print("no research coordinator is running: it starts with the first research team")
        return
    console.print(
        f"research coordinator {view.workflow_id}: {view.active_count} of {view.max_active} teams "
        f"active; cycle {view.cycle} ({view.cycle_seconds:g} s) granted "
        f"{len(view.granted_this_cycle)} of {view.advances_per_cycle} advances; "
        f"{len(view.waiting)} waiting; run {view.runs}"
    )
    for team_id in view.active:
        console.print(f"  active  {team_id}")
    for request in view.waiting:
        console.print(f"  waiting {request.team_id} for stage {request.stage}")
