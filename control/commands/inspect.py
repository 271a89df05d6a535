"""Reading runs: ``show`` (one run, from its workflow) and ``list`` (runs from the projection).
Neither changes anything; both read the store without creating it.

``show`` asks the run's workflow only when a worker polls its task queue (else at once, not after a
query's timeout); when the workflow cannot be asked — no worker, no answer, Temporal unreachable,
or a run Temporal no longer knows — it shows the run's last projected state from the store, labelled
as such with the time it was written and why the workflow was not asked (``source: "projection"``).
"""

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from contracts.errors import InvalidInput
from control.commands.common import (
    JsonFlag,
    RunArgument,
    client,
    database_url,
    emit_run,
    open_store,
    parse_tier,
    run_async,
    with_store,
)

if TYPE_CHECKING:
    from contracts.errors import OperatorError
    from contracts.runs import RunView

app = typer.Typer()


@app.command("show")
def show_command(
    run_id: RunArgument,
    history: Annotated[bool, typer.Option("--history", help="Add the Temporal event history.")] = False,
    pack: Annotated[bool, typer.Option("--pack", help="Add each model job's context pack.")] = False,
    diff: Annotated[
        bool,
        typer.Option("--diff", help="Add the executed change's full diff (or where it is stored)."),
    ] = False,
    recovery: Annotated[
        bool,
        typer.Option(
            "--recovery", help="Add where the executed worktree is kept (path, evidence, base commit)."
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Show a run: route, contract, status, result, review, execution, decision and audit trail
    (its last projected state when its workflow cannot be asked)."""
    from contracts.errors import NotFound, ServiceUnavailable
    from control.run_views import packs_json
    from control.runs import check_run_id, history_events, query_view

    check_run_id(run_id)

    async def go() -> "tuple[RunView | None, dict[str, Any], OperatorError | None]":
        try:
            temporal = await client()
        except ServiceUnavailable as unreachable:
            return None, {}, unreachable
        try:
            view = await query_view(temporal, run_id)
        except NotFound:
            gone = NotFound(
                "unknown_run",
                f"Temporal has no workflow for run {run_id} (its history may be past the namespace's "
                "retention, or on another server)",
            )
            return None, {}, gone
        except ServiceUnavailable as unanswered:
            return None, {}, unanswered
        extra: dict[str, Any] = {"source": "workflow"}
        if history:
            extra["history"] = await history_events(temporal, run_id)
        if pack:
            extra["context_packs"] = packs_json(view)
        return view, extra, None

    view, extra, unanswered = run_async(go())
    if view is not None:
        emit_run(view, as_json, extra, diff=diff, recovery=recovery)
        return
    assert unanswered is not None
    _show_projection(run_id, unanswered, as_json, history=history, pack=pack, diff=diff, recovery=recovery)


def _show_projection(run_id: str, unanswered: "OperatorError", as_json: bool, **asked: bool) -> None:
    """The run's last projected state, or ``unanswered`` itself when the projection does not know
    the run either (``unknown_run`` exit 3, ``no_worker`` exit 5, ...)."""
    from control import run_views
    from control.output import emit, safe_text, utc
    from store.run_lookup import projected_run

    store = open_store(create=False)
    projected = None if store is None else with_store(store, lambda s: projected_run(s, run_id))
    if projected is None:
        raise unanswered
    summary, events = projected
    data = run_views.projection_json(summary, events, unanswered)
    if asked.get("history"):
        data["history"] = None
    if asked.get("pack"):
        data["context_packs"] = None
    needs_workflow = [name for name in ("history", "pack", "diff", "recovery") if asked.get(name)]
    sys.stderr.write(
        f"warning: {run_id}: showing its last projected state (written at "
        f"{utc(summary.updated_at)}): {unanswered.message}\n"
    )

    def render(console: Any) -> None:
        run_views.render_projection(console, summary, events, unanswered)
        if needs_workflow:
            flags = ", ".join(f"--{name}" for name in needs_workflow)
            console.print(safe_text(f"{flags}: not shown, the run's workflow must answer for that"))

    emit(data, as_json, render)


@app.command("list")
def list_command(
    status: Annotated[str | None, typer.Option("--status", help="Only runs in this status.")] = None,
    tier: Annotated[str | None, typer.Option("--tier", help="Only runs of this tier.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000, help="At most this many.")] = 100,
    as_json: JsonFlag = False,
) -> None:
    """List runs from the projection (newest first)."""
    from contracts.runs import RunStatus
    from control import run_views
    from control.output import emit

    if status is not None:
        try:
            RunStatus(status)
        except ValueError:
            allowed = ", ".join(s.value for s in RunStatus)
            raise InvalidInput(
                "unknown_status", f"unknown status {status!r}; use one of: {allowed}"
            ) from None
    requested_tier = parse_tier(tier)
    store = open_store(create=False)
    if store is None:  # nothing configured yet: no run was ever projected here
        emit(
            run_views.list_json([]),
            as_json,
            lambda console: run_views.render_list(console, [], no_store=_shown_database_url()),
        )
        return
    # One more than asked: the human view says when more runs match than it lists.
    found = with_store(store, lambda s: s.list_runs(status=status, tier=requested_tier, limit=limit + 1))
    runs = found[:limit]
    more = len(found) > limit
    emit(run_views.list_json(runs), as_json, lambda console: run_views.render_list(console, runs, more=more))


def _shown_database_url() -> str:
    """The configured store URL as it may be shown (no password)."""
    from store.database import shown_database_url

    return shown_database_url(database_url())
