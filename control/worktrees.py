"""``specialists worktrees``: list preserved attempt worktrees, and prune a finished run's.

Listing is read-only and needs no token: it reads the state directory of this machine, asks the
source repositories what git still remembers (:mod:`runtime.worktree_attempts`, which the worker's
prune uses too, running git as every caller does), and gives each run's state:
the status its Temporal workflow reports (the ``SpecialistStatus`` search attribute, equal to the
view's status; no worker needed), else the projection's, else ``unknown``.

Pruning is protected and happens on a worker, through the ``WorktreePrune`` workflow
(:mod:`workflows.worktree_prune`). A prune no worker picks up in time is terminated and reported as a
service problem (exit 5), so nothing is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from contracts.errors import NotFound, OperatorError, Refused, ServiceUnavailable
from contracts.ids import is_run_id
from contracts.search_attributes import SearchAttribute
from contracts.worktree_prune import (
    FINISHED_STATUSES,
    PRUNE_WORKFLOW,
    TERMINATED_STATUS,
    UNKNOWN_STATUS,
    AttemptState,
    PruneRequest,
    PruneResult,
    prune_workflow_id,
)

if TYPE_CHECKING:
    from rich.console import Console
    from temporalio.client import Client

    from runtime.settings import Settings

PRUNE_WAIT_MARGIN_SECONDS = 60
"""How much longer than the hosts' pick-up window the CLI waits for a prune to finish."""
_NOT_FOUND_CODES = frozenset({"unknown_actor", "unknown_run"})


# ------------------------------------------------------------------------------------------- listing


async def list_worktrees(
    settings: Settings, connect: Callable[[], Awaitable[Client]]
) -> list[dict[str, Any]]:
    """Every attempt under ``<state>/worktrees`` (and those git still remembers there), each with its
    run's state; sorted by run and attempt. ``connect`` gives a Temporal client (called only when
    there are runs to ask about; :class:`ServiceUnavailable` from it means "ask the projection")."""
    from contracts.errors import Refused
    from runtime.worktree_attempts import list_attempts
    from store.action_token import load_trust_anchor
    from store.database import StoreMissing, open_store
    from store.run_lookup import projected_statuses

    try:
        store = open_store(settings.database_url, create=False, anchor=load_trust_anchor())
    except StoreMissing:
        store = None
    try:
        registered: list[str] = []
        if store is not None:
            # Only verified repositories are asked about their worktrees; when this process can
            # verify none (no trust anchor) or a record does not verify, none is asked and an
            # attempt's ``git_known`` comes from its own ``.git`` file or is null.
            with contextlib.suppress(Refused):
                registered = [record.path for record in store.list_repositories()]
        attempts = list_attempts(settings.state_dir, registered)
        run_ids = sorted({attempt.run_id for attempt in attempts})
        states = await _temporal_states(connect, run_ids) if run_ids else {}
        remaining = [run_id for run_id in run_ids if run_id not in states]
        if store is not None and remaining:
            for run_id, status in projected_statuses(store, remaining).items():
                states[run_id] = (status, "projection")
    finally:
        if store is not None:
            store.close()
    return [_row(attempt, *states.get(attempt.run_id, (UNKNOWN_STATUS, "none"))) for attempt in attempts]


def _row(attempt: AttemptState, status: str, source: str) -> dict[str, Any]:
    return {
        "run_id": attempt.run_id,
        "probe": attempt.probe,
        "attempt": attempt.attempt,
        "path": attempt.worktree,
        "exists": attempt.exists,
        "evidence_dir": attempt.evidence_dir,
        "evidence_exists": attempt.evidence_exists,
        "repository": attempt.repository,
        "git_known": attempt.git_known,
        "locked": attempt.locked,
        "lock_reason": attempt.lock_reason,
        "run_status": status,
        "status_source": source,
    }


async def _temporal_states(
    connect: Callable[[], Awaitable[Client]], run_ids: list[str]
) -> dict[str, tuple[str, str]]:
    """``run id → (status, "temporal")`` for the runs Temporal knows; ``{}`` when unreachable."""
    try:
        client = await connect()
    except ServiceUnavailable:
        return {}
    states: dict[str, tuple[str, str]] = {}
    for run_id in run_ids:
        if not is_run_id(run_id):
            continue
        status = await temporal_status(client, run_id)
        if status is not None:
            states[run_id] = (status, "temporal")
    return states


async def temporal_status(client: Client, run_id: str) -> str | None:
    """The run's status as its workflow reports it (``terminated`` for a workflow Temporal closed
    before a final status), or ``None`` when Temporal does not know the run or cannot answer."""
    from temporalio.client import WorkflowExecutionStatus
    from temporalio.common import SearchAttributeKey
    from temporalio.service import RPCError

    try:
        description = await client.get_workflow_handle(run_id).describe()
    except RPCError:
        return None
    status = description.typed_search_attributes.get(
        SearchAttributeKey.for_keyword(SearchAttribute.SPECIALIST_STATUS)
    )
    if description.status not in (WorkflowExecutionStatus.RUNNING, None) and status not in FINISHED_STATUSES:
        return TERMINATED_STATUS
    return status


def render_list(console: Console, rows: list[dict[str, Any]]) -> None:
    """The human view of :func:`list_worktrees`."""
    from control.output import safe_text, table

    if not rows:
        console.print(safe_text("no worktrees are kept in the state directory"))
        return

    def flag(value: bool | None) -> str:
        return "?" if value is None else ("yes" if value else "no")

    console.print(
        table(
            "preserved worktrees",
            ["run", "attempt", "run status", "exists", "git knows it", "locked", "evidence", "path"],
            [
                [
                    row["run_id"],
                    str(row["attempt"])
                    if row["probe"] is None
                    else f"probe {row['probe']}, {row['attempt']}",
                    row["run_status"],
                    flag(row["exists"]),
                    flag(row["git_known"]),
                    flag(row["locked"]),
                    flag(row["evidence_exists"]),
                    row["path"],
                ]
                for row in rows
            ],
        )
    )


# ------------------------------------------------------------------------------------------- pruning


async def run_prune(
    client: Client, request: PruneRequest, *, task_queue: str, wait_seconds: float
) -> PruneResult:
    """Start ``WorktreePrune`` for ``request.run_id`` on ``task_queue`` and return its result.

    Raises the refusal (:class:`Refused` — ``run_not_finished``, an authorisation code,
    ``prune_in_progress`` — or :class:`NotFound` ``unknown_run``/``unknown_actor``);
    :class:`ServiceUnavailable` ``no_worker`` before anything is started when no worker polls
    ``task_queue``, ``prune_not_answered`` when no worker finishes it within ``wait_seconds`` (it is
    then terminated); :class:`OperatorError` ``prune_failed`` when the removal failed on a worker.
    """
    from control.temporal import require_worker

    await require_worker(client, task_queue)
    from temporalio.client import WorkflowFailureError
    from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
    from temporalio.exceptions import WorkflowAlreadyStartedError
    from temporalio.service import RPCError

    try:
        handle = await client.start_workflow(
            PRUNE_WORKFLOW,
            request,
            id=prune_workflow_id(request.run_id),
            task_queue=task_queue,
            result_type=PruneResult,
            execution_timeout=dt.timedelta(seconds=wait_seconds + PRUNE_WAIT_MARGIN_SECONDS),
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
        )
    except WorkflowAlreadyStartedError:
        raise Refused("prune_in_progress", f"a prune of run {request.run_id} is already running") from None
    except RPCError as error:
        raise ServiceUnavailable("temporal_error", f"Temporal refused the prune: {error}") from None
    try:
        result: PruneResult = await asyncio.wait_for(handle.result(), timeout=wait_seconds)
    except WorkflowFailureError as error:
        cause = error.cause
        raise OperatorError(
            "prune_failed", f"pruning run {request.run_id} failed: {getattr(cause, 'message', cause)}"
        ) from None
    except TimeoutError:
        with contextlib.suppress(RPCError):
            await handle.terminate("no worker finished the prune in time")
        raise ServiceUnavailable(
            "prune_not_answered",
            f"no worker finished pruning run {request.run_id} within {wait_seconds:g}s: is "
            f"`specialists worker` running on task queue {task_queue!r}?",
        ) from None
    if result.refused:
        code = result.code or "refused"
        error_class: type[OperatorError] = NotFound if code in _NOT_FOUND_CODES else Refused
        raise error_class(code, result.message or f"pruning run {request.run_id} was refused")
    return result


def prune_json(result: PruneResult) -> dict[str, Any]:
    """The ``worktrees prune --json`` object."""
    return {
        "run_id": result.run_id,
        "run_status": result.status,
        "hosts": result.hosts,
        "unreachable_hosts": result.unreachable_hosts,
        "pruned": [attempt.model_dump(mode="json") for attempt in result.pruned],
    }


def render_prune(console: Console, result: PruneResult) -> None:
    """The human view of a prune."""
    from control.output import safe_text

    if not result.pruned:
        console.print(safe_text(f"nothing to prune: no worktree of run {result.run_id} was found"))
    else:
        _render_pruned(console, result)
    for host in result.unreachable_hosts:
        console.print(safe_text(f"warning: no worker on host {host} answered; its worktrees are kept"))


def _render_pruned(console: Console, result: PruneResult) -> None:
    from control.output import table

    console.print(
        table(
            f"pruned worktrees of {result.run_id} ({result.status})",
            ["attempt", "host", "worktree removed", "git entry removed", "was locked", "evidence removed"],
            [
                [
                    str(attempt.attempt)
                    if attempt.probe is None
                    else f"probe {attempt.probe}, {attempt.attempt}",
                    attempt.host,
                    "yes" if attempt.removed_worktree else ("already gone" if not attempt.existed else "no"),
                    "yes" if attempt.removed_from_git else "-",
                    "yes" if attempt.was_locked else "no",
                    "yes" if attempt.removed_evidence else "-",
                ]
                for attempt in result.pruned
            ],
        )
    )
