"""Run operations over the Temporal client: create (deduplicated), show, enqueue, decide, cancel.

Every function takes the client as an argument so tests can pass their own. Refusals become
:class:`contracts.errors.OperatorError` subclasses carrying the exit codes of
docs/architecture.md "Exit codes".
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import Callable
from typing import Any, TypeVar

from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import (
    SearchAttributeKey,
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from contracts.audit import AuditKind
from contracts.errors import InvalidInput, NotFound, OperatorError, Refused, ServiceUnavailable
from contracts.ids import CASE_PREFIX, TEAM_PREFIX, is_run_id
from contracts.proofs import ActionProof
from contracts.refusal_detail import operator_error
from contracts.refusals import AUTHORISATION_REFUSALS, RefusalCode
from contracts.runs import (
    ActionResult,
    ApproveRequest,
    AuditEvent,
    CancelRequest,
    DecisionOutcome,
    DecisionRequest,
    EnqueueRequest,
    ExecuteRequest,
    RunInput,
    RunProgress,
    RunStatus,
    RunView,
    run_request_digest,
)
from contracts.search_attributes import SearchAttribute
from contracts.temporal_names import RunMessage, WorkflowType
from contracts.ui_summaries import run_summary
from control.temporal import START_WORKER_HINT, describe_memo, patiently, poll_view, require_worker

RUN_WORKFLOW = WorkflowType.SPECIALIST_RUN
QUERY_TIMEOUT = dt.timedelta(seconds=10)
QUERY_GRACE_SECONDS = 0.5
"""Beyond a query's RPC timeout, how long before the CLI stops waiting for it itself."""
ANSWER_SECONDS = 5.0
"""How long a command waits for a worker to answer a query (``show``) once one is polling."""
UPDATE_ANSWER_SECONDS = 15.0
"""How long a command waits for a worker to answer an update (enqueue, approve, execute, decide):
its handler runs the authorisation activity, milliseconds when a worker is there."""
RETRY_SECONDS = 1.0
"""How often ``--wait`` asks again while no worker (or no Temporal) answers."""
UNANSWERED_CODES = frozenset({"no_worker", "temporal_unreachable", "temporal_error"})
"""What a patient wait (``--wait``) outlasts: nobody answered, which a restarted worker or server
ends."""
_STATUS_KEY = SearchAttributeKey.for_keyword(SearchAttribute.SPECIALIST_STATUS)
_NOT_FOUND_CODES = frozenset({RefusalCode.UNKNOWN_ACTOR, RefusalCode.UNKNOWN_PROBE})
Answer = TypeVar("Answer")


def raise_if_creation_refused(view: RunView) -> None:
    """Raise the refusal when the run refused its own creation: the worker's authorisation refused a
    protected create, or the run's capture refused the request (automation off, an unknown override
    profile, an unknown or unavailable repository, no model selected, ...).

    The run exists (it ended ``failed`` with the refusal as its error type), but the operator's
    request was refused, so the CLI reports it like any refusal: with the exit code of the refusal's
    class (``RunError.exit_code``; an authorisation refusal exits 3 or 4).
    """
    if view.status is not RunStatus.FAILED or view.error is None:
        return
    code = view.error.type
    message = f"run {view.run_id} was refused at creation: {view.error.message}"
    if view.error.exit_code is not None:
        raise operator_error(code, message, view.error.exit_code)
    if code in AUTHORISATION_REFUSALS:
        error_class: type[OperatorError] = NotFound if code in _NOT_FOUND_CODES else Refused
        raise error_class(code, message)


def request_digest(run_input: RunInput) -> str:
    """sha256 of the canonical create request (:func:`contracts.runs.run_request_digest`)."""
    return run_request_digest(run_input)


def check_run_id(run_id: str) -> None:
    """Raises :class:`InvalidInput` (``invalid_run_id``) unless ``run_id`` is ``SOR-`` + 16."""
    if not is_run_id(run_id):
        shown = repr(run_id) if len(run_id) <= 60 else f"{run_id[:40]!r}… ({len(run_id)} characters)"
        message = f"{shown} is not a run id (SOR- followed by 16 of 0-9A-Z)"
        if run_id.upper().startswith(TEAM_PREFIX):
            message += "; a research team (RTM-…) is shown by `specialists research team-show`"
        elif run_id.upper().startswith(CASE_PREFIX):
            message += "; a research case (RSC-…) is shown by `specialists research case-show`"
        raise InvalidInput("invalid_run_id", message)


async def create_run(client: Client, run_input: RunInput, *, task_queue: str) -> tuple[RunView, bool]:
    """Start the run, or return the existing one for the same request id.

    Returns ``(view, deduplicated)``. Raises :class:`Refused` ``request_id_conflict`` when the request
    id was used for a different payload.
    """
    handle = client.get_workflow_handle(run_input.run_id)
    memo = await describe_memo(handle) if run_input.request_id else None
    if memo is not None:
        if memo.get("request_digest") != run_input.request_digest:
            raise Refused(
                "request_id_conflict",
                f"request id {run_input.request_id!r} was already used for a different request "
                f"(run {run_input.run_id})",
            )
        return await wait_for_view(
            client, run_input.run_id, lambda v: v.status is not RunStatus.ROUTING
        ), True
    await client.start_workflow(
        RUN_WORKFLOW,
        run_input,
        id=run_input.run_id,
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        memo={"request_digest": run_input.request_digest, "title": run_input.work_item.title},
        search_attributes=TypedSearchAttributes([SearchAttributePair(_STATUS_KEY, RunStatus.ROUTING.value)]),
        static_summary=run_summary(
            run_input.work_item.title,
            run_input.requested_tier.value if run_input.requested_tier else None,
        ),
    )
    view = await wait_for_view(client, run_input.run_id, lambda v: v.status is not RunStatus.ROUTING)
    return view, False


async def get_view(client: Client, run_id: str) -> RunView:
    """The run's view by query. Raises :class:`NotFound` or :class:`ServiceUnavailable`."""
    return await _query(client, run_id, RunMessage.VIEW, RunView)


async def get_progress(client: Client, run_id: str) -> RunProgress | None:
    """The run's status and number of audit events by query ``status`` (a few bytes, where the
    view is kilobytes); ``None`` when the run's worker predates that query. Raises like
    :func:`get_view`."""
    return await _progress(client, run_id)


async def _progress(
    client: Client, run_id: str, *, timeout: dt.timedelta = QUERY_TIMEOUT
) -> RunProgress | None:
    try:
        return await _query(client, run_id, RunMessage.STATUS, RunProgress, timeout=timeout)
    except ServiceUnavailable as error:
        if error.code == "query_failed":
            return None
        raise


async def _query(
    client: Client,
    run_id: str,
    name: RunMessage,
    result_type: type[Answer],
    *,
    timeout: dt.timedelta = QUERY_TIMEOUT,
) -> Answer:
    check_run_id(run_id)
    handle = client.get_workflow_handle(run_id)
    no_answer = ServiceUnavailable(
        "no_worker",
        f"no worker answered for run {run_id} within {timeout.total_seconds():g} s: " + START_WORKER_HINT,
    )
    try:
        # Bounded here too: the client may retry a query whose RPC timed out, doubling the wait.
        answer: Answer = await asyncio.wait_for(
            handle.query(name, result_type=result_type, rpc_timeout=timeout),
            timeout=timeout.total_seconds() + QUERY_GRACE_SECONDS,
        )
        return answer
    except TimeoutError:
        raise no_answer from None
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            raise NotFound("unknown_run", f"no run {run_id}") from None
        # The server holds a query until a worker takes it; at the RPC's timeout it answers
        # DEADLINE_EXCEEDED or CANCELLED ("Timeout expired").
        if error.status in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED):
            raise no_answer from None
        if error.status == RPCStatusCode.UNAVAILABLE:
            raise ServiceUnavailable(
                "temporal_unreachable", f"Temporal did not answer for run {run_id}: {error.message}"
            ) from None
        raise ServiceUnavailable(
            "temporal_error", f"Temporal answered {error.status.name}: {error}"
        ) from None
    except WorkflowQueryFailedError as error:
        raise ServiceUnavailable("query_failed", f"run {run_id} could not answer: {error}") from None


async def run_task_queue(client: Client, run_id: str) -> tuple[str, bool] | None:
    """The task queue of the run's workflow and whether it is still running; ``None`` when Temporal
    has no such workflow. Raises :class:`ServiceUnavailable` when Temporal does not answer."""
    check_run_id(run_id)
    try:
        description = await client.get_workflow_handle(run_id).describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return None
        from control.temporal import temporal_error

        raise temporal_error(error) from None
    return description.task_queue, description.status == WorkflowExecutionStatus.RUNNING


async def require_run_worker(client: Client, run_id: str) -> bool:
    """Refuse, before anything is sent, an action on a running run whose task queue no worker polls
    (``no_worker``, exit 5, naming the queue and the fix); ``unknown_run`` (exit 3) for a run
    Temporal does not know. A finished run needs no worker here: the action is refused as finished.
    Returns whether the run is still running."""
    found = await run_task_queue(client, run_id)
    if found is None:
        raise NotFound("unknown_run", f"no run {run_id}")
    queue, running = found
    if running:
        await require_worker(client, queue)
    return running


async def query_view(client: Client, run_id: str, *, within: float = ANSWER_SECONDS) -> RunView:
    """The run's view for ``show``: asked only when a worker polls the run's task queue, and waited
    for ``within`` seconds. Raises :class:`NotFound` (``unknown_run``) or
    :class:`ServiceUnavailable` (``no_worker`` naming the queue and the fix, ``temporal_error``,
    ``query_failed``) — fast when no worker polls."""
    found = await run_task_queue(client, run_id)
    if found is None:
        raise NotFound("unknown_run", f"no run {run_id}")
    await require_worker(client, found[0])
    return await _query(client, run_id, RunMessage.VIEW, RunView, timeout=dt.timedelta(seconds=within))


async def wait_for_view(
    client: Client,
    run_id: str,
    done: Callable[[RunView], bool],
    *,
    timeout: float | None = 15.0,
    on_change: Callable[[RunView], None] | None = None,
    patient: bool = False,
    on_unanswered: Callable[[ServiceUnavailable | None], None] | None = None,
    initial: RunView | None = None,
) -> RunView:
    """Poll the run's view until ``done(view)`` or ``timeout`` seconds (``None`` = no limit).

    The whole view is fetched first and then only when query ``status`` shows that the status or
    the number of audit events changed: every other poll would return the same view again.

    ``patient`` (``--wait``): while no worker (or no Temporal) answers, keep asking every
    :data:`RETRY_SECONDS` instead of failing — a worker that stops and starts again mid-run, or a
    restarted server, only delays the wait; each query is bounded by what is left of ``timeout``.
    ``on_unanswered`` hears when answers stop (the error) and when they come back (``None``).
    ``initial`` is the view to return if the timeout passes before any answer.
    """
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    last: tuple[RunView, RunProgress] | None = None

    def query_timeout() -> dt.timedelta:
        if deadline is None:
            return QUERY_TIMEOUT
        left = max(0.1, deadline - loop.time())
        return min(QUERY_TIMEOUT, dt.timedelta(seconds=left))

    async def ask() -> RunView:
        nonlocal last
        if last is not None:
            progress = await _progress(client, run_id, timeout=query_timeout())
            if progress == last[1]:
                return last[0]
        view = await _query(client, run_id, RunMessage.VIEW, RunView, timeout=query_timeout())
        last = (view, RunProgress(status=view.status, audit_events=len(view.audit)))
        return view

    fetch = patiently(
        ask,
        codes=UNANSWERED_CODES if patient else frozenset(),
        deadline=deadline,
        on_unanswered=on_unanswered,
        fallback=lambda: last[0] if last is not None else initial,
        retry_seconds=RETRY_SECONDS,
    )

    view = await poll_view(
        fetch,
        done,
        status=lambda v: v.status,
        timeout=timeout,
        on_change=on_change,
    )
    if view.status.terminal:
        # The run reports its final status before its last projection write; the workflow result
        # means that write is done, so a `list` right after agrees with `show`.
        await _closed(client, run_id)
    return view


async def _closed(client: Client, run_id: str, timeout: float = 10.0) -> None:
    """Wait (bounded) until the run's workflow has closed."""
    handle = client.get_workflow_handle(run_id)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(handle.result(), timeout=timeout)


ENDED_WITHOUT_SUCCESS = frozenset({RunStatus.FAILED, RunStatus.EXPIRED, RunStatus.CANCELLED})
"""Final statuses that are not a success: ``--wait`` exits 7 on them (docs/architecture.md "Exit
codes")."""


def settled(view: RunView) -> bool:
    """True when the run needs a person or has finished (what ``--wait`` waits for)."""
    return view.status.terminal or view.status.needs_person


async def _update(
    client: Client, run_id: str, name: RunMessage, request: Any, *, answer_within: float | None = None
) -> ActionResult:
    """Send update ``name``; with ``answer_within``, only when a worker polls the run's task queue
    (else ``no_worker`` before anything is sent) and waiting at most that many seconds for the
    answer."""
    check_run_id(run_id)
    handle = client.get_workflow_handle(run_id)
    if answer_within is not None:
        await require_run_worker(client, run_id)
    elif await describe_memo(handle) is None:
        raise NotFound("unknown_run", f"no run {run_id}")
    bound = None if answer_within is None else dt.timedelta(seconds=answer_within)
    try:
        result: ActionResult = await handle.execute_update(
            name, request, result_type=ActionResult, rpc_timeout=bound
        )
    except WorkflowUpdateRPCTimeoutOrCancelledError:
        if answer_within is None:
            raise
        raise ServiceUnavailable(
            "no_worker",
            f"no worker answered {name} for run {run_id} within {answer_within:g} s: the request may "
            f"still take effect when a worker takes it (`specialists show {run_id}` tells); "
            + START_WORKER_HINT,
        ) from None
    except WorkflowUpdateFailedError as error:
        cause = error.cause
        if isinstance(cause, ApplicationError):
            raise Refused(cause.type or "refused", cause.message) from None
        raise Refused("refused", str(cause or error)) from None
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            raise Refused("run_finished", f"run {run_id} has finished") from None
        raise ServiceUnavailable(
            "temporal_error", f"Temporal answered {error.status.name}: {error}"
        ) from None
    if not result.accepted:
        error_class: type[OperatorError] = NotFound if result.code in _NOT_FOUND_CODES else Refused
        raise error_class(result.code or "refused", result.message or "refused")
    return result


async def enqueue_run(
    client: Client,
    run_id: str,
    actor: str | None,
    proof: ActionProof | None = None,
    *,
    answer_within: float | None = None,
) -> ActionResult:
    """Update ``enqueue``: a ``ready`` run moves to the queue (``answer_within``: see :func:`_update`)."""
    request = EnqueueRequest(actor=actor, proof=proof)
    return await _update(client, run_id, RunMessage.ENQUEUE, request, answer_within=answer_within)


async def decide_run(
    client: Client,
    run_id: str,
    actor: str,
    outcome: DecisionOutcome,
    note: str,
    proof: ActionProof | None = None,
    *,
    answer_within: float | None = None,
) -> ActionResult:
    """Update ``decide``: accept or reject a run awaiting a decision."""
    request = DecisionRequest(actor=actor, outcome=outcome, note=note, proof=proof)
    return await _update(client, run_id, RunMessage.DECIDE, request, answer_within=answer_within)


async def approve_run(
    client: Client,
    run_id: str,
    actor: str,
    contract_sha256: str,
    proof: ActionProof | None = None,
    *,
    answer_within: float | None = None,
) -> RunView:
    """Update ``approve``: approve exactly the contract with ``contract_sha256``; returns the view."""
    request = ApproveRequest(actor=actor, contract_sha256=contract_sha256, proof=proof)
    await _update(client, run_id, RunMessage.APPROVE, request, answer_within=answer_within)
    return await wait_for_view(client, run_id, lambda v: v.status is not RunStatus.AWAITING_APPROVAL)


async def approve_probe_run(
    client: Client,
    run_id: str,
    actor: str,
    index: int,
    probe_sha256: str,
    proof: ActionProof | None = None,
    *,
    answer_within: float | None = None,
) -> RunView:
    """Update ``approve_probe``: approve probe ``index`` whose digest is ``probe_sha256``; returns the
    view once the run has taken the probe up (running or finished). Raises the refusal
    (``unknown_probe`` exit 3; ``stale_probe_digest``, ``probe_already_approved``,
    ``probe_no_repository``, ``not_awaiting_decision``, an authorisation code) as an operator error."""
    from contracts.probes import ApproveProbeRequest

    request = ApproveProbeRequest(actor=actor, index=index, probe_sha256=probe_sha256, proof=proof)
    await _update(client, run_id, RunMessage.APPROVE_PROBE, request, answer_within=answer_within)
    return await wait_for_view(
        client, run_id, lambda v: len(v.probes) >= index and v.probes[index - 1].status.value != "approved"
    )


async def execute_run(
    client: Client,
    run_id: str,
    actor: str,
    proof: ActionProof | None = None,
    *,
    answer_within: float | None = None,
) -> ActionResult:
    """Update ``execute``: carry out an approved worktree run (accepted once). Raises the refusal
    (``not_approved``, ``already_executing``, an authorisation code) as
    an operator error."""
    request = ExecuteRequest(actor=actor, proof=proof)
    return await _update(client, run_id, RunMessage.EXECUTE, request, answer_within=answer_within)


async def cancel_run(
    client: Client,
    run_id: str,
    actor: str,
    reason: str,
    proof: ActionProof | None = None,
    *,
    require_answer: bool = False,
) -> RunView:
    """Signal ``cancel`` after checking the run exists and has not finished (with
    ``require_answer``, refused with ``no_worker`` before anything is sent when no worker polls the
    run's task queue: the cancel could not take effect, nor its refusal be seen).

    A signal has no answer: when the run records this cancel as refused (``action_refused``, e.g. a
    proof made with another token) and the run goes on, the refusal is raised like an update's.
    """
    if require_answer:
        found = await run_task_queue(client, run_id)
        if found is None:
            raise NotFound("unknown_run", f"no run {run_id}")
        if not found[1]:
            raise Refused(
                "run_finished", f"run {run_id} {await _finished_as(client, run_id)}: nothing to cancel"
            )
        await require_worker(client, found[0])
        view = await _query(
            client, run_id, RunMessage.VIEW, RunView, timeout=dt.timedelta(seconds=ANSWER_SECONDS)
        )
    else:
        view = await get_view(client, run_id)
    if view.status.terminal:
        raise Refused("run_finished", f"run {run_id} is {view.status.value}: nothing to cancel")
    seen = len(view.audit)

    def refusal(current: RunView) -> AuditEvent | None:
        return next(
            (
                event
                for event in current.audit[seen:]
                if event.kind == AuditKind.ACTION_REFUSED
                and event.actor == actor
                and event.data.get("action") == "cancel"
            ),
            None,
        )

    def stopping(current: RunView) -> bool:
        return current.status in (RunStatus.CANCELLED, RunStatus.CANCEL_REQUESTED) or current.status.terminal

    handle = client.get_workflow_handle(run_id)
    await handle.signal(RunMessage.CANCEL, CancelRequest(actor=actor, reason=reason, proof=proof))
    view = await wait_for_view(client, run_id, lambda v: stopping(v) or refusal(v) is not None, timeout=10.0)
    refused = refusal(view)
    if refused is not None and not stopping(view):
        code = str(refused.data.get("code") or "refused")
        error_class: type[OperatorError] = NotFound if code in _NOT_FOUND_CODES else Refused
        raise error_class(code, str(refused.data.get("message") or "refused"))
    return view


async def _finished_as(client: Client, run_id: str) -> str:
    """How a closed run's workflow ended (``is accepted``, ...), read from its result: no worker is
    needed for that."""
    handle = client.get_workflow_handle(run_id, result_type=RunView)
    try:
        view = await asyncio.wait_for(handle.result(follow_runs=False), timeout=5)
    except Exception:  # terminated, failed or timed out: its result says no more
        return "has finished"
    return f"is {view.status.value}"


async def history_events(client: Client, run_id: str) -> list[dict[str, Any]]:
    """The run's Temporal event history, one compact entry per event."""
    handle = client.get_workflow_handle(run_id)
    history = await handle.fetch_history()
    events = []
    for event in history.events:
        events.append(
            {
                "event_id": event.event_id,
                "event_time": event.event_time.ToDatetime(tzinfo=dt.UTC).isoformat().replace("+00:00", "Z"),
                "event_type": EventType.Name(event.event_type).removeprefix("EVENT_TYPE_"),
            }
        )
    return events
