"""A ``ResearchTeam``'s stage jobs: what each ``ModelJob`` child is given — decided by
:func:`contracts.research_teams.job_visibility`, by reference — and what the team audits of it
(docs/architecture.md "Research team"). Pure helpers of ``workflows/research_team.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from contracts.enums import TaskType
from contracts.errors import ErrorType
from contracts.failures import ModelJobFailureDetail
from contracts.model_classes import ModelClass
from contracts.model_jobs import JobContext, ModelJobInput, ModelJobResult
from contracts.output import JobKind
from contracts.research_teams import (
    MAX_TEAM_JOBS,
    WRITER_STAGE,
    JobOutputRef,
    ResearchJobContext,
    StageAssignment,
    StageBlock,
    StageRecord,
    TeamCapture,
    job_visibility,
)


@dataclass(frozen=True)
class StageJob:
    """One stage job: the child's input, what it may see, and the stage record's changes (what its
    jobs were not shown, which stored results the writer drew on, how many jobs the stage ran)."""

    job: ModelJobInput
    visibility: ResearchJobContext
    stage_changes: dict[str, Any]


def stage_job(
    team_id: str,
    capture: TeamCapture,
    assignment: StageAssignment,
    kind: JobKind,
    stages: list[StageRecord],
    job_number: int,
) -> StageJob:
    """The team's ``job_number``-th job: stage ``assignment``'s analysis or its blinded review."""
    spec = assignment.spec
    number = spec.number
    visibility = job_visibility(
        team_id=team_id,
        case_id=capture.case_id,
        stage=spec,
        kind=kind,
        evidence=capture.evidence,
        analyses=[(s.number, s.analysis) for s in stages if s.analysis is not None],
        reviews=[(s.number, s.review) for s in stages if s.review is not None],
    )
    job = ModelJobInput(
        job_id=f"{team_id}-s{number}-{kind.value}-{job_number}",
        run_id=team_id,
        kind=kind,
        profile_id=spec.profile_id if kind is JobKind.ANALYSIS else assignment.reviewer_id,
        catalog_sha256=capture.catalog_sha256,
        context=JobContext(
            title=f"{capture.subject_title} (stage {number})",
            task=_task(capture, spec.focus, number, kind),
            # Earlier results it is shown may be cited too (attribution), by their stored ids.
            evidence_refs=[
                *(ref.evidence_id for ref in visibility.evidence),
                *(ref.job_id for ref in visibility.prior_results),
            ],
            research=visibility,
        ),
        model=capture.model,
        model_class=ModelClass.CORE,  # research method is core work
        effort=capture.model.effort_for(ModelClass.CORE),
        task_type=TaskType.RESEARCH,
    )
    stage = stages[number - 1]
    drew_on = (
        [ref.job_id for ref in visibility.prior_results]
        if number == WRITER_STAGE and kind is JobKind.ANALYSIS
        else stage.drew_on
    )
    return StageJob(
        job=job,
        visibility=visibility,
        stage_changes={
            "omitted": {**stage.omitted, kind.value: visibility.omitted},
            "drew_on": drew_on,
            "jobs": stage.jobs + 1,
        },
    )


def _task(capture: TeamCapture, focus: str, number: int, kind: JobKind) -> str:
    """The task a stage's job is given: the case subject and the stage's focus (or, for its review,
    what to check)."""
    subject = f"{capture.subject_kind} {capture.subject_identifier}: {capture.subject_title}"
    if kind is JobKind.REVIEW:
        return (
            f"Research case {capture.case_id} ({subject}). Independently check the findings of stage "
            f"{number} against the original evidence."
        )
    return f"Research case {capture.case_id} ({subject}). Stage {number}: {focus}"


def refused_job(number: int, kind: JobKind, jobs_used: int) -> tuple[dict[str, Any], StageBlock]:
    """A job beyond the team's 12: the ``job_refused`` audit data and the block it causes."""
    data = {"stage": number, "kind": kind.value, "jobs_used": jobs_used, "limit": MAX_TEAM_JOBS}
    block = StageBlock(
        stage=number,
        kind=kind,
        error_type=ErrorType.JOB_BUDGET_EXHAUSTED,
        message=f"the team has used all {MAX_TEAM_JOBS} model jobs; job {MAX_TEAM_JOBS + 1} is refused",
    )
    return data, block


def started_data(number: int, stage_job: StageJob, jobs_used: int) -> dict[str, Any]:
    """The ``model_job_started`` audit data: who, with which models, shown what (by id)."""
    job, visibility = stage_job.job, stage_job.visibility
    return {
        "stage": number,
        "kind": job.kind.value,
        "job_id": job.job_id,
        "profile": job.profile_id,
        "models": job.model.chain,
        "evidence": [ref.evidence_id for ref in visibility.evidence],
        "prior_results": [ref.job_id for ref in visibility.prior_results],
        "omitted": len(visibility.omitted),
        "jobs_used": jobs_used,
    }


def failed_data(
    number: int, job: ModelJobInput, error_type: str, message: str, detail: ModelJobFailureDetail
) -> dict[str, Any]:
    """The ``model_job_failed`` audit data: the error and every attempt."""
    return {
        "stage": number,
        "kind": job.kind.value,
        "job_id": job.job_id,
        "error_type": error_type,
        "message": message,
        "attempts": detail.attempts_data(),
    }


def completed_data(number: int, kind: JobKind, ref: JobOutputRef, result: ModelJobResult) -> dict[str, Any]:
    """The ``model_job_completed`` audit data: the stored output by reference, never its text."""
    return {
        "stage": number,
        "kind": kind.value,
        "job_id": ref.job_id,
        "output_sha256": ref.sha256,
        "pack_sha256": result.pack_sha256,
        "model": ref.model_id,
        "attempts": [attempt.model_dump(mode="json") for attempt in result.attempts],
        "findings": ref.findings,
        "max_severity": enum_value(ref.max_severity),
        "verdict": enum_value(ref.verdict),
    }


def enum_value(member: Enum | None) -> str | None:
    """An enum member's value for the audit data (``None`` stays ``None``)."""
    return None if member is None else str(member.value)
