"""The goal queue's archive (docs/architecture.md "Goal queue", "Archive"). Pure: no I/O.

The queue carries every item it holds across continue-as-new, and Temporal refuses a payload over
2 MB: a queue that kept every item it ever ended would one day fail to continue. So an item that has
ended — ``done`` or ``rejected`` — and has not changed for ``archive_after_seconds`` (30 days unless
the queue's state says otherwise) is written whole to the store's archive when the queue continues
as new, and the queue keeps only its :class:`ArchivedItem`: the key (and the keys it had before an
approval renamed it), its status, when it was archived, and what the queue still needs of it — the
intake fingerprint, so a scan does not propose its finding again, and the request id of its
``queue add``. Moving an archived item is refused ``item_archived`` (exit 4); ``queue show`` reads it
from the archive. At most :data:`MAX_ARCHIVED_PER_EXECUTION` items are archived per execution, in
batches of :data:`ARCHIVE_BATCH` (each an activity's input, well under the payload limit).

Tombstones are small but not nothing (100-400 bytes), so the queue keeps only the newest
``tombstones_kept`` of them (:data:`DEFAULT_TOMBSTONES_KEPT` unless its state says otherwise) and
forgets older ones when it continues as new; once it has forgotten any, it asks the store
(``find_archived_queue_items``, :class:`ArchiveLookup`) for what they told it: an intake scan's
findings an archived item held, and the item a retried ``queue add`` added. The store finds an
archived item by every key it had, for the CLI's refusals and ``queue show``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from contracts.intake_source import Sha256
from contracts.queue_items import (
    ItemKey,
    QueueEventKind,
    QueueItem,
    QueueRefusalCode,
    QueueRefused,
    QueueStatus,
)
from contracts.queue_requests import AddedBy, RequestId

ARCHIVED_STATUSES: Final = frozenset({QueueStatus.DONE, QueueStatus.REJECTED})
DEFAULT_ARCHIVE_AFTER_SECONDS: Final = 30 * 24 * 3600
ARCHIVE_BATCH: Final = 25
"""Items per ``archive_queue_items`` call: 25 items at their largest are well under 2 MB."""
MAX_ARCHIVED_PER_EXECUTION: Final = 200
DEFAULT_TOMBSTONES_KEPT: Final = 2000
"""Tombstones a queue keeps in its state (at most about 800 KB of its continue-as-new input)."""
MAX_LOOKUP_FINGERPRINTS: Final = 1000
"""Fingerprints per ``find_archived_queue_items`` call (a scan proposes at most 200 findings)."""


class ArchivedItem(BaseModel):
    """What the queue keeps of an item it archived."""

    model_config = ConfigDict(frozen=True)

    key: ItemKey
    status: QueueStatus
    archived_at: dt.datetime
    renamed_from: list[ItemKey] = []
    intake_fingerprint: Sha256 | None = None
    added_by: AddedBy | None = None

    def refusal(self, asked: str) -> QueueRefused:
        """``item_archived``: ``asked`` (the key, or one it had before a rename) names this archived
        item."""
        name = self.key if asked == self.key else f"{asked} (renamed to {self.key})"
        when = self.archived_at.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
        return QueueRefused(
            QueueRefusalCode.ITEM_ARCHIVED,
            f"{name} was {self.status.value} and was archived at {when}: `queue show {self.key}` "
            "reads it from the archive; add a new item to work on it again",
            key=self.key,
            status=self.status.value,
            archived_at=when,
        )


class ArchiveRequest(BaseModel):
    """Input of activity ``archive_queue_items``: items of the queue ``queue_id`` to write whole."""

    model_config = ConfigDict(frozen=True)

    queue_id: str
    items: list[QueueItem] = Field(min_length=1, max_length=ARCHIVE_BATCH)
    archived_at: dt.datetime


class ArchiveLookup(BaseModel):
    """Input of activity ``find_archived_queue_items``: which archived items of the queue ``queue_id``
    the queue needs — those holding one of the intake ``fingerprints`` or added with ``request_id``."""

    model_config = ConfigDict(frozen=True)

    queue_id: str
    fingerprints: list[Sha256] = Field(default=[], max_length=MAX_LOOKUP_FINGERPRINTS)
    request_id: RequestId | None = None


class ArchiveMatches(BaseModel):
    """Output of ``find_archived_queue_items``: the tombstone of each archived item found."""

    model_config = ConfigDict(frozen=True)

    items: list[ArchivedItem]


def keep_newest(archived: list[ArchivedItem], keep: int) -> list[ArchivedItem]:
    """The newest ``keep`` of ``archived`` (latest ``archived_at``; an archiving's items, which share
    it, by key), in the order they were."""
    if len(archived) <= keep:
        return list(archived)
    newest = sorted(archived, key=lambda entry: (entry.archived_at, entry.key), reverse=True)[:keep]
    kept = {id(entry) for entry in newest}
    return [entry for entry in archived if id(entry) in kept]


def archivable(
    items: Iterable[QueueItem], *, now: dt.datetime, after_seconds: int, busy: Iterable[str] = ()
) -> list[QueueItem]:
    """The ended items unchanged for ``after_seconds`` (oldest first, at most
    :data:`MAX_ARCHIVED_PER_EXECUTION`), leaving out the ``busy`` ones (being shipped)."""
    held = set(busy)
    due = [
        item
        for item in items
        if item.status in ARCHIVED_STATUSES
        and item.key not in held
        and (now - item.updated_at).total_seconds() >= after_seconds
    ]
    return sorted(due, key=lambda item: (item.updated_at, item.key))[:MAX_ARCHIVED_PER_EXECUTION]


def batches(items: list[QueueItem]) -> list[list[QueueItem]]:
    """``items`` in slices of :data:`ARCHIVE_BATCH`."""
    return [items[start : start + ARCHIVE_BATCH] for start in range(0, len(items), ARCHIVE_BATCH)]


def former_keys(item: QueueItem) -> list[str]:
    """The keys ``item`` had before an approval renamed it (its ``renamed`` events' ``from``)."""
    return [
        str(event.data["from"])
        for event in item.events
        if event.kind is QueueEventKind.RENAMED and isinstance(event.data.get("from"), str)
    ]


def tombstone(item: QueueItem, archived_at: dt.datetime) -> ArchivedItem:
    """What the queue keeps of ``item`` once the archive holds it."""
    return ArchivedItem(
        key=item.key,
        status=item.status,
        archived_at=archived_at,
        renamed_from=former_keys(item),
        intake_fingerprint=item.intake.fingerprint if item.intake is not None else None,
        added_by=item.added_by,
    )


def find_archived(archived: Iterable[ArchivedItem], key: str) -> ArchivedItem | None:
    """The archived item ``key`` names (its key, or one it had before a rename)."""
    for entry in archived:
        if entry.key == key or key in entry.renamed_from:
            return entry
    return None
