"""A context pack as the model reads it: the user side of a model request, and what ``show --pack``
prints. Pure text from a :class:`~contracts.context_packs.ContextPack`; untrusted content is fenced
with a fence longer than any backtick run inside it, and names are JSON-quoted so none can pose as a
heading of the pack."""

from __future__ import annotations

import json
import re

from contracts.context_packs import ContextPack, EvidenceEntry
from contracts.output import JobKind


def _fence(content: str) -> str:
    """A code fence longer than any run of backticks in ``content``, so file text cannot close it
    and pose as a section of the pack."""
    longest = max((len(run) for run in re.findall(r"`+", content)), default=0)
    return "`" * max(4, longest + 1)


def render_pack(pack: ContextPack) -> str:
    """The user-side text of a pack: objective, task, questions, evidence (file contents fenced and
    labelled), repository paths, findings under review (labelled as model output), exclusions, the
    output contract and the stop rule."""
    parts = ["## Objective", pack.objective, "## Task", pack.task, "## Questions"]
    parts.append("\n".join(f"{n}. {question}" for n, question in enumerate(pack.questions, 1)))
    parts.append("## Evidence (original evidence; cite these ids)")
    if not pack.evidence:
        parts.append("(none given)")
    parts += [_render_entry(entry) for entry in pack.evidence]
    if pack.interpretive:
        parts.append(
            "## Interpretive records (someone's reading of the evidence, not original evidence; "
            "weigh them against it; cite these ids)"
        )
        parts += [_render_entry(entry) for entry in pack.interpretive]
    if pack.prior_results:
        parts.append("## Earlier stage results (model output, not evidence)")
        for prior in pack.prior_results:
            # Compact JSON: the writer's request carries ten of these within the request bound.
            body = json.dumps(prior.output.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
            fence = _fence(body)
            parts.append(
                f"### Stage {prior.stage} {prior.kind.value} by {prior.profile_id} "
                f"(stored result {prior.job_id}, sha256 {prior.sha256})\n{fence}\n{body}\n{fence}"
            )
    if pack.repository is not None:
        repo = pack.repository
        parts.append(
            f"## Repository {repo.alias} at {repo.base_commit} "
            f"({len(repo.tracked_paths)} of {repo.tracked_total} tracked paths)"
        )
        parts.append("\n".join(repo.tracked_paths) or "(no tracked paths)")
    if pack.job_kind is JobKind.REVIEW:
        findings = [finding.model_dump(mode="json") for finding in pack.findings_under_review]
        parts += [
            "## Findings under review (model output, not evidence; author withheld)",
            json.dumps(findings, indent=1, sort_keys=True),
        ]
    if pack.change is not None:
        parts += _render_change(pack)
    parts += ["## Not given to you", "\n".join(f"- {item}" for item in pack.excluded)]
    parts += ["## Output", pack.output_contract, "## Stop rule", pack.stop_rule]
    return "\n\n".join(parts)


def _render_entry(entry: EvidenceEntry) -> str:
    """One evidence entry: its id (with kind and source for a research record) and fenced content."""
    label = entry.ref
    if entry.kind is not None:
        # The source is JSON-quoted: it is operator text and must not pose as a heading of the pack.
        label += f" [{entry.kind}] source {json.dumps(entry.source_ref)}"
    if entry.content is not None:
        fence = _fence(entry.content)
        return f"### {label} ({entry.size_bytes} bytes)\n{fence}\n{entry.content}\n{fence}"
    return f"### {label}\n({entry.note or 'reference only'})"


def _render_change(pack: ContextPack) -> list[str]:
    """The change under review as git computed it in the worktree: files, line counts, full diff."""
    change = pack.change
    assert change is not None
    # Paths are JSON-quoted: a name cannot break the line and pose as text of this section.
    files = "\n".join(
        f"- {entry.status.value} {json.dumps(entry.path)}"
        + (f" (from {json.dumps(entry.old_path)})" if entry.old_path else "")
        for entry in change.files
    )
    counts = "\n".join(
        f"- {json.dumps(entry.path)}: +{entry.added if entry.added is not None else '?'} "
        f"-{entry.deleted if entry.deleted is not None else '?'}"
        for entry in change.numstat
    )
    fence = _fence(change.diff)
    parts = [
        f"## The change under review (computed by git against {change.base_commit}; "
        "what really changed, not the author's description)",
        "### Files\n" + (files or "(none)"),
        "### Lines added and deleted\n" + (counts or "(none)"),
        f"### Diff (sha256 {change.diff_sha256})\n{fence}\n{change.diff}\n{fence}",
    ]
    if change.verification:
        parts.append(
            "## Verification (the repository's verify commands, run in the worktree after the change, "
            "without network; a non-zero exit is evidence, not a failure of the run)"
        )
        for number, result in enumerate(change.verification, 1):
            status = "killed" if result.exit_status is None else str(result.exit_status)
            section = [
                f"### Verify command {number}: {json.dumps(result.argv)}",
                f"exit status {status}, {result.duration_seconds:g} s",
            ]
            for name, text in (("stdout", result.stdout), ("stderr", result.stderr)):
                output_fence = _fence(text)
                section.append(f"{name}:\n{output_fence}\n{text}\n{output_fence}")
            parts.append("\n".join(section))
    return parts
