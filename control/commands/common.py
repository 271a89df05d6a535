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
    from contracts.identity import Signer, TrustAnchor
    from contracts.orchestration import AdvisoryTopic
    from contracts.routing import RouteOverride
    from contracts.runs import RunView
    from store.store import Store

T = TypeVar("T")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")]
ActorOption = Annotated[
    str | None, typer.Option("--actor", help="Id of the registered human taking this action.")
]
RunArgument = Annotated[str, typer.Argument(metavar="RUN", help="Run id (SOR-…).")]
ReviewWaveFlag = Annotated[
    bool,
    typer.Option(
        "--review-wave", help="Ask for a review wave: one review pass per axis, not a single reviewer."
    ),
]
AdvisoryOption = Annotated[
    str | None,
    typer.Option(
        "--advisory",
        metavar="architecture|security",
        help="Ask for an advisory pass on this topic, on the selection's advisory model (in a review wave).",
    ),
]


# ----------------------------------------------------------------------------------------------- actors


def actor_required(actor: str | None, action: str) -> str:
    """``actor`` when given and not blank; else :class:`InvalidInput` ``actor_required`` (exit 2)."""
    if actor is None or not actor.strip():
        raise InvalidInput("actor_required", f"{action} needs --actor ID (a registered human)")
    return actor


def require_actor(actor: str | None, action: str) -> str:
    """Refuse, before anything is sent (the worker checks again), an actor who may not take a
    protected action with the configured key: :class:`InvalidInput` ``actor_required`` (exit 2);
    :class:`contracts.errors.Refused` ``actor_key_missing`` (no key configured), and — reading the
    store without creating it — :class:`NotFound` ``unknown_actor`` (exit 3) or ``Refused``
    ``configuration_unverified``, ``actor_deactivated``, ``actor_key_retired``, ``actor_key_mismatch``
    (the key is not this actor's key in force; exit 4)."""
    actor = actor_required(actor, action)
    actor_signer(actor)
    return actor


def actor_signer(actor: str) -> Signer:
    """``actor`` with the configured key, checked against the store (see :func:`require_actor`)."""
    from control.keys import require_signer

    signer = require_signer(actor)
    store = open_store(create=False)
    if store is None:
        raise NotFound(
            "unknown_actor", f"actor {actor!r} is not registered (see `specialists actors register`)"
        )
    with_store(store, lambda s: s.require_signer(signer))
    return signer


def actor_registered(actor: str) -> bool:
    """Whether ``actor`` is registered (its record verified); ``False`` when no store exists yet
    (nothing is created)."""
    store = open_store(create=False)
    return False if store is None else with_store(store, lambda s: s.actor_exists(actor))


# ------------------------------------------------------------------------------------------------ store


def database_url() -> str:
    """The configured database URL (``SPECIALISTS_DATABASE_URL`` or the state directory's SQLite)."""
    from runtime.settings import Settings

    return Settings.from_env().database_url


def trust_anchor() -> TrustAnchor:
    """What this process verifies configuration records against: ``SPECIALISTS_TRUST_ROOT`` and the
    action token, when configured (docs/architecture.md "Configuration")."""
    from store.action_token import load_trust_anchor

    return load_trust_anchor()


def open_store(*, create: bool) -> Store | None:
    """Open the configured store, verifying its configuration against :func:`trust_anchor`;
    ``create=False`` returns ``None`` when no database exists yet."""
    from store.database import StoreMissing
    from store.database import open_store as open_database

    anchor = trust_anchor()
    try:
        return open_database(database_url(), create=create, anchor=anchor)
    except StoreMissing:
        return None


def open_configuration_store() -> Store:
    """Open (creating and upgrading if needed) the store for a configuration change. The change
    itself is signed with the actor's key, which the caller loads first
    (:func:`control.keys.require_signer`), so nothing is created without one."""
    store = open_store(create=True)
    assert store is not None  # create=True never finds the database missing
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


def require_digest(value: str | None, *, option: str, shown_by: str, code: str) -> str:
    """``value`` when it is a sha256 digest as the project writes it (64 lowercase hex digits); else
    :class:`InvalidInput` ``code`` saying what is wrong with it (missing, its length, capitals or
    other characters: :func:`control.digests.digest_problem`) and where the digest is shown."""
    from control.digests import digest_problem

    given = digest_problem(value)
    if given is None:
        assert value is not None
        return value
    raise InvalidInput(
        code, f"give {option} H: all 64 lowercase hex digits of the digest {shown_by} displays{given}"
    )


def parse_advisory(value: str | None, tier: Tier | None, *, automatic: bool) -> AdvisoryTopic | None:
    """``--advisory`` as an :class:`AdvisoryTopic` (``None`` when not given). :class:`InvalidInput`
    ``unknown_advisory_topic`` for another topic, ``advisory_needs_model_passes`` with ``--tier
    recommend`` (a recommendation makes no pass) and ``tier_required`` with neither a tier nor
    ``--automatic``."""
    from contracts.enums import Tier
    from contracts.orchestration import AdvisoryTopic

    if value is None:
        return None
    try:
        topic = AdvisoryTopic(value)
    except ValueError:
        allowed = ", ".join(t.value for t in AdvisoryTopic)
        raise InvalidInput(
            "unknown_advisory_topic", f"unknown advisory topic {value!r}; use one of: {allowed}"
        ) from None
    if tier is None and not automatic:
        raise InvalidInput("tier_required", "--advisory asks for a pass of a run: give --tier or --automatic")
    if tier is Tier.RECOMMEND:
        raise InvalidInput(
            "advisory_needs_model_passes",
            "--advisory needs a tier that makes model passes (read_only, worktree or pr_ready): "
            "a recommendation makes none",
        )
    return topic


def parse_override(profile: str | None, reason: str | None) -> RouteOverride | None:
    """``--override`` and ``--override-reason`` as a :class:`RouteOverride` (both or neither)."""
    if profile is None and reason is None:
        return None
    if profile is None:
        raise InvalidInput("override_profile_required", "--override-reason needs --override PROFILE")
    if reason is None or not reason.strip():
        raise InvalidInput("override_reason_required", "--override needs a non-blank --override-reason")
    from contracts.routing import RouteOverride, override_reason_problem

    problem = override_reason_problem(reason.strip())
    if problem is not None:
        raise InvalidInput(problem[0], f"--override-reason: {problem[1]}")
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
