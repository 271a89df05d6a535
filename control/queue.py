"""Goal queue operations over the Temporal client: the updates of the ``WorkQueue`` workflow (started
by the first one, update-with-start) and its ``view`` query (docs/architecture.md "Goal queue").

Every function takes the client as an argument so tests can pass their own. A refusal becomes the
:class:`contracts.errors.OperatorError` of its exit code: a queue refusal is
:class:`contracts.queue_items.QueueRefused` (exit 4) with its structured data, an unknown key
``unknown_item`` (exit 3), an update whose fields do not validate ``invalid_item_update`` (exit 2).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from temporalio.client import Client, WithStartWorkflowOperation, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from contracts.errors import InvalidInput, NotFound, OperatorError, Refused, ServiceUnavailable
from contracts.intake import IntakeAnswer
from contracts.policy import AutomationPolicy
from contracts.proofs import ActionProof
from contracts.queue_dispatch import dispatch_run_input
from contracts.queue_items import QueueItem, QueueRefusalCode, QueueRefused, QueueSettings, RoundVerdict
from contracts.queue_keys import KeyAllocator
from contracts.queue_messages import (
    ARCHIVE_UNAVAILABLE,
    INVALID_ITEM_UPDATE,
    UNKNOWN_ITEM,
    DispatchRequest,
    DoneRequest,
    ItemAnswer,
    MoveRequest,
    QueueAction,
    QueueQuery,
    QueueState,
    QueueView,
    RoutedNext,
    RouteNextRequest,
    SettingsAnswer,
    queue_workflow_id,
)
from contracts.refusals import RefusalCode
from contracts.temporal_names import QueueMessage, WorkflowType
from contracts.ui_summaries import queue_summary

if TYPE_CHECKING:
    from store.store import Store

QUERY_TIMEOUT = dt.timedelta(seconds=10)
Answer = TypeVar("Answer", ItemAnswer, SettingsAnswer, IntakeAnswer)
_QUEUE_CODES = frozenset(code.value for code in QueueRefusalCode)
_NOT_FOUND = frozenset({UNKNOWN_ITEM, RefusalCode.UNKNOWN_ACTOR, "unknown_repository"})
_INVALID = frozenset({INVALID_ITEM_UPDATE, RefusalCode.ACTOR_REQUIRED})
# ``dispatch_mismatch`` (the run is not the one the item asks for) is a refusal: exit 4.


def refusal(code: str, message: str, extra: dict[str, Any] | None = None) -> OperatorError:
    """The operator error for a queue's refusal ``code`` (see the module docstring)."""
    if code in _QUEUE_CODES:
        return QueueRefused(QueueRefusalCode(code), message, **(extra or {}))
    if code in _NOT_FOUND:
        return NotFound(code, message)
    if code in _INVALID:
        return InvalidInput(code, message)
    if code == ARCHIVE_UNAVAILABLE:
        return ServiceUnavailable(code, message)
    return Refused(code, message)


def held_in(view: QueueView, key: str) -> QueueItem:
    """The item ``key`` of a ``view`` asked for it: raises the queue's ``item_archived`` refusal (exit 4)
    for an archived one, ``unknown_item`` (exit 3, naming a rename) for any other missing one."""
    if view.items:
        return view.items[0]
    if view.archived is not None:
        raise view.archived.refusal(key)
    hint = f": it was renamed to {view.renamed_to} at its approval" if view.renamed_to else " in the queue"
    raise NotFound(UNKNOWN_ITEM, f"no item {key}{hint}")


def _details(error: ApplicationError) -> dict[str, Any]:
    details = error.details
    if details and isinstance(details[0], dict) and isinstance(details[0].get("extra"), dict):
        return dict(details[0]["extra"])
    return {}


async def queue_update(
    client: Client,
    task_queue: str,
    name: QueueMessage,
    request: Any,
    answer: type[Answer],
    *,
    initial: QueueState | None = None,
) -> Answer:
    """Send update ``name`` to the queue of ``task_queue``, starting the queue (with ``initial``, by
    default an empty queue) when none runs. Raises the refusal as an operator error; an accepted answer
    is returned."""
    start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
        WorkflowType.WORK_QUEUE,
        initial or QueueState(),
        id=queue_workflow_id(task_queue),
        task_queue=task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        static_summary=queue_summary(task_queue),
    )
    try:
        result: Answer = await client.execute_update_with_start_workflow(
            name, request, start_workflow_operation=start, result_type=answer
        )
    except WorkflowUpdateFailedError as error:
        cause = error.cause
        if isinstance(cause, ApplicationError):
            raise refusal(cause.type or "refused", cause.message, _details(cause)) from None
        raise Refused("refused", str(cause or error)) from None
    except RPCError as error:
        raise ServiceUnavailable(
            "temporal_error", f"Temporal answered {error.status.name}: {error}"
        ) from None
    if not result.accepted:
        extra: dict[str, Any] = result.extra if isinstance(result, ItemAnswer) else {}
        raise refusal(result.code or "refused", result.message or "refused", extra)
    return result


async def queue_view(client: Client, task_queue: str, key: str | None = None) -> QueueView:
    """The queue's ``view`` (every item, or item ``key``); an empty queue with the default settings
    when no queue has been started yet (a read starts nothing)."""
    workflow_id = queue_workflow_id(task_queue)
    handle = client.get_workflow_handle(workflow_id)
    try:
        view: QueueView = await handle.query(
            QueueMessage.VIEW, QueueQuery(key=key), result_type=QueueView, rpc_timeout=QUERY_TIMEOUT
        )
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return QueueView(
                workflow_id=workflow_id,
                items=[],
                settings=QueueSettings(),
                allocator=KeyAllocator(),
                settings_changes=[],
                refusals=[],
                runs=0,
                history_events=0,
            )
        raise ServiceUnavailable(
            "temporal_error", f"Temporal answered {error.status.name}: {error}"
        ) from None
    return view


def dispatch_request(
    item: QueueItem,
    actor: str,
    sign: Callable[[str, str, str], ActionProof],
    *,
    run_id: str,
    confirm_high_risk: bool = False,
    override_capacity: bool = False,
) -> DispatchRequest:
    """The ``dispatch`` request of ``item`` by ``actor``: the run the item asks for
    (:func:`contracts.queue_dispatch.dispatch_run_input`, its tier; a read_only run created enqueued,
    with ``actor``'s proof of that create) and ``actor``'s proof of the dispatch. ``sign(target,
    action, digest)`` makes a proof (the CLI's :func:`control.actions.proof_for`)."""
    run = dispatch_run_input(item, run_id=run_id, actor=actor)
    if run.enqueue:
        run = run.model_copy(update={"proof": sign(run.run_id, "create", run.request_digest)})
    request = DispatchRequest(
        actor=actor,
        key=item.key,
        run=run,
        confirm_high_risk=confirm_high_risk,
        override_capacity=override_capacity,
    )
    return request.model_copy(update={"proof": sign(item.key, QueueAction.DISPATCH, request.digest())})


def plan_route_next(
    items: list[QueueItem],
    policy: AutomationPolicy,
    actor: str,
    sign: Callable[[str, str, str], ActionProof],
    *,
    run_id: str,
) -> RouteNextRequest:
    """``queue route-next`` worked out against the queue as the caller read it: the next approved
    item (:func:`contracts.queue_routing.next_item`), its work item routed with the shipped catalog,
    the policy's decision (``automation_off`` refused here) and the signed request
    (:func:`route_next_request`). The CLI, the console and the tests all use this one function."""
    from catalog.loader import load_catalog
    from catalog.router import route
    from contracts.queue_dispatch import dispatch_work_item
    from contracts.queue_routing import next_item, route_next_decision

    item = next_item(items)
    routed = route_next_decision(item, route(dispatch_work_item(item), load_catalog()), policy)
    return route_next_request(item, routed, actor, sign, run_id=run_id)


def route_next_request(
    item: QueueItem,
    routed: RoutedNext,
    actor: str,
    sign: Callable[[str, str, str], ActionProof],
    *,
    run_id: str,
) -> RouteNextRequest:
    """The ``route_next`` request of ``item`` by ``actor`` under the policy's decision ``routed``: for
    read_only, the automatic run (:func:`contracts.queue_routing.routed_run_input`, created enqueued
    with ``actor``'s proof of that create); for a recommendation, no run; and ``actor``'s proof of the
    route-next itself."""
    from contracts.enums import Tier
    from contracts.queue_routing import routed_run_input

    run = None
    if routed.tier is Tier.READ_ONLY:
        run = routed_run_input(item, run_id=run_id, actor=actor)
        run = run.model_copy(update={"proof": sign(run.run_id, "create", run.request_digest)})
    request = RouteNextRequest(actor=actor, key=item.key, routed=routed, run=run)
    return request.model_copy(update={"proof": sign(item.key, QueueAction.ROUTE_NEXT, request.digest())})


def judged_run(item: QueueItem) -> str | None:
    """The run of the item's latest review round in its current cycle (``None`` without one)."""
    rounds = item.cycle_rounds()
    return rounds[-1].run_id if rounds else None


async def reject_reviewed_run(
    client: Client,
    item: QueueItem,
    actor: str,
    sign: Callable[[str, str, str], ActionProof],
    *,
    rejecting_item: bool = False,
) -> str | None:
    """Before an item leaves the run its latest review round judged — re-dispatched after a FAIL
    round, a reviewed (PASS) result sent back for another run, or rejected with its item
    (``rejecting_item``) — reject that run (the run's own protected ``decide``, signed by ``actor``,
    with a note saying why) when it still awaits its decision, so no run waits for a decision nobody
    will make. The run id rejected, or ``None`` when there was none to reject."""
    from contracts.queue_items import QueueStatus
    from contracts.runs import DecisionOutcome, RunStatus
    from control.runs import decide_run, get_view

    rounds = item.cycle_rounds()
    if not rounds:
        return None
    last = rounds[-1]
    if last.verdict is RoundVerdict.FAIL:
        note = f"{item.key}: review round {last.number} FAIL; re-dispatched with its findings"
        if rejecting_item:
            note = f"{item.key}: review round {last.number} FAIL; the item was rejected"
    elif item.status is QueueStatus.HUMAN_REVIEW:
        outcome = "the item was rejected" if rejecting_item else "the item was sent back for another run"
        note = f"{item.key}: review round {last.number} PASS, not accepted; {outcome}"
    else:
        return None
    run_id = last.run_id
    if (await get_view(client, run_id)).status is not RunStatus.AWAITING_DECISION:
        return None
    await decide_run(client, run_id, actor, DecisionOutcome.REJECTED, note, sign(run_id, "decide", ""))
    return run_id


def require_item_repository(store: Store, item: QueueItem) -> None:
    """Before an approval: an item of an edit tier (worktree, pr_ready) names a registered, active
    repository, as its run's capture will require (``unknown_repository`` exit 3,
    ``repository_deactivated`` exit 4), so an approved item does not fail at its first dispatch. A
    read_only item may name one that is not registered: its run is analysed without it."""
    from contracts.policy import APPROVAL_TIERS
    from store.repositories import require_active

    if item.tier in APPROVAL_TIERS and item.repo_alias is not None:
        require_active(store.get_repository(item.repo_alias))


async def dispatch_item(
    client: Client,
    task_queue: str,
    item: QueueItem,
    request: DispatchRequest,
    actor: str,
    sign: Callable[[str, str, str], ActionProof],
) -> ItemAnswer:
    """``queue dispatch``: a FAIL round's run is rejected first (its findings go into the new run's
    task); a reviewed (PASS) run sent back from ``human-review`` only once the queue accepted the
    dispatch, so a refused dispatch (a full queue, an unconfirmed high risk) leaves the reviewed
    result as it was (:func:`reject_reviewed_run`)."""
    from contracts.queue_items import QueueStatus

    sent_back = item.status is QueueStatus.HUMAN_REVIEW
    if not sent_back:
        await reject_reviewed_run(client, item, actor, sign)
    answer = await queue_update(client, task_queue, QueueMessage.DISPATCH, request, ItemAnswer)
    if sent_back:
        await _reject_after_move(client, item, answer, "dispatched again", actor, sign)
    return answer


async def reject_item(
    client: Client,
    task_queue: str,
    item: QueueItem,
    request: MoveRequest,
    actor: str,
    sign: Callable[[str, str, str], ActionProof],
) -> ItemAnswer:
    """``queue reject`` of ``item`` (the signed ``request``): once the queue rejected a reviewed item,
    its run, still awaiting its decision, is rejected too (:func:`reject_reviewed_run`)."""
    from contracts.queue_items import QueueStatus

    answer = await queue_update(client, task_queue, QueueMessage.REJECT, request, ItemAnswer)
    if item.status is QueueStatus.HUMAN_REVIEW:
        await _reject_after_move(client, item, answer, "rejected", actor, sign, rejecting_item=True)
    return answer


async def _reject_after_move(
    client: Client,
    item: QueueItem,
    answer: ItemAnswer,
    moved: str,
    actor: str,
    sign: Callable[[str, str, str], ActionProof],
    *,
    rejecting_item: bool = False,
) -> None:
    """:func:`reject_reviewed_run` once the queue has already ``moved`` the item: an error keeps its
    code and exit code, and its message says that the move stands and how to finish by hand (the
    command is not to be run again: the queue would refuse the move it already made)."""
    try:
        await reject_reviewed_run(client, item, actor, sign, rejecting_item=rejecting_item)
    except OperatorError as error:
        run_id = item.cycle_rounds()[-1].run_id  # it raises only once it found the round's run
        now = answer.item
        moved_to = f"{now.key} was {moved} (now {now.status.value})" if now else f"{item.key} was {moved}"
        raise error.restated(
            f"{moved_to}, but its reviewed run {run_id} was not rejected: {error.message}; reject the "
            f"run itself with `specialists decide {run_id} --reject --actor {actor}`"
        ) from None


async def accept_and_complete(
    client: Client,
    task_queue: str,
    item: QueueItem,
    actor: str,
    note: str,
    sign: Callable[[str, str, str], ActionProof],
) -> tuple[ItemAnswer, str]:
    """``queue done``: the item must be in ``human-review`` (else refused as the queue refuses it);
    its reviewed run is accepted (the run's own protected ``decide``, unless a person accepted it
    already), then the queue's ``done``. Nothing is merged, pushed or published. Returns the answer and
    the run id accepted."""
    from contracts.queue_transitions import Mover, QueueMove, check_move
    from contracts.runs import DecisionOutcome, RunStatus
    from control.runs import decide_run, get_view

    check_move(item.status, QueueMove.DONE, Mover.OPERATOR, key=item.key)
    run_id = judged_run(item)
    assert run_id is not None  # an item in human-review has a PASS round
    status = (await get_view(client, run_id)).status
    if status is RunStatus.AWAITING_DECISION:
        accepted = f"{item.key}: accepted as done (the note is in the item's events)"
        await decide_run(
            client, run_id, actor, DecisionOutcome.ACCEPTED, accepted, sign(run_id, "decide", "")
        )
    elif status is not RunStatus.ACCEPTED:  # a person rejected it, or it ended undecided
        raise Refused(
            "run_not_accepted",
            f"{item.key}'s reviewed run {run_id} is {status.value}: its result cannot be accepted as "
            f"done; `queue dispatch {item.key}` sends the item back for another run, "
            f"`queue reject {item.key}` rejects it",
        )
    request = DoneRequest(actor=actor, key=item.key, note=note)
    signed = request.model_copy(update={"proof": sign(item.key, QueueAction.DONE, request.digest())})
    return await queue_update(client, task_queue, QueueMessage.DONE, signed, ItemAnswer), run_id
