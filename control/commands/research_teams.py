"""``specialists research`` team commands: ``team-start``, ``teams``, ``team-show``, ``team-results``,
``adjudicate``, ``team-cancel`` and ``coordinator`` (docs/architecture.md "Research team", "Operator
contract").

A team runs six blinded stages over one research case and ends at ``awaiting_human_review``; it never
approves or publishes anything. Starting, adjudicating and cancelling are protected: the CLI sends a
proof of the deployment's action token (``team_start`` bound to :func:`team_request_digest`,
``adjudicate`` bound to :func:`adjudication_digest`, ``team_cancel``) that the workflow checks.

``team-start`` checks, before anything is started, that the case exists (exit 3 ``unknown_case``), that
the actor is registered (exit 3 ``unknown_actor``) and that the case's active evidence fits a team
(exit 4 ``team_evidence_limit | team_evidence_too_large | team_evidence_empty``: narrow the case). The
same request id for the same case returns the same team (``"deduplicated": true``); for another case it
is refused (exit 4 ``request_id_conflict``). JSON shapes: :mod:`control.team_views` and
:mod:`control.coordinator_views`.
"""

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer

from contracts.errors import InvalidInput
from control.commands.common import (
    ActorOption,
    JsonFlag,
    actor_required,
    client,
    open_store,
    require_actor,
    run_async,
    task_queue,
)
from control.notes import check_note

if TYPE_CHECKING:
    from contracts.research_teams import AdjudicationOutcome, TeamView

app = typer.Typer()

MAX_NOTE_CHARS: Final = 2_000
"""Longest ``--note`` / ``--reason`` (the workflow's contracts take no more)."""
ADJUDICATE_WAIT_SECONDS: Final = 10.0
"""How long ``adjudicate`` (without ``--wait``) waits for the team to act on the outcome."""

TeamOption = Annotated[str, typer.Option("--id", metavar="RTM-…", help="Research team id (RTM-…).")]
TeamArgument = Annotated[str, typer.Argument(metavar="ID", help="Research team id (RTM-…).")]
WaitFlag = Annotated[bool, typer.Option("--wait", help="Wait until the team needs a person or has ended.")]


# ------------------------------------------------------------------------------------------- commands


@app.command("team-start")
def team_start_command(
    case_id: Annotated[str, typer.Option("--case-id", metavar="RSC-…", help="Research case id (RSC-…).")],
    input_file: Annotated[
        Path, typer.Option("--input", help='JSON file: {"request_id": "..."} (the same id, the same team).')
    ],
    actor: ActorOption = None,
    wait: WaitFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Start a research team over a case: six reviewed, analysis-only stages ending in human review
    (protected)."""
    from contracts.research_teams import TeamStartInput
    from control.actions import proof_for
    from control.commands.waiting import unanswered
    from control.inputs import parse_model, read_json_argument
    from control.keys import require_signer
    from control.research_teams import (
        raise_if_start_refused,
        settled,
        start_team,
        team_exists,
        team_start_input,
        wait_for_team,
    )
    from store.research import check_case_id

    actor = actor_required(actor, "starting a research team")
    check_case_id(case_id)
    start = parse_model(
        TeamStartInput,
        read_json_argument(f"@{input_file}", what="team start input"),
        what="team start input",
        code="invalid_team_start_input",
    )
    require_signer(actor)  # like every protected action: no key, nothing is read or started
    team = team_start_input(
        case_id,
        start.request_id,
        actor,
        lambda team_id, digest: proof_for(run_id=team_id, action="team_start", actor=actor, digest=digest),
    )
    team_id = team.team_id

    async def exists() -> bool:
        return await team_exists(await client(), team_id)

    # A second delivery of a start returns the team it started, whatever the case holds now; a new
    # start is checked first as the workflow's start checks it again, so a refusal reaches the
    # operator at once and nothing is started for a case that cannot run.
    if not run_async(exists()):
        _check_case_for_team(case_id, actor)
    queue = task_queue()

    async def go() -> tuple[Any, bool]:
        temporal = await client()
        view, deduplicated = await start_team(temporal, team, task_queue=queue)
        if wait and not settled(view):
            view = await wait_for_team(
                temporal,
                team_id,
                settled,
                timeout=None,
                on_change=_progress(as_json),
                on_unanswered=unanswered(team_id),
            )
        return view, deduplicated

    view, deduplicated = run_async(go())
    raise_if_start_refused(view)
    _emit_team(view, as_json, {"deduplicated": deduplicated})


def _check_case_for_team(case_id: str, actor: str) -> None:
    """The checks a new team's start makes in the store: the case exists (exit 3 ``unknown_case``),
    the actor is registered (exit 3 ``unknown_actor``), the active evidence fits a team (exit 4)."""
    from contracts.errors import NotFound
    from contracts.research_teams import check_team_evidence

    store = open_store(create=False)
    if store is None:
        raise NotFound("unknown_case", f"no research case {case_id}")
    with store:
        case = store.get_case(case_id)
        if not store.actor_exists(actor):
            raise NotFound(
                "unknown_actor", f"actor {actor!r} is not registered (see `specialists actors register`)"
            )
    check_team_evidence(case)


@app.command("teams")
def teams_command(
    case_id: Annotated[
        str | None, typer.Option("--case-id", metavar="RSC-…", help="Only this case's teams.")
    ] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="Only teams with this status (e.g. blocked).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """List research teams from Temporal's visibility store, newest first."""
    from contracts.errors import NotFound
    from contracts.research_teams import TeamStatus
    from control import team_views
    from control.output import emit
    from control.research_teams import list_teams
    from store.research import check_case_id

    wanted: TeamStatus | None = None
    if status is not None:
        try:
            wanted = TeamStatus(status)
        except ValueError:
            choices = " | ".join(member.value for member in TeamStatus)
            raise InvalidInput("invalid_status", f"--status {status!r} is not one of {choices}") from None
    if case_id is not None:
        check_case_id(case_id)
        store = open_store(create=False)
        if store is None:
            raise NotFound("unknown_case", f"no research case {case_id}")
        with store:
            store.get_case(case_id)  # an unknown case is not found, not an empty list

    async def go() -> list[dict[str, Any]]:
        return await list_teams(await client(), case_id, wanted)

    teams = run_async(go())
    emit(team_views.teams_json(teams), as_json, lambda console: team_views.render_teams(console, teams))


@app.command("coordinator")
def coordinator_command(as_json: JsonFlag = False) -> None:
    """Show the research coordinator: active teams (at most 20), advances waiting, the current cycle
    and what it granted (at most 5 per cycle)."""
    from control.coordinator_views import coordinator_json, render_coordinator
    from control.output import emit
    from control.research_teams import get_coordinator

    queue = task_queue()

    async def go() -> Any:
        return await get_coordinator(await client(), queue)

    view = run_async(go())
    emit(coordinator_json(view), as_json, lambda console: render_coordinator(console, view))


@app.command("team-results")
def team_results_command(team_id: TeamArgument, as_json: JsonFlag = False) -> None:
    """Show what a team's stages produced — each analysis and review in full, from the store — for
    the human review the team ends with."""
    from control import team_views
    from control.output import emit
    from control.research_teams import check_team_id, get_team

    check_team_id(team_id)

    async def go() -> Any:
        return await get_team(await client(), team_id)

    view = run_async(go())
    refs = [ref for stage in view.stages for ref in (stage.analysis, stage.review) if ref is not None]
    outputs: dict[str, Any] = {}
    store = open_store(create=False)
    if store is not None:  # no store here: every result shows as not in this store
        with store:
            outputs = {record.job_id: record for record in store.team_job_outputs(team_id)}
    data = team_views.results_json(view, {ref.job_id: outputs.get(ref.job_id) for ref in refs})
    emit(data, as_json, lambda console: team_views.render_results(console, data))


@app.command("team-show")
def team_show_command(team_id: TeamArgument, as_json: JsonFlag = False) -> None:
    """Show a research team: its stages, what it waits for and its audit trail."""
    from control.research_teams import check_team_id, get_team

    check_team_id(team_id)

    async def go() -> Any:
        return await get_team(await client(), team_id)

    _emit_team(run_async(go()), as_json)


@app.command("adjudicate")
def adjudicate_command(
    team_id: TeamOption,
    stage: Annotated[int, typer.Option("--stage", help="The stage the team waits on (1..6).")],
    outcome: Annotated[
        str,
        typer.Option("--outcome", help="accept_primary | accept_reviewer | record_both | retry_stage | stop"),
    ],
    actor: ActorOption = None,
    note: Annotated[str, typer.Option("--note", help="Why (kept in the audit trail).")] = "",
    wait: WaitFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Record a person's outcome for the stage a team waits on: a disagreement (accept_primary,
    accept_reviewer, record_both) or a blocked stage (retry_stage, stop) (protected)."""
    from contracts.audit import AuditKind
    from contracts.errors import Refused
    from contracts.refusals import RefusalCode
    from contracts.research_teams import AdjudicateRequest, adjudication_digest
    from control.actions import proof_for
    from control.research_teams import adjudicate_team, check_team_id, get_team, settled, wait_for_team

    check_team_id(team_id)
    chosen = _parse_outcome(outcome)
    if not 1 <= stage <= 6:
        raise InvalidInput("invalid_stage", f"--stage is {stage}; a team's stages are 1..6")
    note = check_note(note, option="--note", code="note", limit=MAX_NOTE_CHARS)
    actor = require_actor(actor, "adjudicate")
    request = AdjudicateRequest(
        actor=actor,
        stage=stage,
        outcome=chosen,
        note=note,
        proof=proof_for(
            run_id=team_id, action="adjudicate", actor=actor, digest=adjudication_digest(stage, chosen)
        ),
    )

    async def go() -> Any:
        temporal = await client()
        before = await get_team(temporal, team_id)
        if before.status.final:  # the workflow has ended: no update can reach it
            raise Refused(
                RefusalCode.TEAM_FINISHED,
                f"team {team_id} is {before.status.value}: it has ended and takes no adjudication",
            )
        seen = len(before.audit)
        await adjudicate_team(temporal, team_id, request)

        def moved_on(view: "TeamView") -> bool:
            """The team took the outcome: it left the wait, or it already waits on something new."""
            events = view.audit[seen:]
            kinds = [event.kind for event in events]
            if AuditKind.ADJUDICATED not in kinds:
                return view.status.final
            after = kinds[kinds.index(AuditKind.ADJUDICATED) + 1 :]
            waits_again = any(
                kind in (AuditKind.STAGE_BLOCKED, AuditKind.MATERIAL_DISAGREEMENT) for kind in after
            )
            return view.status.final or not view.status.needs_person or waits_again

        if wait:
            return await wait_for_team(
                temporal,
                team_id,
                lambda view: moved_on(view) and settled(view),
                timeout=None,
                on_change=_progress(as_json),
            )
        return await wait_for_team(temporal, team_id, moved_on, timeout=ADJUDICATE_WAIT_SECONDS)

    _emit_team(run_async(go()), as_json)


@app.command("team-cancel")
def team_cancel_command(
    team_id: TeamOption,
    actor: ActorOption = None,
    reason: Annotated[str, typer.Option("--reason", help="Why (kept in the audit trail).")] = "",
    as_json: JsonFlag = False,
) -> None:
    """Cancel a research team: no further stage starts (a running model job may finish) (protected)."""
    from contracts.research_teams import TeamCancelRequest
    from control.actions import proof_for
    from control.research_teams import cancel_team, check_team_id

    check_team_id(team_id)
    reason = check_note(reason, option="--reason", code="reason", limit=MAX_NOTE_CHARS)
    actor = require_actor(actor, "team-cancel")
    request = TeamCancelRequest(
        actor=actor,
        reason=reason,
        proof=proof_for(run_id=team_id, action="team_cancel", actor=actor, digest=""),
    )

    async def go() -> Any:
        return await cancel_team(await client(), team_id, request)

    _emit_team(run_async(go()), as_json)


# ------------------------------------------------------------------------------------------- helpers


def _parse_outcome(value: str) -> "AdjudicationOutcome":
    from contracts.research_teams import AdjudicationOutcome

    try:
        return AdjudicationOutcome(value)
    except ValueError:
        allowed = " | ".join(outcome.value for outcome in AdjudicationOutcome)
        raise InvalidInput("unknown_outcome", f"unknown outcome {value!r}; use one of: {allowed}") from None


def _progress(as_json: bool) -> Any:
    def show(view: "TeamView") -> None:
        if not as_json:
            sys.stderr.write(f"{view.team_id}: {view.status.value}\n")

    return show


def _emit_team(view: "TeamView", as_json: bool, extra: dict[str, Any] | None = None) -> None:
    """Print a team (``--json``: :func:`control.team_views.team_json` plus ``extra``)."""
    from control import team_views
    from control.output import emit

    data = team_views.team_json(view)
    data.update(extra or {})
    emit(data, as_json, lambda console: team_views.render_team(console, view, extra))
