"""Replay recordings files on the operator's side (docs/architecture.md "Model selection"): read and
check one for ``models add replay:NAME --recordings FILE``, and make one from finished runs' answers
for ``models export-recordings``.

The format is :mod:`contracts.recordings` (README.md "Replay recordings"). A run's answers are its
analysis (filed as ``change`` when it carries a patch) by the contract's primary profile and its
independent review by the reviewer, keyed by the work item's title as the run recorded it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from contracts.audit import AuditKind
from contracts.errors import InvalidInput, Refused
from contracts.recordings import (
    MAX_RECORDINGS_BYTES,
    InvalidRecordings,
    Recording,
    RecordingKind,
    RecordingsFile,
    parse_recordings,
    recordings_from_answers,
)
from control.inputs import read_bounded

if TYPE_CHECKING:
    from contracts.runs import RunView

MAX_PROBLEMS_SHOWN: Final = 20
"""How many problems the message lists (``--json`` carries every one)."""


class RecordingsRefused(InvalidInput):
    """A recordings file that does not check (exit 2): every problem, by entry and field."""

    def __init__(self, code: str, message: str, problems: list[str]) -> None:
        super().__init__(code, message)
        self.problems = problems

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = super().to_json()
        data["error"]["problems"] = self.problems
        return data


def _refused(what: str, problems: list[str]) -> RecordingsRefused:
    shown = "; ".join(problems[:MAX_PROBLEMS_SHOWN])
    more = len(problems) - MAX_PROBLEMS_SHOWN
    if more > 0:
        shown += f"; and {more} more (--json lists every one)"
    count = f"{len(problems)} problem" + ("" if len(problems) == 1 else "s")
    return RecordingsRefused("invalid_recordings", f"{what}: {count}: {shown}", problems)


def read_recordings(path: Path) -> RecordingsFile:
    """The recordings file at ``path``, checked. Raises :class:`InvalidInput` ``input_not_found``,
    ``input_unreadable``, ``input_too_large``, or :class:`RecordingsRefused` ``invalid_recordings``
    naming every problem (not UTF-8, not JSON, not the format, a response that breaks its job's
    rules, a key recorded twice)."""
    what = f"recordings file {str(path)!r}"
    raw = read_bounded(path, MAX_RECORDINGS_BYTES, what="recordings file", codes="input")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _refused(what, [f"file: not UTF-8 text (invalid byte at offset {error.start})"]) from None
    try:
        return parse_recordings(text)
    except InvalidRecordings as error:
        raise _refused(what, error.problems) from None


def answers_of(view: RunView) -> list[Recording]:
    """The answers of the finished run ``view`` as recordings: its analysis by the primary profile
    (``change`` when it carries a patch) and its review by the reviewer, under the work item's title.
    Raises :class:`Refused` ``run_has_no_answers`` for a run without an analysis (not yet run, or
    failed before its model answered)."""
    contract = view.contract
    if contract is None or view.result is None:
        raise Refused(
            "run_has_no_answers",
            f"run {view.run_id} ({view.status.value}) has no analysis to record: export a run that "
            "reached awaiting_decision, accepted or rejected",
        )
    title = _title(view)
    kind = RecordingKind.CHANGE if view.result.patch is not None else RecordingKind.ANALYSIS
    answers = [Recording(profile=contract.primary, kind=kind, title=title, response=view.result)]
    if view.review is not None:
        answers.append(
            Recording(profile=contract.reviewer, kind=RecordingKind.REVIEW, title=title, response=view.review)
        )
    return answers


def _title(view: RunView) -> str:
    for event in view.audit:
        if event.kind == AuditKind.RUN_CREATED and isinstance(event.data.get("title"), str):
            return str(event.data["title"])
    raise Refused("run_has_no_answers", f"run {view.run_id} recorded no work item title")


def recordings_of(views: Iterable[RunView]) -> RecordingsFile:
    """One recordings file of every run's answers; a key two runs share is refused
    (:class:`RecordingsRefused`), never one of them silently kept."""
    answers = [answer for view in views for answer in answers_of(view)]
    try:
        return recordings_from_answers(answers)
    except InvalidRecordings as error:
        raise _refused("the runs' answers", error.problems) from None


def write_recordings(path: Path, recordings: RecordingsFile) -> Path:
    """Write ``recordings`` to the new file ``path`` (mode 0600: answers may quote evidence); an
    existing file or a symlink is never overwritten (``output_exists``)."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        raise Refused(
            "output_exists", f"{str(path)!r} already exists: name a new file (nothing is overwritten)"
        ) from None
    except OSError as error:
        raise InvalidInput("output_unwritable", f"{str(path)!r}: {error.strerror}") from None
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(recordings.to_json())
    return path
