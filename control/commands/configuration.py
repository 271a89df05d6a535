"""``specialists policy`` (show or change the automation policy), ``specialists status`` (catalog,
policy, model selection, repositories and actors at a glance) and ``specialists actors`` (list or
register human actors). Reading never creates the store; a change needs the action token first."""

from typing import Annotated

import typer

from contracts.errors import InvalidInput
from control.commands.common import (
    ActorOption,
    JsonFlag,
    default_policy_record,
    open_configuration_store,
    open_store,
    run_async,
    with_store,
)

app = typer.Typer()
actors_app = typer.Typer(help="Show or register human actors.", invoke_without_command=True)


@app.command("policy")
def policy_command(
    mode: Annotated[str | None, typer.Option("--mode", help="off | recommend | guarded")] = None,
    maximum_automatic_tier: Annotated[
        str | None,
        typer.Option("--maximum-automatic-tier", help="Ceiling for automatic runs: recommend | read_only"),
    ] = None,
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Show the automation policy, or change it (with --actor)."""
    from contracts.policy import AutomationPolicy
    from control import views
    from control.inputs import parse_model
    from control.output import emit

    if mode is None and maximum_automatic_tier is None:
        if actor is not None:
            raise InvalidInput("nothing_to_change", "give --mode and/or --maximum-automatic-tier to change")
        store = open_store(create=False)
        record = default_policy_record() if store is None else with_store(store, lambda s: s.get_policy())
        emit(views.policy_json(record), as_json, lambda console: views.render_policy(console, record))
        return
    if actor is None:
        raise InvalidInput("actor_required", "changing the policy needs --actor ID (a registered human)")
    # Check the flags before the store is opened (and perhaps created): invalid input writes nothing.
    flags = {"mode": mode, "maximum_automatic_tier": maximum_automatic_tier}
    given = {key: value for key, value in flags.items() if value is not None}
    parse_model(AutomationPolicy, given, what="policy", code="invalid_policy")
    with open_configuration_store() as store:
        current = store.get_policy().policy
        proposed = current.model_dump(mode="json")
        if mode is not None:
            proposed["mode"] = mode
        if maximum_automatic_tier is not None:
            proposed["maximum_automatic_tier"] = maximum_automatic_tier
        policy = parse_model(AutomationPolicy, proposed, what="policy", code="invalid_policy")
        changed = store.set_policy(policy, actor)
    emit(views.policy_json(changed), as_json, lambda console: views.render_policy(console, changed))


@app.command("status")
def status_command(as_json: JsonFlag = False) -> None:
    """Catalog, policy and model selection; the state directory, Temporal and its workers, the
    database and its schema revision, and the number of active runs."""
    from catalog.loader import load_catalog
    from control import deployment_status, views
    from control.output import emit
    from runtime.settings import Settings
    from store.run_lookup import active_run_count

    catalog = load_catalog()
    settings = Settings.from_env()
    database, schema = deployment_status.database_status(settings)
    # The configuration is read only from a store at this version's schema; otherwise status
    # reports why (unreachable, migration needed, newer) and the configuration as unknown.
    readable = schema is not None and (not schema.exists or (schema.known and not schema.migration_needed))
    store = open_store(create=False) if readable else None
    active: int | None = 0 if schema is not None and not schema.exists else None
    if store is None:
        policy, selection, repositories, actors = default_policy_record(), None, [], []
    else:
        with store:
            policy = store.get_policy()
            selection = store.get_model_selection()
            repositories = store.list_repositories()
            actors = store.list_actors()
            active = active_run_count(store)
    data = views.status_json(catalog, policy, selection, repositories, actors)
    if not readable:
        data.update(policy=None, models=None, repositories=None, actors=None)
    data.update(
        state_dir=str(settings.state_dir),
        temporal=run_async(deployment_status.temporal_status(settings)),
        database=database,
        runs={"active": active},
    )
    emit(data, as_json, lambda console: deployment_status.render_status(console, data))


@actors_app.callback()
def actors_command(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List registered human actors."""
    if ctx.invoked_subcommand is not None:
        return
    from control import views
    from control.output import emit

    store = open_store(create=False)
    actors = [] if store is None else with_store(store, lambda s: s.list_actors())
    emit(views.actors_json(actors), as_json, lambda console: views.render_actors(console, actors))


@actors_app.command("register")
def actors_register_command(
    actor_id: Annotated[str, typer.Argument(metavar="ID", help="The new actor's id.")],
    name: Annotated[str, typer.Option("--name", help="Display name.")],
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Register a human actor (the first needs no --actor; later ones need an existing actor)."""
    from control import views
    from control.output import emit
    from store.actors import check_actor_id, check_actor_name

    # The store checks these again; checked first so that invalid input creates no store.
    check_actor_id(actor_id)
    check_actor_name(name)
    with open_configuration_store() as store:
        record = store.register_actor(actor_id, name, actor)
    emit({"actor": views.actor_json(record)}, as_json, lambda console: views.render_actors(console, [record]))
