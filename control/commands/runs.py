"""Run actions: ``create`` (a Temporal workflow per run), ``enqueue``, ``decide``, ``cancel``,
``approve`` and ``execute``. Each refuses bad flags and an unknown actor before anything is sent;
the workflow checks every rule again, and a refusal comes back as the operator error it names
(docs/architecture.md "Operator contract").

``create`` does not capture the contract itself: the workflow's ``capture_contract`` activity is the
only capture, and a create it refuses (automation off, an unknown override profile, a repository that
is unknown or unavailable, no model selected, ...) leaves a ``failed`` run whose error names the
refusal; the command reports it with the refusal's own exit code and error code
(:func:`control.runs.raise_if_creation_refused`).

Every command here needs a worker to answer (the run's story, a query, an update's handler): with no
worker polling the task queue it is refused at once, before anything is started or sent (exit 5
``no_worker``, naming the queue, the namespace and ``specialists worker``). ``--wait`` then outlasts
a worker that stops and starts again (and a restarted server): it keeps asking until one answers,
up to ``--timeout`` (exit 8, the run left as it is); a run it sees end ``failed``, ``expired`` or
``cancelled`` exits 7 after its final view is printed (docs/architecture.md "Exit codes").
"""

from typing import Annotated, Any

import typer

from contracts.errors import InvalidInput, NotFound
from control.commands.common import (
    ActorOption,
    AdvisoryOption,
    JsonFlag,
    ReviewWaveFlag,
    RunArgument,
    actor_registered,
    actor_required,
    actor_signer,
    client,
    emit_run,
    open_store,
    parse_advisory,
    parse_override,
    parse_tier,
    progress,
    require_actor,
    require_digest,
    run_async,
    task_queue,
)
from control.commands.waiting import TimeoutOption, check_timeout, exit_unless_successful, unanswered, waited
from control.notes import check_note

app = typer.Typer()

MAX_NOTE_CHARS = 2000
"""Longest ``--note`` / ``--reason`` (kept in the audit trail)."""


@app.command("create")
def create_command(
    input_json: Annotated[
        str, typer.Option("--input-json", help="The work item as JSON, or @FILE to read it from a file.")
    ],
    tier: Annotated[
        str | None, typer.Option("--tier", help="recommend | read_only | worktree | pr_ready")
    ] = None,
    enqueue: Annotated[
        bool, typer.Option("--enqueue", help="Enqueue a read_only run at once (protected).")
    ] = False,
    automatic: Annotated[bool, typer.Option("--automatic", help="Let the policy pick the tier.")] = False,
    override: Annotated[str | None, typer.Option("--override", help="Profile id to use as primary.")] = None,
    override_reason: Annotated[
        str | None, typer.Option("--override-reason", help="Why the override is needed.")
    ] = None,
    request_id: Annotated[
        str | None, typer.Option("--request-id", help="Caller's id: the same id returns the same run.")
    ] = None,
    review_wave: ReviewWaveFlag = False,
    advisory: AdvisoryOption = None,
    actor: ActorOption = None,
    wait: Annotated[
        bool, typer.Option("--wait", help="Wait until the run needs a person or has finished.")
    ] = False,
    timeout: TimeoutOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Create a specialist run for a work item (a Temporal workflow)."""
    from contracts.ids import check_request_id, new_run_id, run_id_for_request
    from contracts.runs import RunInput
    from contracts.work_item import WorkItem
    from control.inputs import parse_model, read_json_argument
    from control.runs import create_run, raise_if_creation_refused, request_digest, settled, wait_for_view
    from control.temporal import require_worker

    check_timeout(wait, timeout)
    requested = parse_tier(tier)
    if automatic and requested is not None:
        raise InvalidInput("tier_conflict", "--automatic and --tier are exclusive: give one")
    if not automatic and requested is None:
        raise InvalidInput(
            "tier_required", "give --tier recommend|read_only|worktree|pr_ready, or --automatic"
        )
    advisory_topic = parse_advisory(advisory, requested, automatic=automatic)
    from control.create_flags import check_create_flags

    check_create_flags(requested, enqueue=enqueue, review_wave=review_wave)
    if enqueue or automatic:
        actor = actor_required(actor, "create with --enqueue or --automatic")
    elif actor is not None:  # a named creator is proved, not claimed: the audit records who created it
        actor = actor_required(actor, "naming the run's creator")
    route_override = parse_override(override, override_reason)
    item = parse_model(
        WorkItem, read_json_argument(input_json, what="work item"), what="work item", code="invalid_work_item"
    )
    try:
        run_id = run_id_for_request(check_request_id(request_id)) if request_id is not None else new_run_id()
    except ValueError as error:
        raise InvalidInput("invalid_request_id", str(error)) from None
    draft = RunInput(
        run_id=run_id,
        work_item=item,
        requested_tier=requested,
        automatic=automatic,
        override=route_override,
        enqueue=enqueue,
        request_id=request_id,
        request_digest="",
        created_by=actor,
        review_wave=review_wave,
        advisory=advisory_topic,
    )
    run_input = draft.model_copy(update={"request_digest": request_digest(draft)})
    # The one check made here rather than by the run: a creator who is not registered is refused
    # before anything is started (the workflow's authorisation checks again). Everything else the
    # request must satisfy, the run's capture checks: a refusal there comes back below.
    if actor is not None and not actor_registered(actor):
        raise NotFound("unknown_actor", f"actor {actor!r} is not registered")
    if actor is not None:
        from control.actions import proof_for

        actor_signer(actor)  # the configured key must be the creator's key in force
        proof = proof_for(run_id=run_id, action="create", actor=actor, digest=run_input.request_digest)
        run_input = run_input.model_copy(update={"proof": proof})
    queue = task_queue()

    async def go() -> tuple[Any, bool]:
        temporal = await client()
        # Nothing is started without a worker to run it: the run would sit in routing unseen.
        await require_worker(temporal, queue)
        view, deduplicated = await create_run(temporal, run_input, task_queue=queue)
        if wait and not settled(view):
            view = await wait_for_view(
                temporal,
                run_id,
                settled,
                timeout=timeout,
                on_change=progress(as_json),
                patient=True,
                on_unanswered=unanswered(run_id),
                initial=view,
            )
        return view, deduplicated

    view, deduplicated = run_async(go())
    raise_if_creation_refused(view)
    if wait:
        waited(view, timeout)
    emit_run(view, as_json, {"deduplicated": deduplicated})
    if wait:
        exit_unless_successful(view)


@app.command("enqueue")
def enqueue_command(run_id: RunArgument, actor: ActorOption = None, as_json: JsonFlag = False) -> None:
    """Move a ready run to the queue (protected)."""
    from control.actions import proof_for
    from control.runs import UPDATE_ANSWER_SECONDS, check_run_id, enqueue_run, get_view

    check_run_id(run_id)
    actor = require_actor(actor, "enqueue")
    proof = proof_for(run_id=run_id, action="enqueue", actor=actor)

    async def go() -> Any:
        temporal = await client()
        await enqueue_run(temporal, run_id, actor, proof, answer_within=UPDATE_ANSWER_SECONDS)
        return await get_view(temporal, run_id)

    emit_run(run_async(go()), as_json)


@app.command("decide")
def decide_command(
    run_id: RunArgument,
    actor: ActorOption = None,
    accept: Annotated[bool, typer.Option("--accept", help="Accept the reviewed result.")] = False,
    reject: Annotated[bool, typer.Option("--reject", help="Reject the reviewed result.")] = False,
    note: Annotated[str, typer.Option("--note", help="Why (kept in the audit trail).")] = "",
    as_json: JsonFlag = False,
) -> None:
    """Accept or reject a run that awaits a decision."""
    from contracts.runs import DecisionOutcome, RunStatus
    from control.actions import proof_for
    from control.runs import UPDATE_ANSWER_SECONDS, check_run_id, decide_run, wait_for_view

    if accept == reject:
        raise InvalidInput("decision_required", "give exactly one of --accept or --reject")
    note = check_note(note, option="--note", code="note", limit=MAX_NOTE_CHARS)
    outcome = DecisionOutcome.ACCEPTED if accept else DecisionOutcome.REJECTED
    check_run_id(run_id)
    actor = require_actor(actor, "decide")
    proof = proof_for(run_id=run_id, action="decide", actor=actor)

    async def go() -> Any:
        temporal = await client()
        await decide_run(temporal, run_id, actor, outcome, note, proof, answer_within=UPDATE_ANSWER_SECONDS)
        return await wait_for_view(
            temporal, run_id, lambda v: v.status is not RunStatus.AWAITING_DECISION, timeout=10.0
        )

    emit_run(run_async(go()), as_json)


@app.command("cancel")
def cancel_command(
    run_id: RunArgument,
    actor: ActorOption = None,
    reason: Annotated[str, typer.Option("--reason", help="Why (kept in the audit trail).")] = "",
    as_json: JsonFlag = False,
) -> None:
    """Cancel a run that has not finished (a running model job finishes first)."""
    from control.actions import proof_for
    from control.runs import cancel_run, check_run_id

    check_run_id(run_id)
    reason = check_note(reason, option="--reason", code="reason", limit=MAX_NOTE_CHARS)
    actor = require_actor(actor, "cancel")
    proof = proof_for(run_id=run_id, action="cancel", actor=actor)

    async def go() -> Any:
        return await cancel_run(await client(), run_id, actor, reason, proof, require_answer=True)

    emit_run(run_async(go()), as_json)


@app.command("approve")
def approve_command(
    run_id: RunArgument,
    actor: ActorOption = None,
    contract_sha256: Annotated[
        str | None,
        typer.Option("--contract-sha256", help="The contract digest you reviewed (`show` displays it)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Approve a worktree or pr_ready run: exactly the contract whose digest you name (protected)."""
    from contracts.runs import RunStatus
    from control.actions import proof_for
    from control.run_repository import require_waiting_run_repository
    from control.runs import UPDATE_ANSWER_SECONDS, approve_run, check_run_id

    check_run_id(run_id)
    contract_sha256 = require_digest(
        contract_sha256, option="--contract-sha256", shown_by="`show`", code="contract_digest_required"
    )
    actor = require_actor(actor, "approve")
    proof = proof_for(run_id=run_id, action="approve", actor=actor, digest=contract_sha256)

    async def go() -> Any:
        temporal = await client()
        await require_waiting_run_repository(
            temporal, lambda: open_store(create=False), run_id, RunStatus.AWAITING_APPROVAL, "approve"
        )
        return await approve_run(
            temporal, run_id, actor, contract_sha256, proof, answer_within=UPDATE_ANSWER_SECONDS
        )

    emit_run(run_async(go()), as_json)


@app.command("execute")
def execute_command(
    run_id: RunArgument,
    actor: ActorOption = None,
    wait: Annotated[
        bool,
        typer.Option("--wait", help="Wait until the run awaits a decision or has finished."),
    ] = False,
    timeout: TimeoutOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Execute an approved worktree run: its change is applied in a fresh worktree, checked and
    reviewed (protected; the proof is bound to the approved contract digest)."""
    from contracts.audit import AuditKind
    from contracts.errors import Refused
    from contracts.refusals import RefusalCode
    from contracts.runs import RunStatus
    from control.actions import proof_for
    from control.run_repository import require_run_repository
    from control.runs import (
        UPDATE_ANSWER_SECONDS,
        check_run_id,
        execute_run,
        get_view,
        require_run_worker,
        settled,
        wait_for_view,
    )

    check_timeout(wait, timeout)
    check_run_id(run_id)
    actor = require_actor(actor, "execute")

    async def go() -> Any:
        temporal = await client()
        await require_run_worker(temporal, run_id)
        view = await get_view(temporal, run_id)
        # The workflow checks these again; checked here so that a run that cannot execute is refused
        # clearly, and before a proof bound to its contract digest is made.
        if any(event.kind == AuditKind.EXECUTE_REQUESTED for event in view.audit):
            raise Refused(
                RefusalCode.ALREADY_EXECUTING,
                f"run {run_id} was already executed ({view.status.value}): an approved run executes once",
            )
        if view.status is not RunStatus.APPROVED or view.contract_sha256 is None:
            hint = ": approve it first (`specialists approve`)"
            raise Refused(
                RefusalCode.NOT_APPROVED,
                f"run {run_id} is {view.status.value}; only an approved run executes"
                + (hint if view.status is RunStatus.AWAITING_APPROVAL else ""),
            )
        require_run_repository(open_store(create=False), view, "execute")
        proof = proof_for(run_id=run_id, action="execute", actor=actor, digest=view.contract_sha256)
        await execute_run(temporal, run_id, actor, proof, answer_within=UPDATE_ANSWER_SECONDS)
        if wait:
            return await wait_for_view(
                temporal,
                run_id,
                settled,
                timeout=timeout,
                on_change=progress(as_json),
                patient=True,
                on_unanswered=unanswered(run_id),
                initial=view,
            )
        return await wait_for_view(
            temporal, run_id, lambda v: v.status is not RunStatus.APPROVED, timeout=10.0
        )

    view = run_async(go())
    if wait:
        waited(view, timeout)
    emit_run(view, as_json)
    if wait:
        exit_unless_successful(view)
