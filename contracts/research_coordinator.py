"""Research coordinator contracts: admission of teams and stage advances per cycle (docs/architecture.md
"Research team": at most 20 active teams, at most 5 stage advances per coordinator cycle).

The ``ResearchCoordinator`` workflow is one per deployment (its id is fixed by the task queue,
:func:`coordinator_workflow_id`), started on demand by the first team that asks to be admitted, and
continued as new so its history stays small. A team asks to be admitted once, at its start (update
``admit``, idempotent by team id); before each stage it asks for an advance (signal
``request_advance``) and waits for the grant (signal ``advance_granted`` to the team); when it ends it
says so (signal ``team_finished``). The coordinator only ever advances teams that asked: it never
enrolls a case on its own.
"""

from __future__ import annotations

import datetime as dt
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

MAX_ACTIVE_TEAMS: Final = 20
ADVANCES_PER_CYCLE: Final = 5
DEFAULT_CYCLE_SECONDS: Final = 60.0
CONTINUE_AS_NEW_AFTER_EVENTS: Final = 1_000
"""The coordinator continues as new once its history holds this many events (or the server suggests
it earlier), carrying its state over."""
REMEMBERED_FINISHED: Final = 1_000
"""How many finished team ids the coordinator remembers, so a late request from one is ignored."""
RECENT_CYCLES: Final = 50
"""How many of the latest cycles (with their grants) the coordinator keeps for the operator."""


def coordinator_workflow_id(task_queue: str) -> str:
    """The coordinator of the deployment serving ``task_queue``: one per deployment."""
    return f"research-coordinator@{task_queue}"


class AdvanceRequest(BaseModel):
    """Signal ``request_advance``: team ``team_id`` waits to start stage ``stage``."""

    model_config = ConfigDict(frozen=True)

    team_id: str
    stage: int


class AdvanceGrant(BaseModel):
    """Signal ``advance_granted`` to a team: it may start stage ``stage`` (granted in ``cycle``)."""

    model_config = ConfigDict(frozen=True)

    stage: int
    cycle: int


class CycleRecord(BaseModel):
    """One cycle: its number, when it began and the advances granted in it (``team:stage``)."""

    model_config = ConfigDict(frozen=True)

    cycle: int
    at: dt.datetime
    granted: list[str]


class CoordinatorState(BaseModel):
    """The coordinator's input and everything it carries across continue-as-new.

    ``active``: admitted teams that have not finished, in admission order; ``waiting``: advance
    requests not yet granted, oldest first; ``cycle``: the number of the latest cycle;
    ``recent_cycles``: the latest cycles with their grants; ``finished``: recently finished teams;
    ``last_granted``: the last stage granted to each active team; the limits and the cycle length
    (seconds) come from the deployment.
    """

    model_config = ConfigDict(frozen=True)

    cycle_seconds: float = Field(default=DEFAULT_CYCLE_SECONDS, gt=0)
    max_active: int = Field(default=MAX_ACTIVE_TEAMS, ge=1)
    advances_per_cycle: int = Field(default=ADVANCES_PER_CYCLE, ge=1)
    continue_as_new_after_events: int = Field(default=CONTINUE_AS_NEW_AFTER_EVENTS, ge=20)
    active: list[str] = []
    waiting: list[AdvanceRequest] = []
    cycle: int = 0
    recent_cycles: list[CycleRecord] = []
    finished: list[str] = []
    last_granted: dict[str, int] = {}
    runs: int = 1


class AdmitRequest(BaseModel):
    """Update ``admit``: may team ``team_id`` (on case ``case_id``) run?"""

    model_config = ConfigDict(frozen=True)

    team_id: str
    case_id: str
    cycle_seconds: float | None = Field(default=None, gt=0)
    """The deployment's cycle as the asking worker has it; the coordinator adopts it."""


class Admission(BaseModel):
    """The coordinator's answer: admitted (again, for a team already admitted) or refused, with the
    number of active teams and the limit."""

    model_config = ConfigDict(frozen=True)

    admitted: bool
    active: int
    limit: int
    code: str | None = None
    message: str | None = None


class TeamFinished(BaseModel):
    """Signal ``team_finished``: the team ended and gives its place back."""

    model_config = ConfigDict(frozen=True)

    team_id: str


class AdmissionCall(BaseModel):
    """Input of the ``request_team_admission`` activity (run by a team at its start)."""

    model_config = ConfigDict(frozen=True)

    team_id: str
    case_id: str


class AdvanceCall(BaseModel):
    """Input of the ``request_stage_advance`` activity (run by a team before each stage)."""

    model_config = ConfigDict(frozen=True)

    team_id: str
    stage: int


class TeamIds(BaseModel):
    """Team ids: the input of ``find_closed_teams`` (the active ones) and its result (those whose
    workflow has closed, or does not exist)."""

    model_config = ConfigDict(frozen=True)

    team_ids: list[str]


class CoordinatorView(BaseModel):
    """Query ``state`` and ``specialists research coordinator --json``: the active teams, the advances
    waiting, the current cycle and what it granted, the limits and the recent cycles."""

    model_config = ConfigDict(frozen=True)

    workflow_id: str
    active: list[str]
    active_count: int
    max_active: int
    waiting: list[AdvanceRequest]
    cycle: int
    granted_this_cycle: list[str]
    advances_per_cycle: int
    cycle_seconds: float
    recent_cycles: list[CycleRecord]
    runs: int
    history_events: int
