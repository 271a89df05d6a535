"""``specialists repos``: list the allow-listed repositories, allow-list one (``add``), replace a
repository's configuration (``update``) and deactivate one (``deactivate``); every change is protected
(signed with the actor's key) and checks its input before the store is opened, so invalid input
creates nothing."""

from pathlib import Path
from typing import Annotated, Any

import typer

from contracts.errors import InvalidInput
from control.commands.common import (
    ActorOption,
    JsonFlag,
    actor_required,
    open_configuration_store,
    open_store,
    with_store,
)

app = typer.Typer(help="Show, add or configure allow-listed repositories.", invoke_without_command=True)

ConfigFileOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="TOML file of the repository's configuration: executor, command, verify, env, network, "
        "command_timeout_seconds.",
    ),
]


@app.callback()
def repos_command(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List allow-listed repositories."""
    if ctx.invoked_subcommand is not None:
        return
    from control import repository_views
    from control.output import emit

    store = open_store(create=False)
    repositories = [] if store is None else with_store(store, lambda s: s.list_repositories())
    emit(
        repository_views.repositories_json(repositories),
        as_json,
        lambda console: repository_views.render_repositories(console, repositories),
    )


@app.command("add")
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
    from control.keys import require_signer
    from control.output import emit
    from control.repository_config import read_repository_config
    from runtime import git_repository as git
    from store.repositories import check_alias

    actor = actor_required(actor, "adding a repository")
    # Checked first so that invalid input creates no store; the store keeps the checked root and branch.
    check_alias(alias)
    root, branch = git.checked_working_tree(path, branch)
    config = None if config_file is None else read_repository_config(config_file)
    signer = require_signer(actor)
    with open_configuration_store() as store:
        record = store.add_repository(alias, root, branch, signer, config)

    def render(console: Any) -> None:
        repository_views.render_repositories(console, [record])
        if config is not None:
            repository_views.render_repository_config(console, record.config, f"configuration of {alias}")

    emit({"repository": repository_views.repository_json(record)}, as_json, render)


@app.command("update")
def repos_update_command(
    alias: Annotated[str, typer.Argument(help="Alias of the allow-listed repository.")],
    config_file: ConfigFileOption = None,
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Replace a repository's configuration (protected). Runs already captured keep the one they
    froze; only new runs use the new configuration."""
    from control import repository_views
    from control.keys import require_signer
    from control.output import emit
    from control.repository_config import read_repository_config
    from store.repositories import check_alias

    actor = actor_required(actor, "updating a repository")
    check_alias(alias)
    if config_file is None:
        raise InvalidInput("config_required", "repos update needs --config FILE (the new configuration)")
    # Read and validated first: a bad file creates no store and changes nothing.
    config = read_repository_config(config_file)
    signer = require_signer(actor)
    with open_configuration_store() as store:
        record = store.update_repository_config(alias, config, signer)

    def render(console: Any) -> None:
        repository_views.render_repositories(console, [record])
        repository_views.render_repository_config(console, record.config, f"configuration of {alias}")

    emit({"repository": repository_views.repository_json(record)}, as_json, render)


@app.command("deactivate")
def repos_deactivate_command(
    alias: Annotated[str, typer.Argument(help="Alias of the allow-listed repository.")],
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Deactivate a repository (protected, audited): it stays listed; no new run may use it and no
    run executes in it any more."""
    from control import repository_views
    from control.keys import require_signer
    from control.output import emit
    from store.repositories import check_alias

    check_alias(alias)
    signer = require_signer(actor_required(actor, "deactivating a repository"))
    with open_configuration_store() as store:
        record = store.deactivate_repository(alias, signer)
    emit(
        {"repository": repository_views.repository_json(record)},
        as_json,
        lambda console: repository_views.render_repositories(console, [record]),
    )
