"""Activity ``archive_queue_items``: write ended goal-queue items whole to the store's archive
(docs/architecture.md "Archive"), before the queue drops them from its state.

Idempotent: keyed by queue and item key, and an older copy never replaces a newer one, so a retried
call (or one replayed after a worker crash) writes nothing twice.
"""

from __future__ import annotations

import structlog
from temporalio import activity

from activities.errors import refusal
from activities.store_access import SharedStore
from contracts.errors import OperatorError
from contracts.queue_archive import ArchiveRequest
from contracts.temporal_names import ActivityName


class QueueArchiveActivities:
    """``archive_queue_items`` bound to the store."""

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
