"""Probe requests (docs/architecture.md "Probe requests"): ``probes RUN`` lists what a read_only
run's analysis asked to have run — each probe's digest, what it would run and, once an operator
approved it and it ran, the operator-run evidence; ``approve-probe RUN INDEX --probe-sha256 H`` approves
exactly that probe (protected: the proof is bound to the probe's digest). The run then runs it,
confined, in a fresh worktree of its repository while it awaits its decision; ``decide`` is refused
(``probe_running``) until it has finished. Exit codes as for every run command (docs/architecture.md
"Exit codes"): an unknown probe is 3, a stale digest or a run not awaiting its decision 4."""

from typing import Annotated, Any

import typer

from contracts.errors import InvalidInput
from control.commands.common import (
    ActorOption,
    JsonFlag,
    RunArgument,
    client,
    open_store,
    require_actor,
    require_digest,
    run_async,
)

app = typer.Typer()


@app.command("probes")
def probes_command(
    run_id: RunArgument,
    output: Annotated[
        bool, typer.Option("--output", help="Also print each probe's stdout and stderr.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """List a run's probe requests: digest, status, what each runs and, once run, its evidence."""
    from control.output import emit, safe_text
    from control.probe_views import probes_json, render_probes
    from control.runs import check_run_id, get_view

    check_run_id(run_id)
    view = run_async(_view(run_id, get_view))

    def render(console: Any) -> None:
        if not view.probes:
            console.print(safe_text(f"run {run_id} ({view.status.value}) has no probe requests"))
        render_probes(console, view, output=output)

    emit(probes_json(view), as_json, render)


async def _view(run_id: str, get_view: Any) -> Any:
    return await get_view(await client(), run_id)


@app.command("approve-probe")
def approve_probe_command(
    run_id: RunArgument,
    index: Annotated[int, typer.Argument(metavar="INDEX", help="The probe's number (`probes` lists them).")],
    probe_sha256: Annotated[
        str | None,
        typer.Option("--probe-sha256", help="The probe's digest you reviewed (`probes` shows it)."),
    ] = None,
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Approve one probe request of a run awaiting its decision: exactly the probe whose digest you name
    (protected). The run runs it confined and records what it did."""
    from contracts.runs import RunStatus
    from control.actions import proof_for
    from control.output import emit
    from control.probe_views import probes_json, render_probes
    from control.run_repository import require_waiting_run_repository
    from control.runs import UPDATE_ANSWER_SECONDS, approve_probe_run, check_run_id

    check_run_id(run_id)
    probe_sha256 = require_digest(
        probe_sha256, option="--probe-sha256", shown_by="`specialists probes`", code="probe_digest_required"
    )
    if not 1 <= index <= 5:
        raise InvalidInput("invalid_probe_index", f"probe {index} does not exist: probes are numbered 1 to 5")
    actor = require_actor(actor, "approve-probe")
    proof = proof_for(run_id=run_id, action="approve_probe", actor=actor, digest=probe_sha256)

    async def go() -> Any:
        temporal = await client()
        await require_waiting_run_repository(
            temporal, lambda: open_store(create=False), run_id, RunStatus.AWAITING_DECISION, "approve-probe"
        )
        return await approve_probe_run(
            temporal, run_id, actor, index, probe_sha256, proof, answer_within=UPDATE_ANSWER_SECONDS
        )

    view = run_async(go())
    emit(probes_json(view), as_json, lambda console: render_probes(console, view))
