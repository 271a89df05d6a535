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


class SandboxControl(StrEnum):
    """What a pass may touch. ``text_only``: a model call over its frozen context pack — the model is
    offered no tool but the output contract, runs no command, opens no file and reaches no network;
    whatever it returns (a patch included) is untrusted data the run checks."""

    TEXT_ONLY = "text_only"


class ApprovalControl(StrEnum):
    """What a person must have approved before a pass runs. ``not_required``: a recommend or
    read_only run's passes change nothing; ``contract_digest``: an edit tier's passes run only after
    an approval of the exact contract digest (docs/architecture.md "Run lifecycle")."""

    NOT_REQUIRED = "not_required"
    CONTRACT_DIGEST = "contract_digest"


class PassControls(BaseModel):
    """The sandbox and approval controls of a pass: as the contract asks for them (``requested``) or
    as the run saw them when the pass was dispatched (``observed``: the approval recorded then, its
    actor and digest, and whether that digest is the contract's)."""

    model_config = ConfigDict(frozen=True)

    sandbox: SandboxControl = SandboxControl.TEXT_ONLY
    tools: list[str] = []
    """Tools the model may call beyond returning its answer: none, ever."""
    network: bool = False
    approval: ApprovalControl
    approved_by: str | None = None
    approved_digest: str | None = None
    digest_matches: bool | None = None


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
    controls_requested: PassControls | None = None
    controls_observed: PassControls | None = None
    """The pass's sandbox and approval controls, asked for and seen (None in records made before
    controls were recorded)."""


def pass_controls(
    *, edit_tier: bool, contract_sha256: str, approved_by: str | None, approved_digest: str | None
) -> tuple[PassControls, PassControls]:
    """The controls a pass runs under, requested and observed: text only, no tools, no network; an
    edit tier's (``edit_tier``) needs an approval of ``contract_sha256``, observed as the approval the
    run recorded (``approved_by`` and ``approved_digest``, or None when it has none)."""
    approval = ApprovalControl.CONTRACT_DIGEST if edit_tier else ApprovalControl.NOT_REQUIRED
    requested = PassControls(approval=approval, approved_digest=contract_sha256 if edit_tier else None)
    observed = PassControls(
        approval=approval,
        approved_by=approved_by,
        approved_digest=approved_digest,
        digest_matches=approved_digest == contract_sha256 if approved_digest is not None else None,
    )
    return requested, observed


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
