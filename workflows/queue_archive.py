"""The goal queue's archive, on the workflow side (docs/architecture.md "Goal queue", "Archive").

Before the queue continues as new it takes its ended items that are due
(:func:`contracts.queue_archive.archivable`; none being shipped) out of its items at once, keeping
only what it still needs of each (:class:`contracts.queue_archive.ArchivedItem`), then writes them
whole to the store (``archive_queue_items``, in batches). Taken out first, they cannot change while
they are written: a handler that asks for one meanwhile (a ``reopen``, a ``ship``) finds it archived
and is refused ``item_archived``. A batch that fails puts its items and the ones not yet written back
where they were, for the next execution — the archive is never a reason for the queue to stop.

Then it keeps only its newest ``tombstones_kept`` tombstones (:func:`forget_old_tombstones`): all of
them are written by then. A queue that has forgotten any asks the store
(``find_archived_queue_items``, :func:`archived_in_store`) for what an intake scan or a retried
``queue add`` needs of them.

Deterministic: no I/O of its own; imported by :mod:`workflows.work_queue`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Protocol

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from contracts.queue_archive import (
        MAX_LOOKUP_FINGERPRINTS,
        ArchivedItem,
        ArchiveLookup,
        ArchiveMatches,
        ArchiveRequest,
        archivable,
        batches,
        find_archived,
        keep_newest,
        tombstone,
    )
    from contracts.queue_items import QueueItem
    from contracts.queue_messages import ARCHIVE_UNAVAILABLE, UNKNOWN_ITEM
    from contracts.temporal_names import ActivityName

PATCH_ARCHIVE_ENDED = "queue-archive-ended"
"""Executions that archive ended items before continuing as new; histories recorded before (and
executions with nothing due) continue without it."""
PATCH_FORGET_TOMBSTONES = "queue-forget-old-tombstones"
"""Executions that forget their oldest tombstones before continuing as new; asked only when a queue
holds more than it keeps, so no recorded history asks it."""
ARCHIVE_TIMEOUT = timedelta(seconds=30)
ARCHIVE_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=1))


class ArchivingQueue(Protocol):
    """What the queue workflow lends the archive: its items, what it archived, what it ships."""

    _items: dict[str, QueueItem]
    _archived: list[ArchivedItem]
    _shipping: set[str]
    _tombstones_forgotten: int


def not_held(archived: list[ArchivedItem], key: str) -> tuple[str, str]:
    """Why ``key`` names none of the queue's items (code, message): archived (``item_archived``,
    with when and how to read it) or unknown."""
    entry = find_archived(archived, key)
    if entry is None:
        return UNKNOWN_ITEM, f"no item {key} in the queue"
    refusal = entry.refusal(key)
    return refusal.code, refusal.message


async def archive_ended(queue: ArchivingQueue, after_seconds: int) -> None:
    """Archive the items due (see the module docstring)."""
    due = archivable(
        queue._items.values(), now=workflow.now(), after_seconds=after_seconds, busy=queue._shipping
    )
    if not due or not workflow.patched(PATCH_ARCHIVE_ENDED):
        return
    archived_at = workflow.now()
    queue_id = workflow.info().workflow_id
    order = list(queue._items)
    for item in due:
        del queue._items[item.key]
        queue._archived.append(tombstone(item, archived_at))
    pending = batches(due)
    for index, batch in enumerate(pending):
        try:
            await workflow.execute_activity(
                ActivityName.ARCHIVE_QUEUE_ITEMS,
                ArchiveRequest(queue_id=queue_id, items=batch, archived_at=archived_at),
                start_to_close_timeout=ARCHIVE_TIMEOUT,
                retry_policy=ARCHIVE_RETRY,
            )
        except ActivityError as error:
            unwritten = [item for rest in pending[index:] for item in rest]
            workflow.logger.warning(
                "the archive refused %d items; they stay in the queue: %s",
                len(unwritten),
                error.cause or error,
            )
            _put_back(queue, unwritten, order)
            return


def forget_old_tombstones(queue: ArchivingQueue, keep: int) -> None:
    """Keep the newest ``keep`` tombstones (see the module docstring); count the others forgotten."""
    if len(queue._archived) <= keep or not workflow.patched(PATCH_FORGET_TOMBSTONES):
        return
    kept = keep_newest(queue._archived, keep)
    queue._tombstones_forgotten += len(queue._archived) - len(kept)
    queue._archived = kept


class ArchiveUnavailable(Exception):
    """The store's archive could not be asked (``archive_unavailable``): the request is refused, as
    the queue cannot tell whether it concerns an archived item."""

    code = ARCHIVE_UNAVAILABLE


async def archived_in_store(
    queue: ArchivingQueue, *, fingerprints: Sequence[str] = (), request_id: str | None = None
) -> list[ArchivedItem]:
    """The queue's tombstones, and — once it has forgotten any — the store's for the archived items
    holding one of ``fingerprints`` or added with ``request_id``. Raises :class:`ArchiveUnavailable`
    when the store cannot be asked."""
    if not queue._tombstones_forgotten or (not fingerprints and request_id is None):
        return list(queue._archived)
    wanted = sorted(set(fingerprints))
    found: list[ArchivedItem] = []
    for start in range(0, max(len(wanted), 1), MAX_LOOKUP_FINGERPRINTS):
        try:
            matches = await workflow.execute_activity(
                ActivityName.FIND_ARCHIVED_QUEUE_ITEMS,
                ArchiveLookup(
                    queue_id=workflow.info().workflow_id,
                    fingerprints=wanted[start : start + MAX_LOOKUP_FINGERPRINTS],
                    request_id=request_id if start == 0 else None,
                ),
                result_type=ArchiveMatches,
                start_to_close_timeout=ARCHIVE_TIMEOUT,
                retry_policy=ARCHIVE_RETRY,
            )
        except ActivityError as error:
            raise ArchiveUnavailable(
                "the queue has forgotten its oldest archived items and could not ask the store's "
                f"archive about them ({error.cause or error}); nothing was changed: try again"
            ) from error
        found.extend(matches.items)
    known = {entry.key for entry in queue._archived}
    return [*queue._archived, *(entry for entry in found if entry.key not in known)]


def _put_back(queue: ArchivingQueue, items: list[QueueItem], order: list[str]) -> None:
    """``items`` back among the queue's items, in the places they had (items added since after them),
    and no longer archived."""
    back = {item.key: item for item in items}
    queue._archived = [entry for entry in queue._archived if entry.key not in back]
    current = queue._items
    merged = {key: back.get(key) or current[key] for key in order if key in back or key in current}
    merged.update((key, item) for key, item in current.items() if key not in merged)
    queue._items = merged
