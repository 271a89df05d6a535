"""Intake: ``specialists queue scan ALIAS`` (docs/architecture.md "Goal queue", "Intake").

Scans one allow-listed repository through the worker (the queue's ``intake`` update runs the
``scan_repository`` activity) and enters its findings as proposals: protected like ``queue add`` (the
actor's proof, target the queue's workflow id, bound to the alias and the bounds). Prints each finding
as proposed, updated, recorded, already queued, not re-proposed or refused, with its reason, and what
the scan skipped. With ``--beyond`` a read_only model pass also proposes gaps between the README's
claims, the layout and recent history (kind ``beyond``), each resting on quotes the system checked;
proposals whose quotes do not match are listed as dropped. Repository and model text is shown
escaped: it is data, never an instruction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from contracts.errors import InvalidInput
from control.commands.common import ActorOption, JsonFlag, require_actor, run_async, task_queue
from control.commands.queue_messaging import queue_id, worker_client

if TYPE_CHECKING:
    from contracts.intake import IntakeAnswer

intake = typer.Typer()
"""The intake commands, added to the ``queue`` group by ``control.commands.queue``."""

LISTS = ("proposed", "updated", "recorded", "already_queued", "not_reproposed", "refused")


def intake_json(answer: IntakeAnswer) -> dict[str, Any]:
    """``{"repo_alias", "commit", "base_branch", "files_scanned", "proposed", "updated", "recorded",
    "already_queued", "not_reproposed", "refused", "counts", "skipped", "skipped_total",
    "findings_over_limit"}``; each finding ``{"fingerprint", "kind", "sub_kind", "path", "line", "key",
    "status", "reason"}``."""
    data = answer.model_dump(mode="json", exclude={"accepted", "code", "message"})
    data["counts"] = {name: len(data[name]) for name in LISTS}
    if "dropped" in data:
        data["counts"]["dropped"] = len(data["dropped"])
    return data


def render_intake(console: Any, data: dict[str, Any]) -> None:
    """The human view: the commit, then each list with its findings and reasons, then what was
    skipped. Every line is plain text shown literally (:func:`control.output.safe_text`): repository
    text can neither style nor control the terminal."""
    from control.output import safe_text

    lines = [
        f"scanned {data['repo_alias']} at {data['commit']} (base {data['base_branch']}): "
        f"{data['files_scanned']} files read"
    ]
    for name in LISTS:
        lines.append(f"{name.replace('_', ' ')}: {len(data[name])}")
        for row in data[name]:
            place = row["path"] if row["line"] is None else f"{row['path']}:{row['line']}"
            key = f"{row['key']} " if row["key"] else ""
            label = "beyond " if row["kind"] == "beyond" else ""
            lines.append(f"  {key}{label}{row['sub_kind']} {place} — {row['reason']}")
    if "dropped" in data:
        lines.append(f"dropped (quote not matching): {len(data['dropped'])}")
        for drop in data["dropped"]:
            place = "" if drop["path"] is None else f" {drop['path']}:{drop['line']}"
            quoted = "" if drop["quote"] is None else f" quoting {drop['quote']!r}"
            lines.append(f"  {drop['title']}{place}{quoted} — {drop['reason']}")
    if data["skipped_total"]:
        lines.append(f"skipped: {data['skipped_total']} ({len(data['skipped'])} listed)")
        lines += [f"  {row['path']}: {row['reason']} {row['detail']}" for row in data["skipped"]]
    if data["findings_over_limit"]:
        lines.append(f"findings over the limit (not entered): {data['findings_over_limit']}")
    for line in lines:
        console.print(safe_text(line))


@intake.command("scan")
def scan_command(
    alias: Annotated[str, typer.Argument(metavar="ALIAS", help="An allow-listed repository's alias.")],
    actor: ActorOption = None,
    max_findings: Annotated[
        int | None, typer.Option("--max-findings", help="At most this many findings (default 100, ≤ 200).")
    ] = None,
    beyond: Annotated[
        bool,
        typer.Option(
            "--beyond",
            help="Also run the beyond-source model pass: gaps between README claims, layout and "
            "history, each citing quotes checked against the repository (a mismatch is dropped).",
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Scan a repository (git state, documented plans, code markers) and propose what it finds: what
    is queued is not proposed again, a changed source updates its proposal, a rejected or done item's
    finding is not re-proposed. Never approves. Protected."""
    from pydantic import ValidationError

    from contracts.intake import IntakeAnswer, IntakeBounds, IntakeRequest
    from contracts.queue_messages import QueueAction
    from contracts.temporal_names import QueueMessage
    from control.actions import proof_for
    from control.commands.common import open_configuration_store
    from control.output import emit
    from control.queue import queue_update

    try:
        bounds = IntakeBounds() if max_findings is None else IntakeBounds(max_findings=max_findings)
        request = IntakeRequest(actor=actor, repo_alias=alias, bounds=bounds, beyond=beyond)
    except ValidationError as error:
        raise InvalidInput("invalid_scan", f"invalid scan: {error.errors()[0]['msg']}") from None
    actor = require_actor(actor, "queue scan")
    with open_configuration_store() as store:
        store.get_repository(alias)  # unknown_repository (exit 3) before anything is sent
    request = request.model_copy(update={"actor": actor})
    proof = proof_for(run_id=queue_id(), action=QueueAction.INTAKE, actor=actor, digest=request.digest())
    queue = task_queue()

    async def go() -> IntakeAnswer:
        temporal = await worker_client(queue)
        signed = request.model_copy(update={"proof": proof})
        return await queue_update(temporal, queue, QueueMessage.INTAKE, signed, IntakeAnswer)

    data = intake_json(run_async(go()))
    if beyond:
        data.setdefault("dropped", [])
        data["counts"]["dropped"] = len(data["dropped"])
    emit(data, as_json, lambda console: render_intake(console, data))
