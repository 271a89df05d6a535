"""The goal queue: ``specialists queue add | list | show | update | approve | reject | dispatch |
done | park | release | reopen | route-next | capacity | autopilot | recovery-delay | escalation-model |
events``
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

import datetime as dt
from typing import TYPE_CHECKING, Annotated, Any

import typer

from contracts.errors import InvalidInput
from control.commands.common import (
    ActorOption,
    JsonFlag,
    client,
    open_configuration_store,
    require_actor,
    run_async,
    task_queue,
)

if TYPE_CHECKING:
    from temporalio.client import Client

    from contracts.queue_items import QueueStatus
    from contracts.queue_messages import ItemAnswer, SettingsAnswer
    from contracts.temporal_names import QueueMessage


def _help() -> str:
    from contracts.queue_transitions import transition_help

    # "\b" keeps click from re-wrapping the table.
    return (
        "The goal queue: approved work items dispatched into capacity slots.\n\n"
        "\b\nThe moves between statuses (by operator or system):\n" + transition_help()
    )


app = typer.Typer(help=_help())

KeyArgument = Annotated[str, typer.Argument(metavar="KEY", help="Item key (ORD-12, or Q-3 for a proposal).")]
InputJson = Annotated[
    str, typer.Option("--input-json", help="The item as JSON, or @FILE to read it from a file.")
]
SinceOption = Annotated[
    str | None, typer.Option("--since", help="Only what changed at or after this ISO 8601 time (with Z).")
]


def parse_since(value: str | None) -> dt.datetime | None:
    """``--since`` as an aware UTC time; :class:`InvalidInput` ``invalid_since`` (exit 2)."""
    if value is None:
        return None
    try:
        at = dt.datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput("invalid_since", f"--since {value!r} is not an ISO 8601 time") from None
    if at.tzinfo is None:
        raise InvalidInput("invalid_since", f"--since {value!r} needs a time zone (e.g. Z for UTC)")
    return at.astimezone(dt.UTC)


def parse_status(value: str | None) -> QueueStatus | None:
    """``--status`` as a :class:`QueueStatus`; :class:`InvalidInput` ``invalid_status`` (exit 2)."""
    from contracts.queue_items import QueueStatus

    if value is None:
        return None
    try:
        return QueueStatus(value)
    except ValueError:
        allowed = ", ".join(status.value for status in QueueStatus)
        raise InvalidInput("invalid_status", f"unknown status {value!r}; use one of: {allowed}") from None


def check_key(key: str) -> str:
    """``key`` when it is an item key; :class:`InvalidInput` ``invalid_key`` (exit 2)."""
    from contracts.queue_items import ITEM_KEY_PATTERN

    if ITEM_KEY_PATTERN.fullmatch(key) is None:
        raise InvalidInput("invalid_key", f"item key {key!r} must be a series and a number, such as ORD-12")
    return key


async def _worker_client(queue: str) -> Client:
    """A Temporal client, once a worker is seen polling ``queue``: every queue command needs one to
    answer, so without one it says so at once (exit 5 ``no_worker``) and sends nothing."""
    from control.temporal import require_worker

    temporal = await client()
    await require_worker(temporal, queue)
    return temporal


def _queue_id() -> str:
    from contracts.queue_messages import queue_workflow_id

    return queue_workflow_id(task_queue())


def _send_item(message: QueueMessage, request: Any) -> ItemAnswer:
    from contracts.queue_messages import ItemAnswer
    from control.queue import queue_update

    queue = task_queue()

    async def go() -> ItemAnswer:
        return await queue_update(await _worker_client(queue), queue, message, request, ItemAnswer)

    return run_async(go())


def _send_settings(message: QueueMessage, request: Any) -> tuple[SettingsAnswer, Any]:
    from contracts.queue_messages import SettingsAnswer
    from control.queue import queue_update, queue_view

    queue = task_queue()

    async def go() -> tuple[SettingsAnswer, Any]:
        temporal = await _worker_client(queue)
        answer = await queue_update(temporal, queue, message, request, SettingsAnswer)
        return answer, await queue_view(temporal, queue)

    return run_async(go())


def _change_setting(message: QueueMessage, action: str, actor: str, request: Any, as_json: bool) -> None:
    """Send a settings ``request`` (capacity, autopilot, recovery delay, escalation model) with
    ``actor``'s proof bound to its digest, and print the settings it leaves."""
    from control.actions import proof_for

    proof = proof_for(run_id=_queue_id(), action=action, actor=actor, digest=request.digest())
    answer, view = _send_settings(message, request.model_copy(update={"proof": proof}))
    _emit_settings(answer, view, as_json)


def _emit_item(answer: ItemAnswer, as_json: bool, *, with_previous_key: bool = False) -> None:
    from control.output import emit
    from control.queue_views import item_json, render_item

    item = answer.item
    assert item is not None  # an accepted answer carries the item
    extra = {"previous_key": answer.previous_key} if with_previous_key else {}
    emit(
        item_json(item, **extra),
        as_json,
        lambda console: render_item(console, item, previous_key=answer.previous_key),
    )


def _emit_settings(answer: SettingsAnswer, view: Any, as_json: bool) -> None:
    from control.output import emit
    from control.queue_views import render_settings, settings_json

    data = settings_json(view.items, answer.settings)
    emit(data, as_json, lambda console: render_settings(console, data))


# ---------------------------------------------------------------------------------------------- commands


@app.command("add")
def add_command(input_json: InputJson, actor: ActorOption = None, as_json: JsonFlag = False) -> None:
    """Add a proposal (only its title is required; approval needs the whole contract). Protected."""
    from contracts.queue_items import ItemProposal
    from contracts.queue_messages import AddRequest, QueueAction
    from contracts.temporal_names import QueueMessage
    from control.actions import proof_for
    from control.inputs import parse_model, read_json_argument

    proposal = parse_model(
        ItemProposal, read_json_argument(input_json, what="item"), what="item", code="invalid_item"
    )
    actor = require_actor(actor, "queue add")
    request = AddRequest(actor=actor, proposal=proposal)
    proof = proof_for(run_id=_queue_id(), action=QueueAction.ADD, actor=actor, digest=request.digest())
    answer = _send_item(QueueMessage.ADD, request.model_copy(update={"proof": proof}))
    _emit_item(answer, as_json)


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
    _emit_item(_send_item(QueueMessage.UPDATE, request.model_copy(update={"proof": proof})), as_json)


def _move(message: QueueMessage, key: str, actor: str | None, reason: str, as_json: bool) -> None:
    from contracts.queue_items import MAX_EVENT_REASON_CHARS
    from contracts.queue_messages import MoveRequest, QueueAction
    from contracts.temporal_names import QueueMessage
    from control.actions import proof_for

    check_key(key)
    if len(reason) > MAX_EVENT_REASON_CHARS:
        raise InvalidInput(
            "reason_too_long", f"--reason has {len(reason)} characters; at most {MAX_EVENT_REASON_CHARS}"
        )
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
    answer = _send_item(message, request.model_copy(update={"proof": proof}))
    _emit_item(answer, as_json, with_previous_key=message is QueueMessage.APPROVE)


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
    """Reject a proposal, or a reviewed result and its item. Protected."""
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
    from contracts.errors import NotFound
    from contracts.ids import new_run_id
    from contracts.queue_messages import UNKNOWN_ITEM
    from contracts.temporal_names import QueueMessage
    from control.actions import proof_for
    from control.queue import dispatch_request

    check_key(key)
    actor = require_actor(actor, "queue dispatch")
    view = _view(key)
    if not view.items:
        hint = (
            f": it was renamed to {view.renamed_to} at its approval" if view.renamed_to else " in the queue"
        )
        raise NotFound(UNKNOWN_ITEM, f"no item {key}{hint}")
    signer = actor

    def sign(target: str, action: str, digest: str) -> Any:
        return proof_for(run_id=target, action=action, actor=signer, digest=digest)

    item = view.items[0]
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
        from contracts.queue_messages import ItemAnswer
        from control.queue import queue_update, reject_failed_run

        temporal = await _worker_client(queue)
        # After a FAIL round its run is rejected first, with the findings the new run carries.
        await reject_failed_run(temporal, item, signer, sign)
        return await queue_update(temporal, queue, QueueMessage.DISPATCH, request, ItemAnswer)

    answer = run_async(go())
    from control.output import emit
    from control.queue_views import item_json, render_item

    item = answer.item
    assert item is not None
    data = item_json(item, run_id=request.run.run_id)
    emit(data, as_json, lambda console: render_item(console, item))


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
    request = plan_route_next(_view().items, policy, actor, sign, run_id=new_run_id())
    routed = request.routed
    queue = task_queue()

    async def go() -> ItemAnswer:
        return await queue_update(
            await _worker_client(queue), queue, QueueMessage.ROUTE_NEXT, request, ItemAnswer
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
    from contracts.errors import NotFound
    from contracts.queue_items import MAX_EVENT_REASON_CHARS
    from contracts.queue_messages import UNKNOWN_ITEM
    from control.actions import proof_for
    from control.output import emit
    from control.queue import accept_and_complete
    from control.queue_views import handover_json, item_json, render_handover, render_item
    from control.runs import get_view

    check_key(key)
    if len(note) > MAX_EVENT_REASON_CHARS:
        raise InvalidInput(
            "note_too_long", f"--note has {len(note)} characters; at most {MAX_EVENT_REASON_CHARS}"
        )
    actor = require_actor(actor, "queue done")
    view = _view(key)
    if not view.items:
        raise NotFound(UNKNOWN_ITEM, f"no item {key} in the queue")
    signer = actor

    def sign(target: str, action: str, digest: str) -> Any:
        return proof_for(run_id=target, action=action, actor=signer, digest=digest)

    queue = task_queue()

    async def go() -> Any:
        worker_client = await _worker_client(queue)
        answer, run_id = await accept_and_complete(worker_client, queue, view.items[0], signer, note, sign)
        return answer, run_id, await get_view(worker_client, run_id)

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


@app.command("capacity")
def capacity_command(
    slots: Annotated[int, typer.Argument(metavar="N", help="Slots (1..50; default 3).")],
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Set how many items may be active at once. Protected."""
    from contracts.queue_items import MAX_SLOTS
    from contracts.queue_messages import CapacityRequest, QueueAction
    from contracts.temporal_names import QueueMessage

    if not 1 <= slots <= MAX_SLOTS:
        raise InvalidInput(
            "invalid_capacity", f"capacity {slots} is out of range: give 1 to {MAX_SLOTS} slots"
        )
    actor = require_actor(actor, "queue capacity")
    request = CapacityRequest(actor=actor, slots=slots)
    _change_setting(QueueMessage.CAPACITY, QueueAction.CAPACITY, actor, request, as_json)


@app.command("autopilot")
def autopilot_command(
    setting: Annotated[
        str, typer.Argument(metavar="on|off", help="on: fill free slots; off: start nothing.")
    ],
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Turn autopilot on or off (off, the default, starts nothing by itself). Protected."""
    from contracts.queue_messages import AutopilotRequest, QueueAction
    from contracts.temporal_names import QueueMessage

    if setting not in ("on", "off"):
        raise InvalidInput("invalid_autopilot", f"autopilot takes on or off, not {setting!r}")
    actor = require_actor(actor, "queue autopilot")
    request = AutopilotRequest(actor=actor, on=setting == "on")
    _change_setting(QueueMessage.AUTOPILOT, QueueAction.AUTOPILOT, actor, request, as_json)


@app.command("recovery-delay")
def recovery_delay_command(
    seconds: Annotated[
        int, typer.Argument(metavar="SECONDS", help="Seconds a failed item waits (0..604800; default 600).")
    ],
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Set how long a failed item waits before the autopilot recovers it. Protected."""
    from contracts.queue_items import MAX_RECOVERY_DELAY_SECONDS
    from contracts.queue_messages import QueueAction, RecoveryDelayRequest
    from contracts.temporal_names import QueueMessage

    if not 0 <= seconds <= MAX_RECOVERY_DELAY_SECONDS:
        raise InvalidInput(
            "invalid_recovery_delay",
            f"recovery delay {seconds} is out of range: give 0 to {MAX_RECOVERY_DELAY_SECONDS} seconds",
        )
    actor = require_actor(actor, "queue recovery-delay")
    request = RecoveryDelayRequest(actor=actor, seconds=seconds)
    _change_setting(QueueMessage.RECOVERY_DELAY, QueueAction.RECOVERY_DELAY, actor, request, as_json)


@app.command("escalation-model")
def escalation_model_command(
    model: Annotated[
        str,
        typer.Argument(metavar="PROVIDER:NAME|none", help="A registered or built-in replay model, or none."),
    ],
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Set the model an escalated review round's run uses first (none: escalated rounds use the
    selection's models). The model must be usable now; each escalated run checks it again. Protected."""
    from contracts.models import ModelSelection
    from contracts.queue_messages import EscalationModelRequest, QueueAction
    from contracts.temporal_names import QueueMessage
    from control.inputs import parse_model

    chosen: str | None = None
    if model != "none":
        payload = {"primary": model, "fallbacks": [], "fallback_mode": "primary_only"}
        chosen = parse_model(ModelSelection, payload, what="escalation model", code="invalid_model").primary
        with open_configuration_store() as store:
            store.require_registered_models([chosen])
    actor = require_actor(actor, "queue escalation-model")
    request = EscalationModelRequest(actor=actor, model=chosen)
    _change_setting(QueueMessage.ESCALATION_MODEL, QueueAction.ESCALATION_MODEL, actor, request, as_json)


def _view(key: str | None = None) -> Any:
    from control.queue import queue_view

    queue = task_queue()

    async def go() -> Any:
        return await queue_view(await _worker_client(queue), queue, key)

    return run_async(go())


@app.command("list")
def list_command(
    status: Annotated[str | None, typer.Option("--status", help="Only items in this status.")] = None,
    since: SinceOption = None,
    as_json: JsonFlag = False,
) -> None:
    """The items, the count of each status, the fleet line (occupied/slots) and the keys ready to
    dispatch."""
    from control.output import emit
    from control.queue_views import listing_json, render_listing

    wanted = parse_status(status)
    after = parse_since(since)
    data = listing_json(_view(), status=wanted, since=after)
    emit(data, as_json, lambda console: render_listing(console, data))


@app.command("show")
def show_command(key: KeyArgument, as_json: JsonFlag = False) -> None:
    """An item with its scope, spec completeness, runs, review rounds and events."""
    from contracts.errors import NotFound
    from contracts.queue_messages import UNKNOWN_ITEM
    from control.output import emit
    from control.queue_views import attention, item_json, render_item

    check_key(key)
    view = _view(key)
    if not view.items:
        hint = (
            f": it was renamed to {view.renamed_to} at its approval" if view.renamed_to else " in the queue"
        )
        raise NotFound(UNKNOWN_ITEM, f"no item {key}{hint}")
    item = view.items[0]
    data = item_json(item, attention=attention(item, view.run_status))
    emit(data, as_json, lambda console: render_item(console, item, attention=data["attention"]))


@app.command("events")
def events_command(since: SinceOption = None, as_json: JsonFlag = False) -> None:
    """Every item's events and the settings changes, oldest first."""
    from control.output import emit
    from control.queue_views import events_json, render_events

    after = parse_since(since)
    data = events_json(_view(), since=after)
    emit(data, as_json, lambda console: render_events(console, data))
