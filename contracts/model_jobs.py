"""Model job contracts: the ``ModelJob`` child workflow's input and result, and one model call.

A model job is one primary analysis or one review, including its retries and fallbacks (DESIGN.md
"Run lifecycle"). The review job is blinded: it receives the task, the evidence and the primary's
findings only — never the author's profile, model, confidence or verdict.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from contracts.output import Finding, JobKind, SpecialistOutput
from contracts.runs import ModelSnapshot


class JobContext(BaseModel):
    """What the model sees: the task, evidence ids and, for a review, the findings under review."""

    model_config = ConfigDict(frozen=True)

    title: str
    task: str
    evidence_refs: list[str]
    findings_under_review: list[Finding] = []


class ModelJobInput(BaseModel):
    """Input of the ``ModelJob`` child workflow. ``job_id`` is the idempotency key of its calls."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    run_id: str
    kind: JobKind
    profile_id: str
    catalog_sha256: str
    context: JobContext
    model: ModelSnapshot
    max_attempts: int = 2


class ModelCallRequest(BaseModel):
    """Input of the ``call_model`` activity: one call to one model."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    kind: JobKind
    profile_id: str
    catalog_sha256: str
    context: JobContext
    model_id: str
    run_id: str = ""


class ModelCallResult(BaseModel):
    """A validated model result and the model that produced it."""

    model_config = ConfigDict(frozen=True)

    model_id: str
    output: SpecialistOutput


class ModelAttempt(BaseModel):
    """One model in the chain and how it ended: ``ok`` or the error type that ended it."""

    model_config = ConfigDict(frozen=True)

    model_id: str
    outcome: str
    error_type: str | None = None
    message: str | None = None
    fallback: bool = False


class ModelJobResult(BaseModel):
    """The job's validated output, the model that produced it and every attempt along the chain."""

    model_config = ConfigDict(frozen=True)

    output: SpecialistOutput
    model_id: str
    attempts: list[ModelAttempt]
