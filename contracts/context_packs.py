"""Context packs: exactly what one model job is given, built once per job by an activity.

A pack holds the objective (one sentence), the relevant evidence only (for a code task the files named
by ``file:PATH`` evidence refs, read at the contract's base commit, and a bounded list of the
repository's tracked paths), the context deliberately excluded, concrete questions, the output
contract, a stop rule and the sha256 of the profile guidance the job was given. Its sha256 (RFC 8785
canonical JSON) is in the job's audit event; ``show --pack`` displays it. Nothing in a pack is ever
shortened: evidence that cannot fit fails the job (``request_too_large``), naming the sizes.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from contracts.execution import ChangeUnderReview
from contracts.output import Finding, JobKind, SpecialistOutput

MAX_TRACKED_PATHS = 200
"""How many of a repository's tracked paths a pack lists (it says how many there are in all)."""


class EvidenceEntry(BaseModel):
    """One evidence ref and what the pack carries for it: a file's text at the base commit, or the ref
    alone (with ``note`` saying why there is no content)."""

    model_config = ConfigDict(frozen=True)

    ref: str
    content: str | None = None
    size_bytes: int | None = None
    note: str | None = None
    kind: str | None = None
    source_ref: str | None = None
    sha256: str | None = None


class PriorResult(BaseModel):
    """An earlier research stage's stored output as a later stage is shown it: labelled model output,
    named by its job id and sha256."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    sha256: str
    stage: int
    kind: JobKind
    profile_id: str
    output: SpecialistOutput


class RepositoryContext(BaseModel):
    """The repository a code task works on: alias, frozen base commit and tracked paths (the first
    :data:`MAX_TRACKED_PATHS` of ``tracked_total``)."""

    model_config = ConfigDict(frozen=True)

    alias: str
    base_commit: str
    tracked_paths: list[str]
    tracked_total: int


class ContextPack(BaseModel):
    """What one model job sees (see the module docstring). ``findings_under_review`` is set for a
    review job only: the primary's findings, labelled as model output and without their author;
    ``change`` for the review of a worktree run: the change as git computed it. A research job's pack
    may add ``interpretive`` records (someone's reading of the evidence, never shown to the skeptical
    stage or a reviewer) and ``prior_results`` (earlier stages' outputs, labelled as model output);
    its ``evidence`` entries carry their kind, source and sha256."""

    model_config = ConfigDict(frozen=True)

    job_kind: JobKind
    profile_id: str
    profile_guidance_sha256: str
    objective: str
    task: str
    questions: list[str]
    evidence: list[EvidenceEntry]
    repository: RepositoryContext | None = None
    findings_under_review: list[Finding] = []
    change: ChangeUnderReview | None = None
    interpretive: list[EvidenceEntry] = []
    prior_results: list[PriorResult] = []
    excluded: list[str]
    output_contract: str
    output_schema_sha256: str
    stop_rule: str


class ContextPackResult(BaseModel):
    """The built pack, its sha256 and the size in bytes of the model request it renders to."""

    model_config = ConfigDict(frozen=True)

    pack: ContextPack
    sha256: str
    request_bytes: int
