"""Research in Mission Control (docs/architecture.md "Research team", "Mission Control"): the cases and
teams, one team with each stage's result, review, limitations, adjudication and omissions, and the
person's moves — adjudicate the disagreement or block a team waits on, stop a team — made through
:mod:`control.research_teams` exactly as ``specialists research`` makes them, signed by the
session key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from contracts.errors import InvalidInput, Refused
from contracts.refusals import RefusalCode
from contracts.research_teams import AdjudicationOutcome
from control.notes import form_note

if TYPE_CHECKING:
    from control.web.console import Deployment
    from control.web.sessions import Session

OUTCOMES: Final = tuple(outcome.value for outcome in AdjudicationOutcome)


async def overview(deployment: Deployment) -> dict[str, Any]:
    """The research cases (from the store) and the teams (from Temporal's visibility), newest first."""
    from control import team_views
    from control.research_teams import list_teams

    store = deployment.store()
    cases: list[dict[str, Any]] = []
    if store is not None:
        with store:
            cases = [
                {
                    "case_id": case.case_id,
                    "subject": case.subject.model_dump(mode="json"),
                    "created_by": case.created_by,
                    "created_at": case.created_at.isoformat(),
                    "evidence": len(case.evidence),
                }
                for case in store.list_cases()
            ]
    teams = await list_teams(await deployment.client(), None, None)
    return {"cases": cases, **team_views.teams_json(teams)}


async def team(deployment: Deployment, team_id: str) -> dict[str, Any]:
    """One team as ``team-show --json`` shows it, with ``results`` as ``team-results --json``."""
    from control import team_views
    from control.research_teams import check_team_id, get_team

    check_team_id(team_id)
    view = await get_team(await deployment.client(), team_id)
    refs = [ref for stage in view.stages for ref in (stage.analysis, stage.review) if ref is not None]
    outputs: dict[str, Any] = {}
    store = deployment.store()
    if store is not None:
        with store:
            outputs = {record.job_id: record for record in store.team_job_outputs(team_id)}
    results = team_views.results_json(view, {ref.job_id: outputs.get(ref.job_id) for ref in refs})
    return {
        **team_views.team_json(view),
        "needs_person": view.status.needs_person,
        "final": view.status.final,
        "results": results,
    }


async def adjudicate(
    deployment: Deployment, session: Session, team_id: str, stage: str, outcome: str, note: str
) -> None:
    """Record the person's outcome for the stage the team waits on (the team refuses a wrong stage or
    an outcome the wait does not take)."""
    from contracts.research_teams import AdjudicateRequest, adjudication_digest
    from control.research_teams import adjudicate_team, check_team_id, get_team

    check_team_id(team_id)
    if not stage.isdigit() or not 1 <= int(stage) <= 6:
        raise InvalidInput("invalid_stage", "the stage is 1..6")
    try:
        chosen = AdjudicationOutcome(outcome)
    except ValueError:
        raise InvalidInput("unknown_outcome", f"the outcome is one of {', '.join(OUTCOMES)}") from None
    note = form_note(note)
    client = await deployment.client()
    before = await get_team(client, team_id)
    if before.status.final:
        raise Refused(
            RefusalCode.TEAM_FINISHED, f"team {team_id} is {before.status.value}: it takes no adjudication"
        )
    number = int(stage)
    proof = session.proof(action="adjudicate", target=team_id, digest=adjudication_digest(number, chosen))
    request = AdjudicateRequest(actor=session.actor, stage=number, outcome=chosen, note=note, proof=proof)
    await adjudicate_team(client, team_id, request)


async def stop(deployment: Deployment, session: Session, team_id: str, reason: str) -> None:
    """Cancel the team: no further stage starts."""
    from contracts.research_teams import TeamCancelRequest
    from control.research_teams import cancel_team, check_team_id

    check_team_id(team_id)
    reason = form_note(reason)
    proof = session.proof(action="team_cancel", target=team_id)
    await cancel_team(
        await deployment.client(), team_id, TeamCancelRequest(actor=session.actor, reason=reason, proof=proof)
    )
