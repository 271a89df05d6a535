"""What the Temporal UI shows of each workflow: a one-line static summary set when it starts and
current details that follow its status (docs/architecture.md "What the Temporal UI shows"). Pure
and deterministic: the workflows call the detail functions, the starters the summary ones.

The UI renders both as markdown, and titles are operator text, so every value taken from outside is
made inert: control and format characters become spaces, markdown's punctuation is escaped and
whitespace collapses to one line. A summary longer than :data:`MAX_SUMMARY_CHARS` ends in ``…``
(visibly shortened: it is a label, the full title is in the memo and every view).
"""

from __future__ import annotations

import unicodedata
from typing import Final

MAX_SUMMARY_CHARS: Final = 160
_MARKDOWN: Final = frozenset("\\`*_{}[]()<>#+-.!|~")


def inert(value: str) -> str:
    """``value`` as one line of inert markdown (see the module docstring); never shortened."""
    chars = []
    for char in value:
        if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
            chars.append(" ")
        elif char in _MARKDOWN:
            chars.append("\\" + char)
        else:
            chars.append(char)
    return " ".join("".join(chars).split())


def _label(text: str) -> str:
    if len(text) <= MAX_SUMMARY_CHARS:
        return text
    cut = text[: MAX_SUMMARY_CHARS - 1]
    if cut.endswith("\\") and not cut.endswith("\\\\"):
        cut = cut[:-1]  # never leave half an escape
    return cut + "…"


def run_summary(title: str, tier: str | None, item_key: str | None = None) -> str:
    """A run's static summary: its title, the tier asked for (``automatic`` without one) and, for a
    goal-queue run, its item's key."""
    asked = tier or "automatic"
    prefix = f"{inert(item_key)} · " if item_key else ""
    return _label(f"{prefix}{inert(title)} · {inert(asked)}")


def team_summary(case_id: str, actor: str) -> str:
    """A research team's static summary: its case and who started it."""
    return _label(f"research team on case {inert(case_id)} · started by {inert(actor)}")


def queue_summary(task_queue: str) -> str:
    """The goal queue's static summary."""
    return _label(f"goal queue of task queue {inert(task_queue)}")


def model_job_summary(kind: str, profile: str, title: str) -> str:
    """A model job's static summary: which job (analysis, review, change), by which profile, for
    which work item."""
    return _label(f"{inert(kind)} by {inert(profile)} · {inert(title)}")


_WAITS: Final = {
    "ready": ("a person's enqueue", "an active registered actor (`specialists enqueue RUN`)"),
    "awaiting_approval": (
        "a person's approval of the contract digest",
        "an active registered human (`specialists approve RUN --contract-sha256 H`)",
    ),
    "approved": ("a person's execute", "an active registered human (`specialists execute RUN`)"),
    "awaiting_decision": (
        "a person's decision on the reviewed result",
        "an active registered human (`specialists decide RUN`), or its goal queue",
    ),
    "queued": ("a free model slot", "nobody: the model ceiling admits it"),
}


def run_details(status: str, tier: str | None, primary: str | None) -> str:
    """A run's current details: its status, tier and primary, what it waits for and who may act."""
    lines = [f"**status** {inert(status)}"]
    if tier is not None:
        lines.append(f"**tier** {inert(tier)}" + (f" · **primary** {inert(primary)}" if primary else ""))
    waits = _WAITS.get(status)
    if waits is not None:
        lines.append(f"**waits for** {waits[0]}; **who may act** {waits[1]}")
    return "\n".join(lines)


def team_details(status: str, stage: int, stages: int) -> str:
    """A research team's current details: its status and how far its stages are."""
    return f"**status** {inert(status)}\n**stage** {stage} of {stages}"


def queue_details(occupied: int, slots: int, autopilot: bool, counts: dict[str, int]) -> str:
    """The goal queue's current details: the fleet line, the autopilot and the items by status."""
    shown = ", ".join(f"{inert(status)} {n}" for status, n in counts.items() if n) or "no items"
    fleet = f"**fleet** {occupied}/{slots} slots · **autopilot** {'on' if autopilot else 'off'}"
    return f"{fleet}\n**items** {shown}"


def model_job_details(kind: str, profile: str, state: str) -> str:
    """A model job's current details: which job, by which profile, and where it is."""
    return f"**{inert(kind)}** by {inert(profile)} · {inert(state)}"
