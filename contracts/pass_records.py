"""The record of every model pass a run makes (docs/architecture.md "Orchestration"): what the pass
was given, what it did, and whether the record proves an independent review. The analysis, change
and single-review jobs of a run are in ``RunView.passes``; a review wave's passes carry the same
facts in ``RunView.wave``."""

from __future__ import annotations

import datetime as dt
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from contracts.model_classes import ModelClass, ReasoningEffort
from contracts.output import JobKind

PRIMARY_PASS = "the primary's own pass: it makes the findings, it does not review them"


class PassOutcome(StrEnum):
    """``completed``: the pass's answer came back; ``failed``: it did not (its error says why)."""

    COMPLETED = "completed"
    FAILED = "failed"


class PassAttempt(BaseModel):
    """One call a pass's job made: the model, ``ok`` or the error type that ended it, whether it
    moved the job to the next model of its chain, and the reasoning effort asked and observed."""

    model_config = ConfigDict(frozen=True)

    model_id: str
    outcome: str
    error_type: str | None = None
    fallback: bool = False
    effort_requested: ReasoningEffort | None = None
    reasoning_tokens: int | None = None
    reasoning_observed: bool | None = None
    """The reasoning effort the call asked for and what its answer showed of reasoning (tokens
    reported, any shown at all; None: the provider shows neither way)."""


class PassRecord(BaseModel):
    """One model job of a run: its job, kind and profile, the models it was given and every call it
    made, the sha256 of its pack, of the guidance in it and of its output, when it ran, how it ended,
    and ``independent`` with the facts that prove it (or the one that does not) in ``independence``."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    kind: JobKind
    profile: str
    models_requested: list[str]
    model_class: ModelClass | None = None
    """The class whose pool its calls drew on (``contracts.model_classes``)."""
    started_at: dt.datetime
    finished_at: dt.datetime | None = None
    outcome: PassOutcome | None = None
    error_type: str | None = None
    model_id: str | None = None
    attempts: list[PassAttempt] = []
    pack_sha256: str | None = None
    guidance_sha256: str | None = None
    output_sha256: str | None = None
    independent: bool = False
    independence: list[str] = []


def review_independence(
    profile: str, primary: str, job_id: str, pack_kind: str | None, pack_sha256: str | None, *, frozen: bool
) -> tuple[bool, list[str]]:
    """Whether a review's record proves it independent, and the facts it rests on: a profile other
    than the primary's, a job of its own, a review pack (the author's profile, model and verdict
    withheld) and that pack recorded (``frozen``: frozen before dispatch, as a wave's are)."""
    if profile == primary:
        return False, [f"made by the primary's profile {primary}"]
    facts = [f"made by {profile}, not the primary {primary}", f"its own job {job_id}"]
    if pack_kind != "review":
        return False, [*facts, f"its pack is a {pack_kind or 'missing'} pack, not a review pack"]
    facts.append("a review pack: the author's profile, model and verdict withheld")
    if pack_sha256 is None:
        return False, [*facts, "no pack was recorded"]
    facts.append(f"the pack {'frozen before dispatch' if frozen else 'its job built'} ({pack_sha256})")
    return True, facts
