"""Per-model ceilings: the messages of the ``ModelCeiling`` workflow, one per registered model.

A registered model's ``ceiling`` bounds its calls in flight across every worker process together
(docs/architecture.md "Model selection"). Each call holds a *lease* from the model's ``ModelCeiling`` workflow
(id :func:`ceiling_workflow_id`, one per model and task queue: workers of one deployment share a task
queue, so they share the ceiling): the calling ``ModelJob``'s ``request_model_lease`` activity asks
for one with update ``try_acquire``, which answers at once whether a slot was free; a request that
must wait is granted later by signal ``lease_granted``. Waiting is never done inside an update: the
server bounds updates in flight per workflow (10) and per run (2,000), while any number of requests
may wait. Where the update is refused or the ceiling does not exist yet, the activity sends signal
``acquire`` with signal-with-start instead. The ``call_model`` activity makes the call and gives the
lease back (signal ``release``) as it ends, and the job does it when that activity could not (it
failed or its worker died). A lease not given back by its deadline — its holder was terminated — is
reclaimed by a durable timer, so no slot is lost for longer than that.

The ceiling is reached gradually (the *ramp*): the ceiling lets ``allowance`` leases be held at once,
starting at :data:`RAMP_START` (or the ceiling, if lower), growing by :data:`RAMP_STEP` with each call
given back as ``succeeded`` up to the ceiling, halved (never below 1) by each call given back as
``rate_limited``, and back to the start after :data:`RAMP_IDLE_SECONDS` with nothing held or waiting.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from contracts.errors import ErrorType
from contracts.model_classes import ModelClass

CEILING_WORKFLOW_PREFIX = "model-ceiling:"


def ceiling_workflow_id(task_queue: str, model_id: str) -> str:
    """The id of ``model_id``'s ``ModelCeiling`` workflow for the workers of ``task_queue``:
    ``model-ceiling:<task queue>:<model id>``."""
    return f"{CEILING_WORKFLOW_PREFIX}{task_queue}:{model_id}"


class LeaseRequest(BaseModel):
    """Signal ``acquire``: ``holder_workflow_id`` asks for lease ``lease_id`` for at most
    ``lease_seconds`` once granted (the holder's call timeout plus a margin)."""

    model_config = ConfigDict(frozen=True)

    lease_id: str
    holder_workflow_id: str
    lease_seconds: Annotated[int, Field(ge=1, le=3600)]


LeaseOutcome = Literal["succeeded", "rate_limited", "failed"]
"""How the call a lease was held for ended, as far as the ramp cares: ``succeeded`` grows the
allowance, ``rate_limited`` (the provider answered ``model_rate_limited``) halves it, ``failed``
(anything else) leaves it."""

RAMP_START = 2
"""Leases a ceiling allows at first, and again after idle (or the ceiling itself, if lower)."""
RAMP_STEP = 1
"""Leases added to the allowance by each call given back as ``succeeded``."""
RAMP_IDLE_SECONDS = 300
"""With nothing held or waiting for this long, the allowance starts again from :data:`RAMP_START`."""


def lease_outcome(error_type: str | None) -> LeaseOutcome:
    """The ramp's outcome for a call that ended with ``error_type`` (None: it succeeded)."""
    if error_type is None:
        return "succeeded"
    return "rate_limited" if error_type == ErrorType.MODEL_RATE_LIMITED else "failed"


class LeaseRelease(BaseModel):
    """Signal ``release``: lease ``lease_id`` is given back (or, still waiting, withdrawn), with how
    its call ended when that is known (``outcome`` None: not known, the allowance is left as is)."""

    model_config = ConfigDict(frozen=True)

    lease_id: str
    outcome: LeaseOutcome | None = None


class LeaseGranted(BaseModel):
    """Signal ``lease_granted`` to the holder: lease ``lease_id`` is its until it releases it."""

    model_config = ConfigDict(frozen=True)

    lease_id: str


class Lease(BaseModel):
    """A granted lease and when it is reclaimed if not given back (UTC)."""

    model_config = ConfigDict(frozen=True)

    lease_id: str
    holder_workflow_id: str
    expires_at: dt.datetime


class CeilingState(BaseModel):
    """The ``ModelCeiling`` workflow's input and its ``state`` query: the model, its ceiling, the
    leases held and the requests waiting (first come, first served). Carried across continue-as-new.
    Counters are totals since the workflow was first started."""

    model_config = ConfigDict(frozen=True)

    model_id: str
    ceiling: Annotated[int, Field(ge=1)]
    held: list[Lease] = []
    waiting: list[LeaseRequest] = []
    granted_total: int = 0
    reclaimed_total: int = 0
    max_held: int = 0
    released: list[str] = []
    """Lease ids given back or reclaimed lately (the last 1,000), so a late request cannot retake one."""
    allowance: Annotated[int, Field(ge=1)] | None = None
    """Leases the ramp lets be held now (at most ``ceiling``); None where the ramp has not started
    (a ceiling from before it: the whole ceiling is allowed)."""
    idle_since: dt.datetime | None = None
    """When the ceiling last had nothing held or waiting (None while busy)."""
    ramp_idle_seconds: Annotated[int, Field(ge=1)] = RAMP_IDLE_SECONDS
    """Idle this long, the allowance starts again from :data:`RAMP_START`."""
    ramp: bool = True
    """False for a model class's pool (``contracts.model_classes``): it grants its whole ceiling."""
    succeeded_total: int = 0
    rate_limited_total: int = 0
    """Leases given back as ``succeeded`` / ``rate_limited`` since the ramp started."""


CALL_TIMEOUT_MARGIN_SECONDS = 30
"""A leased call's activity timeout is the model's call timeout plus this (start-up, validation)."""
LEASE_MARGIN_SECONDS = 60
"""A lease outlives its call's activity timeout by this, so a call still running is never reclaimed."""


class LeaseCall(BaseModel):
    """Input of the ``request_model_lease`` activity: ``holder_workflow_id`` wants lease ``lease_id``
    for one call to ``model_id``."""

    model_config = ConfigDict(frozen=True)

    model_id: str
    lease_id: str
    holder_workflow_id: str
    model_class: ModelClass | None = None
    """The call's class: its pool's lease (:func:`class_lease_id`) is asked for first; None for
    jobs from before classes (the model's ceiling alone)."""
    class_granted: bool = False
    """The class's lease is already the holder's (its grant was signalled): ask only the model."""


def class_lease_id(lease_id: str) -> str:
    """The id of the class-pool lease that goes with model lease ``lease_id``."""
    return f"{lease_id}/class"


class LeaseTerms(BaseModel):
    """Result of ``request_model_lease``: ``limited`` false means the model has no ceiling (a built-in
    or worker-local provider) and no lease was asked for; else the ceiling, the model's call timeout
    in seconds and whether the lease is already ``granted``."""

    model_config = ConfigDict(frozen=True)

    limited: bool
    ceiling: int | None = None
    call_timeout_s: int | None = None
    granted: bool = False
    """True when the ceiling granted the lease in its answer (no ``lease_granted`` signal follows)."""
    class_waiting: bool = False
    """True when the call's class pool queued its lease (:func:`class_lease_id`) and the model's
    lease was not asked for yet: the job waits for that grant and asks again (the requests are
    idempotent by lease id)."""


class LeaseStatus(BaseModel):
    """Answer of update ``try_acquire``: lease ``lease_id`` is ``held`` (granted in this answer),
    ``waiting`` (queued; signal ``lease_granted`` follows when granted) or ``released`` (it was
    already given back or reclaimed; nothing was queued)."""

    model_config = ConfigDict(frozen=True)

    lease_id: str
    status: Literal["held", "waiting", "released"]
