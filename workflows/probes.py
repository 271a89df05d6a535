"""A ``SpecialistRun``'s probe requests (docs/architecture.md "Probe requests"): recorded from a
read_only run's analysis, approved one by one by an operator (a protected update bound to the probe's
digest), run by the ``run_probe`` activity while the run awaits its decision, and kept in
``RunView.probes`` — operator-run evidence, apart from the specialist's ``result`` and ``review``.

* Recording is behind :data:`PATCH_PROBE_REQUESTS`, asked only when an analysis returned probe
  requests, so no recorded history meets it; executions recorded before it never hold a probe.
* An approval is accepted only while the run awaits its decision (the validator checks the state; the
  handler authorises, then checks the probe — unknown index, another digest, already approved, a
  contract without a repository — and refuses with an audited ``action_refused``).
* Approved probes run one at a time, in the order approved, from the run's wait for its decision
  (:func:`wait_for_decision`). While one is approved or running, ``decide`` is refused
  ``probe_running``; a cancel cancels the running probe's activity (its process group is killed) and
  waits for it to stop, and the run ends ``cancelled``.

Deterministic: no I/O; imported by ``workflows/specialist_run.py``.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from contracts.audit import AuditKind
    from contracts.enums import Tier
    from contracts.errors import ErrorType
    from contracts.failures import ProbeFailureDetail, failure_detail
    from contracts.probes import (
        PROBE_TIMEOUT_SECONDS,
        ApproveProbeRequest,
        ProbeEvidence,
        ProbeStatus,
        RunProbeRequest,
        probe_listing,
        probe_records,
    )
    from contracts.refusals import RefusalCode
    from contracts.runs import ActionResult, RunStatus
    from contracts.temporal_names import ActivityName
    from workflows.authorization import ProtectedActions
    from workflows.run_state import RunState

PATCH_PROBE_REQUESTS = "run-probe-requests"
"""Runs whose analysis returned probe requests record them (and may then run approved ones)."""
PROBE_HEARTBEAT_TIMEOUT = timedelta(seconds=5)
"""A running probe heartbeats; a cancel reaches it within about this long (the SDK sends a heartbeat
at most every 80 % of it)."""
PROBE_RETRY = RetryPolicy(maximum_attempts=2, initial_interval=timedelta(seconds=1))
"""One retry covers a worker lost mid-probe (a new worktree, never the old one); failures of the probe
itself are non-retryable."""
PROBE_GIT_MARGIN = timedelta(minutes=5)


def record_probes(state: RunState) -> None:
    """After a read_only run's analysis: its probe requests, each with its digest, ``requested``."""
    result = state.result
    if result is None or not result.probe_requests or state.contract.tier is not Tier.READ_ONLY:
        return
    if not state.behaviours.has(PATCH_PROBE_REQUESTS):
        return
    state.probes = probe_records(state.run_input.run_id, state.contract_sha256, list(result.probe_requests))
    state.audit.record(AuditKind.PROBES_REQUESTED, data={"probes": probe_listing(state.probes)})


def probes_pending(state: RunState) -> bool:
    """Whether an approved probe has not finished (``decide`` waits for none: it is refused)."""
    return any(p.status in (ProbeStatus.APPROVED, ProbeStatus.RUNNING) for p in state.probes)


def validate_probe_approval(state: RunState, request: ApproveProbeRequest) -> None:
    """The validator's cheap check: only a run awaiting its decision takes probe approvals."""
    if state.status is not RunStatus.AWAITING_DECISION or state.decision is not None or state.cancel:
        raise ApplicationError(
            f"run {state.run_input.run_id} is {state.status.value}; probes are approved only while "
            "the run awaits its decision",
            type=RefusalCode.NOT_AWAITING_DECISION,
        )


async def handle_probe_approval(
    state: RunState, actions: ProtectedActions[ActionResult], request: ApproveProbeRequest
) -> ActionResult:
    """Authorise the approval (the proof bound to the probe digest the request names), then check the
    run and the probe again; an accepted approval marks the probe ``approved`` for the run to run."""
    refusal = await actions.authorize(
        "approve_probe", request.actor, proof=request.proof, digest=request.probe_sha256
    )
    if refusal is not None:
        return refusal
    problem = _approval_problem(state, request)
    if problem is not None:
        code, message = problem
        return actions.refuse("approve_probe", request.actor, code, message)
    position = request.index - 1
    state.probes[position] = state.probes[position].model_copy(
        update={"status": ProbeStatus.APPROVED, "approved_by": request.actor, "approved_at": workflow.now()}
    )
    state.audit.record(
        AuditKind.PROBE_APPROVED,
        actor=request.actor,
        data={"index": request.index, "sha256": request.probe_sha256},
    )
    return ActionResult(accepted=True, status=state.status)


def _approval_problem(state: RunState, request: ApproveProbeRequest) -> tuple[str, str] | None:
    if state.status is not RunStatus.AWAITING_DECISION or state.decision is not None or state.cancel:
        return RefusalCode.NOT_AWAITING_DECISION, f"run is {state.status.value}"
    if not 1 <= request.index <= len(state.probes):
        return (
            RefusalCode.UNKNOWN_PROBE,
            f"the run has no probe {request.index} ({len(state.probes)} requested)",
        )
    record = state.probes[request.index - 1]
    if record.sha256 != request.probe_sha256:
        return (
            RefusalCode.STALE_PROBE_DIGEST,
            f"probe {request.index}'s digest is {record.sha256}, not {request.probe_sha256}: "
            "review the probe with `specialists probes`",
        )
    if record.status is not ProbeStatus.REQUESTED:
        return RefusalCode.PROBE_ALREADY_APPROVED, f"probe {request.index} is {record.status.value}"
    if state.contract.repo_alias is None:
        return RefusalCode.PROBE_NO_REPOSITORY, "the run's contract names no repository to run a probe in"
    return None


async def wait_for_decision(state: RunState) -> None:
    """Wait until the run is decided or cancelled, running each approved probe as it is approved."""
    while True:
        await workflow.wait_condition(
            lambda: state.decision is not None or state.cancel is not None or _next(state) is not None
        )
        if state.decision is not None or state.cancel is not None:
            return
        index = _next(state)
        assert index is not None
        await _run_probe(state, index)


def _next(state: RunState) -> int | None:
    return next((p.index for p in state.probes if p.status is ProbeStatus.APPROVED), None)


async def _run_probe(state: RunState, index: int) -> None:
    """Run approved probe ``index`` (``run_probe``) and record how it ended; a cancel of the run
    cancels it and waits for it to stop."""
    record = state.probes[index - 1]
    contract = state.contract
    assert contract.repo_alias is not None
    request = RunProbeRequest(
        run_id=state.run_input.run_id,
        index=index,
        probe_sha256=record.sha256,
        probe=record.request,
        repo_alias=contract.repo_alias,
        base_commit=contract.base_commit,
    )
    _update(state, index, status=ProbeStatus.RUNNING)
    state.audit.record(AuditKind.PROBE_STARTED, data={"index": index, "sha256": record.sha256})
    state.probe_running = True
    handle = workflow.start_activity(
        ActivityName.RUN_PROBE,
        request,
        result_type=ProbeEvidence,
        start_to_close_timeout=timedelta(seconds=PROBE_TIMEOUT_SECONDS) + PROBE_GIT_MARGIN,
        heartbeat_timeout=PROBE_HEARTBEAT_TIMEOUT,
        retry_policy=PROBE_RETRY,
        cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    )
    try:
        await workflow.wait_condition(lambda: handle.done() or state.cancel is not None)
        if not handle.done():
            handle.cancel()
        evidence = await handle
    except ActivityError as error:
        _failed(state, index, error)
        return
    finally:
        state.probe_running = False
    _update(state, index, status=ProbeStatus.COMPLETED, evidence=evidence)
    state.audit.record(AuditKind.PROBE_COMPLETED, data=_completed_data(index, evidence))


def _failed(state: RunState, index: int, error: ActivityError) -> None:
    cause = error.cause
    if isinstance(cause, CancelledError):
        error_type, message = ErrorType.PROBE_CANCELLED, "the run was cancelled while the probe ran"
    elif isinstance(cause, ApplicationError):
        error_type, message = cause.type or ErrorType.EXECUTION_FAILED, cause.message
    else:
        error_type, message = ErrorType.EXECUTION_FAILED, str(cause or error)
    detail = failure_detail(cause, ProbeFailureDetail) if isinstance(cause, ApplicationError) else None
    _update(
        state,
        index,
        status=ProbeStatus.FAILED,
        evidence=detail.evidence if detail is not None else None,
        error_type=error_type,
        error=message,
    )
    state.audit.record(
        AuditKind.PROBE_FAILED, data={"index": index, "error_type": error_type, "message": message}
    )


def _update(state: RunState, index: int, **fields: object) -> None:
    state.probes[index - 1] = state.probes[index - 1].model_copy(update=fields)


def _completed_data(index: int, evidence: ProbeEvidence) -> dict[str, object]:
    return {
        "index": index,
        "commit": evidence.commit,
        "exit_status": evidence.exit_status,
        "duration_seconds": evidence.duration_seconds,
        "stdout_sha256": evidence.stdout_sha256,
        "stderr_sha256": evidence.stderr_sha256,
        "changed": evidence.changed_count,
        "confined": evidence.confined,
    }
