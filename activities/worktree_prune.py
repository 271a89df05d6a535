"""Activities of the ``WorktreePrune`` workflow: ``check_prune_target`` and ``prune_worktrees``.

``check_prune_target`` runs on the shared task queue: it reads the run's status (its Temporal
workflow — the ``SpecialistStatus`` search attribute, which the run keeps equal to its view's status —
else the projection) and where its worktrees are (the hosts its worktree claims and execution record
name, the repository of its execution).

``prune_worktrees`` runs on a host's own task queue (``<task queue>@<host>``, polled only by the
workers of that host, see ``worker.build_host_worker``), because the worktrees are on that host's
disk: it removes every attempt of the run in the worker's state directory with git
(:func:`activities.worktree_housekeeping.prune_run`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import socket

from temporalio import activity
from temporalio.client import WorkflowExecutionStatus
from temporalio.common import SearchAttributeKey
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from activities.config import ActivityConfig
from activities.errors import refusal
from activities.store_access import SharedStore
from activities.worktree_housekeeping import prune_run
from contracts.errors import ErrorType, OperatorError
from contracts.execution import WorktreeLocation
from contracts.ids import is_run_id
from contracts.runs import RunView
from contracts.search_attributes import SearchAttribute
from contracts.temporal_names import ActivityName, RunMessage
from contracts.worktree_prune import (
    FINISHED_STATUSES,
    TERMINATED_STATUS,
    PruneTarget,
    PruneTargetRequest,
    PruneWorktreesRequest,
    PruneWorktreesResult,
    host_of_worker,
)
from runtime.logs import run_logger
from store.run_lookup import projected_status

STATUS_KEY = SearchAttributeKey.for_keyword(SearchAttribute.SPECIALIST_STATUS)
_VIEW_QUERY_TIMEOUT = dt.timedelta(seconds=5)


def worker_host() -> str:
    """This worker's host name: the ``<host>`` of its host task queue and of its worktree claims."""
    return socket.gethostname()


def _invalid_run_id(run_id: str) -> ApplicationError:
    return ApplicationError(f"{run_id!r} is not a run id", type="invalid_run_id", non_retryable=True)


class WorktreePruneActivities:
    """``check_prune_target`` and ``prune_worktrees`` bound to the store and the state directory."""

    def __init__(self, config: ActivityConfig, store: SharedStore) -> None:
        self._config = config
        self._store = store

    @activity.defn(name=ActivityName.CHECK_PRUNE_TARGET)
    async def check_prune_target(self, request: PruneTargetRequest) -> PruneTarget:
        """The run's status and the hosts and repositories of its worktrees.

        Status: the run workflow's ``SpecialistStatus`` when Temporal knows the run (a workflow
        Temporal closed without a final status counts as ``terminated``), else the projection's,
        else ``unknown``. Raises a non-retryable ``invalid_run_id``; retryable errors when Temporal
        or the store cannot be reached.
        """
        run_id = request.run_id
        if not is_run_id(run_id):
            raise _invalid_run_id(run_id)
        status, location = await self._temporal_state(run_id)
        source = "temporal"
        try:
            if status is None:
                projected = await asyncio.to_thread(projected_status, self._store.get(), run_id)
                status, source = (projected, "projection") if projected else ("unknown", "none")
            claims = await asyncio.to_thread(self._store.get().worktree_claims, run_id)
        except OperatorError as error:
            raise refusal(error) from None
        hosts = {host for claim in claims if (host := host_of_worker(claim.worker)) is not None}
        repositories: list[str] = []
        if location is not None:
            if location.host:
                hosts.add(location.host)
            if location.repository:
                repositories.append(location.repository)
        run_logger(run_id, activity="check_prune_target").info(
            "prune_target_checked", status=status, source=source, hosts=sorted(hosts)
        )
        return PruneTarget(
            run_id=run_id,
            status=status,
            source=source,
            hosts=sorted(hosts),
            worker_host=worker_host(),
            repositories=repositories,
        )

    async def _temporal_state(self, run_id: str) -> tuple[str | None, WorktreeLocation | None]:
        """``(status, execution location)`` from the run's workflow; ``(None, None)`` when Temporal
        does not know the run."""
        handle = activity.client().get_workflow_handle(run_id)
        try:
            description = await handle.describe()
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                return None, None
            raise ApplicationError(
                f"Temporal answered {error.status.name}: {error.message}", type="temporal_error"
            ) from None
        status = description.typed_search_attributes.get(STATUS_KEY)
        location: WorktreeLocation | None = None
        # The view adds where the execution kept its worktree (host, repository); a hint only.
        with contextlib.suppress(Exception):
            view = await handle.query(RunMessage.VIEW, result_type=RunView, rpc_timeout=_VIEW_QUERY_TIMEOUT)
            location = view.execution.location if view.execution is not None else None
            status = status or view.status.value
        closed = description.status not in (WorkflowExecutionStatus.RUNNING, None)
        if closed and status not in FINISHED_STATUSES:
            status = TERMINATED_STATUS
        return status or "unknown", location

    @activity.defn(name=ActivityName.PRUNE_WORKTREES)
    def prune_worktrees(self, request: PruneWorktreesRequest) -> PruneWorktreesResult:
        """Remove every attempt of ``request.run_id`` in this worker's state directory (see
        :func:`activities.worktree_housekeeping.prune_run`); the allow-listed repositories and
        ``request.repositories`` are asked besides those the worktrees name. Idempotent.

        Raises non-retryable ``invalid_run_id``, ``execution_failed`` (no state directory) and
        ``unsafe_worktree_directory``; retryable ``git_failed``/``git_unavailable`` and store errors.
        """
        run_id = request.run_id
        if not is_run_id(run_id):
            raise _invalid_run_id(run_id)
        state_dir = self._config.state_dir
        if state_dir is None:
            raise ApplicationError(
                "this worker has no state directory, so it holds no worktrees",
                type=ErrorType.EXECUTION_FAILED,
                non_retryable=True,
            )
        host = worker_host()
        log = run_logger(run_id, activity="prune_worktrees", host=host)
        try:
            registered = [record.path for record in self._store.get().list_repositories()]
            pruned = prune_run(state_dir, run_id, [*request.repositories, *registered], host=host)
        except OperatorError as error:
            log.warning("worktrees_prune_failed", error_type=error.code)
            raise refusal(error) from None
        for attempt in pruned:
            log.info(
                "worktree_pruned",
                worktree_attempt=attempt.attempt,
                was_locked=attempt.was_locked,
                existed=attempt.existed,
                removed_from_git=attempt.removed_from_git,
            )
        return PruneWorktreesResult(run_id=run_id, host=host, pruned=pruned)
