"""Activities of the goal queue's archive (docs/architecture.md "Archive"): ``archive_queue_items``
writes ended items whole to the store's archive before the queue drops them from its state;
``find_archived_queue_items`` finds, for a queue that has forgotten old tombstones, the archived items
holding an intake scan's findings or added with a request id.

Idempotent: keyed by queue and item key, and an older copy never replaces a newer one, so a retried
call (or one replayed after a worker crash) writes nothing twice; the lookup only reads.
"""

from __future__ import annotations

import structlog
from temporalio import activity

from activities.errors import refusal
from activities.store_access import SharedStore
from contracts.errors import OperatorError
from contracts.queue_archive import ArchiveLookup, ArchiveMatches, ArchiveRequest, tombstone
from contracts.temporal_names import ActivityName


class QueueArchiveActivities:
    """``archive_queue_items`` and ``find_archived_queue_items`` bound to the store."""

    def __init__(self, store: SharedStore) -> None:
        self._store = store

    @activity.defn(name=ActivityName.ARCHIVE_QUEUE_ITEMS)
    def archive_queue_items(self, request: ArchiveRequest) -> None:
        """Write the request's items to the archive."""
        log = structlog.get_logger("specialists").bind(
            activity="archive_queue_items", queue_id=request.queue_id
        )
        try:
            self._store.get().archive_queue_items(request.queue_id, list(request.items), request.archived_at)
        except OperatorError as error:
            log.warning("queue_archive_failed", code=error.code, message=error.message)
            raise refusal(error) from error
        log.info("queue_items_archived", keys=[item.key for item in request.items])

    @activity.defn(name=ActivityName.FIND_ARCHIVED_QUEUE_ITEMS)
    def find_archived_queue_items(self, lookup: ArchiveLookup) -> ArchiveMatches:
        """The tombstones of the archived items the lookup asks for."""
        try:
            found = self._store.get().archived_queue_items_matching(
                lookup.queue_id, fingerprints=list(lookup.fingerprints), request_id=lookup.request_id
            )
        except OperatorError as error:
            log = structlog.get_logger("specialists").bind(queue_id=lookup.queue_id)
            log.warning("queue_archive_lookup_failed", code=error.code, message=error.message)
            raise refusal(error) from error
        return ArchiveMatches(items=[tombstone(item, archived_at) for item, archived_at in found])
