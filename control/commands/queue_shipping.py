"""``specialists queue ship KEY --actor A``: ship a done item's reviewed patch under its repository's
declared shipping policy — committed on a new local branch ``specialists/KEY`` and, with flow
``merge``, merged into the base branch (fast-forward or clean merge only). Protected; once per item;
nothing is ever pushed (docs/architecture.md "Shipping")."""

from __future__ import annotations

from typing import Any

import typer

from contracts.errors import NotFound
from control.commands.common import ActorOption, JsonFlag, open_store, require_actor, run_async, task_queue
from control.commands.queue_args import KeyArgument, check_key
from control.commands.queue_messaging import held_item, worker_client

shipping = typer.Typer()


@shipping.command("ship")
def ship_command(key: KeyArgument, actor: ActorOption = None, as_json: JsonFlag = False) -> None:
    """Ship a done item once: its reviewed patch (exactly the bytes whose sha256 the review saw)
    committed on a new local branch specialists/KEY with the actor as author and, when the
    repository's policy is 'merge', merged into its base branch if that is a fast-forward or a clean
    merge; a conflict fails and leaves the base branch as it was. Nothing is ever pushed. A
    repository without a shipping policy is refused with the question to answer. Protected."""
    from control.actions import proof_for
    from control.output import emit
    from control.queue_shipping import check_shippable, require_policy, ship
    from control.queue_views import item_json, render_item

    check_key(key)
    actor = require_actor(actor, "queue ship")
    item = held_item(key)
    check_shippable(item)
    store = open_store(create=False)
    if store is None or item.repo_alias is None:
        raise NotFound("unknown_repository", f"{key}: its repository is not registered")
    with store:
        require_policy(store.get_repository(item.repo_alias))
    signer = actor

    def sign(target: str, action: str, digest: str) -> Any:
        return proof_for(run_id=target, action=action, actor=signer, digest=digest)

    queue = task_queue()

    async def go() -> Any:
        return await ship(await worker_client(queue), queue, item, signer, sign)

    answer, sha256 = run_async(go())
    shipped = answer.item
    assert shipped is not None

    def render(console: Any) -> None:
        render_item(console, shipped)
        outcome = answer.extra
        merged = (
            f"merged into {outcome.get('base_branch')} "
            + ("(fast-forward)" if outcome.get("fast_forward") else f"(merge {outcome.get('merge_commit')})")
            if outcome.get("merged")
            else "not merged"
        )
        console.print(
            f"shipped on local branch {outcome.get('branch')} at {outcome.get('commit')}, {merged}; "
            f"patch sha256 {sha256}; nothing was pushed"
        )

    emit(item_json(shipped, shipped=answer.extra, patch_sha256=sha256), as_json, render)
