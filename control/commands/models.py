"""``specialists models``: show the registered models and the model selection, register a model
(``add``), select the models runs use (``select``), deactivate a model (``deactivate``) and send a
model one tiny request through a worker (``test``). ``add``, ``select`` and ``deactivate`` change the
store (protected: signed with the actor's key); ``test`` is a protected workflow."""

from pathlib import Path
from typing import Annotated, Any

import typer

from contracts.errors import OperatorError
from control.commands.common import (
    ActorOption,
    JsonFlag,
    actor_required,
    client,
    open_configuration_store,
    open_store,
    require_actor,
    run_async,
    task_queue,
    with_store,
)

app = typer.Typer(help="Show, register or select the models runs use.", invoke_without_command=True)


@app.callback()
def models_command(
    ctx: typer.Context,
    as_json: JsonFlag = False,
    offline: Annotated[
        bool,
        typer.Option("--offline", help="Only what the store holds: do not ask Temporal for live ceilings."),
    ] = False,
) -> None:
    """Show the registered models, the current model selection and its history, and the live
    ceilings of the registered models and the model classes' pools."""
    if ctx.invoked_subcommand is not None:
        return
    from control import views
    from control.output import emit

    store = open_store(create=False)
    if store is None:
        current, history, registered = None, [], []
    else:
        with store:
            current, history = store.get_model_selection(), store.model_selection_history()
            registered = store.list_models()
    ceilings, pools = ([], []) if offline else _live_ceilings(registered)
    emit(
        views.models_json(current, history, registered, ceilings, pools),
        as_json,
        lambda console: views.render_models(console, current, history, registered, [*ceilings, *pools]),
    )


def _live_ceilings(registered: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The live ceiling of every leased model and of each model class's pool
    (``control.ceiling_status``); Temporal is asked only when there is a leased model."""
    from control.ceiling_status import ceiling_reports, leased
    from runtime.settings import Settings

    records = leased(registered)
    if not records:
        return [], []
    return run_async(ceiling_reports(Settings.from_env(), records))


@app.command("add")
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
    recordings: Annotated[
        Path | None,
        typer.Option("--recordings", help="replay:NAME only: the recordings file it answers from."),
    ] = None,
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Register a model runs may be given (its key stays in the worker's environment), or a replay
    model answering from a recordings file (README "Replay recordings")."""
    from contracts.models import ModelRegistration, is_replay_model
    from control import views
    from control.inputs import parse_model
    from control.keys import require_signer
    from control.output import emit
    from store.model_registry import check_registration

    actor = actor_required(actor, "registering a model")
    if is_replay_model(model_id) or recordings is not None:
        given = {"--base-url": base_url, "--api-key-env": api_key_env, "--timeout-s": timeout_s}
        given["--ceiling"] = ceiling
        _add_replay(
            model_id, recordings, [flag for flag, value in given.items() if value is not None], actor, as_json
        )
        return
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
    signer = require_signer(actor)
    with open_configuration_store() as store:
        record = store.register_model(registration, signer)
    emit(
        {"model": views.model_json(record)},
        as_json,
        lambda console: views.render_registered_models(console, [record]),
    )


def _add_replay(model_id: str, recordings: Path | None, flags: list[str], actor: str, as_json: bool) -> None:
    from contracts.errors import InvalidInput
    from contracts.models import is_replay_model
    from control import views
    from control.keys import require_signer
    from control.output import emit
    from control.recordings_files import read_recordings
    from store.model_registry import check_replay_id

    if not is_replay_model(model_id):
        raise InvalidInput("invalid_model_id", f"--recordings is for replay:NAME models, not {model_id!r}")
    if flags:
        raise InvalidInput(
            "invalid_model_registration",
            f"a replay model answers from its recordings: {', '.join(flags)} do not apply",
        )
    check_replay_id(model_id)
    if recordings is None:
        raise InvalidInput(
            "recordings_required",
            f"{model_id!r}: a replay model answers from recordings: give --recordings FILE",
        )
    parsed = read_recordings(recordings)
    signer = require_signer(actor)
    with open_configuration_store() as store:
        record = store.register_replay_model(model_id, parsed, signer)
    emit(
        {"model": views.model_json(record)},
        as_json,
        lambda console: views.render_registered_models(console, [record]),
    )


@app.command("export-recordings")
def models_export_recordings_command(
    run_ids: Annotated[list[str], typer.Argument(metavar="RUN_ID...", help="Finished runs to record.")],
    output: Annotated[Path, typer.Option("--output", help="The new recordings file to write.")],
    as_json: JsonFlag = False,
) -> None:
    """Write the answers of finished runs (analysis and review, whichever model gave them) to a new
    recordings file, for `models add replay:NAME --recordings FILE` (asks a worker for each run)."""
    from control.output import emit, safe_text
    from control.recordings_files import recordings_of, write_recordings
    from control.runs import check_run_id, query_view

    for run_id in run_ids:
        check_run_id(run_id)

    async def go() -> Any:
        connected = await client()
        return [await query_view(connected, run_id) for run_id in run_ids]

    recordings = recordings_of(run_async(go()))
    write_recordings(output, recordings)
    data = {
        "output": str(output),
        "runs": list(run_ids),
        "recordings": [
            {"profile": r.profile, "kind": r.kind.value, "title": r.title} for r in recordings.recordings
        ],
    }
    emit(
        data,
        as_json,
        lambda console: console.print(
            safe_text(f"wrote {len(recordings.recordings)} recordings from {len(run_ids)} run(s) to {output}")
        ),
    )


@app.command("select")
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
    advisory: Annotated[
        str | None,
        typer.Option(
            "--advisory", help="Model for the advisory passes an operator asks for (create --advisory)."
        ),
    ] = None,
    effort: Annotated[
        list[str] | None,
        typer.Option("--effort", help="CLASS=EFFORT: support|core|advisory = low|medium|high (repeatable)."),
    ] = None,
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Select the primary model, ordered fallbacks, optional support and advisory models (replay:* or
    registered) and the reasoning effort of each model class."""
    from contracts.models import ModelSelection
    from control import views
    from control.inputs import parse_efforts, parse_model
    from control.keys import require_signer
    from control.output import emit

    fallbacks = list(fallback or [])
    payload: dict[str, Any] = {
        "primary": primary,
        "fallbacks": fallbacks,
        "support": support,
        "advisory": advisory,
    }
    payload["efforts"] = parse_efforts(effort or [])
    payload["fallback_mode"] = fallback_mode or ("ordered" if fallbacks else "primary_only")
    selection = parse_model(ModelSelection, payload, what="model selection", code="invalid_model_selection")
    signer = require_signer(actor_required(actor, "selecting models"))
    with open_configuration_store() as store:
        record = store.select_registered_models(selection, signer)
        history = store.model_selection_history()
        registered = store.list_models()
    emit(
        views.models_json(record, history, registered),
        as_json,
        lambda console: views.render_models(console, record, [], registered),
    )


@app.command("deactivate")
def models_deactivate_command(
    model_id: Annotated[str, typer.Argument(metavar="PROVIDER:NAME", help="A registered model.")],
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Deactivate a registered model (protected, audited): it stays listed, cannot be selected, and no
    new run may capture it (runs that captured it keep their snapshot)."""
    from contracts.models import ModelRegistration
    from control import views
    from control.inputs import parse_model
    from control.keys import require_signer
    from control.output import emit

    parse_model(ModelRegistration, {"id": model_id}, what="model id", code="invalid_model_id")
    signer = require_signer(actor_required(actor, "deactivating a model"))
    with open_configuration_store() as store:
        record = store.deactivate_model(model_id, signer)
    emit(
        {"model": views.model_json(record)},
        as_json,
        lambda console: views.render_registered_models(console, [record]),
    )


@app.command("test")
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

    parse_model(ModelRegistration, {"id": model_id}, what="model id", code="invalid_model_id")
    actor = require_actor(actor, "testing a model")
    store = open_store(create=False)
    if is_replay_model(model_id):
        timeout_s = 0
        if store is not None:
            store.close()
    elif store is None:
        raise NotFound("unknown_model", f"model {model_id!r} is not registered: add it with `models add`")
    else:
        timeout_s = with_store(store, lambda s: s.get_model(model_id)).timeout_s
    check_id = new_check_id()
    request = ModelCheckRequest(
        check_id=check_id,
        model_id=model_id,
        actor=actor,
        proof=proof_for(run_id=check_id, action=TEST_MODEL_ACTION, actor=actor, digest=model_id),
    )
    queue = task_queue()

    async def go() -> Any:
        return await run_model_check(
            await client(), request, task_queue=queue, wait_seconds=timeout_s + WAIT_MARGIN_SECONDS
        )

    result = run_async(go())
    if result.refused:
        error_class: type[OperatorError] = NotFound if result.error_type == "unknown_actor" else Refused
        raise error_class(result.error_type or "refused", result.message or "the check was refused")
    data = views.model_check_json(result)
    emit(data, as_json, lambda console: views.render_model_check(console, result))
    if not result.ok:
        raise typer.Exit(6)
