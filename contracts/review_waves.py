"""A run's review wave as it happened, and its consolidation (docs/architecture.md "Orchestration").

A wave's passes are its frozen roster (``OrchestrationDecision.roster``); each pass's context pack is
built and frozen before any pass is dispatched, passes are dispatched in descending pack size (the
profile id breaking ties) with at most :data:`MAX_PASSES_IN_FLIGHT` at once, and every pass is
joined before the consolidation. Outputs are evidence, not votes: :func:`consolidate` lists what the
passes agree on, where they conflict (left for the operator, who decides) and what is unresolved.
"""

from __future__ import annotations

import datetime as dt
from typing import Final

from pydantic import BaseModel, ConfigDict

from contracts.model_classes import ModelClass
from contracts.output import ReviewVerdict, SpecialistOutput
from contracts.pass_records import PassAttempt, PassControls, PassOutcome

__all__ = [
    "LEFT_FOR_THE_OPERATOR",
    "MAX_PASSES_IN_FLIGHT",
    "PassAttempt",
    "PassOutcome",
    "WaveConflict",
    "WaveConsolidation",
    "WavePass",
    "WaveRecord",
    "consolidate",
    "dispatch_order",
]

MAX_PASSES_IN_FLIGHT: Final = 4
LEFT_FOR_THE_OPERATOR: Final = "left for the operator"


class WavePass(BaseModel):
    """One pass of a wave: its place in the roster (``index``, from 1), profile, axes and questions,
    its child job, the frozen pack's sha256 and size (``None`` and 0 when its pack could not be
    built: the pass then fails without being dispatched), when it was dispatched (``dispatched``, from 1),
    how many times it was put back after a capacity refusal (``requeued``; its job id then ends
    ``-rN``) and how it ended. Its record: the axes it took in line for another profile
    (``substitutes``), the models it was given and every call it made (``attempts``: model, outcome,
    error, fallback), the sha256 of the guidance and of the output, and whether the record proves an
    independent review (``independent``, with the facts that prove it or the one that does not in
    ``independence``)."""

    model_config = ConfigDict(frozen=True)

    index: int
    profile: str
    axes: list[str]
    questions: list[str]
    job_id: str
    pack_sha256: str | None = None
    pack_bytes: int = 0
    dispatched: int | None = None
    requeued: int = 0
    started_at: dt.datetime | None = None
    finished_at: dt.datetime | None = None
    outcome: PassOutcome | None = None
    model_id: str | None = None
    output: SpecialistOutput | None = None
    error_type: str | None = None
    message: str | None = None
    # The pass's record (docs/architecture.md "Orchestration"): what it was given and what it did.
    substitutes: dict[str, str] = {}
    models_requested: list[str] = []
    model_class: ModelClass | None = None
    attempts: list[PassAttempt] = []
    guidance_sha256: str | None = None
    output_sha256: str | None = None
    independent: bool = False
    independence: list[str] = []
    controls_requested: PassControls | None = None
    controls_observed: PassControls | None = None


class WaveConflict(BaseModel):
    """Passes whose reviews disagree: who agrees, who does not, on what, and how it was settled."""

    model_config = ConfigDict(frozen=True)

    about: str
    agreeing: list[int]
    disagreeing: list[int]
    resolution: str = LEFT_FOR_THE_OPERATOR


class WaveConsolidation(BaseModel):
    """What the joined passes say together (each entry names its passes by roster index)."""

    model_config = ConfigDict(frozen=True)

    agreements: list[str]
    conflicts: list[WaveConflict]
    gaps: list[str]


class WaveRecord(BaseModel):
    """A run's review wave: its passes in roster order, the most passes that were ever in flight at
    once, and the consolidation (``None`` until every pass is joined)."""

    model_config = ConfigDict(frozen=True)

    passes: list[WavePass]
    max_in_flight: int = 0
    consolidation: WaveConsolidation | None = None


def dispatch_order(passes: list[WavePass]) -> list[int]:
    """Roster indexes in dispatch order: descending pack size, the profile id breaking ties (then
    the roster order)."""
    return [p.index for p in sorted(passes, key=lambda p: (-p.pack_bytes, p.profile, p.index))]


def _label(wave_pass: WavePass) -> str:
    return f"pass {wave_pass.index} ({wave_pass.profile} on {', '.join(wave_pass.axes)})"


def consolidate(passes: list[WavePass]) -> WaveConsolidation:
    """Agreements (passes that agree with the findings; findings more than one agreeing pass
    raises), conflicts (each pass that disagrees or finds the evidence insufficient — against the
    passes that agree, or against the primary's findings when none does — left for the operator)
    and gaps (passes that failed, and the gaps each pass names)."""
    done = [p for p in passes if p.outcome is PassOutcome.COMPLETED and p.output is not None]
    agreeing = [p for p in done if p.output is not None and p.output.verdict is ReviewVerdict.AGREE]
    agreements = [f"{_label(p)} agrees with the findings" for p in agreeing]
    raised: dict[str, list[int]] = {}
    for wave_pass in agreeing:
        assert wave_pass.output is not None
        for title in dict.fromkeys(f.title.strip().casefold() for f in wave_pass.output.findings):
            raised.setdefault(title, []).append(wave_pass.index)
    for title, indexes in raised.items():
        if len(indexes) > 1:
            agreements.append(f"passes {', '.join(map(str, indexes))} each raise {title!r}")
    conflicts = []
    for wave_pass in done:
        verdict = wave_pass.output.verdict if wave_pass.output is not None else None
        if verdict in (ReviewVerdict.AGREE, None):
            continue
        assert verdict is not None
        against = (
            ", ".join(f"pass {a.index}" for a in agreeing) + " agree"
            if agreeing
            else "no pass agrees with the primary's findings"
        )
        conflicts.append(
            WaveConflict(
                about=f"{_label(wave_pass)} says {verdict.value} where {against}",
                agreeing=[a.index for a in agreeing],
                disagreeing=[wave_pass.index],
            )
        )
    gaps = [
        f"{_label(p)}: no review ({p.error_type}: {p.message})"
        for p in passes
        if p.outcome is PassOutcome.FAILED
    ]
    gaps += [f"{_label(p)}: not dispatched ({p.message})" for p in passes if p.outcome is None and p.message]
    for wave_pass in done:
        assert wave_pass.output is not None
        gaps.extend(f"{_label(wave_pass)}: {gap}" for gap in wave_pass.output.gaps)
    return WaveConsolidation(agreements=agreements, conflicts=conflicts, gaps=gaps)
