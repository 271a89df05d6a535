"""Context packs: what a model job is told, built from the catalog profile and the job context.

The instructions come from the reviewed catalog profile; the context carries the task and evidence
ids and — for a review — the findings under review, labelled as model output and kept apart from the
evidence. A request over 60 KiB fails explicitly; nothing is shortened.
"""

from __future__ import annotations

import json

from catalog.schema import Profile
from contracts.model_jobs import JobContext
from contracts.output import MAX_REQUEST_BYTES, JobKind, SpecialistOutput

_OUTPUT_RULES = (
    "Answer with one JSON object and nothing else, matching this JSON Schema. 'role' is your profile id; "
    "cite only the evidence ids listed in the context; 'confidence_band' is low below 0.4, medium below "
    "0.75, high otherwise."
)


class RequestTooLarge(ValueError):
    """The request exceeds :data:`contracts.output.MAX_REQUEST_BYTES`."""


def build_instructions(profile: Profile, kind: JobKind) -> str:
    """The system-side instructions for ``profile`` doing a job of ``kind``."""
    role = (
        "You are the primary specialist. Analyse the task using only the evidence listed."
        if kind is JobKind.ANALYSIS
        else "You are the independent reviewer. Check the findings under review against the task and "
        "the evidence; return a verdict: agree, disagree or insufficient_evidence."
    )
    schema = json.dumps(SpecialistOutput.model_json_schema(), sort_keys=True)
    return "\n\n".join(
        [
            f"Profile: {profile.name} ({profile.id}).",
            profile.guidance,
            "Deliverables: " + "; ".join(profile.deliverables),
            "Limits: " + "; ".join(profile.risk_limits),
            role,
            "You have read-only access to what is given here. You cannot run commands, edit files or "
            "contact anyone.",
            _OUTPUT_RULES,
            schema,
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
