"""What the ``WorkQueue`` workflow takes and answers (docs/architecture.md "Goal queue"): its input,
which is also everything it carries across continue-as-new, the requests of its updates, their
answers and the view its query returns. One pydantic model in and out of every handler.

Every request of an operator's move is protected: it names the actor and carries the actor's proof of
the action (:class:`QueueAction`) on its target — the item key, or the queue's workflow id for a
queue-wide action — bound to the request's digest (:meth:`AddRequest.digest` …), so a proof made for
one payload authorises no other. Pure: no I/O.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from contracts.enums import AutomationMode, RiskLevel, Tier
from contracts.hashing import canonical_sha256
from contracts.models import ModelId
from contracts.output import SpecialistOutput
from contracts.proofs import ActionProof
from contracts.queue_approval import SpecCompleteness
from contracts.queue_archive import DEFAULT_ARCHIVE_AFTER_SECONDS, DEFAULT_TOMBSTONES_KEPT, ArchivedItem
from contracts.queue_items import (
    MAX_EVENT_REASON_CHARS,
    MAX_RECOVERY_DELAY_SECONDS,
    MAX_SLOTS,
    ItemProposal,
    QueueItem,
    QueueSettings,
    QueueStatus,
)
from contracts.queue_keys import KeyAllocator
from contracts.queue_requests import AddedBy, RequestId
from contracts.runs import RunInput, RunStatus
from contracts.shipping import DEFAULT_MAIN_WRITE_CHECK_SECONDS, BaseHead, MainWrite

CONTINUE_AS_NEW_AFTER_EVENTS: Final = 1_500
"""The queue continues as new once its history holds this many events (or the server suggests it), so a
history between two continue-as-new stays below 2,000 events."""
MIN_CONTINUE_AS_NEW_AFTER_EVENTS: Final = 20
REFUSALS_KEPT: Final = 100
"""The latest refused actions the queue keeps (and carries across continue-as-new)."""
SETTINGS_CHANGES_KEPT: Final = 100
"""The latest settings changes the queue keeps (and carries across continue-as-new)."""
UNKNOWN_ITEM: Final = "unknown_item"
"""The error code of a key the queue does not hold (exit 3)."""
ARCHIVE_UNAVAILABLE: Final = "archive_unavailable"
"""The error code of a request the queue must check against the store's archive, which it could not
ask (exit 5): nothing was changed."""
INVALID_ITEM_UPDATE: Final = "invalid_item_update"
"""The error code of an update whose fields do not validate (exit 2)."""
DISPATCH_MISMATCH: Final = "dispatch_mismatch"
"""The error code of a dispatch whose run is not the one the item asks for (exit 4)."""
DEFAULT_POLL_SECONDS: Final = 5.0
"""How often the queue reads the progress of the runs of its active items (a durable timer)."""


QUEUE_ID_PREFIX: Final = "work-queue@"


def queue_workflow_id(task_queue: str) -> str:
    """The goal queue of the deployment serving ``task_queue``: one per deployment and task queue."""
    return f"{QUEUE_ID_PREFIX}{task_queue}"


class RunProgressed(BaseModel):
    """Signal ``run_progressed`` from a run the queue started to the queue: the run reached its
    decision or ended, so the queue reads its runs' progress now instead of at its next poll. A
    signal names no sender: the queue believes nothing in it but reads the runs' own status."""

    model_config = ConfigDict(frozen=True)

    run_id: str


class QueueAction(StrEnum):
    """The protected actions on the queue, as the actor's proof names them."""

    ADD = "queue_add"
    UPDATE = "queue_update"
    APPROVE = "queue_approve"
    REJECT = "queue_reject"
    CAPACITY = "queue_capacity"
    AUTOPILOT = "queue_autopilot"
    RECOVERY_DELAY = "queue_recovery_delay"
    ESCALATION_MODEL = "queue_escalation_model"
    ROUTE_NEXT = "queue_route_next"
    DISPATCH = "queue_dispatch"
    DONE = "queue_done"
    PARK = "queue_park"
    RELEASE = "queue_release"
    REOPEN = "queue_reopen"
    SHIP = "queue_ship"
    INTAKE = "queue_intake"
    SPEC = "queue_spec"


Reason = Annotated[str, StringConstraints(max_length=MAX_EVENT_REASON_CHARS)]


class RefusedAction(BaseModel):
    """A protected action the queue refused after its validator let it through (the authorisation
    refused it, or the item moved on meanwhile): when, what, by whom, on what, and why."""

    model_config = ConfigDict(frozen=True)

    at: dt.datetime
    action: QueueAction
    actor: str | None
    target: str
    code: str
    message: str


class SettingsChange(BaseModel):
    """A change of the queue's settings: when, by whom, which setting, from what to what."""

    model_config = ConfigDict(frozen=True)

    at: dt.datetime
    actor: str | None
    setting: str
    before: Any
    after: Any


class AutopilotGrant(BaseModel):
    """The standing grant an operator's signed ``queue autopilot on`` gives the queue
    (docs/architecture.md "Goal queue"): the runs the queue starts by itself are created by
    ``granted_by``, who must still be registered and active when each run starts. ``queue autopilot
    off`` withdraws it."""

    model_config = ConfigDict(frozen=True)

    granted_by: str
    granted_at: dt.datetime


class QueueState(BaseModel):
    """The queue's input and everything it carries across continue-as-new: the items, the key
    allocator, the settings and their latest changes, the latest refused actions, when to continue as
    new, and how many executions the queue has had (``runs``, from 1)."""

    model_config = ConfigDict(frozen=True)

    items: list[QueueItem] = []
    allocator: KeyAllocator = KeyAllocator()
    settings: QueueSettings = QueueSettings()
    settings_changes: list[SettingsChange] = []
    refusals: list[RefusedAction] = []
    continue_as_new_after_events: int = Field(
        default=CONTINUE_AS_NEW_AFTER_EVENTS, ge=MIN_CONTINUE_AS_NEW_AFTER_EVENTS
    )
    runs: int = Field(default=1, ge=1)
    poll_seconds: float = Field(default=DEFAULT_POLL_SECONDS, gt=0, le=3600)
    run_status: dict[str, RunStatus] = {}
    """The status each tracked run had when the queue last read it (the item's attention)."""
    autopilot_grant: AutopilotGrant | None = None
    """Who turned autopilot on, and when: what authorises the runs the queue starts by itself."""
    told_status: dict[str, QueueStatus] = {}
    """The item status each item's latest run was last told (its ``QueueItemStatus`` attribute)."""
    base_heads: dict[str, BaseHead] = {}
    """The main-write guard: the base-branch head of each repository an open item references."""
    main_writes: list[MainWrite] = []
    """The latest ``main_write`` events (at most ``contracts.shipping.MAIN_WRITES_KEPT``)."""
    main_write_check_seconds: float = Field(default=DEFAULT_MAIN_WRITE_CHECK_SECONDS, gt=0, le=3600)
    archived: list[ArchivedItem] = []
    """What the queue keeps of the items it archived (``contracts.queue_archive``)."""
    archive_after_seconds: int = Field(default=DEFAULT_ARCHIVE_AFTER_SECONDS, ge=0)
    """How long an ended item stays unchanged before the queue archives it."""
    tombstones_kept: int = Field(default=DEFAULT_TOMBSTONES_KEPT, ge=1)
    """How many of ``archived`` the queue keeps; it forgets older ones when it continues as new."""
    tombstones_forgotten: int = Field(default=0, ge=0)
    """How many tombstones the queue has forgotten: when any, it asks the store what they told it."""


def _digest(data: Any) -> str:
    return canonical_sha256(data)


class AddRequest(BaseModel):
    """Update ``add``: a new proposal (protected; the proof's target is the queue's workflow id),
    with the caller's ``request_id`` when it may send the same add again
    (:mod:`contracts.queue_requests`)."""

    model_config = ConfigDict(frozen=True)

    actor: str | None
    proposal: ItemProposal
    proof: ActionProof | None = None
    request_id: RequestId | None = None

    def proposal_digest(self) -> str:
        """The sha256 of the proposal's canonical JSON."""
        return _digest(self.proposal.model_dump(mode="json"))

    def digest(self) -> str:
        """What the proof is bound to: the proposal's digest, or, with a request id, the sha256 of
        both."""
        if self.request_id is None:
            return self.proposal_digest()
        return _digest({"proposal": self.proposal_digest(), "request_id": self.request_id})

    def added_by(self) -> AddedBy | None:
        """What the new item keeps of this add (with a request id only)."""
        if self.request_id is None:
            return None
        return AddedBy(request_id=self.request_id, proposal_sha256=self.proposal_digest())


class UpdateItemRequest(BaseModel):
    """Update ``update``: set fields of the proposal ``key``. ``fields`` is the operator's JSON object
    as given (validated by the queue as :class:`contracts.queue_items.ItemUpdate`: which keys it names
    and which it sets to ``null`` is the update's meaning, so it travels as given)."""

    model_config = ConfigDict(frozen=True)

    actor: str | None
    key: str
    fields: dict[str, Any]
    proof: ActionProof | None = None

    def digest(self) -> str:
        """What the proof is bound to: the sha256 of the fields' canonical JSON."""
        return _digest(self.fields)


class MoveRequest(BaseModel):
    """Updates ``approve``, ``reject``, ``park``, ``release`` and ``reopen``: the operator's move of item
    ``key``, with a reason (protected; the proof's target is the key)."""

    model_config = ConfigDict(frozen=True)

    actor: str | None
    key: str
    reason: Reason = ""
    proof: ActionProof | None = None

    def digest(self) -> str:
        """What the proof is bound to: the sha256 of the key and the reason."""
        return _digest({"key": self.key, "reason": self.reason})


class CapacityRequest(BaseModel):
    """Update ``capacity``: the number of slots (protected; target: the queue's workflow id)."""

    model_config = ConfigDict(frozen=True)

    actor: str | None
    slots: int = Field(ge=1, le=MAX_SLOTS)
    proof: ActionProof | None = None

    def digest(self) -> str:
        """What the proof is bound to: the sha256 of the slot count."""
        return _digest({"slots": self.slots})


class AutopilotRequest(BaseModel):
    """Update ``autopilot``: on or off (protected; target: the queue's workflow id)."""

    model_config = ConfigDict(frozen=True)

    actor: str | None
    on: bool
    proof: ActionProof | None = None

    def digest(self) -> str:
        """What the proof is bound to: the sha256 of the setting."""
        return _digest({"autopilot": self.on})


class RecoveryDelayRequest(BaseModel):
    """Update ``recovery_delay``: how long a failed item waits before the autopilot recovers it
    (protected; target: the queue's workflow id)."""

    model_config = ConfigDict(frozen=True)

    actor: str | None
    seconds: int = Field(ge=0, le=MAX_RECOVERY_DELAY_SECONDS)
    proof: ActionProof | None = None

    def digest(self) -> str:
        """What the proof is bound to: the sha256 of the delay."""
        return _digest({"recovery_delay_seconds": self.seconds})


class EscalationModelRequest(BaseModel):
    """Update ``escalation_model``: the model an escalated round's run uses as its primary, or
    ``None`` for none (protected; target: the queue's workflow id). The CLI checks the model is
    usable when it is set; each escalated run's contract capture checks it again."""

    model_config = ConfigDict(frozen=True)

    actor: str | None
    model: ModelId | None
    proof: ActionProof | None = None

    def digest(self) -> str:
        """What the proof is bound to: the sha256 of the model (``null`` for none)."""
        return _digest({"escalation_model": self.model})


class DispatchRequest(BaseModel):
    """Update ``dispatch``: start ``run`` for item ``key`` (protected; the proof's target is the key).

    ``run`` is the run's input as the operator's CLI built it from the item
    (:func:`contracts.queue_dispatch.dispatch_run_matches`): a read_only run is created enqueued, so it
    carries the actor's own proof of that create; an edit tier's run waits for its digest-bound
    approval and execute like any other. ``confirm_high_risk`` and ``override_capacity`` are the
    operator's flags."""

    model_config = ConfigDict(frozen=True)

    actor: str | None
    key: str
    run: RunInput
    confirm_high_risk: bool = False
    override_capacity: bool = False
    proof: ActionProof | None = None

    def digest(self) -> str:
        """What the proof is bound to: the key, the flags, the run's id and its request digest."""
        return _digest(
            {
                "key": self.key,
                "confirm_high_risk": self.confirm_high_risk,
                "override_capacity": self.override_capacity,
                "run_id": self.run.run_id,
                "request_digest": self.run.request_digest,
            }
        )


class RoutedNext(BaseModel):
    """The policy's decision for the next item: the tier (``recommend`` or ``read_only``), the policy
    mode it was made under, the route's primary and reviewer, the risk it counted and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tier: Tier
    policy_mode: AutomationMode
    primary: str
    reviewer: str
    risk: RiskLevel
    reasons: list[str] = Field(min_length=1)

    def to_json(self) -> dict[str, object]:
        """The decision as event data and CLI output."""
        return self.model_dump(mode="json")


class RouteNextRequest(BaseModel):
    """Update ``route_next``: apply the automatic policy's decision ``routed`` to item ``key``, the
    next approved one (protected; the proof's target is the key). A ``read_only`` decision carries
    ``run``, the automatic run created enqueued with the actor's own proof of that create
    (:func:`contracts.queue_routing.routed_run_input`); a recommendation carries none."""

    model_config = ConfigDict(frozen=True)

    actor: str | None
    key: str
    routed: RoutedNext
    run: RunInput | None = None
    proof: ActionProof | None = None

    def digest(self) -> str:
        """What the proof is bound to: the key, the decision, and the run's id and request digest."""
        return _digest(
            {
                "key": self.key,
                "routed": self.routed.to_json(),
                "run_id": None if self.run is None else self.run.run_id,
                "request_digest": None if self.run is None else self.run.request_digest,
            }
        )


class DoneRequest(BaseModel):
    """Update ``done``: a person accepts the reviewed result of item ``key`` (protected; the proof's
    target is the key). The CLI has accepted the run itself first (the run's own protected
    ``decide``): the queue never merges, pushes or publishes anything."""

    model_config = ConfigDict(frozen=True)

    actor: str | None
    key: str
    note: Reason = ""
    proof: ActionProof | None = None

    def digest(self) -> str:
        """What the proof is bound to: the sha256 of the key and the note."""
        return _digest({"key": self.key, "note": self.note})


class RunIds(BaseModel):
    """Input of activity ``read_run_progress``: the runs to read."""

    model_config = ConfigDict(frozen=True)

    run_ids: list[str]


class RunState(BaseModel):
    """One run's status as its workflow answers it (``None``: no such run), its error message when it
    failed, and its independent review when it awaits a decision."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    status: RunStatus | None
    error: str | None = None
    review: SpecialistOutput | None = None


class RunStates(BaseModel):
    """Output of activity ``read_run_progress``."""

    model_config = ConfigDict(frozen=True)

    states: list[RunState]


class ItemAnswer(BaseModel):
    """The answer of an update on an item: ``accepted`` with the item as it is now and its spec
    completeness (and ``previous_key`` when approval renamed it), or the refusal's ``code``,
    ``message`` and structured ``extra`` (the allowed moves, the gaps …)."""

    model_config = ConfigDict(frozen=True)

    accepted: bool
    item: QueueItem | None = None
    spec: SpecCompleteness | None = None
    previous_key: str | None = None
    deduplicated: bool = False
    """``add`` with a request id already used for the same proposal: ``item`` is the one it added."""
    code: str | None = None
    message: str | None = None
    extra: dict[str, Any] = {}


class SettingsAnswer(BaseModel):
    """The answer of ``capacity`` and ``autopilot``: the settings now, or the refusal."""

    model_config = ConfigDict(frozen=True)

    accepted: bool
    settings: QueueSettings
    code: str | None = None
    message: str | None = None


class QueueQuery(BaseModel):
    """Query ``view``: the whole queue, or only item ``key``."""

    model_config = ConfigDict(frozen=True)

    key: str | None = None


class QueueView(BaseModel):
    """What query ``view`` returns: the items (all, or the one asked for), the settings, the key
    allocator, the latest refused actions, the executions so far and the current history length."""

    model_config = ConfigDict(frozen=True)

    workflow_id: str
    items: list[QueueItem]
    settings: QueueSettings
    allocator: KeyAllocator
    settings_changes: list[SettingsChange]
    refusals: list[RefusedAction]
    runs: int
    history_events: int
    run_status: dict[str, RunStatus] = {}
    """The status each tracked run had when the queue last read it."""
    renamed_to: str | None = None
    """When the key asked for is not held but an item was renamed from it at approval: its key now."""
    autopilot_grant: AutopilotGrant | None = None
    """The standing grant of the runs the queue starts by itself (``None`` with autopilot off)."""
    main_writes: list[MainWrite] = []
    """The latest ``main_write`` events, oldest first."""
    base_heads: dict[str, BaseHead] = {}
    """The base-branch heads the main-write guard holds, by repository alias."""
    archived: ArchivedItem | None = None
    """When the key asked for names an archived item: what the queue keeps of it (the archive in the
    store holds the item)."""
    archived_count: int = 0
    """How many items the queue has archived."""
    tombstones_forgotten: int = 0
    """How many of those the queue no longer keeps a tombstone of: a key it does not know may name
    one of them, which the store's archive finds."""


class RefusalDetail(BaseModel):
    """The structured data of a validator's refusal (the ``details`` of its ``ApplicationError``): the
    extra keys of the operator's ``{"error": {...}}``."""

    model_config = ConfigDict(frozen=True)

    extra: dict[str, Any] = {}
