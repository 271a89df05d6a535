"""Context packs of research team jobs: the evidence and earlier results a job may see, read from the
store by reference and checked against their sha256.

What a job may see is decided by :func:`contracts.research_teams.job_visibility` (the workflow puts it
in ``JobContext.research``); this module only reads what that names and refuses anything whose content
no longer matches its recorded sha256. Factual records go in as original evidence; interpretive ones
apart, labelled as interpretation; earlier results apart, labelled as model output; a reviewer's
findings under review carry no author, confidence or verdict. Everything left out is listed.
"""

from __future__ import annotations

from activities.context import STOP_RULE, output_contract, output_schema_sha256, questions, sha256_text
from catalog.schema import Profile
from contracts.context_packs import ContextPack, EvidenceEntry, PriorResult
from contracts.enums import TaskType
from contracts.hashing import canonical_sha256
from contracts.model_jobs import JobContext
from contracts.output import JobKind, SpecialistOutput
from contracts.research import EvidenceRecord, JobOutputRecord
from contracts.research_teams import MAX_RESEARCH_OUTPUT_BYTES, JobOutputRef, ResearchJobContext

ALWAYS_EXCLUDED = (
    "deactivated evidence records of the case",
    "commands, network access and write access of any kind",
)


def research_output_contract(kind: JobKind, cites_results: bool) -> str:
    """The output contract of a research job: the general one, the result's size bound and, for a job
    shown earlier results, how to attribute to them."""
    parts = [
        output_contract(kind),
        f"A research result is at most {MAX_RESEARCH_OUTPUT_BYTES} bytes as compact JSON: be brief.",
    ]
    if cites_results:
        parts.append(
            "Attribute a point taken from an earlier stage result by citing its stored result id "
            "(as named in its heading) in evidence_refs, beside the evidence ids."
        )
    return " ".join(parts)


def _withheld_note(kind: JobKind, withheld: list[str]) -> list[str]:
    if kind is not JobKind.REVIEW or not withheld:
        return []
    return [
        "evidence ids the findings under review cite for records withheld from you (taken out of "
        f"their evidence_refs): {', '.join(withheld)}"
    ]


class ResearchInputChanged(ValueError):
    """A referenced evidence record or stored result is missing or no longer matches its sha256."""


def _entry(record: EvidenceRecord) -> EvidenceEntry:
    return EvidenceEntry(
        ref=record.evidence_id,
        content=record.content,
        size_bytes=len(record.content.encode("utf-8")),
        kind=record.kind.value,
        source_ref=record.source_ref,
        sha256=record.sha256,
    )


def _stored_output(ref: JobOutputRef, outputs: dict[str, JobOutputRecord]) -> SpecialistOutput:
    record = outputs.get(ref.job_id)
    if record is None:
        raise ResearchInputChanged(f"stored result {ref.job_id} is missing")
    if record.output_sha256 != ref.sha256:
        raise ResearchInputChanged(
            f"stored result {ref.job_id} is {record.output_sha256[:12]}, not {ref.sha256[:12]} as recorded"
        )
    output = SpecialistOutput.model_validate(record.output)
    if canonical_sha256(output.model_dump(mode="json")) != ref.sha256:
        raise ResearchInputChanged(f"stored result {ref.job_id} does not hash to its recorded sha256")
    return output


def build_research_pack(
    profile: Profile,
    kind: JobKind,
    context: JobContext,
    records: dict[str, EvidenceRecord],
    outputs: dict[str, JobOutputRecord],
) -> ContextPack:
    """The pack of one research job. Pure: the case's records and the team's stored outputs come in.

    ``context.research`` names what the job may see. Raises :class:`ResearchInputChanged` when a named
    record or result is missing or its content no longer matches the sha256 the team recorded.
    """
    research: ResearchJobContext | None = context.research
    assert research is not None
    factual: list[EvidenceEntry] = []
    interpretive: list[EvidenceEntry] = []
    for ref in research.evidence:
        record = records.get(ref.evidence_id)
        if record is None:
            raise ResearchInputChanged(f"evidence {ref.evidence_id} is not in case {research.case_id}")
        if record.sha256 != ref.sha256 or sha256_text(record.content) != ref.sha256:
            raise ResearchInputChanged(f"evidence {ref.evidence_id} no longer matches its recorded sha256")
        (factual if record.kind.factual else interpretive).append(_entry(record))
    prior = [
        PriorResult(
            job_id=ref.job_id,
            sha256=ref.sha256,
            stage=ref.stage,
            kind=ref.kind,
            profile_id=ref.profile_id,
            output=_stored_output(ref, outputs),
        )
        for ref in research.prior_results
    ]
    findings = []
    withheld: list[str] = []
    if kind is JobKind.REVIEW:
        if research.under_review is None:
            raise ResearchInputChanged("a review job names no findings under review")
        # The findings alone: Finding carries severity, title, evidence ids and detail — no author,
        # confidence or verdict, which stay in the stored output. Ids of records this job is not
        # shown are taken out of them (listed below), so it is never led to cite what it cannot see.
        shown = {ref.evidence_id for ref in research.evidence}
        findings_stored = _stored_output(research.under_review, outputs).findings
        findings = [
            finding.model_copy(update={"evidence_refs": [r for r in finding.evidence_refs if r in shown]})
            for finding in findings_stored
        ]
        cited = {r for finding in findings_stored for r in finding.evidence_refs}
        withheld = sorted(cited - shown)
    seen = [entry.ref for entry in [*factual, *interpretive]]
    if kind is JobKind.REVIEW:
        objective = (
            f"As {profile.name}, independently review the stage {research.stage} findings on "
            f"“{context.title}” against the original evidence and give a verdict."
        )
    else:
        objective = f"As {profile.name}, stage {research.stage} ({research.stage_name}): {research.focus}"
    return ContextPack(
        job_kind=kind,
        profile_id=profile.id,
        profile_guidance_sha256=sha256_text(profile.guidance),
        objective=objective,
        task=context.task,
        questions=questions(kind, TaskType.RESEARCH, seen),
        evidence=factual,
        interpretive=interpretive,
        prior_results=prior,
        findings_under_review=findings,
        excluded=[*research.omitted, *_withheld_note(kind, withheld), *ALWAYS_EXCLUDED],
        output_contract=research_output_contract(kind, bool(prior)),
        output_schema_sha256=output_schema_sha256(),
        stop_rule=STOP_RULE,
    )
