"""``specialists policy`` (show or change the automation policy), ``specialists status`` (catalog,
policy, model selection, repositories and actors at a glance), ``specialists actors`` (list, register,
deactivate actors; rotate one's key) and ``specialists configuration`` (attest records that carry no
valid signature; the configuration audit log). Reading never creates the store; a change is signed
with the actor's key (docs/architecture.md "Protected actions", "Configuration")."""

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from contracts.errors import InvalidInput, Refused
from control.commands.common import (
    ActorOption,
    JsonFlag,
    actor_required,
    default_policy_record,
    open_configuration_store,
    open_store,
    run_async,
    with_store,
)

app = typer.Typer()
actors_app = typer.Typer(
    help="Show, register or deactivate human actors, or rotate one's key.", invoke_without_command=True
)
configuration_app = typer.Typer(
    help="Attest configuration records that carry no valid signature; show the configuration audit log."
)

KeyFileOption = Annotated[
    Path | None,
    typer.Option(
        "--key-file",
        help="Where to write the new private key (mode 0600, never overwritten); default ./ID.key.",
    ),
]


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
    from control.keys import require_signer
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
    signer = require_signer(actor)
    with open_configuration_store() as store:
        current = store.get_policy().policy
        proposed = current.model_dump(mode="json")
        if mode is not None:
            proposed["mode"] = mode
        if maximum_automatic_tier is not None:
            proposed["maximum_automatic_tier"] = maximum_automatic_tier
        policy = parse_model(AutomationPolicy, proposed, what="policy", code="invalid_policy")
        changed = store.set_policy(policy, signer)
    emit(views.policy_json(changed), as_json, lambda console: views.render_policy(console, changed))


@app.command("status")
def status_command(as_json: JsonFlag = False) -> None:
    """Catalog, policy and model selection; the state directory, Temporal and its workers, the
    database and its schema revision, and the number of active runs."""
    from catalog.loader import load_catalog
    from control import deployment_status, views
    from control.output import emit
    from runtime.setting_checks import worker_setting_problems
    from runtime.settings import Settings

    catalog = load_catalog()
    settings = Settings.from_env()
    database, schema = deployment_status.database_status(settings)
    # The configuration is read only from a store at this version's schema; otherwise status
    # reports why (unreachable, migration needed, newer) and the configuration as unknown.
    readable = schema is not None and (not schema.exists or (schema.known and not schema.migration_needed))
    configuration, active, refused = _status_reads() if readable else (None, None, None)
    policy, selection, repositories, actors = configuration or (default_policy_record(), None, [], [])
    data = views.status_json(catalog, policy, selection, repositories, actors)
    if configuration is None:
        data.update(policy=None, models=None, repositories=None, actors=None)
    data.update(
        configuration_error=None if refused is None else {"code": refused.code, "message": refused.message},
        state_dir=str(settings.state_dir),
        temporal=run_async(deployment_status.temporal_status(settings)),
        database=database,
        runs={"active": active},
        worker_settings=worker_setting_problems(os.environ) + _trust_setting_problems(),
    )
    emit(data, as_json, lambda console: deployment_status.render_status(console, data))


def _trust_setting_problems() -> list[dict[str, str]]:
    """The action token and trust root settings as a worker loads them at start (it refuses a
    malformed or unreadable one): each problem as ``{"code", "message"}``, never the secret."""
    from contracts.errors import OperatorError
    from store.action_token import load_action_token, load_trust_root

    problems: list[dict[str, str]] = []
    for load in (load_action_token, load_trust_root):
        try:
            load()
        except OperatorError as error:
            problems.append({"code": error.code, "message": error.message})
    return problems


def _status_reads() -> tuple[
    tuple[Any, Any, list[Any], list[Any]] | None, int | None, Refused | InvalidInput | None
]:
    """What ``status`` reads from a store at this version's schema: the policy, model selection,
    repositories and actors (the defaults when there is no store yet), the number of active runs and
    the refusal that kept the configuration unread. A refused read (no trust anchor here, a record
    that does not verify) is reported, never raised: the configuration is then ``None`` and the
    runs, which are not signed, are still counted."""
    from store.run_lookup import active_run_count

    try:
        store = open_store(create=False)
    except (Refused, InvalidInput) as refused:
        # The anchor cannot be loaded (an action token file others can read, a malformed trust root
        # or token): reported like any unverifiable configuration, so status still says the rest.
        return None, None, refused
    if store is None:
        return (default_policy_record(), None, [], []), 0, None
    with store:
        active = active_run_count(store)
        try:
            configuration = (
                store.get_policy(),
                store.get_model_selection(),
                store.list_repositories(),
                store.list_actors(),
            )
        except Refused as refused:
            return None, active, refused
    return configuration, active, None


# ------------------------------------------------------------------------------------------------ actors


@actors_app.callback()
def actors_command(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List registered human actors (deactivated ones too), their keys and the trust root."""
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
    key_file: KeyFileOption = None,
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Register a human actor and write its new private key to --key-file (default ./ID.key), once.

    The first actor needs no --actor: it is the deployment's trust root and needs the deployment's
    action token. Every later actor is registered by an active actor (--actor, signing with its key).
    """
    from contracts.identity import ActorKey
    from control import views
    from control.keys import default_key_path, remove_key_file, require_signer, write_key_file
    from control.output import emit, safe_text
    from store.action_token import require_action_token
    from store.actors import check_actor_id, check_actor_name

    # The store checks these again; checked first so that invalid input creates no store or file.
    check_actor_id(actor_id)
    check_actor_name(name)
    token = require_action_token() if actor is None else None
    signer = None if actor is None else require_signer(actor)
    existing = open_store(create=False)
    if existing is not None:
        # Refused before a key file is written: a registrar that may not sign, a duplicate id.
        with existing:
            if signer is not None:
                existing.require_signer(signer)
            if existing.actor_exists(actor_id):
                raise Refused("duplicate_actor", f"actor {actor_id!r} is already registered")
    key = ActorKey.generate()
    path = write_key_file(key_file or default_key_path(actor_id), key)
    try:
        with open_configuration_store() as store:
            if token is not None:
                record = store.bootstrap_actor(actor_id, name, key, token)
            else:
                assert signer is not None
                record = store.register_actor(actor_id, name, key.public_key, signer)
    except BaseException:
        remove_key_file(path)
        raise
    data: dict[str, Any] = {"actor": views.actor_json(record), "key_file": str(path)}
    if token is not None:
        data["trust_root"] = key.fingerprint

    def render(console: Any) -> None:
        views.render_actors(console, [record])
        console.print(
            safe_text(
                f"the private key of {actor_id} is in {path} (mode 0600): give it to {actor_id} alone, "
                "who sets SPECIALISTS_ACTOR_KEY_FILE to its path; it is not stored anywhere else"
            )
        )
        if token is not None:
            console.print(
                f"trust root: {key.fingerprint} — set SPECIALISTS_TRUST_ROOT to it on workers and operators' "
                "machines (or give them the action token) so they can verify the configuration"
            )

    emit(data, as_json, render)


@actors_app.command("deactivate")
def actors_deactivate_command(
    actor_id: Annotated[str, typer.Argument(metavar="ID", help="The actor to deactivate.")],
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Deactivate an actor (protected, audited): it stays listed, its actions are refused from now on
    and it signs nothing more; what it did before stands. The last active actor cannot be deactivated."""
    from control import views
    from control.keys import require_signer
    from control.output import emit
    from store.actors import check_actor_id

    check_actor_id(actor_id)
    signer = require_signer(actor_required(actor, "deactivating an actor"))
    with open_configuration_store() as store:
        record = store.deactivate_actor(actor_id, signer)
    emit({"actor": views.actor_json(record)}, as_json, lambda console: views.render_actors(console, [record]))


@actors_app.command("rotate-key")
def actors_rotate_key_command(
    key_file: Annotated[
        Path, typer.Option("--key-file", help="Where to write the new private key (a new file, mode 0600).")
    ],
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Replace your key (protected, audited): signed with the current key, the new one is written to
    --key-file; from now on the old key is refused. Set SPECIALISTS_ACTOR_KEY_FILE to the new file."""
    from contracts.identity import ActorKey
    from control import views
    from control.keys import remove_key_file, require_signer, write_key_file
    from control.output import emit, safe_text

    signer = require_signer(actor_required(actor, "rotating a key"))
    new_key = ActorKey.generate()
    path = write_key_file(key_file, new_key)
    try:
        with open_configuration_store() as store:
            record = store.rotate_actor_key(signer, new_key)
    except BaseException:
        remove_key_file(path)
        raise

    def render(console: Any) -> None:
        views.render_actors(console, [record])
        console.print(
            safe_text(
                f"new key {new_key.fingerprint} in {path}; the old key {signer.fingerprint} is retired: "
                "set SPECIALISTS_ACTOR_KEY_FILE to the new file"
            )
        )

    emit({"actor": views.actor_json(record), "key_file": str(path)}, as_json, render)


# ----------------------------------------------------------------------------------------- configuration


@configuration_app.command("attest")
def configuration_attest_command(
    actor: ActorOption = None,
    yes: Annotated[
        bool, typer.Option("--yes", help="Sign the records shown (without it, only show them).")
    ] = False,
    key_file: KeyFileOption = None,
    key_dir: Annotated[
        Path | None,
        typer.Option(
            "--key-dir",
            help="Where to write the keys issued to actors that hold none (ID.key each; default: .).",
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Show every configuration record that carries no valid signature and, with --yes, sign them as
    --actor (protected, audited). Records written before signed configuration are refused until then.

    In a deployment whose actors hold no key yet, the first attestation needs the action token: --actor
    becomes the trust root and its new key is written to --key-file (default ./ID.key); every other
    actor is issued a key in --key-dir. Actor keys themselves are never attested.
    """
    from contracts.identity import ActorKey, Signer
    from control import views
    from control.keys import default_key_path, remove_key_file, require_signer, write_key_file
    from control.output import emit
    from store.action_token import load_action_token, require_action_token

    actor = actor_required(actor, "attesting configuration")
    with open_configuration_store() as store:
        pending = store.unverified_records()
        bootstrap = store.needs_bootstrap()
        keyless = [other for other in store.keyless_actors() if other != actor]
        if not yes:
            data = views.attestation_json(pending, keyless, attested=False, bootstrap=bootstrap)
            emit(data, as_json, lambda console: views.render_attestation(console, data))
            return
        written: list[Path] = []
        token: bytes | None
        try:
            if bootstrap:
                token = require_action_token()
                key = ActorKey.generate()
                written.append(write_key_file(key_file or default_key_path(actor), key))
                signer = Signer(actor, key)
            else:
                token = load_action_token()
                signer = require_signer(actor)
            issued: dict[str, str] = {}
            directory = Path.cwd() if key_dir is None else key_dir
            for other in keyless:
                other_key = ActorKey.generate()
                written.append(write_key_file(directory / f"{other}.key", other_key))
                issued[other] = other_key.public_key
            signed = store.attest(signer, token=token, issue=issued)
        except BaseException:
            for path in written:
                remove_key_file(path)
            raise
    data = views.attestation_json(signed, keyless, attested=True, bootstrap=bootstrap)
    data["key_files"] = [str(path) for path in written]
    emit(data, as_json, lambda console: views.render_attestation(console, data))


@configuration_app.command("events")
def configuration_events_command(
    limit: Annotated[int, typer.Option("--limit", help="At most this many events, newest first.")] = 100,
    as_json: JsonFlag = False,
) -> None:
    """The configuration audit log: protected configuration actions and refused unverified records."""
    from control import views
    from control.output import emit

    store = open_store(create=False)
    events = [] if store is None else with_store(store, lambda s: s.configuration_events(limit))
    data = views.configuration_events_json(events)
    emit(data, as_json, lambda console: views.render_configuration_events(console, data))
