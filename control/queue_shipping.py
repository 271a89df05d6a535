"""``queue ship`` over the Temporal client and the store (docs/architecture.md "Shipping"): the
repository's signed shipping policy read first (none: refused with the question, never guessed), the
reviewed patch of the run the item was accepted with found in the run's view, and the ``ship`` update
signed by the actor over the key, the run and that patch's sha256."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio.client import Client

from contracts.config import RepositoryRecord
from contracts.errors import Refused
from contracts.proofs import ActionProof
from contracts.queue_items import QueueItem, QueueStatus
from contracts.queue_messages import ItemAnswer, QueueAction
from contracts.shipping import ShipCode, ShipRequest, policy_question
from contracts.shipping_patch import accepted_run, reviewed_patch
from contracts.temporal_names import QueueMessage
from control.output import utc


def require_policy(record: RepositoryRecord) -> None:
    """Refuse (exit 4, ``shipping_policy_missing``) a repository without a declared policy, asking
    the question the operator answers."""
    if record.config.shipping is None:
        raise Refused(ShipCode.SHIPPING_POLICY_MISSING, policy_question(record.alias))


def check_shippable(item: QueueItem) -> str:
    """The run ``item`` was accepted with; refused when it is not done or already shipped."""
    if item.shipped is not None:
        raise Refused(
            ShipCode.ALREADY_SHIPPED,
            f"{item.key} was shipped at {utc(item.shipped.shipped_at)} by {item.shipped.shipped_by} "
            f"(branch {item.shipped.branch}): an item is shipped once",
        )
    if item.status is not QueueStatus.DONE:
        raise Refused(
            ShipCode.NOT_SHIPPABLE, f"{item.key} is {item.status.value}: only a done item is shipped"
        )
    run_id = accepted_run(item)
    if run_id is None:
        raise Refused(ShipCode.NOTHING_TO_SHIP, f"{item.key} has no accepted run")
    return run_id


async def ship(
    client: Client,
    task_queue: str,
    item: QueueItem,
    actor: str,
    sign: Callable[[str, str, str], ActionProof],
) -> tuple[ItemAnswer, str]:
    """Ship done ``item`` (checked by :func:`check_shippable`) as ``actor``: the accepted run's
    reviewed patch sha256 is signed with the key and run. Returns the answer and the sha256."""
    from control.queue import queue_update
    from control.runs import get_view

    run_id = check_shippable(item)
    patch = reviewed_patch((await get_view(client, run_id)).execution)
    if patch is None:
        raise Refused(ShipCode.NOTHING_TO_SHIP, f"run {run_id} changed nothing: there is no patch to ship")
    request = ShipRequest(actor=actor, key=item.key, run_id=run_id, patch_sha256=patch.sha256)
    signed = request.model_copy(update={"proof": sign(item.key, QueueAction.SHIP, request.digest())})
    answer = await queue_update(client, task_queue, QueueMessage.SHIP, signed, ItemAnswer)
    return answer, patch.sha256


def shipped_json(answer: ItemAnswer) -> dict[str, Any]:
    """What ``queue ship --json`` adds to the item: the ship's outcome (branch, commit, merged)."""
    return dict(answer.extra)
