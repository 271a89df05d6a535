"""When a ``ResearchTeam`` waits for a person, and what that person may answer (docs/architecture.md
"Research team"). Pure helpers of ``workflows/research_team.py``.

A stage's review either settles it, records a limitation (``disagree`` on findings of at most medium
severity, or ``insufficient_evidence``), or — ``disagree`` where the analysis or the review reached
high or critical severity — is a material disagreement that waits for an adjudication. A blocked
stage waits too: retry the failed job, or stop.
"""

from __future__ import annotations

from contracts.errors import ErrorType
from contracts.output import ReviewVerdict
from contracts.refusals import RefusalCode
from contracts.research_teams import (
    BLOCK_OUTCOMES,
    MATERIAL_SEVERITIES,
    MAX_TEAM_JOBS,
    AdjudicateRequest,
    AdjudicationOutcome,
    JobOutputRef,
)

Awaiting = tuple[int, frozenset[AdjudicationOutcome]]
"""The stage a team waits on and the outcomes it takes."""


def is_material_disagreement(analysis: JobOutputRef, review: JobOutputRef) -> bool:
    """The review disagrees where the analysis or the review found high or critical severity."""
    return review.verdict is ReviewVerdict.DISAGREE and (
        analysis.max_severity in MATERIAL_SEVERITIES or review.max_severity in MATERIAL_SEVERITIES
    )


def limitation(number: int, review: JobOutputRef) -> str | None:
    """The limitation a ``disagree`` (not material) or ``insufficient_evidence`` review records on
    stage ``number``; ``None`` for a review that settles the stage."""
    if review.verdict is ReviewVerdict.DISAGREE:
        detail = " on findings of at most medium severity"
    elif review.verdict is ReviewVerdict.INSUFFICIENT_EVIDENCE:
        detail = ": the evidence does not settle the findings"
    else:
        return None
    return f"stage {number} reviewer ({review.profile_id}) returned {review.verdict.value}{detail}"


def adjudication_problem(
    team_id: str,
    status: str,
    request: AdjudicateRequest,
    *,
    stopping: bool,
    awaiting: Awaiting | None,
    answered: bool,
    jobs_used: int,
) -> tuple[str, str] | None:
    """Why ``request`` cannot be taken now (code, message), or ``None``: the team is being cancelled
    or stopped (``stopping``), waits on nothing or was answered already, waits on another stage,
    does not take that outcome, or has no job left for a retry."""
    if stopping:
        return (RefusalCode.CANCELLING, f"team {team_id} is being cancelled or has expired")
    if awaiting is None or answered:
        return (
            RefusalCode.NOT_AWAITING_ADJUDICATION,
            f"team {team_id} is {status}; only a team awaiting adjudication or blocked can be adjudicated",
        )
    stage, allowed = awaiting
    if request.stage != stage:
        return (RefusalCode.WRONG_STAGE, f"team {team_id} waits on stage {stage}, not stage {request.stage}")
    if request.outcome not in allowed:
        choices = " | ".join(sorted(outcome.value for outcome in allowed))
        what = "a blocked stage" if allowed == BLOCK_OUTCOMES else "a disagreement"
        return (
            RefusalCode.OUTCOME_NOT_ALLOWED,
            f"for {what} the outcome is one of {choices}, not {request.outcome.value}",
        )
    if request.outcome is AdjudicationOutcome.RETRY_STAGE and jobs_used >= MAX_TEAM_JOBS:
        return (
            ErrorType.JOB_BUDGET_EXHAUSTED,
            f"the team has used all {MAX_TEAM_JOBS} model jobs, so a retry would be job "
            f"{MAX_TEAM_JOBS + 1}; choose stop",
        )
    return None
