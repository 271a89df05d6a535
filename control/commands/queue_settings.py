"""The goal queue's settings: ``specialists queue capacity | autopilot | recovery-delay |
escalation-model`` (docs/architecture.md "Goal queue"). Each is protected: the actor's proof is bound
to the digest of the request, and the command prints the settings it leaves."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from contracts.errors import InvalidInput
from control.commands.common import ActorOption, JsonFlag, open_configuration_store, require_actor
from control.commands.queue_messaging import queue_id, send_settings

if TYPE_CHECKING:
    from contracts.queue_messages import SettingsAnswer
    from contracts.temporal_names import QueueMessage

settings = typer.Typer()
"""The settings commands, added to the ``queue`` group by ``control.commands.queue``."""


def change_setting(message: QueueMessage, action: str, actor: str, request: Any, as_json: bool) -> None:
    """Send a settings ``request`` (capacity, autopilot, recovery delay, escalation model) with
    ``actor``'s proof bound to its digest, and print the settings it leaves."""
    from control.actions import proof_for

    proof = proof_for(run_id=queue_id(), action=action, actor=actor, digest=request.digest())
    answer, view = send_settings(message, request.model_copy(update={"proof": proof}))
    emit_settings(answer, view, as_json)


def emit_settings(answer: SettingsAnswer, view: Any, as_json: bool) -> None:
    from control.output import emit
    from control.queue_views import render_settings, settings_json

    data = settings_json(view.items, answer.settings)
    emit(data, as_json, lambda console: render_settings(console, data))


@settings.command("capacity")
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
    change_setting(QueueMessage.CAPACITY, QueueAction.CAPACITY, actor, request, as_json)


@settings.command("autopilot")
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
    change_setting(QueueMessage.AUTOPILOT, QueueAction.AUTOPILOT, actor, request, as_json)


@settings.command("recovery-delay")
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
    change_setting(QueueMessage.RECOVERY_DELAY, QueueAction.RECOVERY_DELAY, actor, request, as_json)


@settings.command("escalation-model")
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
    change_setting(QueueMessage.ESCALATION_MODEL, QueueAction.ESCALATION_MODEL, actor, request, as_json)
