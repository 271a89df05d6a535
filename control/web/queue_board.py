"""The goal queue's board in Mission Control (docs/architecture.md "Goal queue", "Mission Control"):
the items by status with each one's spec completeness, attention and the operator moves its status
allows, the fleet line and the keys ready to dispatch; and the moves, made through
:mod:`control.queue` exactly as ``specialists queue`` makes them, every proof signed by the person's
session key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from contracts.errors import InvalidInput, NotFound
from contracts.queue_items import ITEM_KEY_PATTERN, MAX_EVENT_REASON_CHARS, QueueStatus
from contracts.queue_transitions import Mover, QueueMove, allowed_moves
from control.notes import form_note

if TYPE_CHECKING:
    from contracts.proofs import ActionProof
    from contracts.queue_messages import QueueView
    from control.web.console import Deployment
    from control.web.sessions import Session

MOVES: Final = ("approve", "reject", "dispatch", "done", "park", "release", "reopen")
"""The moves the board offers (the operator's, from the transition table)."""


def check_key(key: str) -> str:
    """``key`` when it is an item key; else ``invalid_key``."""
    if ITEM_KEY_PATTERN.fullmatch(key) is None:
        raise InvalidInput(
            "invalid_key", f"{key!r} is not an item key (a series and a number, such as ORD-12)"
        )
    return key


async def _view(deployment: Deployment, key: str | None = None) -> QueueView:
    from control.queue import queue_view
    from control.temporal import require_worker

    client = await deployment.client()
    await require_worker(client, deployment.task_queue)
    return await queue_view(client, deployment.task_queue, key)


async def board(deployment: Deployment) -> dict[str, Any]:
    """``queue list`` as the board shows it: each status's items (with the moves an operator may make
    from there), the counts, the fleet line, the ready keys and the autopilot setting."""
    view = await _view(deployment)
    return board_data(view)


def board_data(view: QueueView) -> dict[str, Any]:
    """The board of ``view``: :func:`board`'s shape. A proposal also shows its evidence refs and,
    when a scan proposed it, the finding it came from (kind, commit, where, the quoted text) —
    repository text, escaped by the template like every value."""
    from control.queue_views import listing_json

    listing = listing_json(view)
    full = {item.key: item for item in view.items}
    columns: dict[str, list[dict[str, Any]]] = {status.value: [] for status in QueueStatus}
    for item in listing["items"]:
        moves = [
            row.move.value
            for row in allowed_moves(QueueStatus(item["status"]), Mover.OPERATOR)
            if row.move.value in MOVES
        ]
        shown = {**item, "moves": sorted(set(moves), key=MOVES.index), "evidence": [], "intake": None}
        source = full[item["key"]]
        if source.status is QueueStatus.PROPOSAL:
            shown["evidence"] = list(source.evidence)
            shown["intake"] = source.intake.model_dump(mode="json") if source.intake is not None else None
        columns[item["status"]].append(shown)
    return {**listing, "columns": columns}


def routed_notice(key: str | None, tier: str | None) -> str | None:
    """The board's line after a route-next redirect, or ``None`` when the query does not name an
    item key and a tier route-next yields (query values are never shown as given)."""
    if key is None or ITEM_KEY_PATTERN.fullmatch(key) is None:
        return None
    if tier == "recommend":
        return f"route-next: {key} recommended only (no run started; see its events)"
    if tier == "read_only":
        return f"route-next: {key} dispatched as an automatic read_only run"
    return None


async def route_next(deployment: Deployment, session: Session) -> dict[str, Any]:
    """``queue route-next`` for the signed-in person (:func:`control.queue.plan_route_next`, the
    policy read from the store): the item after it and ``"routed"``, the policy's decision with the
    run it started, if any. Raises ``automation_off``, ``nothing_to_route``, ``not_next_item`` and the
    queue's other refusals as operator errors."""
    from contracts.ids import new_run_id
    from contracts.queue_messages import ItemAnswer
    from contracts.temporal_names import QueueMessage
    from control.queue import plan_route_next, queue_update
    from control.queue_views import item_json

    store = deployment.store()
    if store is None:
        raise NotFound("no_store", "this deployment has no store yet: there is no policy to apply")
    with store:
        policy = store.get_policy().policy

    def sign(target: str, action: str, digest: str) -> ActionProof:
        return session.proof(action=action, target=target, digest=digest)

    view = await _view(deployment)
    request = plan_route_next(view.items, policy, session.actor, sign, run_id=new_run_id())
    client = await deployment.client()
    answer = await queue_update(client, deployment.task_queue, QueueMessage.ROUTE_NEXT, request, ItemAnswer)
    assert answer.item is not None
    run_id = None if request.run is None else request.run.run_id
    return item_json(answer.item, routed={**request.routed.to_json(), "run_id": run_id})


async def move(
    deployment: Deployment, session: Session, key: str, name: str, fields: dict[str, str]
) -> dict[str, Any]:
    """Make the operator move ``name`` on item ``key`` (``reason`` for approve, reject, park, release
    and reopen; ``note`` for done; ``confirm_high_risk`` and ``override_capacity`` for dispatch).
    Raises the queue's refusals (``transition_refused`` with the allowed moves,
    ``item_contract_incomplete`` with every gap, ...) as operator errors."""
    from contracts.ids import new_run_id
    from contracts.queue_messages import ItemAnswer, MoveRequest, QueueAction
    from contracts.temporal_names import QueueMessage
    from control.queue import (
        accept_and_complete,
        dispatch_item,
        dispatch_request,
        held_in,
        queue_update,
        reject_item,
        require_item_repository,
    )
    from control.queue_views import item_json

    check_key(key)
    if name not in MOVES:
        raise InvalidInput("invalid_move", f"{name!r} is not a move the board makes")
    reason = form_note(
        fields.get("reason", "") or fields.get("note", ""), code="reason", limit=MAX_EVENT_REASON_CHARS
    )

    def sign(target: str, action: str, digest: str) -> ActionProof:
        return session.proof(action=action, target=target, digest=digest)

    client = await deployment.client()
    queue = deployment.task_queue
    item = held_in(await _view(deployment, key), key)
    if name == QueueMove.APPROVE.value:
        store = deployment.store()
        if store is not None:
            with store:
                require_item_repository(store, item)
    if name == QueueMove.DISPATCH.value:
        request = dispatch_request(
            item, session.actor, sign, run_id=new_run_id(),
            confirm_high_risk=fields.get("confirm_high_risk") == "yes",
            override_capacity=fields.get("override_capacity") == "yes",
        )  # fmt: skip
        answer = await dispatch_item(client, queue, item, request, session.actor, sign)
        assert answer.item is not None
        return item_json(answer.item, run_id=request.run.run_id)
    if name == QueueMove.DONE.value:
        answer, run_id = await accept_and_complete(client, queue, item, session.actor, reason, sign)
        assert answer.item is not None
        return item_json(answer.item, run_id=run_id)
    message = QueueMessage(name)
    moved = MoveRequest(actor=session.actor, key=key, reason=reason)
    signed = moved.model_copy(update={"proof": sign(key, QueueAction(f"queue_{name}"), moved.digest())})
    if message is QueueMessage.REJECT:  # a reviewed item's run is rejected with it
        answer = await reject_item(client, queue, item, signed, session.actor, sign)
    else:
        answer = await queue_update(client, queue, message, signed, ItemAnswer)
    assert answer.item is not None
    return item_json(answer.item)
