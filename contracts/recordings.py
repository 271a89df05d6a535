"""Replay recordings: what a ``replay:<name>`` model answers with (docs/architecture.md "Model
selection").

A recordings file is JSON::

    {"recordings": [{"profile": "database-optimizer", "kind": "analysis", "title": "…",
                     "response": { …a SpecialistOutput… }}]}

Each recording is keyed by the job's identity — the profile that does the job, the job kind
(``analysis``, ``review``, or ``change`` for a worktree run's change job) and the work item's title —
not by a hash of the whole request, so recordings survive changes to prompts and context packs. A
recording may also name ``task_contains``: text the job's task (the work item's title and
description) must contain, such as ``Findings of earlier review rounds`` for the run a goal queue
re-dispatches after a FAIL. A job gets the recording of its identity whose ``task_contains`` its task
contains (the longest such text, when several do), else the one without. The
response is a complete :class:`~contracts.output.SpecialistOutput` and must already satisfy the rules a
live answer must (its ``role`` is the profile, a review carries a verdict and an analysis none, a
change carries a patch and nothing else does). Two recordings with the same key are refused, never
one silently preferred. Evidence citations are checked when the recording is used, against the job's
evidence, as for any model answer.

:func:`parse_recordings` checks a file and names every problem by entry and field; the worker's
replay provider, ``models add replay:NAME --recordings FILE`` and the export of a finished run's answers
(:func:`recordings_from_answers`) all use this one definition. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Annotated, Final

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from contracts.output import JobKind, OutputContractViolation, SpecialistOutput, check_output_for_job
from contracts.text_rules import check_one_line

MAX_RECORDINGS: Final = 5_000
"""Most recordings one file may hold."""
MAX_RECORDINGS_BYTES: Final = 16 * 1024 * 1024
"""Largest recordings file (UTF-8 bytes)."""

ProfileId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")]
RecordingTitle = Annotated[str, StringConstraints(min_length=1, max_length=200)]

RecordingKey = tuple[str, str, str, str]
"""``(profile, kind, title, task_contains)`` (``""`` when the recording names none): how a job finds
its recording (:func:`select_recording`)."""
TaskMarker = Annotated[str, StringConstraints(min_length=1, max_length=200)]


class RecordingKind(StrEnum):
    """The job kind a recording is filed under."""

    ANALYSIS = "analysis"
    REVIEW = "review"
    CHANGE = "change"
    """A worktree run's change job (an analysis whose answer carries ``patch``)."""


class InvalidRecordings(ValueError):
    """A recordings file broke the format; ``problems`` lists every one (``entry N: field: why``)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class Recording(BaseModel):
    """One recorded answer and the job identity it answers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    profile: ProfileId
    kind: RecordingKind
    title: RecordingTitle
    task_contains: TaskMarker | None = None
    """Text the job's task must contain for this recording to answer it (``None``: any task)."""
    response: SpecialistOutput

    @field_validator("title", "task_contains")
    @classmethod
    def _one_line(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        if not value.strip():
            raise ValueError(f"{info.field_name} must not be blank")
        return check_one_line(value, str(info.field_name))

    @property
    def key(self) -> RecordingKey:
        return (self.profile, self.kind.value, self.title, self.task_contains or "")

    def check_rules(self) -> None:
        """The rules a live answer for this job must satisfy, evidence aside. Raises
        :class:`~contracts.output.OutputContractViolation`."""
        job = JobKind.REVIEW if self.kind is RecordingKind.REVIEW else JobKind.ANALYSIS
        cited = set(self.response.inspected_evidence)
        for finding in self.response.findings:
            cited.update(finding.evidence_refs)
        check_output_for_job(
            self.response,
            kind=job,
            profile_id=self.profile,
            evidence_ids=sorted(cited),
            expects_patch=self.kind is RecordingKind.CHANGE,
            # An analysis recording may answer a read_only run, whose analysis may ask for probes.
            allows_probes=self.kind is RecordingKind.ANALYSIS,
            # ... or a queue's beyond-source pass, whose findings quote.
            allows_quotes=self.kind is RecordingKind.ANALYSIS,
        )


class RecordingsFile(BaseModel):
    """A whole recordings file: 1..5,000 recordings, no two with the same key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    recordings: Annotated[list[Recording], Field(min_length=1, max_length=MAX_RECORDINGS)]

    def table(self) -> dict[RecordingKey, str]:
        """Each key's response as canonical JSON text (sorted keys), as the provider answers it."""
        return {
            recording.key: json.dumps(
                recording.response.model_dump(mode="json", exclude_none=True), sort_keys=True
            )
            for recording in self.recordings
        }

    def to_json(self) -> str:
        """The file's text: recordings in key order, two-space indented, a final newline."""
        ordered = sorted(self.recordings, key=lambda recording: recording.key)
        data = {
            "recordings": [
                {
                    "profile": recording.profile,
                    "kind": recording.kind.value,
                    "title": recording.title,
                    **({"task_contains": recording.task_contains} if recording.task_contains else {}),
                    "response": recording.response.model_dump(mode="json", exclude_none=True),
                }
                for recording in ordered
            ]
        }
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def parse_recordings(text: str) -> RecordingsFile:
    """Check a recordings file's text. Raises :class:`InvalidRecordings` naming every problem: not
    JSON, too large, not the format (by entry and field), a response that breaks the rules of its job,
    a key recorded twice."""
    size = len(text.encode("utf-8"))
    if size > MAX_RECORDINGS_BYTES:
        raise InvalidRecordings([f"the file is {size} bytes; the limit is {MAX_RECORDINGS_BYTES}"])
    try:
        data = json.loads(text)
    except ValueError as error:
        raise InvalidRecordings([f"not JSON: {error}"]) from None
    except RecursionError:
        raise InvalidRecordings(["not JSON this parser reads: nested too deeply"]) from None
    try:
        parsed = RecordingsFile.model_validate(data)
    except ValidationError as error:
        raise InvalidRecordings([_problem(item) for item in error.errors()]) from None
    problems: list[str] = []
    seen: dict[RecordingKey, int] = {}
    for index, recording in enumerate(parsed.recordings):
        try:
            recording.check_rules()
        except OutputContractViolation as violation:
            problems.append(f"entry {index}: response: {violation}")
        first = seen.setdefault(recording.key, index)
        if first != index:
            profile, kind, title, marker = recording.key
            when = f", task containing {marker!r}" if marker else ""
            problems.append(
                f"entry {index}: profile {profile!r}, job {kind!r}, title {title!r}{when} is already "
                f"recorded by entry {first}"
            )
    if problems:
        raise InvalidRecordings(problems)
    return parsed


def select_recording(
    table: Mapping[RecordingKey, str], profile: str, kind: str, title: str, task: str
) -> str | None:
    """The recorded response for a job (profile, job kind, title) whose task is ``task``: the
    recording whose ``task_contains`` the task contains (the longest such text, when several do),
    else the one naming none; ``None`` when neither is recorded."""
    markers = [key[3] for key in table if key[:3] == (profile, kind, title) and key[3] and key[3] in task]
    marker = max(markers, key=lambda text: (len(text), text), default="")
    return table.get((profile, kind, title, marker))


def recordings_sha256(text: str) -> str:
    """The sha256 of a recordings file's text (UTF-8), as a registration records and shows it."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def recordings_from_answers(answers: Iterable[Recording]) -> RecordingsFile:
    """A recordings file from answers collected elsewhere (e.g. a finished run's analysis and review):
    checked as :func:`parse_recordings` checks a file. Raises :class:`InvalidRecordings`."""
    return parse_recordings(
        json.dumps({"recordings": [answer.model_dump(mode="json", exclude_none=True) for answer in answers]})
    )


def _problem(error: object) -> str:
    detail = error if isinstance(error, dict) else {}
    location = [str(part) for part in detail.get("loc", ())]
    where = "file"
    if len(location) >= 2 and location[0] == "recordings" and location[1].isdigit():
        where = f"entry {location[1]}"
        location = location[2:]
    field = ".".join(location)
    message = str(detail.get("msg", "invalid"))
    if detail.get("type") == "extra_forbidden":
        message = "unknown key"
    return f"{where}: {field}: {message}" if field else f"{where}: {message}"
