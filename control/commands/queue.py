"""The goal queue: ``specialists queue add | list | show | update | approve | reject | dispatch |
done | park | release | reopen | route-next | capacity | autopilot | recovery-delay | escalation-model |
events | scan``
(docs/architecture.md "Goal queue"; JSON shapes in :mod:`control.queue_views`).

Every command that changes the queue is protected: it names ``--actor``, is refused before anything
is sent when the actor may not act, and carries the actor's proof of the action on its target (the
item key, or the queue's workflow id) bound to the digest of its payload. The ``WorkQueue`` workflow
checks every rule again; its refusals come back as the operator errors they name (exit 4 with the
allowed moves or the gaps as extra keys of ``{"error": {...}}``, exit 3 for an unknown key). Every
command first asks Temporal whether a worker polls the task queue: with none it exits 5
(``no_worker``) and sends nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from contracts.errors import InvalidInput
from control.commands.common import (
    ActorOption,
    JsonFlag,
    open_configuration_store,
    require_actor,
    run_async,
    task_queue,
)
from control.commands.queue_args import InputJson, KeyArgument, check_key
from control.commands.queue_intake import intake
from control.commands.queue_messaging import (
    check_item_repository,
    held_item,
    queue_id,
    queue_state,
    send_item,
    worker_client,
)
from control.commands.queue_reading import reading
from control.commands.queue_settings import settings
from control.commands.queue_shipping import shipping
from control.commands.queue_spec import spec
from control.notes import check_note

if TYPE_CHECKING:
    from contracts.queue_messages import ItemAnswer
    from contracts.temporal_names import QueueMessage


def _help() -> str:
    from contracts.queue_transitions import transition_help

    # "\b" keeps click from re-wrapping the table.
    return (
        "The goal queue: approved work items dispatched into capacity slots.\n\n"
        "\b\nThe moves between statuses (by operator or system):\n" + transition_help()
    )


app = typer.Typer(help=_help())


def _emit_item(
    answer: ItemAnswer, as_json: bool, *, with_previous_key: bool = False, deduplicated: bool = False
) -> None:
    from control.output import emit
    from control.queue_views import item_json, render_item

    item = answer.item
    assert item is not None  # an accepted answer carries the item
    extra: dict[str, Any] = {"previous_key": answer.previous_key} if with_previous_key else {}
    if deduplicated:  # an add with a request id says whether it added the item or found it
        extra["deduplicated"] = answer.deduplicated

    def render(console: Any) -> None:
        if answer.deduplicated:
            console.print(f"Already added with this request id: {item.key} (nothing new was added).")
        render_item(console, item, previous_key=answer.previous_key)

    emit(item_json(item, **extra), as_json, render)


# ---------------------------------------------------------------------------------------------- commands


@app.command("add")
def add_command(
    input_json: InputJson,
    actor: ActorOption = None,
    request_id: Annotated[
        str | None,
        typer.Option(
            "--request-id",
            help="Caller's id: sending the same add again returns the item it added, not a second one.",
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Add a proposal (only its title is required; approval needs the whole contract). Protected."""
    from contracts.ids import check_request_id
    from contracts.queue_items import ItemProposal
    from contracts.queue_messages import AddRequest, QueueAction
    from contracts.temporal_names import QueueMessage
    from control.actions import proof_for
    from control.inputs import parse_model, read_json_argument

    proposal = parse_model(
        ItemProposal, read_json_argument(input_json, what="item"), what="item", code="invalid_item"
    )
    if request_id is not None:
        try:
            check_request_id(request_id)
        except ValueError as error:
            raise InvalidInput("invalid_request_id", f"--request-id: {error}") from None
    actor = require_actor(actor, "queue add")
    request = AddRequest(actor=actor, proposal=proposal, request_id=request_id)
    proof = proof_for(run_id=queue_id(), action=QueueAction.ADD, actor=actor, digest=request.digest())
    answer = send_item(QueueMessage.ADD, request.model_copy(update={"proof": proof}))
    _emit_item(answer, as_json, deduplicated=request_id is not None)


@app.command("update")
def update_command(
    key: KeyArgument, input_json: InputJson, actor: ActorOption = None, as_json: JsonFlag = False
) -> None:
    """Set fields of a proposal: the keys named are set (null clears repo_alias, value, urgency or
    risk), scope sections merge, evidence is replaced. Protected."""
    from contracts.queue_items import ItemUpdate
    from contracts.queue_messages import QueueAction, UpdateItemRequest
    from contracts.temporal_names import QueueMessage
    from control.actions import proof_for
    from control.inputs import parse_model, read_json_argument

    check_key(key)
    fields = read_json_argument(input_json, what="update")
    if not isinstance(fields, dict):
        raise InvalidInput("invalid_item_update", "the update must be a JSON object of the fields to set")
    parse_model(ItemUpdate, fields, what="update", code="invalid_item_update")
    actor = require_actor(actor, "queue update")
    request = UpdateItemRequest(actor=actor, key=key, fields=fields)
    proof = proof_for(run_id=key, action=QueueAction.UPDATE, actor=actor, digest=request.digest())
    _emit_item(send_item(QueueMessage.UPDATE, request.model_copy(update={"proof": proof})), as_json)


def _move(message: QueueMessage, key: str, actor: str | None, reason: str, as_json: bool) -> None:
    from contracts.queue_items import MAX_EVENT_REASON_CHARS
    from contracts.queue_messages import MoveRequest, QueueAction
    from contracts.temporal_names import QueueMessage
    from control.actions import proof_for

    check_key(key)
    reason = check_note(reason, option="--reason", code="reason", limit=MAX_EVENT_REASON_CHARS)
    action = {
        QueueMessage.APPROVE: QueueAction.APPROVE,
        QueueMessage.REJECT: QueueAction.REJECT,
        QueueMessage.PARK: QueueAction.PARK,
        QueueMessage.RELEASE: QueueAction.RELEASE,
        QueueMessage.REOPEN: QueueAction.REOPEN,
    }[message]
    actor = require_actor(actor, f"queue {message.value}")
    request = MoveRequest(actor=actor, key=key, reason=reason)
    proof = proof_for(run_id=key, action=action, actor=actor, digest=request.digest())
    signed = request.model_copy(update={"proof": proof})
    if message is QueueMessage.APPROVE:
        check_item_repository(key)
    answer = _reject(key, actor, signed) if message is QueueMessage.REJECT else send_item(message, signed)
    _emit_item(answer, as_json, with_previous_key=message is QueueMessage.APPROVE)


def _reject(key: str, actor: str, request: Any) -> ItemAnswer:
    """``queue reject``: a reviewed item's run, still awaiting its decision, is rejected once the
    queue rejected the item (:func:`control.queue.reject_item`)."""
    from contracts.queue_items import QueueStatus
    from contracts.temporal_names import QueueMessage
    from control.actions import proof_for
    from control.queue import reject_item

    item = held_item(key)
    if item.status is not QueueStatus.HUMAN_REVIEW:
        return send_item(QueueMessage.REJECT, request)

    def sign(target: str, action: str, digest: str) -> Any:
        return proof_for(run_id=target, action=action, actor=actor, digest=digest)

    async def go() -> ItemAnswer:
        return await reject_item(await worker_client(task_queue()), task_queue(), item, request, actor, sign)

    return run_async(go())


@app.command("approve")
def approve_command(key: KeyArgument, actor: ActorOption = None, as_json: JsonFlag = False) -> None:
    """Approve a proposal whose contract is complete (a Q- key is renamed into its repository's
    series). Protected."""
    from contracts.temporal_names import QueueMessage

    _move(QueueMessage.APPROVE, key, actor, "", as_json)


@app.command("reject")
def reject_command(
    key: KeyArgument,
    actor: ActorOption = None,
    reason: Annotated[str, typer.Option("--reason", help="Why (kept in the item's events).")] = "",
    as_json: JsonFlag = False,
) -> None:
    """Reject a proposal, or a reviewed result and its item (its run, still awaiting its decision, is
    rejected first). Protected."""
    from contracts.temporal_names import QueueMessage

    _move(QueueMessage.REJECT, key, actor, reason, as_json)


@app.command("dispatch")
def dispatch_command(
    key: KeyArgument,
    actor: ActorOption = None,
    confirm_high_risk: Annotated[
        bool, typer.Option("--confirm-high-risk", help="Dispatch a high-risk item (the queue never does).")
    ] = False,
    override_capacity: Annotated[
        bool, typer.Option("--override-capacity", help="Dispatch although every slot is occupied.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Start a specialist run for an approved item (its tier; the work item built from its title,
    scope and evidence, and the findings of its FAIL review rounds, whose run is rejected first). A
    read_only run is created enqueued; a worktree or pr_ready run still waits for its digest-bound
    approval and execute, shown as the item's attention. Protected."""
    from contracts.ids import new_run_id
    from control.actions import proof_for
    from control.queue import dispatch_request

    check_key(key)
    actor = require_actor(actor, "queue dispatch")
    item = held_item(key)
    signer = actor

    def sign(target: str, action: str, digest: str) -> Any:
        return proof_for(run_id=target, action=action, actor=signer, digest=digest)

    request = dispatch_request(
        item,
        actor,
        sign,
        run_id=new_run_id(),
        confirm_high_risk=confirm_high_risk,
        override_capacity=override_capacity,
    )
    queue = task_queue()

    async def go() -> ItemAnswer:
        from control.queue import dispatch_item

        # The run the item leaves (a FAIL round's, or a reviewed result sent back) is rejected.
        return await dispatch_item(await worker_client(queue), queue, item, request, signer, sign)

    answer = run_async(go())
    from control.output import emit
    from control.queue_views import item_json, render_item

    dispatched = answer.item
    assert dispatched is not None
    data = item_json(dispatched, run_id=request.run.run_id)
    emit(data, as_json, lambda console: render_item(console, dispatched))


@app.command("route-next")
def route_next_command(actor: ActorOption = None, as_json: JsonFlag = False) -> None:
    """Apply the automatic policy to the highest-priority approved item: mode off refuses; recommend
    mode, or high or critical risk, records a recommendation (no run); guarded mode dispatches an
    automatic read_only run into a free slot, never an edit tier. Protected."""
    from contracts.ids import new_run_id
    from contracts.queue_messages import ItemAnswer
    from contracts.temporal_names import QueueMessage
    from control.actions import proof_for
    from control.output import emit
    from control.queue import plan_route_next, queue_update
    from control.queue_views import item_json, render_item, render_routed

    actor = require_actor(actor, "queue route-next")
    with open_configuration_store() as store:
        policy = store.get_policy().policy
    signer = actor

    def sign(target: str, action: str, digest: str) -> Any:
        return proof_for(run_id=target, action=action, actor=signer, digest=digest)

    # Refuses automation_off and an empty queue before anything is sent.
    request = plan_route_next(queue_state().items, policy, actor, sign, run_id=new_run_id())
    routed = request.routed
    queue = task_queue()

    async def go() -> ItemAnswer:
        return await queue_update(
            await worker_client(queue), queue, QueueMessage.ROUTE_NEXT, request, ItemAnswer
        )

    answer = run_async(go())
    shown = answer.item
    assert shown is not None
    run_id = None if request.run is None else request.run.run_id
    routed_json = {**routed.to_json(), "run_id": run_id}

    def render(console: Any) -> None:
        render_item(console, shown)
        render_routed(console, shown.key, routed_json)

    emit(item_json(shown, routed=routed_json, run_id=run_id), as_json, render)


@app.command("done")
def done_command(
    key: KeyArgument,
    actor: ActorOption = None,
    note: Annotated[str, typer.Option("--note", help="Why (kept in the item's events).")] = "",
    as_json: JsonFlag = False,
) -> None:
    """Accept the reviewed result of an item in human-review: its run is accepted and the item is
    done. Nothing is merged, pushed or published: the reviewed result is handed over as it is (the
    run, its contract digest, its change and, for a pr_ready run, where its patch file is). Protected."""
    from contracts.queue_items import MAX_EVENT_REASON_CHARS
    from control.actions import proof_for
    from control.output import emit
    from control.queue import accept_and_complete
    from control.queue_views import handover_json, item_json, render_handover, render_item
    from control.runs import get_view

    check_key(key)
    note = check_note(note, option="--note", code="note", limit=MAX_EVENT_REASON_CHARS)
    actor = require_actor(actor, "queue done")
    item = held_item(key)
    signer = actor

    def sign(target: str, action: str, digest: str) -> Any:
        return proof_for(run_id=target, action=action, actor=signer, digest=digest)

    queue = task_queue()

    async def go() -> Any:
        temporal = await worker_client(queue)
        answer, run_id = await accept_and_complete(temporal, queue, item, signer, note, sign)
        return answer, run_id, await get_view(temporal, run_id)

    answer, run_id, run_view = run_async(go())
    item = answer.item
    assert item is not None
    handover = handover_json(run_view)

    def render(console: Any) -> None:
        render_item(console, item)
        render_handover(console, handover)

    emit(item_json(item, run_id=run_id, handover=handover), as_json, render)


ReasonOption = Annotated[str, typer.Option("--reason", help="Why (kept in the item's events).")]


@app.command("park")
def park_command(
    key: KeyArgument, reason: ReasonOption = "", actor: ActorOption = None, as_json: JsonFlag = False
) -> None:
    """Park a failed item (blocked: parked): nothing retries it until it is released. Protected;
    needs --reason."""
    from contracts.temporal_names import QueueMessage

    if not reason.strip():
        raise InvalidInput("reason_required", "queue park needs a non-blank --reason")
    _move(QueueMessage.PARK, key, actor, reason, as_json)


@app.command("release")
def release_command(
    key: KeyArgument, reason: ReasonOption = "", actor: ActorOption = None, as_json: JsonFlag = False
) -> None:
    """Release a blocked item back to approved (a new review cycle). Protected."""
    from contracts.temporal_names import QueueMessage

    _move(QueueMessage.RELEASE, key, actor, reason, as_json)


@app.command("reopen")
def reopen_command(
    key: KeyArgument, reason: ReasonOption = "", actor: ActorOption = None, as_json: JsonFlag = False
) -> None:
    """Re-open a done item: approved again, in a new review cycle. Protected."""
    from contracts.temporal_names import QueueMessage

    _move(QueueMessage.REOPEN, key, actor, reason, as_json)


# The settings and reading commands live in control/commands/queue_settings.py and queue_reading.py;
# they belong to this group.
app.registered_commands.extend(settings.registered_commands)
app.registered_commands.extend(reading.registered_commands)
app.registered_commands.extend(shipping.registered_commands)
app.registered_commands.extend(intake.registered_commands)
app.registered_commands.extend(spec.registered_commands)
