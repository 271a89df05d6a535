"""Temporal Schedules of a deployment and the daily case analysis they start (docs/architecture.md
"Schedules"). Pure: no I/O.

Two schedule kinds, each one Temporal Schedule per task queue (id :func:`schedule_id`):

* ``case-sweep`` — the daily case analysis (workflow ``CaseSweep``): every research case in
  ``validation`` or ``ready_to_publish`` with a complete subject and active evidence gets an ordinary
  automatic, read_only, analysis-only ``SpecialistRun`` and its independent review; the completed
  summaries are attached once to the case as ``analyst_note`` evidence. It never decides a run, never
  moves a case and never starts a research team.
* ``intake-scan`` — intake scans over registered repositories, off by default (workflow
  ``IntakeSweep``): every active registered repository is scanned by the goal queue's ``intake``
  update, with the same diff as ``queue scan`` (proposals only, never approved). The request carries
  the schedule's grant (:class:`ScheduledIntake`), which the queue accepts for nothing but an intake
  scan asked by a running sweep of that schedule (:func:`scheduled_intake_problem`).

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

from contracts.enums import AutomationMode, RiskLevel, Tier
from contracts.hashing import canonical_sha256
from contracts.policy import AutomationPolicy, effective_tier
from contracts.proofs import ActionProof
from contracts.research import CaseStatus


class ScheduleKind(StrEnum):
    """The schedules a deployment may have (module docstring)."""

    CASE_SWEEP = "case-sweep"
    INTAKE_SCAN = "intake-scan"


AVAILABLE_KINDS: Final = frozenset({ScheduleKind.CASE_SWEEP, ScheduleKind.INTAKE_SCAN})
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
"""The intake scan activity the goal queue's ``intake`` update runs for each repository an
``intake-scan`` sweep asks it to scan (goal queue ``queue scan``)."""

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


def case_sweep_policy_problem(policy: AutomationPolicy) -> str | None:
    """Why ``policy`` gives the daily case analysis nothing to run, or ``None`` when it may run.

    The sweep's runs are automatic and analysis-only: they need ``read_only``, which only mode
    ``guarded`` with ceiling ``read_only`` gives. Under any other policy the sweep skips every case
    (reason ``policy``, this text), and ``schedules`` says so when it is enabled, triggered or listed.
    """
    if policy.mode is AutomationMode.OFF:
        return "the automation policy is off"
    decision = effective_tier(
        requested=None, automatic=True, risk=RiskLevel.LOW, analysis_only=True, policy=policy
    )
    if decision.tier is not Tier.READ_ONLY:
        return (
            f"the automation policy ({policy.mode.value}, ceiling {policy.maximum_automatic_tier.value}) "
            "gives automatic runs no read_only analysis: set mode guarded with ceiling read_only"
        )
    return None


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


# ------------------------------------------------------------------------------------ intake sweep


class IntakeSweepInput(BaseModel):
    """Workflow input of ``IntakeSweep`` (the ``intake-scan`` schedule's action): the grant it runs
    under and the task queue whose goal queue it asks for the scans."""

    model_config = ConfigDict(frozen=True)

    grant: ScheduleGrant
    task_queue: str


def sweep_input_type(kind: ScheduleKind) -> type[CaseSweepInput] | type[IntakeSweepInput]:
    """The input model of the workflow a ``kind`` schedule starts."""
    return CaseSweepInput if kind is ScheduleKind.CASE_SWEEP else IntakeSweepInput


class IntakeReposRequest(BaseModel):
    """Input of activity ``list_intake_repositories``."""

    model_config = ConfigDict(frozen=True)

    sweep_workflow_id: str


class IntakeRepoSkip(BaseModel):
    """A registered repository the sweep did not scan, and why (``deactivated``)."""

    model_config = ConfigDict(frozen=True)

    repo_alias: str
    reason: str


class IntakeRepos(BaseModel):
    """Output of ``list_intake_repositories``: the active repositories by alias, and those skipped."""

    model_config = ConfigDict(frozen=True)

    aliases: list[str]
    skipped: list[IntakeRepoSkip] = []


class ScheduledIntake(BaseModel):
    """What authorises an ``intake`` update a sweep sends the goal queue in place of a per-scan proof
    (``IntakeRequest.scheduled``): the ``intake-scan`` schedule's grant and the sweep execution that
    asks (a running ``IntakeSweep`` started by that schedule)."""

    model_config = ConfigDict(frozen=True)

    grant: ScheduleGrant
    sweep_workflow_id: str


class SweepScanRequest(BaseModel):
    """Input of activity ``request_intake_scan``: ask the goal queue of ``task_queue`` to scan
    ``repo_alias`` under ``scheduled``."""

    model_config = ConfigDict(frozen=True)

    repo_alias: str
    task_queue: str
    scheduled: ScheduledIntake


class SweepCheckRequest(BaseModel):
    """Input of activity ``check_intake_sweep``: is ``sweep_workflow_id`` a running ``IntakeSweep`` of
    schedule ``schedule_id`` on ``task_queue``?"""

    model_config = ConfigDict(frozen=True)

    sweep_workflow_id: str
    schedule_id: str
    task_queue: str


class SweepCheckResult(BaseModel):
    """Output of ``check_intake_sweep``: ``running``, or why not (``reason``)."""

    model_config = ConfigDict(frozen=True)

    running: bool
    reason: str = ""


class IntakeScanOutcome(BaseModel):
    """One repository in a sweep's result: whether the queue took the scan, the refusal or failure
    (``code``, ``message``: an unavailable repository, a git error, a refused grant), the commit
    scanned and the keys of what the scan proposed and updated, and how many findings were already
    queued, recorded, not re-proposed or refused."""

    model_config = ConfigDict(frozen=True)

    repo_alias: str
    accepted: bool
    code: str | None = None
    message: str | None = None
    commit: str | None = None
    proposed: list[str] = []
    updated: list[str] = []
    recorded: int = 0
    already_queued: int = 0
    not_reproposed: int = 0
    refused: int = 0


class IntakeSweepResult(BaseModel):
    """Output of ``IntakeSweep``: each active repository's scan, the repositories skipped, and why the
    sweep scanned nothing when its grant was refused (``refused``)."""

    model_config = ConfigDict(frozen=True)

    scanned: list[IntakeScanOutcome] = []
    skipped: list[IntakeRepoSkip] = []
    refused: str = ""


def sweep_of_schedule(sweep_workflow_id: str, sid: str) -> bool:
    """Whether ``sweep_workflow_id`` names an execution Temporal started for schedule ``sid`` (the
    schedule's action id followed by ``-`` and the time it was scheduled)."""
    return sweep_workflow_id.startswith(f"{sid}-") and len(sweep_workflow_id) > len(sid) + 1


def scheduled_intake_problem(scheduled: ScheduledIntake, actor: str | None, task_queue: str) -> str | None:
    """Why the goal queue of ``task_queue`` refuses ``scheduled`` as the authority of an intake scan
    by ``actor`` (``None`` when the grant is of the right shape; the worker then checks its signature
    and the sweep). Only the ``intake-scan`` schedule of this task queue, granted by ``actor``, bound
    to the digest of that schedule, kind and interval, asked by a sweep of that schedule."""
    grant = scheduled.grant
    sid = schedule_id(ScheduleKind.INTAKE_SCAN, task_queue)
    if grant.kind is not ScheduleKind.INTAKE_SCAN or grant.schedule_id != sid:
        return f"only the {sid} schedule's grant authorises a scheduled intake scan, not {grant.schedule_id}"
    if actor != grant.granted_by:
        return f"the grant was given by {grant.granted_by}, not by {actor}"
    if grant.digest != grant_digest(sid, ScheduleKind.INTAKE_SCAN, grant.interval_seconds):
        return "the grant's digest is not that of this schedule, kind and interval"
    if not sweep_of_schedule(scheduled.sweep_workflow_id, sid):
        return f"{scheduled.sweep_workflow_id} is not a sweep of {sid}"
    return None
