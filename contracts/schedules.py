"""Temporal Schedules of a deployment and the daily case analysis they start (docs/architecture.md
"Schedules"). Pure: no I/O.

Two schedule kinds, each one Temporal Schedule per task queue (id :func:`schedule_id`):

* ``case-sweep`` — the daily case analysis (workflow ``CaseSweep``): every research case in
  ``validation`` or ``ready_to_publish`` with a complete subject and active evidence gets an ordinary
  automatic, read_only, analysis-only ``SpecialistRun`` and its independent review; the completed
  summaries are attached once to the case as ``analyst_note`` evidence. It never decides a run, never
  moves a case and never starts a research team.
* ``intake-scan`` — intake scans over registered repositories, off by default. Its scan activity
  (:data:`SCAN_REPOSITORY_ACTIVITY`) is not in this version: the kind is known, listed and refused
  when enabled (``schedule_unavailable``).

A schedule carries the standing grant of the person who enabled it (:class:`ScheduleGrant`): their
signature of ``schedule_enable`` on the schedule id, bound to :func:`grant_digest` of what it runs.
The worker checks that signature against the actor's key in force before the sweep routes anything
and again when each run it starts is created, so the grant lapses when the actor is deactivated or
rotates their key.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from enum import StrEnum
from typing import Final

from pydantic import BaseModel, ConfigDict

from contracts.hashing import canonical_sha256
from contracts.proofs import ActionProof
from contracts.research import CaseStatus


class ScheduleKind(StrEnum):
    """The schedules a deployment may have (module docstring)."""

    CASE_SWEEP = "case-sweep"
    INTAKE_SCAN = "intake-scan"


AVAILABLE_KINDS: Final = frozenset({ScheduleKind.CASE_SWEEP})
"""Kinds whose workflow this version registers; the others are listed and refused when enabled."""

DEFAULT_INTERVALS: Final[dict[ScheduleKind, dt.timedelta]] = {
    ScheduleKind.CASE_SWEEP: dt.timedelta(days=1),
    ScheduleKind.INTAKE_SCAN: dt.timedelta(days=1),
}
MIN_INTERVAL: Final = dt.timedelta(minutes=1)
MAX_INTERVAL: Final = dt.timedelta(days=30)

SCHEDULE_ENABLE_ACTION: Final = "schedule_enable"
"""The action a person signs to enable a schedule: their standing grant for what it starts."""

SCAN_REPOSITORY_ACTIVITY: Final = "scan_repository"
"""The intake scan activity the ``intake-scan`` kind will call per repository alias (goal queue
``queue scan``); not registered by this version."""

CASE_SWEEP_RUN_PREFIX: Final = "case-sweep"
"""What the request id of a sweep's run starts with (:func:`sweep_run_request_id`)."""

_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def schedule_id(kind: ScheduleKind, task_queue: str) -> str:
    """The Temporal Schedule id of ``kind`` on ``task_queue`` (one per deployment and task queue)."""
    return f"{kind.value}-{task_queue}"


def parse_interval(text: str) -> dt.timedelta:
    """``30m``, ``6h``, ``1d``, ``90s`` → a duration in 1 minute .. 30 days; raises ``ValueError``."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"interval {text!r} must be a number and a unit: s, m, h or d (e.g. 1d, 6h)")
    interval = dt.timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2)])
    if not MIN_INTERVAL <= interval <= MAX_INTERVAL:
        raise ValueError(f"interval {text!r} must be between 1m and 30d")
    return interval


def grant_digest(schedule: str, kind: ScheduleKind, interval_seconds: int) -> str:
    """What a schedule grant's signature is bound to: the schedule, its kind and its interval."""
    return canonical_sha256({"schedule": schedule, "kind": kind.value, "interval_seconds": interval_seconds})


class ScheduleGrant(BaseModel):
    """The standing grant a schedule carries: ``granted_by``'s signature (``proof``) of
    :data:`SCHEDULE_ENABLE_ACTION` on ``schedule_id`` bound to ``digest`` (:func:`grant_digest`)."""

    model_config = ConfigDict(frozen=True)

    schedule_id: str
    kind: ScheduleKind
    interval_seconds: int
    granted_by: str
    proof: ActionProof
    digest: str


class CaseSweepInput(BaseModel):
    """Workflow input of ``CaseSweep`` (the schedule's action): the grant it runs under and the task
    queue its runs use."""

    model_config = ConfigDict(frozen=True)

    grant: ScheduleGrant
    task_queue: str


class CaseGrant(BaseModel):
    """What authorises the create of a run the daily case analysis started (``RunInput.case_grant``):
    the schedule's grant, the sweep execution that started it (the run accepts it only as that
    workflow's child) and the case it analyses."""

    model_config = ConfigDict(frozen=True)

    grant: ScheduleGrant
    sweep_workflow_id: str
    case_id: str


class SweepCasesRequest(BaseModel):
    """Input of activity ``list_sweep_cases``."""

    model_config = ConfigDict(frozen=True)

    sweep_workflow_id: str


class SweepCase(BaseModel):
    """One case the sweep routes: the run it starts for it (``run_id``, derived from the case and its
    factual evidence digest) and that run's work item fields."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    status: CaseStatus
    factual_digest: str
    run_id: str
    request_id: str
    title: str
    description: str
    evidence_refs: list[str]


class SweepSkip(BaseModel):
    """A case the sweep did not route, and why (``status``, ``subject``, ``no_active_evidence``,
    ``no_factual_evidence``, ``policy``)."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    reason: str
    detail: str = ""


class SweepCases(BaseModel):
    """Output of ``list_sweep_cases``: the cases to route, oldest first, and those skipped."""

    model_config = ConfigDict(frozen=True)

    cases: list[SweepCase]
    skipped: list[SweepSkip]


class AttachNotesRequest(BaseModel):
    """Input of activity ``attach_case_notes``: wait for run ``run_id`` (of case ``case_id``) to have
    its analysis and review, then attach both once as ``analyst_note`` evidence by ``granted_by``."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    run_id: str
    granted_by: str
    wait_seconds: int = 3600


class AttachNotesResult(BaseModel):
    """Output of ``attach_case_notes``: the run's status when it was read, the notes attached now and
    those found attached already (evidence ids), or why none could be (``reason``)."""

    model_config = ConfigDict(frozen=True)

    run_status: str | None
    attached: list[str] = []
    existing: list[str] = []
    reason: str = ""


class SweepOutcome(BaseModel):
    """One routed case in the sweep's result."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    run_id: str
    started: bool
    run_status: str | None
    notes_attached: list[str]
    notes_existing: list[str]
    reason: str = ""


class CaseSweepResult(BaseModel):
    """Output of ``CaseSweep``: what it routed and what it skipped."""

    model_config = ConfigDict(frozen=True)

    routed: list[SweepOutcome]
    skipped: list[SweepSkip]
    refused: str = ""


def sweep_run_request_id(case_id: str, factual_digest: str) -> str:
    """The request id of a sweep's run: one per case and factual evidence digest, so every sweep
    (a rerun, an overlap) derives the same run id and never starts a second run for it."""
    return f"{CASE_SWEEP_RUN_PREFIX}:{case_id}:{factual_digest}"


def note_evidence_id(case_id: str, run_id: str, summary: str) -> str:
    """The deterministic id of the ``analyst_note`` a sweep attaches for ``summary`` (``analysis`` or
    ``review``) of ``run_id``: the same (case, run, summary) always names the same record."""
    digest = hashlib.sha256(f"analyst-note:{case_id}:{run_id}:{summary}".encode()).hexdigest()
    value = int(digest[:16], 16)
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    chars = []
    for _ in range(12):
        value, index = divmod(value, 36)
        chars.append(alphabet[index])
    return "EVD-" + "".join(chars)
