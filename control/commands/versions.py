"""``specialists versions``: the worker deployment's versions (``show``), a gradual rollout of a new
one (``ramp``) and making it the version new runs start on (``promote``) — docs/architecture.md
"Safe upgrades". The deployment is ``SPECIALISTS_DEPLOYMENT_NAME``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from control.commands.common import ActorOption, JsonFlag, actor_required

if TYPE_CHECKING:
    from rich.console import Console

    from contracts.deployment_versions import DeploymentView

app = typer.Typer(help="Worker versions: show them, ramp a new one, promote it.", no_args_is_help=True)

BuildIdArgument = Annotated[str, typer.Argument(metavar="BUILD_ID", help="The version's build id.")]


@app.command("show")
def show_command(as_json: JsonFlag = False) -> None:
    """The deployment's current and ramping versions and every version with its drainage: a version
    that is drained has no open pinned run left, and its workers can be stopped."""
    from control.commands.common import client, run_async
    from control.output import emit
    from runtime.versioning import deployment_name, describe

    name = deployment_name()

    async def fetch() -> DeploymentView:
        return await describe(await client(), name)

    view = run_async(fetch())
    emit(view.model_dump(mode="json"), as_json, lambda console: _render(console, view))


@app.command("promote")
def promote_command(build_id: BuildIdArgument, actor: ActorOption = None, as_json: JsonFlag = False) -> None:
    """Make BUILD_ID the current version: new runs start on it and the long-lived workflows (queue,
    ceilings, coordinator, pruning) move to it; runs already started finish on their own version."""
    from control.commands.common import client, run_async
    from control.output import emit
    from runtime.versioning import deployment_name, promote

    actor = actor_required(actor, "promoting a worker version")
    name = deployment_name()

    async def act() -> DeploymentView:
        return await promote(await client(), name, build_id, identity=f"specialists:{actor}")

    view = run_async(act())
    emit(view.model_dump(mode="json"), as_json, lambda console: _render(console, view))


@app.command("ramp")
def ramp_command(
    build_id: BuildIdArgument,
    percent: Annotated[
        float, typer.Option("--percent", help="Share of new runs sent to BUILD_ID (0 < p < 100).")
    ],
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Send PERCENT of new runs to BUILD_ID while the current version takes the rest."""
    from control.commands.common import client, run_async
    from control.output import emit
    from runtime.versioning import deployment_name, ramp

    actor = actor_required(actor, "ramping a worker version")
    name = deployment_name()

    async def act() -> DeploymentView:
        return await ramp(await client(), name, build_id, percent, identity=f"specialists:{actor}")

    view = run_async(act())
    emit(view.model_dump(mode="json"), as_json, lambda console: _render(console, view))


def _render(console: Console, view: DeploymentView) -> None:
    from rich.table import Table

    if not view.exists:
        console.print(f"deployment {view.deployment}: no versioned worker has polled yet")
        return
    ramping = (
        f"; ramping {view.ramping_build_id} at {view.ramping_percentage:g}%" if view.ramping_build_id else ""
    )
    console.print(f"deployment {view.deployment}: current {view.current_build_id or 'none'}{ramping}")
    table = Table("build id", "status", "drainage")
    for version in view.versions:
        table.add_row(version.build_id, version.status, version.drainage)
    console.print(table)


@app.command("release")
def release_command(build_id: BuildIdArgument, actor: ActorOption = None, as_json: JsonFlag = False) -> None:
    """Move every open run pinned to BUILD_ID to the current version at its next step, so BUILD_ID's
    workers can be stopped before it drained (their changes replay through workflow.patched())."""
    from control.commands.common import client, run_async
    from control.output import emit
    from runtime.versioning import deployment_name, release

    actor = actor_required(actor, "releasing a worker version's runs")
    name = deployment_name()

    async def act() -> list[str]:
        return await release(await client(), name, build_id, identity=f"specialists:{actor}")

    moved = run_async(act())
    data = {"deployment": name, "build_id": build_id, "released": moved}
    emit(
        data, as_json, lambda console: console.print(f"{len(moved)} open workflow(s) of {build_id} released")
    )
