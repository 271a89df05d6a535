"""``specialists worker`` (a worker against the configured Temporal server), ``specialists dev``
(the embedded dev server and a worker, stopped together on Ctrl-C) and ``specialists setup`` (a
deployment's store migrated and its search attributes registered)."""

from typing import Annotated

import typer

from control.commands.common import JsonFlag

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


@app.command("setup")
def setup_command(as_json: JsonFlag = False) -> None:
    """Prepare a deployment (idempotent; a one-shot job before the workers start): bring the store to
    the newest schema and register the custom search attributes on the namespace."""
    from control.commands.common import client, open_store, run_async
    from control.output import emit
    from infra.devserver import register_search_attributes
    from store.migrate import head_revision

    store = open_store(create=True)  # creates the database, or migrates it to head
    assert store is not None
    store.close()

    async def register() -> tuple[str, list[str]]:
        connected = await client()  # its namespace may come from TEMPORAL_NAMESPACE or a profile
        return connected.namespace, await register_search_attributes(connected, connected.namespace)

    namespace, added = run_async(register())
    data = {
        "schema_revision": head_revision(),
        "namespace": namespace,
        "search_attributes_added": added,
    }
    emit(
        data,
        as_json,
        lambda console: console.print(
            f"store at schema {data['schema_revision']}; search attributes on namespace "
            f"{namespace}: " + (", ".join(added) + " added" if added else "all present")
        ),
    )
