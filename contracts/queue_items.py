"""The goal queue's items: their vocabulary, the item record, the input of ``queue add`` and ``queue
update``, and the queue's settings (docs/architecture.md "Goal queue").

Pure: no I/O. Every bound is enforced, never applied by cutting: an over-long field is a validation
error naming the field, unknown keys are refused, and operator text follows
:mod:`contracts.text_rules` (a title is one line; each scope section and the notes keep line feeds and
tabs only). A proposal may be thin: only its title is required; what approval needs is
:func:`contracts.queue_approval.spec_completeness`.

Values are part of the operator contract: they appear in JSON output and in the queue's history, so a
value is never renamed, only added.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from enum import StrEnum
from typing import Annotated, Any, Final, Protocol

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)

from contracts.constants import MAX_EVIDENCE_REFS, MAX_TITLE_CHARS
from contracts.enums import RiskLevel, Tier
from contracts.errors import Refused
from contracts.ids import RUN_ID_PATTERN
from contracts.intake_source import IntakeSource
from contracts.models import ModelId
from contracts.output import ReviewVerdict
from contracts.queue_requests import AddedBy
from contracts.shipping import ShipRecord
from contracts.text_rules import check_multiline, check_one_line
from contracts.work_item import EvidenceRef, RepoAlias

# ------------------------------------------------------------------------------------------ vocabulary


class QueueStatus(StrEnum):
    """Where an item is (docs/architecture.md "Goal queue"; the moves between them are
    :data:`contracts.queue_transitions.TRANSITIONS`)."""

    PROPOSAL = "proposal"
    APPROVED = "approved"
    ACTIVE = "active"
    AI_REVIEW = "ai-review"
    HUMAN_REVIEW = "human-review"
    DONE = "done"
    REJECTED = "rejected"
    FAILED = "failed"
    BLOCKED = "blocked"


class QueueBlocker(StrEnum):
    """Why a ``blocked`` item waits: an operator parked it, it waits its turn behind other work
    (``serialized``), or a person must decide (``decision``)."""

    PARKED = "parked"
    SERIALIZED = "serialized"
    DECISION = "decision"


class ItemFailure(StrEnum):
    """Why a ``failed`` item failed: its run failed (expired, was cancelled or rejected by its own
    rules), or its review loop reached the round cap."""

    RUN_FAILED = "run_failed"
    REVIEW_CAP_REACHED = "review_cap_reached"


class Grade(StrEnum):
    """A value or urgency grade: high, medium or low."""

    H = "H"
    M = "M"
    L = "L"

    @property
    def weight(self) -> int:
        """H=3, M=2, L=1: a priority is value weight × urgency weight (1..9)."""
        return _GRADE_WEIGHTS[self]


_GRADE_WEIGHTS: Final = {Grade.H: 3, Grade.M: 2, Grade.L: 1}

QUEUE_TIERS: Final = (Tier.READ_ONLY, Tier.WORKTREE, Tier.PR_READY)
"""The tiers a queue item may ask for: every item starts a run, so ``recommend`` is not one."""
QUEUE_RISKS: Final = (RiskLevel.LOW, RiskLevel.MEDIUM, RiskLevel.HIGH)
"""An item's risk, from its closed set (``critical`` is a route's risk, not an item's)."""


class QueueRefusalCode(StrEnum):
    """The codes the queue refuses with (exit 4; the ``code`` of ``{"error": {...}}``)."""

    TRANSITION_REFUSED = "transition_refused"
    ITEM_CONTRACT_INCOMPLETE = "item_contract_incomplete"
    CAPACITY_FULL = "capacity_full"
    HIGH_RISK_UNCONFIRMED = "high_risk_unconfirmed"
    NOT_A_PROPOSAL = "not_a_proposal"
    SERIES_CONFLICT = "series_conflict"
    SERIES_EXHAUSTED = "series_exhausted"
    WORK_ITEM_TOO_LARGE = "work_item_too_large"
    NOTHING_TO_ROUTE = "nothing_to_route"
    NOT_NEXT_ITEM = "not_next_item"
    REQUEST_ID_CONFLICT = "request_id_conflict"
    ITEM_ARCHIVED = "item_archived"


class QueueRefused(Refused):
    """A queue refusal (exit 4) that carries structured data beside its code and message: the allowed
    moves of a refused transition, the gaps of an incomplete item, the occupancy of a full queue.

    ``extra`` holds JSON-safe values only; :meth:`to_json` prints them as further keys of the error
    object, so ``{"error": {"code", "message", ...extra}}``.
    """

    def __init__(self, code: QueueRefusalCode, message: str, **extra: Any) -> None:
        super().__init__(code.value, message)
        self.extra: dict[str, Any] = extra

    def to_json(self) -> dict[str, dict[str, Any]]:
        """``{"error": {"code", "message", **extra}}`` (``code`` and ``message`` are never overwritten)."""
        return {"error": {**self.extra, "code": self.code, "message": self.message}}


# ------------------------------------------------------------------------------------------ bounds

SCOPE_SECTIONS: Final = ("problem", "evidence", "change", "judgment_calls", "tests", "constraints")
"""The six sections of an item's scope, in the order they are shown."""
MAX_SCOPE_SECTION_CHARS: Final = 4_000
MAX_SCOPE_CHARS: Final = 6_000
"""All six sections together: the scope, with its headings, must fit the description of the work item a
dispatch builds (8,000 characters) with room left for the findings a re-dispatch carries."""
MAX_NOTES_CHARS: Final = 4_000
MAX_EVENT_REASON_CHARS: Final = 2_000
PROVISIONAL_SERIES: Final = "Q"
"""The series of an item that has no repository yet (``Q-<n>``)."""
ITEM_KEY_PATTERN: Final = re.compile(r"^(?:Q|[A-Z]{2,5})-[1-9][0-9]{0,8}$")
"""A key: a series (``Q``, or 2..5 upper-case letters) and a sequence number from 1, e.g. ``ORD-12``."""
DEFAULT_SLOTS: Final = 3
MAX_SLOTS: Final = 50
DEFAULT_RECOVERY_DELAY_SECONDS: Final = 600
MAX_RECOVERY_DELAY_SECONDS: Final = 7 * 24 * 3600


def _key(value: str) -> str:
    if ITEM_KEY_PATTERN.fullmatch(value) is None:
        raise ValueError(f"item key {value!r} must be a series and a number, such as ORD-12 or Q-3")
    return value


def _run_id(value: str) -> str:
    if RUN_ID_PATTERN.fullmatch(value) is None:
        raise ValueError(f"run id {value!r} must be SOR- and 16 characters of [0-9A-Z]")
    return value


ItemKey = Annotated[str, AfterValidator(_key)]
RunId = Annotated[str, AfterValidator(_run_id)]
Title = Annotated[str, StringConstraints(max_length=MAX_TITLE_CHARS)]
Section = Annotated[str, StringConstraints(max_length=MAX_SCOPE_SECTION_CHARS)]
Notes = Annotated[str, StringConstraints(max_length=MAX_NOTES_CHARS)]
Reason = Annotated[str, StringConstraints(max_length=MAX_EVENT_REASON_CHARS)]
EvidenceList = Annotated[list[EvidenceRef], Field(max_length=MAX_EVIDENCE_REFS)]


def is_provisional(key: str) -> bool:
    """True for a key of the provisional series (``Q-<n>``)."""
    return key.partition("-")[0] == PROVISIONAL_SERIES


def key_series(key: str) -> str:
    """The series of ``key`` (``ORD`` of ``ORD-12``)."""
    return key.partition("-")[0]


def key_number(key: str) -> int:
    """The sequence number of ``key`` (12 of ``ORD-12``)."""
    return int(key.partition("-")[2])


def _title(value: str) -> str:
    if not value.strip():
        raise ValueError("title must not be blank")
    return check_one_line(value, "title")


def _tier(value: Tier) -> Tier:
    if value not in QUEUE_TIERS:
        raise ValueError(
            f"tier {value.value!r} is not a queue tier: an item starts a run of tier read_only, worktree "
            "or pr_ready"
        )
    return value


def _risk(value: RiskLevel | None) -> RiskLevel | None:
    if value is not None and value not in QUEUE_RISKS:
        raise ValueError(f"risk {value.value!r} is not an item risk: use low, medium or high")
    return value


def _evidence(value: list[str]) -> list[str]:
    seen: set[str] = set()
    for index, ref in enumerate(value):
        if ref in seen:
            raise ValueError(f"evidence[{index}] {ref!r} is listed twice")
        seen.add(ref)
    return value


# ------------------------------------------------------------------------------------------ scope


class ItemScope(BaseModel):
    """What an item asks for, in six sections: the ``problem``, the ``evidence`` read so far, the
    ``change`` wanted, the ``judgment_calls`` left to the specialist, the ``tests`` that prove it and
    the ``constraints`` it must keep. Each section is multi-line text of at most 4,000 characters
    (line feeds and tabs, no other control character) and all six together at most 6,000; a section
    may be empty (a thin proposal). Raises ``pydantic.ValidationError`` naming the section."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    problem: Section = ""
    evidence: Section = ""
    change: Section = ""
    judgment_calls: Section = ""
    tests: Section = ""
    constraints: Section = ""

    @field_validator(*SCOPE_SECTIONS)
    @classmethod
    def _multiline(cls, value: str, info: ValidationInfo) -> str:
        return check_multiline(value, f"scope.{info.field_name}")

    @model_validator(mode="after")
    def _total_bounded(self) -> ItemScope:
        total = sum(len(self.section(name)) for name in SCOPE_SECTIONS)
        if total > MAX_SCOPE_CHARS:
            raise ValueError(
                f"scope sections hold {total} characters together; at most {MAX_SCOPE_CHARS} are allowed"
            )
        return self

    def section(self, name: str) -> str:
        """The text of section ``name`` (one of :data:`SCOPE_SECTIONS`)."""
        text: str = getattr(self, name)
        return text

    def empty_sections(self) -> list[str]:
        """The sections with no text but whitespace, in :data:`SCOPE_SECTIONS` order."""
        return [name for name in SCOPE_SECTIONS if not self.section(name).strip()]


SCOPE_HEADINGS: Final = {
    "problem": "Problem",
    "evidence": "Evidence",
    "change": "Change",
    "judgment_calls": "Judgment calls",
    "tests": "Tests",
    "constraints": "Constraints",
}


def scope_description(scope: ItemScope) -> str:
    """The scope as the description of the work item a dispatch builds: each non-empty section under
    its heading (``Problem:`` …), in :data:`SCOPE_SECTIONS` order, separated by a blank line. Pure."""
    parts = [
        f"{SCOPE_HEADINGS[name]}:\n{scope.section(name)}" for name in SCOPE_SECTIONS if scope.section(name)
    ]
    return "\n\n".join(parts)


# ------------------------------------------------------------------------------------------ records


class QueueEventKind(StrEnum):
    """What happened to an item (the kinds of :class:`QueueEvent`)."""

    ADDED = "added"
    UPDATED = "updated"
    MOVED = "moved"
    RENAMED = "renamed"
    DISPATCHED = "dispatched"
    REVIEWED = "reviewed"
    ESCALATED = "escalated"
    ROUTED = "routed"
    SHIPPED = "shipped"
    SHIP_FAILED = "ship_failed"
    INTAKE_UPDATED = "intake_updated"
    """An intake scan found the source of a proposal changed and updated the proposal."""
    INTAKE_CHANGED = "intake_changed"
    """An intake scan found the source of an item past proposal changed (its contract is untouched)."""
    SPEC_WRITTEN = "spec_written"
    """A spec pass wrote scope sections of a proposal (``queue spec``); the item stays a proposal."""


class QueueEvent(BaseModel):
    """One event of an item: its sequence number (from 1), workflow time (UTC), kind, the actor (a
    registered human, or ``None`` for the queue itself) and JSON-safe data."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seq: int = Field(ge=1)
    at: dt.datetime
    kind: QueueEventKind
    actor: str | None = None
    data: dict[str, Any] = {}


class DispatchKind(StrEnum):
    """Why a run was dispatched: the item's first run of a review cycle, a re-dispatch after a FAIL
    verdict, or a recovery after a failed run."""

    DISPATCH = "dispatch"
    REDISPATCH = "redispatch"
    RECOVERY = "recovery"


class RunOutcome(StrEnum):
    """How a dispatched run ended for the item: still going, reviewed (it has a round), or failed."""

    PENDING = "pending"
    REVIEWED = "reviewed"
    FAILED = "failed"


class DispatchedRun(BaseModel):
    """One run the item dispatched: its id, the review cycle it belongs to, why it was dispatched,
    whether it used the escalation model, when it started and ended, and how it ended (``failure``:
    the run's error, for a failed run)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: RunId
    cycle: int = Field(ge=1)
    kind: DispatchKind
    escalated: bool = False
    model: ModelId | None = None
    """The escalation model an escalated dispatch used (``None`` otherwise, or when none is configured)."""
    at: dt.datetime
    outcome: RunOutcome = RunOutcome.PENDING
    ended_at: dt.datetime | None = None
    failure: Reason | None = None
    autopilot: bool = False
    """True for a run the queue's autopilot started by itself (under the operator's standing grant)."""

    @model_validator(mode="after")
    def _ended_when_not_pending(self) -> DispatchedRun:
        if (self.outcome is RunOutcome.PENDING) != (self.ended_at is None):
            raise ValueError("a dispatched run has ended_at exactly when its outcome is not pending")
        if self.failure is not None and self.outcome is not RunOutcome.FAILED:
            raise ValueError("only a failed run carries a failure")
        return self


class RoundVerdict(StrEnum):
    """The queue's verdict on one review round."""

    PASS = "PASS"
    FAIL = "FAIL"


class MaterialFinding(BaseModel):
    """A finding of the independent review that makes a round FAIL: severity high or critical."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    severity: RiskLevel
    title: Annotated[str, StringConstraints(min_length=1, max_length=300)]


class ReviewRound(BaseModel):
    """One review round: the run it reviewed, its cycle and number in the cycle (1..5), the verdict,
    the reviewer's own verdict, the material findings, the progress score (see
    :func:`contracts.queue_review.progress_score`), whether the run used the escalation model, and when."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: RunId
    cycle: int = Field(ge=1)
    number: int = Field(ge=1)
    verdict: RoundVerdict
    reviewer_verdict: ReviewVerdict | None
    material: Annotated[list[MaterialFinding], Field(max_length=50)] = []
    score: int = Field(ge=0)
    escalated: bool = False
    at: dt.datetime


class EscalationTrigger(StrEnum):
    """What made a review cycle escalate."""

    TWO_ROUNDS_WITHOUT_PROGRESS = "two_rounds_without_progress"
    THREE_FAILED_ATTEMPTS = "three_failed_attempts"


class EscalationOutcome(StrEnum):
    """What the escalated round did: not reviewed yet, made progress, or made none (the item is
    handed to a person)."""

    PENDING = "pending"
    PROGRESS = "progress"
    NO_PROGRESS = "no_progress"


class Escalation(BaseModel):
    """The one escalation of a review cycle: the trigger, the round after which it fired, the ledger of
    round scores up to then, the closure condition (the escalated round must score below
    ``threshold``), the escalation model the next dispatch uses, and the outcome."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cycle: int = Field(ge=1)
    trigger: EscalationTrigger
    after_round: int = Field(ge=1)
    ledger: list[int]
    threshold: int = Field(ge=0)
    closure: Reason
    model: ModelId | None = None
    outcome: EscalationOutcome = EscalationOutcome.PENDING


class ItemContent(BaseModel):
    """The fields an operator writes, shared by :class:`ItemProposal` and :class:`QueueItem`: ``title``
    (one line, 1..200), ``repo_alias``, ``tier`` (``read_only | worktree | pr_ready``, default
    ``read_only``), ``scope`` (:class:`ItemScope`), ``evidence`` (<= 50 distinct ``kind:id`` refs),
    ``value`` and ``urgency`` (``H | M | L``), ``risk`` (``low | medium | high``) and ``notes``
    (multi-line, <= 4,000). All but the title may be left out: a proposal may be thin."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: Title
    repo_alias: RepoAlias | None = None
    tier: Tier = Tier.READ_ONLY
    scope: ItemScope = ItemScope()
    evidence: EvidenceList = []
    value: Grade | None = None
    urgency: Grade | None = None
    risk: RiskLevel | None = None
    notes: Notes = ""

    @field_validator("title")
    @classmethod
    def _title(cls, value: str) -> str:
        return _title(value)

    @field_validator("tier")
    @classmethod
    def _tier(cls, value: Tier) -> Tier:
        return _tier(value)

    @field_validator("risk")
    @classmethod
    def _risk(cls, value: RiskLevel | None) -> RiskLevel | None:
        return _risk(value)

    @field_validator("evidence")
    @classmethod
    def _evidence(cls, value: list[str]) -> list[str]:
        return _evidence(value)

    @field_validator("notes")
    @classmethod
    def _notes(cls, value: str) -> str:
        return check_multiline(value, "notes")


class ItemProposal(ItemContent):
    """The input of ``queue add``: a proposal, which may be thin — only ``title`` is required; ``scope``
    may name any of its six sections. Unknown keys are refused."""


_WITHOUT_REPOSITORY: Final = frozenset({QueueStatus.PROPOSAL, QueueStatus.REJECTED})


class QueueItem(ItemContent):
    """An item of the goal queue (docs/architecture.md "Goal queue"): the fields of
    :class:`ItemContent` and what the queue keeps about it.

    ``key`` (``ORD-12``, or ``Q-3`` before it has a repository), ``status``, ``blocker`` (set exactly
    when ``blocked``), ``failure`` (set exactly when ``failed``), the current review ``cycle``, the runs
    it dispatched, its review rounds and escalations, its events and timestamps. A provisional key is
    allowed only while the item is a proposal (or was rejected as one); any other status needs a
    repository. Raises ``pydantic.ValidationError`` on any violated rule.
    """

    key: ItemKey
    status: QueueStatus = QueueStatus.PROPOSAL
    blocker: QueueBlocker | None = None
    failure: ItemFailure | None = None
    cycle: int = Field(default=1, ge=1)
    runs: list[DispatchedRun] = []
    rounds: list[ReviewRound] = []
    escalations: list[Escalation] = []
    events: list[QueueEvent] = []
    created_at: dt.datetime
    updated_at: dt.datetime
    shipped: ShipRecord | None = None
    """The item's ship (``queue ship``): set once; a second ship is refused ``already_shipped``."""
    intake: IntakeSource | None = None
    """The intake finding the item was proposed from (``None`` for an operator's proposal)."""
    added_by: AddedBy | None = None
    """The request id of the ``queue add`` that proposed it, when it named one
    (:mod:`contracts.queue_requests`)."""

    @model_validator(mode="after")
    def _consistent(self) -> QueueItem:
        if (self.status is QueueStatus.BLOCKED) != (self.blocker is not None):
            raise ValueError("an item has a blocker exactly when it is blocked")
        if (self.status is QueueStatus.FAILED) != (self.failure is not None):
            raise ValueError("an item has a failure exactly when it is failed")
        if self.status not in _WITHOUT_REPOSITORY:
            if is_provisional(self.key):
                raise ValueError(
                    f"a {self.status.value} item needs a key of its repository's series, not {self.key}"
                )
            if self.repo_alias is None:
                raise ValueError(f"a {self.status.value} item needs a repository")
        return self

    @property
    def provisional(self) -> bool:
        """True while the key is of the provisional series."""
        return is_provisional(self.key)

    def cycle_runs(self) -> list[DispatchedRun]:
        """The runs of the current review cycle, in dispatch order."""
        return [run for run in self.runs if run.cycle == self.cycle]

    def cycle_rounds(self) -> list[ReviewRound]:
        """The review rounds of the current review cycle, in order."""
        return [round_ for round_ in self.rounds if round_.cycle == self.cycle]

    def cycle_escalation(self) -> Escalation | None:
        """The escalation of the current review cycle, if it fired."""
        for escalation in self.escalations:
            if escalation.cycle == self.cycle:
                return escalation
        return None

    def with_event(
        self, kind: QueueEventKind, at: dt.datetime, actor: str | None, data: dict[str, Any], **changes: Any
    ) -> QueueItem:
        """A copy with ``changes`` applied, one more event (the next sequence number) and ``updated_at``
        set to ``at``; the result is validated again, so a change that breaks a rule raises
        ``pydantic.ValidationError``."""
        event = QueueEvent(seq=len(self.events) + 1, at=at, kind=kind, actor=actor, data=data)
        fields = {**self.model_dump(), **changes, "events": [*self.events, event], "updated_at": at}
        return QueueItem.model_validate(fields)


# ------------------------------------------------------------------------------------------ input


class ScopeUpdate(BaseModel):
    """The scope sections an update sets; a section it does not name keeps its text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    problem: Section | None = None
    evidence: Section | None = None
    change: Section | None = None
    judgment_calls: Section | None = None
    tests: Section | None = None
    constraints: Section | None = None

    @field_validator(*SCOPE_SECTIONS)
    @classmethod
    def _multiline(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else check_multiline(value, f"scope.{info.field_name}")

    @model_validator(mode="after")
    def _not_cleared(self) -> ScopeUpdate:
        for name in SCOPE_SECTIONS:
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f'scope.{name} cannot be null: give its text ("" empties it)')
        return self


class ItemUpdate(BaseModel):
    """The input of ``queue update KEY``: the fields of a proposal to set. A field the update does not
    name keeps its value; a field named as ``null`` is cleared (``repo_alias``, ``value``, ``urgency``,
    ``risk``); ``scope`` sets only the sections it names; ``evidence`` replaces the whole list. The
    result must still satisfy every rule of :class:`QueueItem`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: Title | None = None
    repo_alias: RepoAlias | None = None
    tier: Tier | None = None
    scope: ScopeUpdate | None = None
    evidence: EvidenceList | None = None
    value: Grade | None = None
    urgency: Grade | None = None
    risk: RiskLevel | None = None
    notes: Notes | None = None

    @field_validator("title")
    @classmethod
    def _title(cls, value: str | None) -> str | None:
        return None if value is None else _title(value)

    @field_validator("tier")
    @classmethod
    def _tier(cls, value: Tier | None) -> Tier | None:
        return None if value is None else _tier(value)

    @field_validator("risk")
    @classmethod
    def _risk(cls, value: RiskLevel | None) -> RiskLevel | None:
        return _risk(value)

    @field_validator("evidence")
    @classmethod
    def _evidence(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else _evidence(value)

    @field_validator("notes")
    @classmethod
    def _notes(cls, value: str | None) -> str | None:
        return None if value is None else check_multiline(value, "notes")

    @model_validator(mode="after")
    def _not_cleared(self) -> ItemUpdate:
        for name in ("title", "tier", "scope", "evidence", "notes"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} cannot be cleared (null): give a value")
        if not self.model_fields_set:
            raise ValueError("an update names at least one field")
        return self


def new_item(
    proposal: ItemProposal,
    *,
    key: str,
    at: dt.datetime,
    actor: str | None,
    added_by: AddedBy | None = None,
) -> QueueItem:
    """The proposal as a new item with ``key`` (allocated by :class:`contracts.queue_keys.KeyAllocator`),
    status ``proposal`` and one ``added`` event (naming the request id, when the add had one). Raises
    ``pydantic.ValidationError`` for a bad key."""
    data: dict[str, Any] = {"key": key}
    if added_by is not None:
        data["request_id"] = added_by.request_id
    event = QueueEvent(seq=1, at=at, kind=QueueEventKind.ADDED, actor=actor, data=data)
    fields = {**proposal.model_dump(), "key": key, "events": [event], "created_at": at, "updated_at": at}
    if added_by is not None:
        fields["added_by"] = added_by
    return QueueItem.model_validate(fields)


def added_with(
    items: Iterable[QueueItem],
    request_id: str,
    proposal_sha256: str,
    archived: Iterable[ArchivedEntry] = (),
) -> QueueItem | None:
    """The item an earlier ``queue add`` with ``request_id`` added, or ``None``; raises
    :class:`QueueRefused` ``request_id_conflict`` when that add carried another proposal, and the
    ``item_archived`` refusal of ``contracts.queue_archive`` when the item it added is archived."""
    for item in items:
        if item.added_by is None or item.added_by.request_id != request_id:
            continue
        _same_proposal(item.key, item.added_by, request_id, proposal_sha256)
        return item
    for entry in archived:
        if entry.added_by is not None and entry.added_by.request_id == request_id:
            _same_proposal(entry.key, entry.added_by, request_id, proposal_sha256)
            raise entry.refusal(entry.key)
    return None


class ArchivedEntry(Protocol):
    """What :func:`added_with` reads of an archived item (``contracts.queue_archive.ArchivedItem``)."""

    @property
    def key(self) -> str: ...

    @property
    def added_by(self) -> AddedBy | None: ...

    def refusal(self, asked: str) -> QueueRefused: ...


def _same_proposal(key: str, added_by: AddedBy, request_id: str, proposal_sha256: str) -> None:
    if added_by.proposal_sha256 != proposal_sha256:
        raise QueueRefused(
            QueueRefusalCode.REQUEST_ID_CONFLICT,
            f"request id {request_id!r} was already used to add {key} with a different "
            "proposal; use a new request id for a new proposal",
            key=key,
        )


def apply_update(item: QueueItem, update: ItemUpdate, *, at: dt.datetime, actor: str | None) -> QueueItem:
    """``item`` with ``update`` applied and an ``updated`` event naming the fields set.

    Raises :class:`QueueRefused` (``not_a_proposal``) when the item is not a proposal — once approved,
    its contract is what was approved — and ``pydantic.ValidationError`` when the result breaks a rule.
    """
    if item.status is not QueueStatus.PROPOSAL:
        raise QueueRefused(
            QueueRefusalCode.NOT_A_PROPOSAL,
            f"{item.key} is {item.status.value}: only a proposal can be updated",
            key=item.key,
            status=item.status.value,
        )
    changes: dict[str, Any] = {}
    named: list[str] = []
    for name in sorted(update.model_fields_set):
        if name == "scope":
            assert update.scope is not None
            sections = {section: text for section, text in update.scope if text is not None}
            changes["scope"] = {**item.scope.model_dump(), **sections}
            named += [f"scope.{section}" for section in SCOPE_SECTIONS if section in sections]
        else:
            changes[name] = getattr(update, name)
            named.append(name)
    return item.with_event(QueueEventKind.UPDATED, at, actor, {"fields": named}, **changes)


class QueueSettings(BaseModel):
    """The queue's settings: slots (default 3, 1..50), autopilot (default off), the delay before a failed
    item is recovered (default 600 s) and the escalation model (``provider:name``, or none)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    slots: int = Field(default=DEFAULT_SLOTS, ge=1, le=MAX_SLOTS)
    autopilot: bool = False
    recovery_delay_seconds: int = Field(
        default=DEFAULT_RECOVERY_DELAY_SECONDS, ge=0, le=MAX_RECOVERY_DELAY_SECONDS
    )
    escalation_model: ModelId | None = None
