"""A ``SpecialistRun``'s worktree attempt: how it is scheduled and what the run keeps and audits of
how it ended (docs/architecture.md "Worktree execution").

One ``execute_worktree_attempt`` activity does the whole attempt. What it is given and how long it may
take follow from the captured contract and what is left of the run's budget:

* ``patch`` executor, ``worktree`` tier: the change job's patch; the git work's timeout;
* ``patch`` executor, ``pr_ready`` tier: also the captured verify commands, which get what is left of
  the budget less a margin for git's checks;
* ``command`` executor: no patch — the repository's agent runs in the worktree within the captured
  timeout, bounded by what is left of the budget less that margin (so the activity kills it before
  Temporal gives up on the activity); a pr_ready run's verify commands get what is left after it.

Commands run confined (docs/architecture.md "Worktree execution"); the request carries the captured
``allow_unconfined``, and the ``worktree_executed`` audit event says whether each ran confined.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.exceptions import TimeoutError as TemporalTimeoutError

with workflow.unsafe.imports_passed_through():
    from contracts.audit import AuditKind
    from contracts.enums import Tier
    from contracts.errors import ErrorType
    from contracts.execution import (
        COMMAND_EXECUTOR,
        CommandReport,
        ExecuteAttemptRequest,
        WorktreeExecution,
        WorktreeLocation,
        command_task_text,
    )
    from contracts.failures import WorktreeFailureDetail, failure_detail
    from contracts.runs import ExecutionContract
    from contracts.temporal_names import ActivityName
    from workflows.run_state import RunState

EXECUTION_TIMEOUT = timedelta(minutes=5)
"""A worktree attempt's git work on local disk: minutes at most."""
EXECUTION_RETRY = RetryPolicy(maximum_attempts=2, initial_interval=timedelta(seconds=1))
"""One retry covers a worker lost mid-attempt (it claims the next attempt and makes a new worktree);
fail-closed errors never retry."""
ATTEMPT_HEARTBEAT_TIMEOUT = timedelta(seconds=15)
"""Every attempt heartbeats while it runs (``activities.execution.keeps_heartbeating``), whatever its
step: a worker lost mid-attempt is noticed after this, and the retry runs on another worker. Changing
an activity's timeouts changes no command, so recorded histories replay unchanged."""
COMMAND_GIT_MARGIN_SECONDS = 60.0


async def attempt_worktree(state: RunState, patch: str, deadline: datetime) -> WorktreeExecution | None:
    """Run ``execute_worktree_attempt``; the result, or ``None`` after moving the run to ``failed``
    (the fail-closed type as the error; the worktree stays) or ``expired``."""
    assert state.execution is not None
    remaining = max((deadline - workflow.now()).total_seconds(), 1.0)
    call = attempt_call(state.contract, patch, remaining)
    state.executing = True
    try:
        execution: WorktreeExecution = await workflow.execute_activity(
            ActivityName.EXECUTE_WORKTREE_ATTEMPT,
            call.request,
            result_type=WorktreeExecution,
            start_to_close_timeout=call.start_to_close,
            schedule_to_close_timeout=call.schedule_to_close,
            heartbeat_timeout=call.heartbeat,
            retry_policy=EXECUTION_RETRY,
        )
    except ActivityError as error:
        _attempt_failed(state, error, remaining)
        return None
    finally:
        state.executing = False
    state.execution = state.execution.model_copy(
        update={
            "evidence": execution.evidence,
            "patch_sha256": execution.applied.patch_sha256 if execution.applied is not None else None,
            "command": execution.command,
            "verification": execution.verification,
            "pr_patch": execution.pr_patch,
            "location": WorktreeLocation.of_attempt(execution.attempt, execution.host),
        }
    )
    state.audit.record(AuditKind.WORKTREE_EXECUTED, data=executed_data(execution))
    return execution


def _attempt_failed(state: RunState, error: ActivityError, remaining: float) -> None:
    """A failed attempt: ``expired`` when the runtime budget ran out meanwhile, else ``failed`` with
    the fail-closed type, where the worktree is kept and the agent's report."""
    assert state.execution is not None
    if isinstance(error.cause, TemporalTimeoutError):
        state.execution = state.execution.model_copy(
            update={"failure_type": ErrorType.RUNTIME_BUDGET_EXHAUSTED}
        )
        state.expire({"step": "execute", "budget_seconds": remaining})
        return
    failure = attempt_failure(error)
    state.execution = state.execution.model_copy(
        update={"location": failure.location, "failure_type": failure.error_type}
        | ({"command": failure.command} if failure.command is not None else {})
    )
    state.audit.record(
        AuditKind.WORKTREE_FAILED,
        data={
            "error_type": failure.error_type,
            "message": failure.message,
            "attempt": failure.location.attempt if failure.location else None,
        },
    )
    state.fail(failure.error_type, failure.message)


@dataclass(frozen=True)
class AttemptCall:
    """The ``execute_worktree_attempt`` call: its input and its activity timeouts."""

    request: ExecuteAttemptRequest
    start_to_close: timedelta
    schedule_to_close: timedelta
    heartbeat: timedelta | None


def uses_command_executor(contract: ExecutionContract) -> bool:
    """Whether the run captured the ``command`` executor (the agent makes the change; no change job)."""
    config = contract.repository_config
    return config is not None and config.executor.value == COMMAND_EXECUTOR


def attempt_call(contract: ExecutionContract, patch: str, remaining: float) -> AttemptCall:
    """The attempt of ``contract`` applying ``patch`` (``""`` for the command executor), with
    ``remaining`` seconds left of the run's budget."""
    assert contract.repo_alias is not None and contract.base_commit is not None
    config = contract.repository_config
    margin = min(COMMAND_GIT_MARGIN_SECONDS, remaining / 4)
    command: dict[str, Any] = {}
    agent_budget = 0.0
    if uses_command_executor(contract):
        assert config is not None
        agent_budget = max(min(float(config.command_timeout_seconds), remaining - margin), 1.0)
        command = {
            "executor": COMMAND_EXECUTOR,
            "repository_config": config,
            "task_text": command_task_text(contract.task, contract.evidence_refs, contract.stop_conditions),
            "command_timeout_seconds": agent_budget,
        }
    pr_ready = _pr_ready_fields(contract, remaining - margin - agent_budget)
    verify_budget = float(pr_ready.get("verify_budget_seconds", 0.0))
    return AttemptCall(
        request=ExecuteAttemptRequest(
            run_id=contract.run_id,
            repo_alias=contract.repo_alias,
            base_commit=contract.base_commit,
            patch=patch,
            allow_unconfined=config is not None and config.allow_unconfined,
            **command,
            **pr_ready,
        ),
        start_to_close=EXECUTION_TIMEOUT + timedelta(seconds=agent_budget + verify_budget),
        schedule_to_close=timedelta(seconds=remaining),
        heartbeat=ATTEMPT_HEARTBEAT_TIMEOUT,
    )


def _pr_ready_fields(contract: ExecutionContract, budget_seconds: float) -> dict[str, Any]:
    """The ``ExecuteAttemptRequest`` fields of a pr_ready run (none for a worktree run): its
    captured verify commands, each bounded by the captured timeout, all by ``budget_seconds``."""
    if contract.tier is not Tier.PR_READY:
        return {}
    config = contract.repository_config
    return {
        "pr_ready": True,
        "verify": [list(argv) for argv in config.verify] if config is not None else [],
        "verify_timeout_seconds": float(config.command_timeout_seconds) if config is not None else None,
        "verify_budget_seconds": max(budget_seconds, 1.0),
    }


@dataclass(frozen=True)
class AttemptFailure:
    """Why an attempt failed (the fail-closed type, or ``execution_failed``), where its worktree is
    kept and what the agent reported (when the worktree was made, and the agent ran)."""

    error_type: str
    message: str
    location: WorktreeLocation | None = None
    command: CommandReport | None = None


def attempt_failure(error: ActivityError) -> AttemptFailure:
    """The failure behind ``error`` (not a timeout: that is the runtime budget running out)."""
    cause = error.cause
    if not isinstance(cause, ApplicationError):
        return AttemptFailure(ErrorType.EXECUTION_FAILED, str(cause or error))
    detail = failure_detail(cause, WorktreeFailureDetail)
    return AttemptFailure(
        cause.type or ErrorType.EXECUTION_FAILED,
        cause.message,
        detail.location if detail is not None else None,
        detail.command if detail is not None else None,
    )


def executed_data(execution: WorktreeExecution) -> dict[str, Any]:
    """The ``worktree_executed`` audit data: the attempt, git's evidence, the agent's exit and the
    verify commands' exits (when they ran)."""
    evidence = execution.evidence
    command = execution.command
    data: dict[str, Any] = {
        "attempt": execution.attempt.attempt,
        "base_commit": evidence.base_commit,
        "files_changed": evidence.files_changed,
        "diff_sha256": evidence.diff_sha256,
        "diff_bytes": evidence.diff_bytes,
        "patch_sha256": execution.applied.patch_sha256 if execution.applied is not None else None,
    }
    if command is not None:
        data |= {
            "command_exit_status": command.exit_status,
            "command_duration_seconds": command.duration_seconds,
            "confined": command.confined,
            "network_isolated": command.network_isolated,
        }
    if execution.pr_patch is not None:
        data |= {
            "verification_exit_statuses": [item.exit_status for item in execution.verification],
            "verification_confined": [item.confined for item in execution.verification],
            "pr_patch_sha256": execution.pr_patch.sha256,
        }
    return data
