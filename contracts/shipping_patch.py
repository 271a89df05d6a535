"""Which patch of an accepted run is shipped, and its sha256 (docs/architecture.md "Shipping"): a
pr_ready run's complete patch file, else a worktree run's diff against its base commit (inline or
stored by reference). The CLI signs the sha256 this names; the worker ships only bytes with it."""

from __future__ import annotations

from dataclasses import dataclass

from contracts.execution import ExecutionRecord
from contracts.queue_items import QueueItem


@dataclass(frozen=True)
class ReviewedPatch:
    """The reviewed patch: its sha256, the commit it applies to, and where its bytes are (``inline``
    text, or a file ``path`` on the worker host that made it)."""

    sha256: str
    base_commit: str
    inline: str | None
    path: str | None


def reviewed_patch(execution: ExecutionRecord | None) -> ReviewedPatch | None:
    """The patch a ship of the run applies, or ``None`` when the run changed nothing."""
    if execution is None or execution.evidence is None:
        return None
    evidence = execution.evidence
    if execution.pr_patch is not None:
        return ReviewedPatch(execution.pr_patch.sha256, evidence.base_commit, None, execution.pr_patch.path)
    if evidence.files_changed == 0:
        return None
    path = None if evidence.diff_path is None else str(evidence.diff_path)
    return ReviewedPatch(evidence.diff_sha256, evidence.base_commit, evidence.diff, path)


def accepted_run(item: QueueItem) -> str | None:
    """The run a done item was accepted with: its last review round's, else its last run's."""
    rounds = item.cycle_rounds()
    if rounds:
        return rounds[-1].run_id
    return item.runs[-1].run_id if item.runs else None
