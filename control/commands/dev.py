"""``specialists worker`` (a worker against the configured Temporal server) and ``specialists dev``
(the embedded dev server and a worker, stopped together on Ctrl-C)."""

from typing import Annotated

import typer

app = typer.Typer()


@app.command("worker")
def worker_command() -> None:
    """Run a worker against SPECIALISTS_TEMPORAL_ADDRESS until Ctrl-C."""
    import worker

    raise typer.Exit(worker.main())


@app.command("dev")
def dev_command(
    server_only: Annotated[
        bool, typer.Option("--server-only", help="Start only the Temporal dev server.")
    ] = False,
) -> None:
    """Start the embedded Temporal dev server and a worker; Ctrl-C stops both."""
    from control.dev import run_dev

    raise typer.Exit(run_dev(server_only=server_only))
