"""The ``specialists`` command line (Typer). JSON shapes and exit codes follow DESIGN.md.

Heavy modules (rich, SQLAlchemy, Temporal) are imported inside the commands that need them, so a
preview such as ``specialists route --json`` starts quickly and touches nothing on disk. Annotations
here are evaluated once, at import (no ``from __future__ import annotations``): Typer reads every
command's signature on each invocation, and string annotations would be re-evaluated each time.
"""

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

import control.research_team_commands  # noqa: F401  (registers the team commands on research_app)
from contracts.errors import InvalidInput, OperatorError
from control.research_cases import research_app

app = typer.Typer(
    name="specialists",
    help="Specialist Orchestrator: route work items to reviewed specialists and run them durably.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
models_app = typer.Typer(help="Show, register or select the models runs use.", invoke_without_command=True)
repos_app = typer.Typer(help="Show, add or configure allow-listed repositories.", invoke_without_command=True)
actors_app = typer.Typer(help="Show or register human actors.", invoke_without_command=True)
app.add_typer(models_app, name="models")
app.add_typer(repos_app, name="repos")
app.add_typer(actors_app, name="actors")
app.add_typer(research_app, name="research")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")]


ActorOption = Annotated[
    str | None, typer.Option("--actor", help="Id of the registered human taking this action.")
]


def _actor_required(actor: str | None, action: str) -> str:
    if actor is None or not actor.strip():
        raise InvalidInput("actor_required", f"{action} needs --actor ID (a registered human)")
    return actor


# ---------------------------------------------------------------------------------------------- catalog


@app.command("catalog")
def catalog_command(
    file: Annotated[
        Path | None, typer.Option("--file", help="Validate this candidate catalog file instead.")
    ] = None,
    source_root: Annotated[
        Path | None,
        typer.Option("--source-root", help="Git checkout of the upstream repository to verify against."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Validate the catalog (installed, or --file) and optionally verify its upstream sources."""
    from catalog.loader import DEFAULT_CATALOG_PATH
    from catalog.validation import validate_catalog_file
    from control import views

    report = validate_catalog_file(file or DEFAULT_CATALOG_PATH)
    verification = None
    if report.catalog is not None and source_root is not None:
        from catalog.sources import verify_sources

        verification = verify_sources(report.catalog.file, source_root)
    data = views.catalog_json(report, verification)
    from control.output import emit

    emit(data, as_json, lambda console: views.render_catalog(console, report, verification))
    if not report.valid:
        raise typer.Exit(2)
    if verification is not None and not verification.verified:
        raise typer.Exit(6)


# ------------------------------------------------------------------------------------------------ route


@app.command("route")
def route_command(
    input_json: Annotated[
        str, typer.Option("--input-json", help="The work item as JSON, or @FILE to read it from a file.")
    ],
    tier: Annotated[
        str | None, typer.Option("--tier", help="Preview the tier of an operator run: recommend|…")
    ] = None,
    automatic: Annotated[
        bool, typer.Option("--automatic", help="Preview the tier the policy would pick.")
    ] = False,
    override: Annotated[
        str | None, typer.Option("--override", help="Profile id to use as primary instead.")
    ] = None,
    override_reason: Annotated[
        str | None, typer.Option("--override-reason", help="Why the override is needed (required).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Preview the route (and the effective tier) for a work item. Writes nothing."""
    from catalog.loader import load_catalog
    from catalog.router import route
    from contracts.routing import RouteOverride
    from contracts.work_item import WorkItem
    from control.inputs import parse_model, read_json_argument
    from control.output import emit

    requested = _parse_tier(tier)
    if automatic and requested is not None:
        raise InvalidInput("tier_conflict", "--automatic and --tier are exclusive: give one")
    route_override = _parse_override(override, override_reason, RouteOverride)
    item = parse_model(
        WorkItem, read_json_argument(input_json, what="work item"), what="work item", code="invalid_work_item"
    )
    decision = route(item, load_catalog(), override=route_override)
    if requested is not None or automatic:
        from contracts.policy import effective_tier

        tier_decision = effective_tier(
            requested=requested,
            automatic=automatic,
            risk=decision.risk,
            analysis_only=False,
            policy=_read_policy_without_writing(),
        )
        decision = decision.model_copy(
            update={"effective_tier": tier_decision.tier, "tier_reasons": tier_decision.reasons}
        )

    def render(console: Any) -> None:
        from control import views  # only the human view needs it

        views.render_route(console, decision)

    emit(decision.to_json_dict(), as_json, render)


def _parse_tier(value: str | None) -> Any:
    from contracts.enums import Tier

    if value is None:
        return None
    try:
        return Tier(value)
    except ValueError:
        allowed = ", ".join(t.value for t in Tier)
        raise InvalidInput("unknown_tier", f"unknown tier {value!r}; use one of: {allowed}") from None


def _parse_override(profile: str | None, reason: str | None, model: Any) -> Any:
    if profile is None and reason is None:
        return None
    if profile is None:
        raise InvalidInput("override_profile_required", "--override-reason needs --override PROFILE")
    if reason is None or not reason.strip():
        raise InvalidInput("override_reason_required", "--override needs a non-blank --override-reason")
    return model(profile=profile, reason=reason.strip())


def _read_policy_without_writing() -> Any:
    """The stored policy, or the built-in default when no database exists yet (nothing is created)."""
    from contracts.policy import AutomationPolicy
    from store.database import StoreMissing, open_store

    try:
        store = open_store(_database_url(), create=False)
    except StoreMissing:
        return AutomationPolicy()
    with store:
        return store.get_policy().policy


# ------------------------------------------------------------------------------------------ configuration


def _database_url() -> str:
    from runtime.settings import Settings

    return Settings.from_env().database_url


def _open_store(*, create: bool) -> Any:
    """Open the configured store; ``create=False`` returns ``None`` when no database exists yet."""
    from store.database import StoreMissing, open_store

    try:
        return open_store(_database_url(), create=create)
    except StoreMissing:
        return None


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
        store = _open_store(create=False)
        record = _default_policy_record() if store is None else _with(store, lambda s: s.get_policy())
        emit(views.policy_json(record), as_json, lambda console: views.render_policy(console, record))
        return
    if actor is None:
        raise InvalidInput("actor_required", "changing the policy needs --actor ID (a registered human)")
    # Check the flags before the store is opened (and perhaps created): invalid input writes nothing.
    flags = {"mode": mode, "maximum_automatic_tier": maximum_automatic_tier}
    given = {key: value for key, value in flags.items() if value is not None}
    parse_model(AutomationPolicy, given, what="policy", code="invalid_policy")
    store = _open_configuration_store()
    with store:
        current = store.get_policy().policy
        proposed = current.model_dump(mode="json")
        if mode is not None:
            proposed["mode"] = mode
        if maximum_automatic_tier is not None:
            proposed["maximum_automatic_tier"] = maximum_automatic_tier
        policy = parse_model(AutomationPolicy, proposed, what="policy", code="invalid_policy")
        record = store.set_policy(policy, actor)
    emit(views.policy_json(record), as_json, lambda console: views.render_policy(console, record))


def _open_configuration_store() -> Any:
    """Open (creating if needed) the store for a configuration change, after checking the token.

    The token is required before anything is created; its fingerprint is then checked against the
    one the deployment adopted (the first configuration change adopts it).
    """
    from control.actions import require_configuration_token
    from store.action_token import require_action_token

    require_action_token()
    store = _open_store(create=True)
    try:
        require_configuration_token(store)
    except BaseException:
        store.close()
        raise
    return store


def _default_policy_record() -> Any:
    from contracts.config import PolicyRecord
    from contracts.policy import AutomationPolicy

    return PolicyRecord(policy=AutomationPolicy())


def _with(store: Any, action: Any) -> Any:
    with store:
        return action(store)


@app.command("status")
def status_command(as_json: JsonFlag = False) -> None:
    """Catalog version and hash, automation policy and model selection."""
    from catalog.loader import load_catalog
    from control import views
    from control.output import emit

    catalog = load_catalog()
    store = _open_store(create=False)
    if store is None:
        policy, selection, repositories, actors = _default_policy_record(), None, [], []
    else:
        with store:
            policy = store.get_policy()
            selection = store.get_model_selection()
            repositories = store.list_repositories()
            actors = store.list_actors()
    data = views.status_json(catalog, policy, selection, repositories, actors)
    emit(data, as_json, lambda console: views.render_status(console, data))


@models_app.callback()
def models_command(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Show the registered models, the current model selection and its history."""
    if ctx.invoked_subcommand is not None:
        return
    from control import views
    from control.output import emit

    store = _open_store(create=False)
    if store is None:
        current, history, registered = None, [], []
    else:
        with store:
            current, history = store.get_model_selection(), store.model_selection_history()
            registered = store.list_models()
    emit(
        views.models_json(current, history, registered),
        as_json,
        lambda console: views.render_models(console, current, history, registered),
    )


@models_app.command("add")
def models_add_command(
    model_id: Annotated[str, typer.Argument(metavar="PROVIDER:NAME", help="openai:NAME or anthropic:NAME.")],
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="http(s) endpoint (the provider's default if omitted).")
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option("--api-key-env", help="Name of the worker's environment variable holding the key."),
    ] = None,
    timeout_s: Annotated[int | None, typer.Option("--timeout-s", help="Call timeout, 1..600 s (60).")] = None,
    ceiling: Annotated[
        int | None, typer.Option("--ceiling", help="In-flight calls across all workers, 1..1000 (5).")
    ] = None,
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Register a model runs may be given (its key stays in the worker's environment)."""
    from contracts.models import ModelRegistration
    from control import views
    from control.inputs import parse_model
    from control.output import emit
    from store.model_registry import check_registration

    actor = _actor_required(actor, "registering a model")
    payload: dict[str, Any] = {"id": model_id, "base_url": base_url, "api_key_env": api_key_env}
    if timeout_s is not None:
        payload["timeout_s"] = timeout_s
    if ceiling is not None:
        payload["ceiling"] = ceiling
    registration = parse_model(
        ModelRegistration, payload, what="model registration", code="invalid_model_registration"
    )
    # The store checks these again; checked first so that invalid input creates no store.
    check_registration(registration)
    store = _open_configuration_store()
    with store:
        record = store.register_model(registration, actor)
    emit(
        {"model": views.model_json(record)},
        as_json,
        lambda console: views.render_registered_models(console, [record]),
    )


@models_app.command("select")
def models_select_command(
    primary: Annotated[str, typer.Option("--primary", help="Primary model id, provider:name.")],
    fallback: Annotated[
        list[str] | None, typer.Option("--fallback", help="Fallback model id, in order (repeatable).")
    ] = None,
    fallback_mode: Annotated[
        str | None, typer.Option("--fallback-mode", help="primary_only | ordered")
    ] = None,
    support: Annotated[
        str | None, typer.Option("--support", help="Model for bounded support profiles.")
    ] = None,
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Select the primary model, ordered fallbacks and optional support model (replay:* or registered)."""
    from contracts.models import ModelSelection
    from control import views
    from control.inputs import parse_model
    from control.output import emit

    fallbacks = list(fallback or [])
    payload: dict[str, Any] = {"primary": primary, "fallbacks": fallbacks, "support": support}
    payload["fallback_mode"] = fallback_mode or ("ordered" if fallbacks else "primary_only")
    selection = parse_model(ModelSelection, payload, what="model selection", code="invalid_model_selection")
    actor = _actor_required(actor, "selecting models")
    store = _open_configuration_store()
    with store:
        record = store.select_registered_models(selection, actor)
        history = store.model_selection_history()
        registered = store.list_models()
    emit(
        views.models_json(record, history, registered),
        as_json,
        lambda console: views.render_models(console, record, [], registered),
    )


@models_app.command("test")
def models_test_command(
    model_id: Annotated[str, typer.Argument(metavar="PROVIDER:NAME", help="A registered or replay:* model.")],
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Send the model one tiny request through a worker and report success or the error class
    (protected; exit 6 when the model fails)."""
    from contracts.errors import NotFound, Refused
    from contracts.ids import new_check_id
    from contracts.model_jobs import TEST_MODEL_ACTION, ModelCheckRequest
    from contracts.models import ModelRegistration, is_replay_model
    from control import views
    from control.actions import proof_for
    from control.inputs import parse_model
    from control.model_checks import WAIT_MARGIN_SECONDS, run_model_check
    from control.output import emit
    from runtime.settings import Settings

    parse_model(ModelRegistration, {"id": model_id}, what="model id", code="invalid_model_id")
    actor = _require_actor(actor, "testing a model")
    store = _open_store(create=False)
    if is_replay_model(model_id):
        timeout_s = 0
    elif store is None:
        raise NotFound("unknown_model", f"model {model_id!r} is not registered: add it with `models add`")
    else:
        timeout_s = _with(store, lambda s: s.get_model(model_id)).timeout_s
    check_id = new_check_id()
    request = ModelCheckRequest(
        check_id=check_id,
        model_id=model_id,
        actor=actor,
        proof=proof_for(run_id=check_id, action=TEST_MODEL_ACTION, actor=actor, digest=model_id),
    )
    task_queue = Settings.from_env().task_queue

    async def go() -> Any:
        client = await _client()
        return await run_model_check(
            client, request, task_queue=task_queue, wait_seconds=timeout_s + WAIT_MARGIN_SECONDS
        )

    result = _run_async(go())
    if result.refused:
        error_class: type[OperatorError] = NotFound if result.error_type == "unknown_actor" else Refused
        raise error_class(result.error_type or "refused", result.message or "the check was refused")
    data = views.model_check_json(result)
    emit(data, as_json, lambda console: views.render_model_check(console, result))
    if not result.ok:
        raise typer.Exit(6)


@repos_app.callback()
def repos_command(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List allow-listed repositories."""
    if ctx.invoked_subcommand is not None:
        return
    from control import repository_views
    from control.output import emit

    store = _open_store(create=False)
    repositories = [] if store is None else _with(store, lambda s: s.list_repositories())
    emit(
        repository_views.repositories_json(repositories),
        as_json,
        lambda console: repository_views.render_repositories(console, repositories),
    )


ConfigFileOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="TOML file of the repository's configuration: executor, command, verify, env, network, "
        "command_timeout_seconds.",
    ),
]


@repos_app.command("add")
def repos_add_command(
    alias: Annotated[str, typer.Argument(help="Short name runs use for the repository.")],
    path: Annotated[Path, typer.Argument(help="Absolute or relative path of the git working tree.")],
    branch: Annotated[
        str | None, typer.Option("--branch", help="Default branch (current branch if omitted).")
    ] = None,
    config_file: ConfigFileOption = None,
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Allow-list a git repository under an alias, with its configuration (default: patch executor)."""
    from control import repository_views
    from control.output import emit
    from control.repository_config import read_repository_config
    from runtime import git_repository as git
    from store.repositories import check_alias

    actor = _actor_required(actor, "adding a repository")
    # The store checks these again; checked first so that invalid input creates no store.
    check_alias(alias)
    git.local_branch(git.working_tree_root(path), branch)
    config = None if config_file is None else read_repository_config(config_file)
    store = _open_configuration_store()
    with store:
        record = store.add_repository(alias, path, branch, actor, config)

    def render(console: Any) -> None:
        repository_views.render_repositories(console, [record])
        if config is not None:
            repository_views.render_repository_config(console, record.config, f"configuration of {alias}")

    emit({"repository": repository_views.repository_json(record)}, as_json, render)


@repos_app.command("update")
def repos_update_command(
    alias: Annotated[str, typer.Argument(help="Alias of the allow-listed repository.")],
    config_file: ConfigFileOption = None,
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Replace a repository's configuration (protected). Runs already captured keep the one they
    froze; only new runs use the new configuration."""
    from control import repository_views
    from control.output import emit
    from control.repository_config import read_repository_config
    from store.repositories import check_alias

    actor = _actor_required(actor, "updating a repository")
    check_alias(alias)
    if config_file is None:
        raise InvalidInput("config_required", "repos update needs --config FILE (the new configuration)")
    # Read and validated first: a bad file creates no store and changes nothing.
    config = read_repository_config(config_file)
    store = _open_configuration_store()
    with store:
        record = store.update_repository_config(alias, config, actor)

    def render(console: Any) -> None:
        repository_views.render_repositories(console, [record])
        repository_views.render_repository_config(console, record.config, f"configuration of {alias}")

    emit({"repository": repository_views.repository_json(record)}, as_json, render)


@actors_app.callback()
def actors_command(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List registered human actors."""
    if ctx.invoked_subcommand is not None:
        return
    from control import views
    from control.output import emit

    store = _open_store(create=False)
    actors = [] if store is None else _with(store, lambda s: s.list_actors())
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
    store = _open_configuration_store()
    with store:
        record = store.register_actor(actor_id, name, actor)
    emit({"actor": views.actor_json(record)}, as_json, lambda console: views.render_actors(console, [record]))


# --------------------------------------------------------------------------------------------------- runs


def _run_async(coro: Any) -> Any:
    import asyncio

    return asyncio.run(coro)


async def _client() -> Any:
    from runtime.settings import Settings
    from runtime.temporal import connect

    return await connect(Settings.from_env())


def _emit_view(
    view: Any,
    as_json: bool,
    extra: dict[str, Any] | None = None,
    *,
    diff: bool = False,
    recovery: bool = False,
) -> None:
    """Print a run (``--json`` or the human view). Its worktree location is withheld unless
    ``recovery`` and its diff unless ``diff`` (control/show_run.py)."""
    from control import show_run
    from control.output import emit

    data = show_run.run_json(view, diff=diff, recovery=recovery)
    data.update(extra or {})
    emit(
        data,
        as_json,
        lambda console: show_run.render_run(console, view, extra or {}, diff=diff, recovery=recovery),
    )


@app.command("create")
def create_command(
    input_json: Annotated[
        str, typer.Option("--input-json", help="The work item as JSON, or @FILE to read it from a file.")
    ],
    tier: Annotated[
        str | None, typer.Option("--tier", help="recommend | read_only | worktree | pr_ready")
    ] = None,
    enqueue: Annotated[
        bool, typer.Option("--enqueue", help="Enqueue a read_only run at once (protected).")
    ] = False,
    automatic: Annotated[bool, typer.Option("--automatic", help="Let the policy pick the tier.")] = False,
    override: Annotated[str | None, typer.Option("--override", help="Profile id to use as primary.")] = None,
    override_reason: Annotated[
        str | None, typer.Option("--override-reason", help="Why the override is needed.")
    ] = None,
    request_id: Annotated[
        str | None, typer.Option("--request-id", help="Caller's id: the same id returns the same run.")
    ] = None,
    actor: ActorOption = None,
    wait: Annotated[
        bool, typer.Option("--wait", help="Wait until the run needs a person or has finished.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Create a specialist run for a work item (a Temporal workflow)."""
    from catalog.capture import capture
    from catalog.loader import load_catalog
    from contracts.ids import new_run_id, run_id_for_request
    from contracts.routing import RouteOverride
    from contracts.runs import RunInput
    from contracts.work_item import WorkItem
    from control.inputs import parse_model, read_json_argument
    from control.runs import create_run, raise_if_creation_refused, request_digest, settled, wait_for_view
    from runtime.settings import Settings

    requested = _parse_tier(tier)
    if automatic and requested is not None:
        raise InvalidInput("tier_conflict", "--automatic and --tier are exclusive: give one")
    if not automatic and requested is None:
        raise InvalidInput(
            "tier_required", "give --tier recommend|read_only|worktree|pr_ready, or --automatic"
        )
    protected = enqueue or automatic
    if protected:
        actor = _actor_required(actor, "create with --enqueue or --automatic")
    route_override = _parse_override(override, override_reason, RouteOverride)
    item = parse_model(
        WorkItem, read_json_argument(input_json, what="work item"), what="work item", code="invalid_work_item"
    )
    try:
        run_id = run_id_for_request(request_id) if request_id is not None else new_run_id()
    except ValueError as error:
        raise InvalidInput("invalid_request_id", str(error)) from None
    draft = RunInput(
        run_id=run_id,
        work_item=item,
        requested_tier=requested,
        automatic=automatic,
        override=route_override,
        enqueue=enqueue,
        request_id=request_id,
        request_digest="",
        created_by=actor,
    )
    run_input = draft.model_copy(update={"request_digest": request_digest(draft)})
    # The same checks the workflow's capture activity makes, so a refusal reaches the operator at once.
    from contracts.errors import NotFound
    from contracts.policy import APPROVAL_TIERS

    base_commit = None
    store = _open_store(create=False)
    if store is None:
        policy, selection = _default_policy_record(), None
        known_actor = actor is None  # no store yet: no actor is registered
        if requested in APPROVAL_TIERS and item.repo_alias is not None:
            raise NotFound("unknown_repository", f"no repository {item.repo_alias!r} is registered")
    else:
        with store:
            policy, selection = store.get_policy(), store.get_model_selection()
            known_actor = actor is None or store.actor_exists(actor)
            if requested in APPROVAL_TIERS and item.repo_alias is not None:
                _, base_commit = store.resolve_base_commit(item.repo_alias)
    if not known_actor:
        raise NotFound("unknown_actor", f"actor {actor!r} is not registered")
    capture(
        run_input,
        load_catalog(),
        policy,
        selection,
        read_only_budget_seconds=1,
        edit_budget_seconds=1,
        base_commit=base_commit,
    )
    if protected:
        from control.actions import proof_for

        assert actor is not None
        proof = proof_for(run_id=run_id, action="create", actor=actor, digest=run_input.request_digest)
        run_input = run_input.model_copy(update={"proof": proof})

    async def go() -> tuple[Any, bool]:
        client = await _client()
        view, deduplicated = await create_run(client, run_input, task_queue=Settings.from_env().task_queue)
        if wait and not settled(view):
            view = await wait_for_view(client, run_id, settled, timeout=None, on_change=_progress(as_json))
        return view, deduplicated

    view, deduplicated = _run_async(go())
    raise_if_creation_refused(view)
    _emit_view(view, as_json, {"deduplicated": deduplicated})


def _progress(as_json: bool) -> Any:
    def show(view: Any) -> None:
        if not as_json:
            sys.stderr.write(f"{view.run_id}: {view.status.value}\n")

    return show


@app.command("enqueue")
def enqueue_command(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="Run id (SOR-…).")],
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Move a ready run to the queue (protected)."""
    from control.actions import proof_for
    from control.runs import check_run_id, enqueue_run, get_view

    check_run_id(run_id)
    actor = _require_actor(actor, "enqueue")
    proof = proof_for(run_id=run_id, action="enqueue", actor=actor)

    async def go() -> Any:
        client = await _client()
        await enqueue_run(client, run_id, actor, proof)
        return await get_view(client, run_id)

    _emit_view(_run_async(go()), as_json)


@app.command("decide")
def decide_command(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="Run id (SOR-…).")],
    actor: ActorOption = None,
    accept: Annotated[bool, typer.Option("--accept", help="Accept the reviewed result.")] = False,
    reject: Annotated[bool, typer.Option("--reject", help="Reject the reviewed result.")] = False,
    note: Annotated[str, typer.Option("--note", help="Why (kept in the audit trail).")] = "",
    as_json: JsonFlag = False,
) -> None:
    """Accept or reject a run that awaits a decision."""
    from contracts.runs import DecisionOutcome, RunStatus
    from control.actions import proof_for
    from control.runs import check_run_id, decide_run, wait_for_view

    if accept == reject:
        raise InvalidInput("decision_required", "give exactly one of --accept or --reject")
    if len(note) > 2000:
        raise InvalidInput("note_too_long", f"--note is {len(note)} characters; the limit is 2000")
    outcome = DecisionOutcome.ACCEPTED if accept else DecisionOutcome.REJECTED
    check_run_id(run_id)
    actor = _require_actor(actor, "decide")
    proof = proof_for(run_id=run_id, action="decide", actor=actor)

    async def go() -> Any:
        client = await _client()
        await decide_run(client, run_id, actor, outcome, note, proof)
        return await wait_for_view(
            client, run_id, lambda v: v.status is not RunStatus.AWAITING_DECISION, timeout=10.0
        )

    _emit_view(_run_async(go()), as_json)


@app.command("cancel")
def cancel_command(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="Run id (SOR-…).")],
    actor: ActorOption = None,
    reason: Annotated[str, typer.Option("--reason", help="Why (kept in the audit trail).")] = "",
    as_json: JsonFlag = False,
) -> None:
    """Cancel a run that has not finished (a running model job finishes first)."""
    from control.actions import proof_for
    from control.runs import cancel_run, check_run_id

    check_run_id(run_id)
    if len(reason) > 2000:
        raise InvalidInput("reason_too_long", f"--reason is {len(reason)} characters; the limit is 2000")
    actor = _require_actor(actor, "cancel")
    proof = proof_for(run_id=run_id, action="cancel", actor=actor)

    async def go() -> Any:
        return await cancel_run(await _client(), run_id, actor, reason, proof)

    _emit_view(_run_async(go()), as_json)


@app.command("approve")
def approve_command(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="Run id (SOR-…).")],
    actor: ActorOption = None,
    contract_sha256: Annotated[
        str | None,
        typer.Option("--contract-sha256", help="The contract digest you reviewed (`show` displays it)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Approve a worktree or pr_ready run: exactly the contract whose digest you name (protected)."""
    import re

    from control.actions import proof_for
    from control.runs import approve_run, check_run_id

    check_run_id(run_id)
    if contract_sha256 is None or not re.fullmatch(r"[0-9a-f]{64}", contract_sha256):
        given = "" if contract_sha256 is None else f" (got {len(contract_sha256)} characters)"
        raise InvalidInput(
            "contract_digest_required",
            f"give --contract-sha256 H: all 64 hex digits of the digest `show` displays{given}",
        )
    actor = _require_actor(actor, "approve")
    proof = proof_for(run_id=run_id, action="approve", actor=actor, digest=contract_sha256)

    async def go() -> Any:
        return await approve_run(await _client(), run_id, actor, contract_sha256, proof)

    _emit_view(_run_async(go()), as_json)


@app.command("execute")
def execute_command(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="Run id (SOR-…).")],
    actor: ActorOption = None,
    wait: Annotated[
        bool,
        typer.Option("--wait", help="Wait until the run awaits a decision or has finished."),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Execute an approved worktree run: its change is applied in a fresh worktree, checked and
    reviewed (protected; the proof is bound to the approved contract digest)."""
    from contracts.errors import Refused
    from contracts.runs import RunStatus
    from control.actions import proof_for
    from control.runs import check_run_id, execute_run, get_view, settled, wait_for_view
    from store.action_token import require_action_token

    check_run_id(run_id)
    actor = _require_actor(actor, "execute")
    require_action_token()  # like every protected action: no token, nothing is asked of the run

    async def go() -> Any:
        client = await _client()
        view = await get_view(client, run_id)
        # The workflow checks these again; checked here so that a run that cannot execute is refused
        # clearly, and before a proof bound to its contract digest is made.
        if any(event.kind == "execute_requested" for event in view.audit):
            raise Refused(
                "already_executing",
                f"run {run_id} was already executed ({view.status.value}): an approved run executes once",
            )
        if view.status is not RunStatus.APPROVED or view.contract_sha256 is None:
            hint = ": approve it first (`specialists approve`)"
            raise Refused(
                "not_approved",
                f"run {run_id} is {view.status.value}; only an approved run executes"
                + (hint if view.status is RunStatus.AWAITING_APPROVAL else ""),
            )
        proof = proof_for(run_id=run_id, action="execute", actor=actor, digest=view.contract_sha256)
        await execute_run(client, run_id, actor, proof)
        if wait:
            return await wait_for_view(client, run_id, settled, timeout=None, on_change=_progress(as_json))
        return await wait_for_view(client, run_id, lambda v: v.status is not RunStatus.APPROVED, timeout=10.0)

    _emit_view(_run_async(go()), as_json)


def _require_actor(actor: str | None, action: str) -> str:
    """Refuse a missing or unregistered actor before anything is sent (the workflow checks again)."""
    from contracts.errors import NotFound

    actor = _actor_required(actor, action)
    store = _open_store(create=False)
    known = False if store is None else _with(store, lambda s: s.actor_exists(actor))
    if not known:
        raise NotFound(
            "unknown_actor", f"actor {actor!r} is not registered (see `specialists actors register`)"
        )
    return actor


@app.command("show")
def show_command(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="Run id (SOR-…).")],
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
        client = await _client()
        view = await get_view(client, run_id)
        extra = {"history": await history_events(client, run_id)} if history else {}
        if pack:
            extra["context_packs"] = packs_json(view)
        return view, extra

    view, extra = _run_async(go())
    _emit_view(view, as_json, extra, diff=diff, recovery=recovery)


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
    requested_tier = _parse_tier(tier)
    store = _open_store(create=False)
    runs = (
        []
        if store is None
        else _with(store, lambda s: s.list_runs(status=status, tier=requested_tier, limit=limit))
    )
    emit(run_views.list_json(runs), as_json, lambda console: run_views.render_list(console, runs))


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


# -------------------------------------------------------------------------------------------- worktrees

worktrees_app = typer.Typer(
    help="List preserved attempt worktrees, or prune those of a finished run.", invoke_without_command=True
)
app.add_typer(worktrees_app, name="worktrees")


@worktrees_app.callback()
def worktrees_command(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List the attempt worktrees kept in the state directory: whether each is there, whether git
    still knows it, whether it is locked, and its run's state (read-only; no token needed)."""
    if ctx.invoked_subcommand is not None:
        return
    from control.output import emit
    from control.worktrees import list_worktrees, render_list
    from runtime.settings import Settings

    rows = _run_async(list_worktrees(Settings.from_env(), _client))
    emit({"worktrees": rows}, as_json, lambda console: render_list(console, rows))


@worktrees_app.command("prune")
def worktrees_prune_command(
    run_id: Annotated[str, typer.Argument(metavar="RUN", help="Run id (SOR-…).")],
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Remove a finished run's worktrees and evidence on the worker that holds them (protected;
    refused while the run has not finished)."""
    from contracts.worktree_prune import DEFAULT_HOST_WAIT_SECONDS, PRUNE_ACTION, PruneRequest
    from control.actions import proof_for
    from control.output import emit
    from control.runs import check_run_id
    from control.worktrees import PRUNE_WAIT_MARGIN_SECONDS, prune_json, render_prune, run_prune
    from runtime.settings import Settings

    check_run_id(run_id)
    actor = _require_actor(actor, "pruning worktrees")
    request = PruneRequest(
        run_id=run_id, actor=actor, proof=proof_for(run_id=run_id, action=PRUNE_ACTION, actor=actor)
    )
    task_queue = Settings.from_env().task_queue

    async def go() -> Any:
        return await run_prune(
            await _client(),
            request,
            task_queue=task_queue,
            wait_seconds=DEFAULT_HOST_WAIT_SECONDS + PRUNE_WAIT_MARGIN_SECONDS,
        )

    result = _run_async(go())
    emit(prune_json(result), as_json, lambda console: render_prune(console, result))


# ------------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the process exit code (DESIGN.md "Exit codes")."""
    from typer._click.exceptions import ClickException, NoArgsIsHelpError

    args = sys.argv[1:] if argv is None else argv
    as_json = "--json" in args
    try:
        result = app(args=args, prog_name="specialists", standalone_mode=False)
    except OperatorError as error:
        from control.output import report_error

        return report_error(error, as_json)
    except typer.Exit as done:
        return int(done.exit_code)
    except typer.Abort:
        sys.stderr.write("aborted\n")
        return 130
    except NoArgsIsHelpError as error:
        error.show()
        return 0 if not args else 2
    except ClickException as error:
        from control.output import report_error

        return report_error(InvalidInput("invalid_usage", error.format_message()), as_json)
    return int(result) if isinstance(result, int) else 0


def entry() -> None:
    """The ``specialists`` console script: :func:`main`, then exit with its code.

    After talking to Temporal the process ends with ``os._exit`` once its output is flushed: the
    Temporal client's native runtime threads can still call into Python while the interpreter
    finalises, which now and then aborts the process (SIGABRT/SIGSEGV) after its work is done. There
    is nothing left to clean up at that point (the store's connections close with the process).
    """
    code = main()
    # Asked of runtime.temporal, not a flag here: run as ``python -m control.cli`` this module is
    # ``__main__``, and commands importing ``control.cli`` would set a flag on a second copy of it. A
    # process that never imported the connection never started Temporal's runtime (and a command that
    # talks to no Temporal server need not pay for importing it here).
    temporal = sys.modules.get("runtime.temporal")
    if temporal is not None and temporal.connected():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
