"""The queue side of an intake scan: the findings diffed against the items, matched by fingerprint
and status, never by date (docs/architecture.md "Goal queue", "Intake").

For each finding, in the scan's order, the first rule that holds decides:

1. an item not ``rejected`` or ``done`` holds its fingerprint → **already queued** (nothing changes;
   a TODO that moved is the same finding);
2. an item past proposal already recorded this fingerprint as a changed source → **already queued**;
3. a ``rejected`` or ``done`` item holds its fingerprint, in the queue or archived
   (``contracts.queue_archive``) → **not re-proposed** (the answer says which);
4. an open item's anchor is the finding's (same kind, path and line; same branch or worktree) and its
   own fingerprint was not found by this scan → its source **changed**: a ``proposal`` is updated
   (title when the operator kept the generated one, the problem and evidence sections, the
   evidence refs it took from its source, the source itself: an ``intake_updated`` event); an item
   past proposal keeps its contract and gets an ``intake_changed`` event;
5. otherwise → a **new proposal** (``added`` event naming the fingerprint and commit), or
   **refused** with the reason when no proposal can be made of it.

A scan an ``intake-scan`` sweep asked for names the sweep (``"sweep": <its workflow id>``) in every
event it writes: the actor is then the person who enabled the schedule, not one who ran the scan.

A scan never approves, dispatches or moves an item. Pure: no I/O.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, ValidationError

from contracts.constants import MAX_EVIDENCE_REFS
from contracts.errors import Refused
from contracts.intake import (
    IntakeAnswer,
    IntakeFinding,
    IntakeOutcome,
    ScanResult,
    finding_proposal,
    finding_title,
    outcome,
    proposal_problem,
)
from contracts.queue_archive import ArchivedItem
from contracts.queue_items import QueueEvent, QueueEventKind, QueueItem, QueueStatus
from contracts.queue_keys import KeyAllocator

TERMINAL: Final = frozenset({QueueStatus.REJECTED, QueueStatus.DONE})
"""Statuses whose findings are not proposed again."""


class IntakeApplied(BaseModel):
    """The result of :func:`apply_intake`: the items that are new or changed (keyed, in order), the
    key allocator after the new keys, and the answer."""

    model_config = ConfigDict(frozen=True)

    items: list[QueueItem]
    allocator: KeyAllocator
    answer: IntakeAnswer


def _recorded(item: QueueItem) -> set[str]:
    return {
        str(event.data.get("fingerprint"))
        for event in item.events
        if event.kind is QueueEventKind.INTAKE_CHANGED
    }


def apply_intake(
    result: ScanResult,
    items: list[QueueItem],
    allocator: KeyAllocator,
    *,
    at: dt.datetime,
    actor: str | None,
    archived: Iterable[ArchivedItem] = (),
    sweep: str | None = None,
) -> IntakeApplied:
    """The queue after the findings of ``result`` (see the module docstring): new proposals, updated
    proposals and recorded changes, with the answer listing each finding once; every event names
    ``sweep`` when a sweep asked for the scan."""
    via: dict[str, Any] = {"sweep": sweep} if sweep is not None else {}
    alias = result.repo_alias
    held = {item.key: item for item in items}
    found = {finding.fingerprint for finding in result.findings}
    changed: dict[str, QueueItem] = {}
    lists: dict[str, list[IntakeOutcome]] = {
        name: []
        for name in ("proposed", "updated", "recorded", "already_queued", "not_reproposed", "refused")
    }
    claimed: set[str] = set()
    seen: set[str] = set()
    archived_by_fingerprint = {
        entry.intake_fingerprint: entry for entry in archived if entry.intake_fingerprint is not None
    }
    for finding in result.findings:
        if finding.fingerprint in seen:
            continue
        seen.add(finding.fingerprint)
        current = [changed.get(item.key, item) for item in held.values()]
        with_source = [item for item in current if item.intake is not None]
        same = [
            item
            for item in with_source
            if item.intake is not None and item.intake.fingerprint == finding.fingerprint
        ]
        open_same = [item for item in same if item.status not in TERMINAL]
        if open_same:
            item = open_same[0]
            lists["already_queued"].append(
                outcome(finding, f"already queued as {item.key} ({item.status.value})", item.key, item.status)
            )
            continue
        noted = [
            item for item in current if item.status not in TERMINAL and finding.fingerprint in _recorded(item)
        ]
        if noted:
            item = noted[0]
            lists["already_queued"].append(
                outcome(finding, f"its change is already recorded on {item.key}", item.key, item.status)
            )
            continue
        if same:
            item = same[0]
            lists["not_reproposed"].append(
                outcome(
                    finding,
                    f"{item.key} holds it and is {item.status.value}: not proposed again",
                    item.key,
                    item.status,
                )
            )
            continue
        gone = archived_by_fingerprint.get(finding.fingerprint)
        if gone is not None:
            lists["not_reproposed"].append(
                outcome(
                    finding,
                    f"{gone.key} held it, was {gone.status.value} and is archived: not proposed again",
                    gone.key,
                    gone.status,
                )
            )
            continue
        anchored = [
            item
            for item in with_source
            if item.status not in TERMINAL
            and item.intake is not None
            and item.intake.anchor == finding.anchor
            and item.intake.fingerprint not in found
            and item.key not in claimed
        ]
        if anchored:
            item = anchored[0]
            claimed.add(item.key)
            problem = proposal_problem(alias, finding)
            if problem is not None:
                lists["refused"].append(outcome(finding, problem, item.key, item.status))
                continue
            if item.status is QueueStatus.PROPOSAL:
                changed[item.key] = _updated(item, alias, finding, at=at, actor=actor, via=via)
                lists["updated"].append(
                    outcome(finding, f"its source changed: {item.key} updated", item.key, item.status)
                )
            else:
                changed[item.key] = item.with_event(
                    QueueEventKind.INTAKE_CHANGED, at, actor, {**_change_data(item, finding), **via}
                )
                lists["recorded"].append(
                    outcome(
                        finding,
                        f"its source changed; {item.key} is {item.status.value}: "
                        "the change is recorded as an event",
                        item.key,
                        item.status,
                    )
                )
            continue
        problem = proposal_problem(alias, finding)
        if problem is not None:
            lists["refused"].append(outcome(finding, problem))
            continue
        try:
            allocator, key = allocator.allocate(alias)
        except Refused as error:
            lists["refused"].append(outcome(finding, f"no key: {error.message}"))
            continue
        item = _new_item(alias, finding, key=key, at=at, actor=actor, via=via)
        changed[key] = item
        lists["proposed"].append(outcome(finding, "new proposal", key, item.status))
    answer = IntakeAnswer(
        accepted=True,
        repo_alias=alias,
        commit=result.commit,
        base_branch=result.base_branch,
        files_scanned=result.files_scanned,
        skipped=result.skipped,
        skipped_total=result.skipped_total,
        findings_over_limit=result.findings_over_limit,
        **lists,
    )
    return IntakeApplied(items=list(changed.values()), allocator=allocator, answer=answer)


def _new_item(
    alias: str,
    finding: IntakeFinding,
    *,
    key: str,
    at: dt.datetime,
    actor: str | None,
    via: dict[str, Any],
) -> QueueItem:
    proposal = finding_proposal(alias, finding)
    data = {"key": key, "intake": finding.fingerprint, "commit": finding.commit, **via}
    event = QueueEvent(seq=1, at=at, kind=QueueEventKind.ADDED, actor=actor, data=data)
    return QueueItem.model_validate(
        {
            **proposal.model_dump(),
            "key": key,
            "events": [event],
            "created_at": at,
            "updated_at": at,
            "intake": finding.model_dump(),
        }
    )


def _change_data(item: QueueItem, finding: IntakeFinding) -> dict[str, Any]:
    assert item.intake is not None
    return {
        "fingerprint": finding.fingerprint,
        "previous_fingerprint": item.intake.fingerprint,
        "commit": finding.commit,
        "evidence": list(finding.evidence),
        "quote": finding.quote,
        "quote_complete": finding.quote_complete,
    }


def _updated(
    item: QueueItem,
    alias: str,
    finding: IntakeFinding,
    *,
    at: dt.datetime,
    actor: str | None,
    via: dict[str, Any],
) -> QueueItem:
    """The proposal ``item`` with its changed source: what it took from the old source is replaced,
    what the operator wrote is kept."""
    old = item.intake
    assert old is not None
    fresh = finding_proposal(alias, finding)
    fields = ["intake", "scope.problem", "scope.evidence", "evidence"]
    changes: dict[str, Any] = {"intake": finding.model_dump()}
    if item.title == finding_title(old):
        changes["title"] = fresh.title
        fields.insert(0, "title")
    scope = {**item.scope.model_dump(), "problem": fresh.scope.problem, "evidence": fresh.scope.evidence}
    changes["scope"] = scope
    kept = [ref for ref in item.evidence if ref not in old.evidence and ref not in fresh.evidence]
    changes["evidence"] = [*fresh.evidence, *kept][:MAX_EVIDENCE_REFS]
    data = {**_change_data(item, finding), "fields": fields, **via}
    try:
        return item.with_event(QueueEventKind.INTAKE_UPDATED, at, actor, data, **changes)
    except ValidationError:  # the operator's sections and the new quote no longer fit together
        changes["scope"] = {**scope, **{name: getattr(item.scope, name) for name in ("problem", "evidence")}}
        return item.with_event(
            QueueEventKind.INTAKE_UPDATED, at, actor, {**data, "scope_kept": True}, **changes
        )
