"""What every command group shares: the ``--json`` and ``--actor`` options, the actor checks, the
store openers, the Temporal client, the async runner and the run printer.

Nothing heavy is imported at module level (docs/architecture.md "Operator contract"): the store
(SQLAlchemy), Temporal and rich are imported inside the helpers that need them, so a command that
never calls them never loads them.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from contracts.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from temporalio.client import Client

    from contracts.config import PolicyRecord
    from contracts.enums import Tier
    from contracts.routing import RouteOverride
    from contracts.runs import RunView
    from store.store import Store

T = TypeVar("T")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")]
ActorOption = Annotated[
    str | None, typer.Option("--actor", help="Id of the registered human taking this action.")
]
RunArgument = Annotated[str, typer.Argument(metavar="RUN", help="Run id (SOR-…).")]


# ----------------------------------------------------------------------------------------------- actors


def actor_required(actor: str | None, action: str) -> str:
    """``actor`` when given and not blank; else :class:`InvalidInput` ``actor_required`` (exit 2)."""
    if actor is None or not actor.strip():
        raise InvalidInput("actor_required", f"{action} needs --actor ID (a registered human)")
    return actor


def require_actor(actor: str | None, action: str) -> str:
    """Refuse a missing or unregistered actor before anything is sent (the workflow checks again):
    :class:`InvalidInput` ``actor_required`` (exit 2), :class:`NotFound` ``unknown_actor`` (exit 3).
    Reads the store without creating it."""
    actor = actor_required(actor, action)
    if not actor_registered(actor):
        raise NotFound(
            "unknown_actor", f"actor {actor!r} is not registered (see `specialists actors register`)"
        )
    return actor


def actor_registered(actor: str) -> bool:
    """Whether ``actor`` is registered; ``False`` when no store exists yet (nothing is created)."""
    store = open_store(create=False)
    return False if store is None else with_store(store, lambda s: s.actor_exists(actor))


# ------------------------------------------------------------------------------------------------ store


def database_url() -> str:
    """The configured database URL (``SPECIALISTS_DATABASE_URL`` or the state directory's SQLite)."""
    from runtime.settings import Settings

    return Settings.from_env().database_url


def open_store(*, create: bool) -> Store | None:
    """Open the configured store; ``create=False`` returns ``None`` when no database exists yet."""
    from store.database import StoreMissing
    from store.database import open_store as open_database

    try:
        return open_database(database_url(), create=create)
    except StoreMissing:
        return None


def open_configuration_store() -> Store:
    """Open (creating if needed) the store for a configuration change, after checking the token.

    The token is required before anything is created; its fingerprint is then checked against the
    one the deployment adopted (the first configuration change adopts it).
    """
    from control.actions import require_configuration_token
    from store.action_token import require_action_token

    require_action_token()
    store = open_store(create=True)
    assert store is not None  # create=True never finds the database missing
    try:
        require_configuration_token(store)
    except BaseException:
        store.close()
        raise
    return store


def with_store(store: Store, action: Callable[[Store], T]) -> T:
    """``action(store)``, closing ``store`` afterwards."""
    with store:
        return action(store)


def default_policy_record() -> PolicyRecord:
    """The policy in force before anyone set one (the built-in default)."""
    from contracts.config import PolicyRecord
    from contracts.policy import AutomationPolicy

    return PolicyRecord(policy=AutomationPolicy())


# ---------------------------------------------------------------------------------------------- Temporal


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion on a fresh event loop, with the cyclic garbage collector running:
    :func:`control.cli.main` pauses it while a command starts, and what runs here may wait for long
    (``--wait``), making garbage all the while."""
    import asyncio

    gc.enable()
    return asyncio.run(coro)


async def client() -> Client:
    """A client for the configured Temporal server (:func:`runtime.temporal.connect`)."""
    from runtime.settings import Settings
    from runtime.temporal import connect

    return await connect(Settings.from_env())


def task_queue() -> str:
    """The configured task queue (``SPECIALISTS_TASK_QUEUE``)."""
    from runtime.settings import Settings

    return Settings.from_env().task_queue


# ----------------------------------------------------------------------------------------------- flags


def parse_tier(value: str | None) -> Tier | None:
    """``--tier`` as a :class:`Tier` (``None`` when not given); :class:`InvalidInput` ``unknown_tier``."""
    from contracts.enums import Tier

    if value is None:
        return None
    try:
        return Tier(value)
    except ValueError:
        allowed = ", ".join(t.value for t in Tier)
        raise InvalidInput("unknown_tier", f"unknown tier {value!r}; use one of: {allowed}") from None


def parse_override(profile: str | None, reason: str | None) -> RouteOverride | None:
    """``--override`` and ``--override-reason`` as a :class:`RouteOverride` (both or neither)."""
    if profile is None and reason is None:
        return None
    if profile is None:
        raise InvalidInput("override_profile_required", "--override-reason needs --override PROFILE")
    if reason is None or not reason.strip():
        raise InvalidInput("override_reason_required", "--override needs a non-blank --override-reason")
    from contracts.routing import RouteOverride

    return RouteOverride(profile=profile, reason=reason.strip())


# ---------------------------------------------------------------------------------------------- output


def progress(as_json: bool) -> Callable[[RunView], None]:
    """What ``--wait`` shows on stderr as a run moves on (nothing with ``--json``)."""

    def show(view: RunView) -> None:
        if not as_json:
            sys.stderr.write(f"{view.run_id}: {view.status.value}\n")

    return show


def emit_run(
    view: RunView,
    as_json: bool,
    extra: dict[str, Any] | None = None,
    *,
    diff: bool = False,
    recovery: bool = False,
) -> None:
    """Print a run (``--json`` or the human view). Its worktree location is withheld unless
    ``recovery`` and its diff unless ``diff`` (:mod:`control.show_run`)."""
    from control import show_run
    from control.output import emit

    data = show_run.run_json(view, diff=diff, recovery=recovery)
    data.update(extra or {})
    emit(
        data,
        as_json,
        lambda console: show_run.render_run(console, view, extra or {}, diff=diff, recovery=recovery),
    )
