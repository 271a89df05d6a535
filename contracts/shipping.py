"""Shipping a done goal-queue item, and the main-write guard (docs/architecture.md "Goal queue",
"Shipping"): the repository's declared policy, the protected ``ship`` request, what the worker's
``ship_item`` activity does and reports, what the queue records of it, and the base-branch heads the
queue watches. Pure: no I/O.

A repository declares its policy in its signed configuration (``shipping = {flow = "branch"}`` or
``{flow = "merge", base_branch = "main"}``); without one, ``queue ship`` is refused with the question
to answer, never guessed. Nothing is ever pushed.
"""

from __future__ import annotations

import datetime as dt
import re
from enum import StrEnum
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from contracts.hashing import canonical_sha256
from contracts.proofs import ActionProof

MAX_REF_CHARS: Final = 200
SHIP_BRANCH_PREFIX: Final = "specialists/"
MAIN_WRITES_KEPT: Final = 100
DEFAULT_MAIN_WRITE_CHECK_SECONDS: Final = 60.0
_SHA256 = re.compile(r"[0-9a-f]{64}")
_FORBIDDEN_IN_REF = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


class ShippingFlow(StrEnum):
    """``branch``: the reviewed patch committed on a new local branch named after the item;
    ``merge``: that branch also merged into the policy's base branch (fast-forward or a clean
    merge only)."""

    BRANCH = "branch"
    MERGE = "merge"


class ShipCode(StrEnum):
    """Why a ship was refused or failed (exit 4; the ``code`` of ``{"error": {...}}``)."""

    SHIPPING_POLICY_MISSING = "shipping_policy_missing"
    ALREADY_SHIPPED = "already_shipped"
    NOT_SHIPPABLE = "not_shippable"
    NOTHING_TO_SHIP = "nothing_to_ship"
    RUN_MISMATCH = "ship_run_mismatch"
    PATCH_MISMATCH = "patch_mismatch"
    PATCH_UNAVAILABLE = "patch_unavailable"
    BRANCH_EXISTS = "ship_branch_exists"
    PATCH_DOES_NOT_APPLY = "patch_does_not_apply"
    SHIP_CONFLICT = "ship_conflict"
    SHIP_IN_PROGRESS = "ship_in_progress"


def ref_name_problem(name: str) -> str | None:
    """Why ``name`` is not a safe local branch name (git's ``check-ref-format`` rules, stricter:
    no leading ``-``, at most 200 characters), or ``None`` when it is one."""
    if not name:
        return "a branch name cannot be empty"
    if len(name) > MAX_REF_CHARS:
        return f"a branch name has at most {MAX_REF_CHARS} characters"
    if name.startswith("-") or name == "@":
        return f"{name!r} is not a branch name"
    if _FORBIDDEN_IN_REF.search(name):
        return f"{name!r} contains a space, a control character or one of ~^:?*[\\"
    if ".." in name or "@{" in name or "//" in name:
        return f"{name!r} contains '..', '@{{' or '//'"
    if name.startswith("/") or name.endswith(("/", ".", ".lock")):
        return f"{name!r} starts with '/' or ends with '/', '.' or '.lock'"
    if any(part.startswith(".") or part.endswith(".lock") for part in name.split("/")):
        return f"{name!r} has a component starting with '.' or ending with '.lock'"
    return None


class ShippingPolicy(BaseModel):
    """A repository's shipping policy: its ``flow`` and, for ``merge``, the ``base_branch`` merged
    into (required: never guessed; a ``branch`` flow may name it too, unused). Values are taken as
    given; unknown keys are refused."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    flow: ShippingFlow
    base_branch: str | None = None

    @field_validator("flow", mode="before")
    @classmethod
    def _flow_is_a_known_string(cls, value: Any) -> ShippingFlow:
        if not isinstance(value, str) or value not in {flow.value for flow in ShippingFlow}:
            raise ValueError("shipping.flow must be 'branch' or 'merge'")
        return ShippingFlow(value)

    @field_validator("base_branch")
    @classmethod
    def _base_branch_is_a_ref_name(cls, value: str | None) -> str | None:
        if value is not None and (problem := ref_name_problem(value)) is not None:
            raise ValueError(f"shipping.base_branch: {problem}")
        return value

    @model_validator(mode="after")
    def _merge_names_its_base(self) -> ShippingPolicy:
        if self.flow is ShippingFlow.MERGE and self.base_branch is None:
            raise ValueError("shipping.base_branch is required with flow 'merge' (the branch merged into)")
        return self


def ship_branch(key: str) -> str:
    """The local branch a ship of item ``key`` creates: ``specialists/<key>``."""
    return f"{SHIP_BRANCH_PREFIX}{key}"


def policy_question(alias: str) -> str:
    """The question an operator answers before a repository's items can be shipped."""
    return (
        f"repository {alias!r} declares no shipping policy, and none is guessed: should a shipped "
        "item be committed on a new local branch only (flow 'branch'), or also merged into a base "
        "branch (flow 'merge'), and into which base branch? Set it with `specialists repos update "
        f'{alias} --config FILE --actor ID` (FILE holding shipping = {{flow = "branch"}} or '
        'shipping = {flow = "merge", base_branch = "main"})'
    )


class ShipRequest(BaseModel):
    """Update ``ship``: a person ships done item ``key``: exactly the patch of the run the item was
    accepted with (``run_id``), whose sha256 is ``patch_sha256`` (protected: the proof's target is the
    key, bound to :meth:`digest`)."""

    model_config = ConfigDict(frozen=True)

    actor: str | None
    key: str
    run_id: str
    patch_sha256: str
    proof: ActionProof | None = None

    @field_validator("patch_sha256")
    @classmethod
    def _is_a_sha256(cls, value: str) -> str:
        if not _SHA256.fullmatch(value):
            raise ValueError("patch_sha256 must be 64 lower-case hex digits")
        return value

    def digest(self) -> str:
        """What the proof is bound to: the key, the run and the sha256 of exactly what is applied."""
        return canonical_sha256({"key": self.key, "run_id": self.run_id, "patch_sha256": self.patch_sha256})


class ShipWork(BaseModel):
    """Input of activity ``ship_item``: the item, its repository, the accepted run whose reviewed
    patch is applied (it must have sha256 ``patch_sha256``) and the actor who is its author."""

    model_config = ConfigDict(frozen=True)

    key: str
    repo_alias: str
    run_id: str
    patch_sha256: str
    actor: str


class ShipOutcome(BaseModel):
    """Result of activity ``ship_item``: shipped, or the failure's ``code`` and ``message``; the branch
    (kept even when a merge failed), its commit, whether the base branch was merged into, and the
    base branch's head before and after (the queue records the new head, so its own merge raises no
    ``main_write``)."""

    model_config = ConfigDict(frozen=True)

    shipped: bool
    code: str | None = None
    message: str | None = None
    flow: ShippingFlow | None = None
    branch: str | None = None
    commit: str | None = None
    merged: bool = False
    merge_commit: str | None = None
    fast_forward: bool = False
    base_branch: str | None = None
    base_before: str | None = None
    base_after: str | None = None
    guarded_branch: str | None = None
    guarded_before: str | None = None
    guarded_head: str | None = None

    def data(self) -> dict[str, Any]:
        """The JSON-safe fields of an item event."""
        return self.model_dump(mode="json", exclude_none=True)


class ShipRecord(BaseModel):
    """What an item keeps of its ship: when, by whom, the flow, the branch and commit made, and
    whether (and how) the base branch was merged into."""

    model_config = ConfigDict(frozen=True)

    shipped_at: dt.datetime
    shipped_by: str
    run_id: str
    patch_sha256: str
    flow: ShippingFlow
    branch: str
    commit: str
    merged: bool = False
    merge_commit: str | None = None
    fast_forward: bool = False
    base_branch: str | None = None


class BaseHead(BaseModel):
    """The head of repository ``repo_alias``'s base (default) branch as the queue last read it."""

    model_config = ConfigDict(frozen=True)

    repo_alias: str
    branch: str
    commit: str


class BaseHeadsRequest(BaseModel):
    """Input of activity ``read_base_heads``: the repositories referenced by open items."""

    model_config = ConfigDict(frozen=True)

    aliases: list[str]


class BaseHeads(BaseModel):
    """Result of ``read_base_heads``: each readable repository's base-branch head; the others with why
    not (not registered, not verified, not a working tree), checked again next time."""

    model_config = ConfigDict(frozen=True)

    heads: list[BaseHead] = []
    unreadable: dict[str, str] = {}


class MainWrite(BaseModel):
    """A ``main_write`` event: the base branch of a repository referenced by an open item moved from
    ``before`` to ``after`` (not by a ship), seen at ``at``; ``items`` the open items then."""

    model_config = ConfigDict(frozen=True)

    at: dt.datetime
    repo_alias: str
    branch: str
    before: str
    after: str
    items: list[str] = Field(default_factory=list)
