"""``specialists worktrees``: list the attempt worktrees kept in the state directory (read-only) and
``prune`` those of a finished run on the worker that holds them (protected)."""

from typing import Any

import typer

from control.commands.common import (
    ActorOption,
    JsonFlag,
    RunArgument,
    client,
    require_actor,
    run_async,
    task_queue,
)

app = typer.Typer(
    help="List preserved attempt worktrees, or prune those of a finished run.", invoke_without_command=True
)


@app.callback()
def worktrees_command(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List the attempt worktrees kept in the state directory: whether each is there, whether git
    still knows it, whether it is locked, and its run's state (read-only; no token needed)."""
    if ctx.invoked_subcommand is not None:
        return
    from control.output import emit
    from control.worktrees import list_worktrees, render_list
    from runtime.settings import Settings

    rows = run_async(list_worktrees(Settings.from_env(), client))
    emit({"worktrees": rows}, as_json, lambda console: render_list(console, rows))


@app.command("prune")
def worktrees_prune_command(
    run_id: RunArgument, actor: ActorOption = None, as_json: JsonFlag = False
) -> None:
    """Remove a finished run's worktrees and evidence on the worker that holds them (protected;
    refused while the run has not finished)."""
    from contracts.worktree_prune import DEFAULT_HOST_WAIT_SECONDS, PRUNE_ACTION, PruneRequest
    from control.actions import proof_for
    from control.output import emit
    from control.runs import check_run_id
    from control.worktrees import PRUNE_WAIT_MARGIN_SECONDS, prune_json, render_prune, run_prune

    check_run_id(run_id)
    actor = require_actor(actor, "pruning worktrees")
    request = PruneRequest(
        run_id=run_id, actor=actor, proof=proof_for(run_id=run_id, action=PRUNE_ACTION, actor=actor)
    )
    queue = task_queue()

    async def go() -> Any:
        return await run_prune(
            await client(),
            request,
            task_queue=queue,
            wait_seconds=DEFAULT_HOST_WAIT_SECONDS + PRUNE_WAIT_MARGIN_SECONDS,
        )

    result = run_async(go())
    emit(prune_json(result), as_json, lambda console: render_prune(console, result))
