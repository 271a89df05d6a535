"""Reading runs: ``show`` (one run, from its workflow) and ``list`` (runs from the projection).
Neither changes anything; ``list`` reads the store without creating it."""

from typing import Annotated, Any

import typer

from contracts.errors import InvalidInput
from control.commands.common import (
    JsonFlag,
    RunArgument,
    client,
    emit_run,
    open_store,
    parse_tier,
    run_async,
    with_store,
)

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
    """Show a run: route, contract, status, result, review, execution, decision and audit trail."""
    from control.run_views import packs_json
    from control.runs import get_view, history_events

    async def go() -> tuple[Any, dict[str, Any]]:
        temporal = await client()
        view = await get_view(temporal, run_id)
        extra = {"history": await history_events(temporal, run_id)} if history else {}
        if pack:
            extra["context_packs"] = packs_json(view)
        return view, extra

    view, extra = run_async(go())
    emit_run(view, as_json, extra, diff=diff, recovery=recovery)


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
    runs = (
        []
        if store is None
        else with_store(store, lambda s: s.list_runs(status=status, tier=requested_tier, limit=limit))
    )
    emit(run_views.list_json(runs), as_json, lambda console: run_views.render_list(console, runs))
