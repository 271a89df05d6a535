"""The ``replay`` provider: answers from recorded structured responses (docs/architecture.md "Model
selection").

Model id ``replay:<name>`` answers from the recordings an operator registered for it (``models add
replay:<name> --recordings FILE``, read through ``registered``), else from the worker's built-in
``<recordings dir>/<name>.json``. Both have the format of :mod:`contracts.recordings`::

    {"recordings": [{"profile": "...", "kind": "analysis" | "review" | "change", "title": "...",
                     "response": { ...a SpecialistOutput... }}]}

Recordings are keyed by the job identity (profile, job kind, work item title), not by a hash of the
whole request, so they survive later changes to prompts and context; a recording that names
``task_contains`` answers only a job whose task contains that text, and is preferred over the one that
names none (:func:`contracts.recordings.select_recording`). A job with no recording fails
clearly (:class:`ReplayMiss`, ``replay_no_recording``), naming the identity it looked for and the
nearest recorded one. A miss is an expected outcome of replaying, not a fault: the worker logs it as
one line (error type and key), without a traceback.
"""

from __future__ import annotations

import difflib
import json
import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from activities.providers.base import CompletionRequest, JobIdentity, ProviderError
from contracts.errors import ErrorType, OperatorError
from contracts.models import REPLAY_PROVIDER, is_built_in_replay_model
from contracts.recordings import RecordingKey, parse_recordings, recordings_sha256, select_recording

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class ReplayMiss(ProviderError):
    """No recording for a request's identity (``replay_no_recording``): ``key`` is the (profile, job
    kind, title) it looked for, ``model`` the replay model (``replay:<name>``)."""

    def __init__(self, key: tuple[str, str, str], model: str, message: str) -> None:
        super().__init__(ErrorType.REPLAY_NO_RECORDING, message)
        self.key = key
        self.model = model


RegisteredRecordings = Callable[[str], str | None]
"""The recordings file registered for a replay model id (``replay:<name>``), or ``None``."""


class ReplayProvider:
    """Serves the recordings ``registered`` holds for a model, else those in ``recordings_dir``."""

    def __init__(self, recordings_dir: Path, registered: RegisteredRecordings | None = None) -> None:
        self._dir = recordings_dir
        self._registered = registered
        # Registered files by sha256 of their text: parsed once per worker.
        self._registered_tables: dict[str, dict[RecordingKey, str]] = {}
        # Parsed files by name, with the (mtime, size) they were parsed at: a call re-reads a file
        # only when it changed, not on every call (sync activities run in a thread pool).
        self._tables: dict[str, tuple[tuple[int, int], dict[RecordingKey, str]]] = {}
        self._lock = threading.Lock()

    def _load(self, name: str) -> dict[RecordingKey, str]:
        if not _NAME.fullmatch(name):
            raise ProviderError(ErrorType.MODEL_NOT_CONFIGURED, f"replay model name {name!r} is not valid")
        registered = self._registered_table(name)
        if registered is not None:
            return registered
        path = self._dir / f"{name}.json"
        try:
            stat = path.stat()
        except OSError:
            stat = None
        version = (stat.st_mtime_ns, stat.st_size) if stat is not None else None
        with self._lock:
            cached = self._tables.get(name)
        if cached is not None and cached[0] == version:
            return cached[1]
        table = self._parse(path)
        if version is not None:
            with self._lock:
                self._tables[name] = (version, table)
        return table

    def _registered_table(self, name: str) -> dict[RecordingKey, str] | None:
        model_id = f"{REPLAY_PROVIDER}:{name}"
        if self._registered is None or is_built_in_replay_model(model_id):
            return None  # a built-in name is never registered: no store read
        try:
            text = self._registered(model_id)
        except OperatorError as error:  # configuration_unverified: a forged or unsigned row
            raise ProviderError(
                ErrorType.MODEL_NOT_CONFIGURED, f"{model_id}: {error.code}: {error.message}"
            ) from None
        if text is None:
            return None
        digest = recordings_sha256(text)
        with self._lock:
            table = self._registered_tables.get(digest)
        if table is None:
            table = parse_recordings(text).table()
            with self._lock:
                self._registered_tables[digest] = table
        return table

    def _parse(self, path: Path) -> dict[RecordingKey, str]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            # The file name only: the worker's directory layout is not the operator's business.
            raise ProviderError(
                ErrorType.MODEL_NOT_CONFIGURED, f"replay recordings file {path.name!r} does not exist"
            ) from None
        except (OSError, ValueError) as error:
            raise ProviderError(
                ErrorType.MODEL_NOT_CONFIGURED,
                f"replay recordings file {path.name!r} is unreadable ({type(error).__name__})",
            ) from None
        table: dict[RecordingKey, str] = {}
        for entry in data.get("recordings", []):
            marker = str(entry.get("task_contains") or "")
            key = (str(entry["profile"]), str(entry["kind"]), str(entry["title"]), marker)
            table[key] = json.dumps(entry["response"], sort_keys=True)
        return table

    def check(self, name: str) -> int:
        """The number of recordings in ``replay:<name>``. Raises ``model_not_configured`` when the
        name is invalid or its file is missing or unreadable."""
        return len(self._load(name))

    def complete(self, request: CompletionRequest) -> str:
        """The recorded response for the request's identity. Raises :class:`ReplayMiss`."""
        identity: JobIdentity = request.identity
        table = self._load(request.model_name)
        key = (identity.profile_id, identity.recording_kind, identity.title)
        answer = select_recording(table, *key, identity.task)
        if answer is not None:
            return answer
        model = f"replay:{request.model_name}"
        raise ReplayMiss(
            key,
            model,
            f"no replay recording for profile {identity.profile_id!r}, job {identity.recording_kind!r}, "
            f"title {identity.title!r} in {model}; {nearest_recording(key, table)}",
        )


def nearest_recording(key: tuple[str, str, str], table: Mapping[RecordingKey, str]) -> str:
    """What a miss says about the recordings there are: the recorded key nearest to ``key`` (the
    same profile and job first, then the closest title), or that the file has none."""
    if not table:
        return "the file has no recordings"

    def distance(candidate: tuple[str, str, str]) -> tuple[int, float, tuple[str, str, str]]:
        mismatches = (candidate[0] != key[0]) + (candidate[1] != key[1])
        similarity = difflib.SequenceMatcher(None, candidate[2], key[2], autojunk=False).ratio()
        return mismatches, -similarity, candidate

    profile, kind, title = min({recorded[:3] for recorded in table}, key=distance)
    return f"the nearest recorded key is profile {profile!r}, job {kind!r}, title {title!r}"
