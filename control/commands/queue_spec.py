"""``specialists queue spec KEY --actor A [--replace]``: a spec pass of a proposal — one bounded
read_only model job reads the code the proposal's evidence points to, at its repository's base-branch
head, and writes the six scope sections with the evidence each cites, back into the same item, which
stays a proposal. Protected; never an approval (docs/architecture.md "Spec pass")."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from control.commands.common import ActorOption, JsonFlag, require_actor, run_async, task_queue
from control.commands.queue_args import KeyArgument, check_key
from control.commands.queue_messaging import held_item, worker_client

spec = typer.Typer()

ReplaceFlag = Annotated[
    bool, typer.Option("--replace", help="Overwrite sections that already have text too.")
]


@spec.command("spec")
def spec_command(
    key: KeyArgument, actor: ActorOption = None, replace: ReplaceFlag = False, as_json: JsonFlag = False
) -> None:
    """Write a proposal's scope sections from the code its evidence points to: one read_only model
    job (profile product-manager, the selected models) reads the evidence at the repository's
    base-branch head; each section it answers with text citing evidence it was given is written,
    any other is named and left as it was; sections already written are kept unless --replace. The
    item stays a proposal: a spec pass never approves. Protected."""
    from contracts.queue_messages import ItemAnswer, QueueAction
    from contracts.queue_spec import SpecRequest, content_sha256
    from contracts.temporal_names import QueueMessage
    from control.actions import proof_for
    from control.output import emit
    from control.queue import queue_update
    from control.queue_views import item_json, render_item

    check_key(key)
    actor = require_actor(actor, "queue spec")
    item = held_item(key)
    request = SpecRequest(actor=actor, key=item.key, content_sha256=content_sha256(item), replace=replace)
    signed = request.model_copy(
        update={
            "proof": proof_for(
                run_id=item.key, action=QueueAction.SPEC.value, actor=actor, digest=request.digest()
            )
        }
    )
    queue = task_queue()

    async def go() -> ItemAnswer:
        return await queue_update(await worker_client(queue), queue, QueueMessage.SPEC, signed, ItemAnswer)

    answer = run_async(go())
    written = answer.item
    assert written is not None

    def render(console: Any) -> None:
        from control.output import safe_text

        render_item(console, written)
        outcome = answer.extra
        console.print(
            safe_text(
                f"spec pass {outcome.get('job_id')} by {outcome.get('model')} at {outcome.get('commit')}: "
                f"written {', '.join(outcome.get('written', [])) or 'none'}; "
                f"kept {', '.join(outcome.get('kept', [])) or 'none'}"
            )
        )
        for name, why in outcome.get("refused", {}).items():
            console.print(safe_text(f"not written: {name}: {why}"))
        console.print(f"{written.key} stays a proposal: approve it yourself when it is right")

    emit(item_json(written, spec_pass=answer.extra), as_json, render)
