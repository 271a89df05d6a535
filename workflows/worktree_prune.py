"""``WorktreePrune``: ``specialists worktrees prune RUN --actor A`` — remove a finished run's worktrees.

Protected: the actor must be registered and the request must carry a proof of the action token bound
to the run id and the action ``prune_worktrees`` (activity ``authorize_action``, which also spends
the proof's nonce). Then ``check_prune_target`` reads the run's status: unless the run has finished
(``contracts.worktree_prune.FINISHED_STATUSES``) the prune is refused (``run_not_finished``; a run
neither Temporal nor the projection knows: ``unknown_run``) and nothing is removed.

The worktrees are on the disk of the worker that made them, so the removal (``prune_worktrees``) is
scheduled on the task queue of each host recorded for the run — ``<this workflow's task queue>@<host>``
(``contracts.worktree_prune.host_task_queue``), which only that host's workers poll — or, when no
host is recorded, on the host of the worker that checked the run. A host whose worker does not pick
the removal up within ``host_wait_seconds`` is reported in ``unreachable_hosts``.

Result: :class:`PruneResult` — refused with a code, or what each host removed. Workflow id:
``prune:<run id>`` (``contracts.worktree_prune.prune_workflow_id``).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutType
from temporalio.exceptions import TimeoutError as TemporalTimeoutError

with workflow.unsafe.imports_passed_through():
    from contracts.refusals import RefusalCode
    from contracts.runs import AuthorizeRequest
    from contracts.temporal_names import ActivityName, WorkflowType
    from contracts.worktree_prune import (
        PRUNE_ACTION,
        UNKNOWN_STATUS,
        PruneRequest,
        PruneResult,
        PruneTarget,
        PruneTargetRequest,
        PruneWorktreesRequest,
        PruneWorktreesResult,
        host_task_queue,
        is_finished,
    )
    from workflows.authorization import authorize_action
    from workflows.versioning import auto_upgrade

_SHORT_TIMEOUT = timedelta(seconds=30)
_PRUNE_TIMEOUT = timedelta(minutes=5)
_RETRY = RetryPolicy(maximum_attempts=2, initial_interval=timedelta(milliseconds=200))


@workflow.defn(name=WorkflowType.WORKTREE_PRUNE, versioning_behavior=auto_upgrade())
class WorktreePruneWorkflow:
    """Authorise, check the run has finished, then remove its worktrees on each host holding them."""

    @workflow.run
    async def run(self, request: PruneRequest) -> PruneResult:
        # The proof's nonce is spent in the store; an authorisation that cannot be made fails the prune.
        authorised = await authorize_action(
            AuthorizeRequest(
                run_id=request.run_id, action=PRUNE_ACTION, actor=request.actor, proof=request.proof
            ),
            timeout=_SHORT_TIMEOUT,
        )
        if not authorised.allowed:
            return PruneResult(
                run_id=request.run_id, refused=True, code=authorised.code, message=authorised.message
            )
        target = await workflow.execute_activity(
            ActivityName.CHECK_PRUNE_TARGET,
            PruneTargetRequest(run_id=request.run_id),
            result_type=PruneTarget,
            start_to_close_timeout=_SHORT_TIMEOUT,
            retry_policy=_RETRY,
        )
        if target.status == UNKNOWN_STATUS:
            return PruneResult(
                run_id=request.run_id,
                refused=True,
                code=RefusalCode.UNKNOWN_RUN,
                message=f"no run {request.run_id} is known to Temporal or the projection",
                status=target.status,
            )
        if not is_finished(target.status):
            return PruneResult(
                run_id=request.run_id,
                refused=True,
                code=RefusalCode.RUN_NOT_FINISHED,
                message=f"run {request.run_id} is {target.status}: its worktrees are pruned only "
                "once it has finished (accepted, rejected, cancelled, failed or expired)",
                status=target.status,
            )
        hosts = target.hosts or [target.worker_host]
        base_queue = workflow.info().task_queue
        result = PruneResult(run_id=request.run_id, status=target.status, hosts=hosts)
        for host in hosts:
            try:
                removed = await workflow.execute_activity(
                    ActivityName.PRUNE_WORKTREES,
                    PruneWorktreesRequest(run_id=request.run_id, repositories=target.repositories),
                    result_type=PruneWorktreesResult,
                    task_queue=host_task_queue(base_queue, host),
                    schedule_to_start_timeout=timedelta(seconds=request.host_wait_seconds),
                    start_to_close_timeout=_PRUNE_TIMEOUT,
                    retry_policy=_RETRY,
                )
            except ActivityError as error:
                cause = error.cause
                if isinstance(cause, TemporalTimeoutError) and cause.type is TimeoutType.SCHEDULE_TO_START:
                    workflow.logger.warning("no worker on host %s picked up the prune", host)
                    result = result.model_copy(
                        update={"unreachable_hosts": [*result.unreachable_hosts, host]}
                    )
                    continue
                if isinstance(cause, ApplicationError):
                    raise ApplicationError(
                        f"pruning on host {host} failed: {cause.message}",
                        type=cause.type or "prune_failed",
                        non_retryable=True,
                    ) from None
                raise
            result = result.model_copy(update={"pruned": [*result.pruned, *removed.pruned]})
        return result
