"""One store per worker process, opened (and migrated) on first use and shared by every activity."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contracts.identity import TrustAnchor
    from contracts.models import ModelRecord
    from store.store import Store


class SharedStore:
    """Lazily opens the store at ``url`` once; thread-safe (sync activities run in a thread pool).
    Its configuration reads are verified against ``anchor`` (docs/architecture.md "Configuration")."""

    def __init__(self, url: str, anchor: TrustAnchor | None = None) -> None:
        self._url = url
        self._anchor = anchor
        self._store: Store | None = None
        self._lock = threading.Lock()
        self._models: dict[str, ModelRecord] = {}
        self._recordings: dict[str, str] = {}

    def get(self) -> Store:
        """The open store. Raises what :func:`store.database.open_store` raises."""
        with self._lock:
            if self._store is None:
                # Imported here: SQLAlchemy and the migrations cost a second of start-up, which a
                # restarted worker should spend after it is already polling.
                from store.database import open_store

                self._store = open_store(self._url, create=True, anchor=self._anchor)
            return self._store

    def registered_model(self, model_id: str) -> ModelRecord:
        """The registration of ``model_id`` (verified), read from the store once per worker: a
        registration's endpoint, key variable and ceiling never change, so every call and lease
        request after the first reuses it (a deactivation stops new runs from capturing the model;
        runs that captured it keep calling it). Raises ``unknown_model`` (not found, never cached: the
        model may be registered later) or ``configuration_unverified``."""
        record = self._models.get(model_id)
        if record is None:
            record = self.get().get_model(model_id)
            self._models[model_id] = record
        return record

    def replay_recordings(self, model_id: str) -> str | None:
        """The recordings file of the registered replay model ``model_id`` (verified), or ``None``
        when none is registered (the worker's built-in recordings answer then). Read from the store
        once per worker, as registrations are: a registered file never changes (a deactivation
        stops new runs capturing the model). Raises ``configuration_unverified``."""
        text = self._recordings.get(model_id)
        if text is None:
            text = self.get().replay_recordings(model_id)
            if text is not None:
                self._recordings[model_id] = text
        return text

    def close(self) -> None:
        """Release the store's connections (it reopens on next use)."""
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None
