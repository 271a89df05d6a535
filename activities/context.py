"""What a model job is told: instructions from the catalog profile and its context pack.

The instructions come from the reviewed catalog profile. The context is the job's pack
(:class:`contracts.context_packs.ContextPack`, built by :func:`build_pack`, rendered by
:func:`contracts.pack_text.render_pack`): objective, task, questions, evidence, repository paths,
findings under review (labelled as model output, kept apart from the evidence), what was left out, the
output contract and the stop rule. Jobs of runs started before packs carry no pack and get
:func:`build_context`. A request over 60 KiB fails explicitly; nothing is shortened.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from catalog.loader import load_catalog
from catalog.schema import Profile
from contracts.context_packs import ContextPack, EvidenceEntry, RepositoryContext
from contracts.enums import TaskType
from contracts.errors import OperatorError
from contracts.model_jobs import JobContext
from contracts.output import MAX_REQUEST_BYTES, JobKind, output_schema_text

_OUTPUT_RULES = (
    "Answer with one JSON object and nothing else, matching this JSON Schema. 'role' is your profile id; "
    "cite only the evidence ids listed in the context; 'confidence_band' is low below 0.4, medium below "
    "0.75, high otherwise."
)


_PATCH_RULES = (
    "Return the change itself in 'patch': one unified diff in git's format (each file starts with "
    "'diff --git a/PATH b/PATH'), against the repository at the base commit named in the context, "
    "text files only, at most 40 files, nothing under .git. It is applied with git in an isolated "
    "worktree; it must apply cleanly and pass 'git diff --check'. Change nothing the task does not need."
)


class RequestTooLarge(ValueError):
    """The request exceeds :data:`contracts.output.MAX_REQUEST_BYTES`."""


class ContractProfileUnavailable(ValueError):
    """The worker's catalog is not the contract's, or lacks the job's profile."""


def contract_profile(catalog_path: Path | None, catalog_sha256: str, profile_id: str) -> Profile:
    """The profile ``profile_id`` from the worker's catalog, which must be the contract's
    (``catalog_sha256``). Raises :class:`ContractProfileUnavailable` naming what differs."""
    try:
        catalog = load_catalog(catalog_path)
    except OperatorError as error:
        raise ContractProfileUnavailable(error.message) from None
    if catalog.sha256 != catalog_sha256:
        raise ContractProfileUnavailable(
            f"the worker's catalog ({catalog.sha256[:12]}) is not the contract's ({catalog_sha256[:12]})"
        )
    profile = catalog.profiles.get(profile_id)
    if profile is None:
        raise ContractProfileUnavailable(f"profile {profile_id!r} is not in the catalog")
    return profile


def build_instructions(profile: Profile, kind: JobKind, expects_patch: bool = False) -> str:
    """The system-side instructions for ``profile`` doing a job of ``kind`` (``expects_patch``: the
    change job of a worktree run, whose result carries a unified diff)."""
    if kind is JobKind.REVIEW:
        role = (
            "You are the independent reviewer. Check the findings under review against the task and "
            "the evidence; return a verdict: agree, disagree or insufficient_evidence."
        )
    elif expects_patch:
        role = (
            "You are the primary specialist. Make the smallest change that does the task, using only "
            "the evidence and files listed, and report findings on it."
        )
    else:
        role = "You are the primary specialist. Analyse the task using only the evidence listed."
    rules = [_OUTPUT_RULES, _PATCH_RULES] if expects_patch else [_OUTPUT_RULES]
    return "\n\n".join(
        [
            f"Profile: {profile.name} ({profile.id}).",
            profile.guidance,
            "Deliverables: " + "; ".join(profile.deliverables),
            "Limits: " + "; ".join(profile.risk_limits),
            role,
            "You have read-only access to what is given here. You cannot run commands, edit files or "
            "contact anyone.",
            *rules,
            output_schema_text(),
        ]
    )


def build_context(context: JobContext, kind: JobKind) -> str:
    """The user-side context: task, evidence ids, then (review only) findings under review."""
    parts = [
        "## Task",
        context.task,
        "## Evidence ids (original evidence)",
        "\n".join(f"- {ref}" for ref in context.evidence_refs) or "(none given)",
    ]
    if kind is JobKind.REVIEW:
        findings = [finding.model_dump(mode="json") for finding in context.findings_under_review]
        parts += [
            "## Findings under review (model output, not evidence; author withheld)",
            json.dumps(findings, indent=1, sort_keys=True),
        ]
    return "\n\n".join(parts)


def check_request_size(instructions: str, context: str) -> int:
    """The request size in bytes. Raises :class:`RequestTooLarge` over 60 KiB."""
    size = len(instructions.encode("utf-8")) + len(context.encode("utf-8"))
    if size > MAX_REQUEST_BYTES:
        raise RequestTooLarge(f"model request is {size} bytes; the limit is {MAX_REQUEST_BYTES}")
    return size


# ------------------------------------------------------------------------------------ context packs

STOP_RULE = (
    "Stop rather than widen scope: answer only from what this pack gives you. If it is not enough, say "
    "what is missing in 'gaps' and set 'closure' accordingly instead of assuming or asking for more."
)
_TASK_QUESTIONS: dict[TaskType, str] = {
    TaskType.INVESTIGATE: "What is the most likely cause, and which evidence supports it?",
    TaskType.FIX: "What is the smallest change that fixes it, and what could that change break?",
    TaskType.REVIEW: "What in the work under review is wrong or risky, and how severe is each point?",
    TaskType.AUDIT: "Which requirements are not met, and where does the evidence show it?",
    TaskType.RESEARCH: "What does the evidence establish, and what remains open?",
    TaskType.DOCUMENT: "What must the documentation say, for whom, and what is missing today?",
    TaskType.TEST: "Which behaviours are untested, and which tests would catch a regression?",
    TaskType.DESIGN: "Which design meets the constraints, and what are its trade-offs?",
}
_REVIEW_QUESTIONS = [
    "Is each finding under review supported by the evidence it cites?",
    "What did the findings under review miss or overstate?",
]


def sha256_text(text: str) -> str:
    """The sha256 hex digest of ``text`` in UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def objective(
    profile: Profile, kind: JobKind, title: str, task_type: TaskType | None, expects_patch: bool = False
) -> str:
    """One sentence: who does what to which work item."""
    work = f"{task_type.value} task" if task_type is not None else "task"
    if kind is JobKind.ANALYSIS and expects_patch:
        return (
            f"As {profile.name}, make the change the {work} “{title}” needs, as one unified diff, and "
            "report findings backed by its evidence."
        )
    if kind is JobKind.ANALYSIS:
        return f"As {profile.name}, analyse the {work} “{title}” and report findings backed by its evidence."
    return (
        f"As {profile.name}, independently review the findings on the {work} “{title}” against its "
        "evidence and give a verdict."
    )


def questions(kind: JobKind, task_type: TaskType | None, evidence_refs: list[str]) -> list[str]:
    """Concrete questions for the job: one for the task type, one per evidence ref, and for a review
    the two review questions."""
    asked = [_TASK_QUESTIONS[task_type or TaskType.INVESTIGATE]]
    asked += [f"What does {ref} show that bears on the task?" for ref in evidence_refs]
    if kind is JobKind.REVIEW:
        asked += _REVIEW_QUESTIONS
    return asked


def excluded_context(
    kind: JobKind,
    repository: RepositoryContext | None,
    files_unread_without_repository: bool,
    change_under_review: bool = False,
) -> list[str]:
    """What the pack deliberately leaves out, so the job (and the operator) can see the boundary."""
    left_out = ["other runs and their results", "commands, network access and write access of any kind"]
    if repository is not None:
        left_out.insert(0, "the content of files not named by a file: evidence ref (their paths only)")
        left_out.insert(1, "the repository's history, other branches and uncommitted changes")
        if repository.tracked_total > len(repository.tracked_paths):
            left_out.insert(
                2,
                f"tracked paths beyond the first {len(repository.tracked_paths)} "
                f"of {repository.tracked_total}",
            )
    if files_unread_without_repository:
        left_out.insert(
            0, "file: evidence content: the run names no allow-listed repository with a base commit"
        )
    if kind is JobKind.REVIEW:
        left_out.insert(0, "the author's profile, model, confidence and verdict (blinded review)")
    if change_under_review:
        left_out.insert(1, "the author's own patch text (the change is shown as git computed it)")
    return left_out


def output_contract(kind: JobKind, expects_patch: bool = False, *, probes: bool = False) -> str:
    """The output contract in one line (the full JSON Schema is in the instructions): a read_only
    analysis with a repository to run them in (``probes``) is told it may ask for probes
    (docs/architecture.md "Probe requests"); any other job that returns one breaks the contract."""
    fields = (
        "role, axis, inspected_evidence, findings (severity, title, evidence_refs, detail), confidence "
        "0..1 with its band, gaps, closure, recommended_next_action"
    )
    if kind is JobKind.REVIEW:
        fields += ", verdict (agree | disagree | insufficient_evidence)"
    if expects_patch:
        fields += ", patch (the change: one unified diff in git's format against the base commit)"
    elif kind is JobKind.ANALYSIS and probes:
        fields += (
            "; optionally probe_requests (at most 5): commands you would like an operator to run to test "
            "a hypothesis — hypothesis, argv (the exact argument vector, no shell), cwd (relative to the "
            "repository), inputs (stdin lines), expected_confirming, expected_falsifying, "
            "anticipated_effects. You never run them; an operator may approve one, and it then runs "
            "confined, without network, in a fresh worktree"
        )
    return f"One JSON object matching the SpecialistOutput JSON Schema: {fields}; at most 48 KiB."


def output_schema_sha256() -> str:
    """The sha256 of the output contract's JSON Schema as sent to models (sorted keys)."""
    return sha256_text(output_schema_text())


def build_pack(
    profile: Profile,
    kind: JobKind,
    context: JobContext,
    task_type: TaskType | None,
    evidence: list[EvidenceEntry],
    repository: RepositoryContext | None,
) -> ContextPack:
    """The context pack of one job. Pure: the evidence (already read) and repository come in.

    ``evidence`` has one entry per ref of ``context.evidence_refs``, in order.
    """
    unread_files = repository is None and any(entry.ref.startswith("file:") for entry in evidence)
    change = context.change if kind is JobKind.REVIEW else None
    expects_patch = context.expects_patch and kind is JobKind.ANALYSIS
    return ContextPack(
        job_kind=kind,
        profile_id=profile.id,
        profile_guidance_sha256=sha256_text(profile.guidance),
        objective=objective(profile, kind, context.title, task_type, expects_patch),
        task=context.task,
        questions=questions(kind, task_type, context.evidence_refs),
        evidence=evidence,
        repository=repository,
        findings_under_review=list(context.findings_under_review) if kind is JobKind.REVIEW else [],
        change=change,
        excluded=excluded_context(kind, repository, unread_files, change is not None),
        output_contract=output_contract(kind, expects_patch, probes=repository is not None),
        output_schema_sha256=output_schema_sha256(),
        stop_rule=STOP_RULE,
    )
