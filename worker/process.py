"""``python -m worker`` (and ``specialists worker``): connect with the environment's settings, run a
worker for the deployment's task queue and one for this host's queue until stopped."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from activities.config import ActivityConfig
from activities.secret_scan import deployment_secrets
from activities.store_access import SharedStore
from activities.worktree_prune import worker_host
from contracts.errors import InvalidInput, OperatorError
from contracts.model_classes import parse_class_ceilings
from contracts.worktree_prune import host_task_queue
from runtime.health import ENV_HEALTH_ADDRESS, Health, HealthServer, health_address
from runtime.logs import configure_logging
from runtime.settings import ENV_CLASS_CEILINGS, RunBudgets, Settings, format_address
from runtime.telemetry import install as install_telemetry
from runtime.temporal import connect
from runtime.versioning import deployment_version, promote_if_first
from worker.registration import build_host_worker, build_worker


def activity_config(
    settings: Settings,
    *,
    budgets: RunBudgets,
    action_token: bytes | None,
    trust_root: str | None = None,
    **overrides: Any,
) -> ActivityConfig:
    """What the activities of a worker for ``settings`` need: the store, the budgets captured into
    contracts, the trust anchor (pinned root and/or action token), the state directory and the
    deployment's secrets the context packs and model outputs are scanned for (``overrides`` replace
    single fields)."""
    config = ActivityConfig(
        database_url=settings.database_url,
        read_only_budget_seconds=budgets.read_only_seconds,
        edit_budget_seconds=budgets.edit_seconds,
        approval_window_seconds=budgets.approval_window_seconds,
        team_deadline_seconds=budgets.team_deadline_seconds,
        team_cycle_seconds=budgets.team_cycle_seconds,
        action_token=action_token,
        trust_root=trust_root,
        state_dir=settings.state_dir,
        deployment_secrets=deployment_secrets(os.environ, action_token),
        class_ceilings=parse_class_ceilings(
            os.environ.get(ENV_CLASS_CEILINGS, ""), variable=ENV_CLASS_CEILINGS
        ),
    )
    return replace(config, **overrides) if overrides else config


async def run_worker(stop: asyncio.Event | None = None) -> None:
    """Connect with the environment's settings and run a worker until ``stop`` is set (or a signal)."""
    from infra.devserver import require_search_attributes
    from store.action_token import load_action_token, load_trust_root

    configure_logging()
    settings = Settings.from_env()
    address = health_address()
    version = deployment_version()
    telemetry = install_telemetry(service="specialist-orchestrator-worker")
    token = load_action_token()
    trust_root = load_trust_root()
    client = await connect(settings)
    await require_search_attributes(client, client.namespace)
    config = activity_config(
        settings, budgets=RunBudgets.from_env(), action_token=token, trust_root=trust_root
    )
    if token is None and trust_root is None:
        _warn_unverifiable()
    _warn_unusable_state_dir(settings.state_dir)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    store = SharedStore(config.database_url, config.trust_anchor)
    worker = build_worker(client, task_queue=settings.task_queue, config=config, store=store, version=version)
    host_worker = build_host_worker(client, task_queue=settings.task_queue, config=config, store=store)
    health = Health()
    with health_server(health, address):
        beating = asyncio.ensure_future(health.keep_beating())
        async with worker, host_worker:
            # Polling has started; open the store meanwhile so a resumed run's first activity is
            # quick. Ready (for a readiness probe) once the store is open.
            opening = asyncio.ensure_future(open_store_until_ready(store.get, health, stop))
            if version is not None and await promote_if_first(client, version, identity=client.identity):
                _log_first_version(version.deployment_name, version.build_id)
            print(
                f"worker polling task queue {settings.task_queue!r} on "
                f"{client.service_client.config.target_host} (namespace {client.namespace}); "
                "this host's queue "
                f"{host_task_queue(settings.task_queue, worker_host())!r}"
                + (
                    f"; version {version.build_id!r} of deployment {version.deployment_name!r}"
                    if version
                    else ""
                ),
                flush=True,
            )
            await stop.wait()
            health.set_ready(False)  # draining: take no new work from a load balancer's view
            await opening
        beating.cancel()
    telemetry.shutdown()  # the spans still buffered go to the collector


STORE_RETRY_S: Final = 5.0
"""How often a worker whose store cannot be opened tries again (it is not ready meanwhile)."""


async def open_store_until_ready(
    open_store: Callable[[], object], health: Health, stop: asyncio.Event, *, retry_s: float = STORE_RETRY_S
) -> None:
    """Open the store (``open_store``, in a thread), then mark the worker ready. A store that cannot
    be opened (the database unreachable, the state directory unusable…) leaves the worker not ready:
    it is logged once (``store_unavailable``, with the reason, a database password shown as ``***``)
    and tried again every ``retry_s`` until it opens (``store_available``) or ``stop`` is set."""
    import structlog

    log = structlog.get_logger("specialists")
    loop = asyncio.get_running_loop()
    failing = False
    while not stop.is_set():
        try:
            await loop.run_in_executor(None, open_store)
        except Exception as error:
            if not failing:
                code = error.code if isinstance(error, OperatorError) else type(error).__name__
                message = error.message if isinstance(error, OperatorError) else str(error)
                log.warning("store_unavailable", code=code, message=message, retry_s=retry_s)
                failing = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), retry_s)
            continue
        if failing:
            log.info("store_available")
        if not stop.is_set():
            health.set_ready(True)
        return


def _warn_unusable_state_dir(state_dir: Path) -> None:
    """One warning at start when the state directory cannot be used (worktree runs and probes would
    fail on this worker; everything else still runs, so the worker starts)."""
    from runtime.setting_checks import require_usable_state_dir

    try:
        require_usable_state_dir(state_dir)
    except InvalidInput as error:
        import structlog

        structlog.get_logger("specialists").warning("state_dir_unusable", message=error.message)


def _log_first_version(deployment: str, build_id: str) -> None:
    import structlog

    structlog.get_logger("specialists").info(
        "deployment_version_current", deployment=deployment, build_id=build_id, reason="first_version"
    )


def health_server(health: Health, address: tuple[str, int] | None) -> contextlib.AbstractContextManager[Any]:
    """The health endpoints on ``address`` (none without one); an address that cannot be bound is an
    operator error naming the variable."""
    if address is None:
        return contextlib.nullcontext()
    try:
        return HealthServer(health, *address)
    except OSError as error:
        raise InvalidInput(
            "invalid_setting",
            f"{ENV_HEALTH_ADDRESS}={format_address(*address)}: cannot listen there ({error.strerror})",
        ) from None


PROTECTED_COMMANDS: Final = (
    "create --enqueue",
    "create --automatic",
    "enqueue",
    "approve",
    "execute",
    "approve-probe",
    "decide",
    "cancel",
    "models test",
    "worktrees prune",
    "research team-start",
    "research adjudicate",
    "research team-cancel",
    "queue add, update, approve, reject, dispatch, route-next, done, park, release, reopen, capacity, "
    "autopilot, recovery-delay, escalation-model, ship, scan, spec",
)
"""The protected actions the worker verifies (``authorize_action``), as an operator sends them."""


def _warn_unverifiable() -> None:
    """One log line at start: which protected actions this worker will refuse, why, and the fix.

    A worker verifies each protected action with the actor's public key in the store, and believes
    the store's keys only through a trust anchor (docs/architecture.md "Protected actions"): without
    ``SPECIALISTS_TRUST_ROOT`` or the action token it can verify none."""
    import structlog

    from store.action_token import TRUST_ANCHOR_FIX

    structlog.get_logger("specialists").warning(
        "protected_actions_refused",
        code="trust_root_not_configured",
        actions=list(PROTECTED_COMMANDS),
        reason="neither SPECIALISTS_TRUST_ROOT nor an action token (SPECIALISTS_ACTION_TOKEN or "
        "SPECIALISTS_ACTION_TOKEN_FILE) is set, so no actor's key in the store can be verified",
        fix=f"start the worker with a trust anchor: {TRUST_ANCHOR_FIX}",
    )


def main() -> int:
    """Entry point of ``python -m worker`` and ``specialists worker``."""
    try:
        asyncio.run(run_worker())
    except OperatorError as error:
        sys.stderr.write(f"error [{error.code}]: {error.message}\n")
        return error.exit_code
    return 0
