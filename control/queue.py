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
from typing import Any, TypeVar

from temporalio.client import Client, WithStartWorkflowOperation, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from contracts.enums import Tier
from contracts.errors import InvalidInput, NotFound, OperatorError, Refused, ServiceUnavailable
from contracts.proofs import ActionProof
from contracts.queue_dispatch import dispatch_work_item
from contracts.queue_items import QueueItem, QueueRefusalCode, QueueRefused, QueueSettings
from contracts.queue_keys import KeyAllocator
from contracts.queue_messages import (
    INVALID_ITEM_UPDATE,
    UNKNOWN_ITEM,
    DispatchRequest,
    ItemAnswer,
    QueueAction,
    QueueQuery,
    QueueState,
    QueueView,
    SettingsAnswer,
    queue_workflow_id,
)
from contracts.refusals import RefusalCode
from contracts.runs import RunInput
from contracts.temporal_names import QueueMessage, WorkflowType

QUERY_TIMEOUT = dt.timedelta(seconds=10)
Answer = TypeVar("Answer", ItemAnswer, SettingsAnswer)
_QUEUE_CODES = frozenset(code.value for code in QueueRefusalCode)
_NOT_FOUND = frozenset({UNKNOWN_ITEM, RefusalCode.UNKNOWN_ACTOR})
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
    return Refused(code, message)


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
    (:func:`contracts.queue_dispatch.dispatch_work_item`, its tier; a read_only run created enqueued,
    with ``actor``'s proof of that create) and ``actor``'s proof of the dispatch. ``sign(target,
    action, digest)`` makes a proof (the CLI's :func:`control.actions.proof_for`)."""
    from control.runs import request_digest

    enqueue = item.tier is Tier.READ_ONLY
    draft = RunInput(
        run_id=run_id,
        work_item=dispatch_work_item(item),
        requested_tier=item.tier,
        enqueue=enqueue,
        request_digest="",
        created_by=actor,
    )
    run = draft.model_copy(update={"request_digest": request_digest(draft)})
    if enqueue:
        run = run.model_copy(update={"proof": sign(run.run_id, "create", run.request_digest)})
    request = DispatchRequest(
        actor=actor,
        key=item.key,
        run=run,
        confirm_high_risk=confirm_high_risk,
        override_capacity=override_capacity,
    )
    return request.model_copy(update={"proof": sign(item.key, QueueAction.DISPATCH, request.digest())})
