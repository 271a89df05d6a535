"""Reading a research case's input file (``research case-create`` and ``evidence-add``): strict
parsing and the evidence files it names (docs/architecture.md "Research team").

An input file is parsed strictly (:class:`contracts.research.CaseInput`,
:class:`contracts.research.EvidenceAddInput`: unknown keys are refused). An evidence record gives its
text inline (``content``) or names a file (``path``, relative to the input file's directory) that must
be a regular file of at most :data:`contracts.research.MAX_EVIDENCE_CONTENT_BYTES` of UTF-8; its size is
checked before it is read. Every record is read and checked before anything is written, so one bad
record writes nothing (exit 2).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Final, TypeVar

from contracts.errors import InvalidInput
from control.inputs import read_bounded

if TYPE_CHECKING:
    from contracts.research import CaseInput, EvidenceAddInput, EvidenceInput

    InputT = TypeVar("InputT", CaseInput, EvidenceAddInput)

MAX_INPUT_FILE_BYTES: Final = 16 * 1024 * 1024
"""Largest input file: room for 100 records of 48 KiB inline, JSON-escaped."""


def read_input(path: Path, model: type[InputT], *, what: str, code: str) -> InputT:
    """Read the JSON file ``path`` as ``model`` (:class:`CaseInput` or :class:`EvidenceAddInput`) and
    return it with every ``path`` record replaced by one carrying the file's content.

    Raises :class:`InvalidInput` (nothing is written): ``input_not_found``, ``input_unreadable``,
    ``input_too_large``, ``invalid_json``, ``code`` (the JSON is not a valid ``model``: the message
    names each bad field), or an evidence file error (see :func:`read_evidence_file`).
    """
    from control.inputs import parse_json_bytes, parse_model

    raw = read_bounded(path, MAX_INPUT_FILE_BYTES, what=f"{what} file", codes="input")
    data = parse_json_bytes(raw, what=f"{what} file {str(path)!r}")
    parsed = parse_model(model, data, what=what, code=code)
    base = path.parent
    resolved = [_resolved(item, index, base) for index, item in enumerate(parsed.evidence)]
    return parsed.model_copy(update={"evidence": resolved})


def read_evidence_file(path: Path, *, label: str) -> str:
    """The UTF-8 text of the evidence file ``path`` (``label`` names the record in messages).

    The file must be a regular file (not a directory, device or pipe) of at most
    :data:`MAX_EVIDENCE_CONTENT_BYTES`; the size is checked before the content is read. Raises
    :class:`InvalidInput` ``evidence_path_not_found``, ``evidence_path_unreadable``,
    ``evidence_path_not_a_file``, ``evidence_too_large`` (naming the size and the limit) or
    ``evidence_not_utf8``.
    """
    from contracts.research import MAX_EVIDENCE_CONTENT_BYTES

    raw = read_bounded(path, MAX_EVIDENCE_CONTENT_BYTES, what=f"{label} file", codes="evidence")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidInput(
            "evidence_not_utf8",
            f"{label} file {str(path)!r} is not UTF-8 text (invalid byte at offset {error.start})",
        ) from None


def _resolved(item: EvidenceInput, index: int, base: Path) -> EvidenceInput:
    from contracts.research import EvidenceInput, check_evidence_content

    if item.path is None:
        return item
    label = f"evidence[{index}] path {item.path!r}"
    content = read_evidence_file(_inside(base, item.path, label), label=label)
    try:
        check_evidence_content(content)
    except ValueError as error:
        raise InvalidInput("invalid_evidence", f"{label}: {error}") from None
    if "\x00" in content:
        raise InvalidInput("invalid_evidence", f"{label}: the file holds NUL bytes; evidence is text")
    return EvidenceInput(kind=item.kind, content=content, source_ref=item.source_ref)


def _inside(base: Path, relative: str, label: str) -> Path:
    """``relative`` resolved inside ``base`` (the input file's directory), symlinks followed.

    Evidence is sent to model providers in full, so a case file may only name files beside it: an
    absolute path, ``..`` out of the directory or a symlink pointing out of it is refused
    (``evidence_path_outside_input_dir``). Containment is checked first, on the path as far as it
    resolves, so a path outside is refused as outside whether or not a file is there (the answer
    never tells what exists outside the directory); only then is a path that does not exist refused
    (``evidence_path_not_found``).
    """
    if Path(relative).is_absolute():
        raise InvalidInput(
            "evidence_path_outside_input_dir",
            f"{label}: an absolute path is refused; name a file inside the input file's directory",
        )
    root = base.resolve()
    try:
        target = (root / relative).resolve()  # not strict: every existing symlink is followed
    except (OSError, RuntimeError) as error:  # a symlink loop, a component that cannot be read
        raise InvalidInput("evidence_path_unreadable", f"{label}: {type(error).__name__}") from None
    if not target.is_relative_to(root):
        raise InvalidInput(
            "evidence_path_outside_input_dir",
            f"{label}: it leads outside the input file's directory; evidence files must be inside it",
        )
    _require_existing(target, label)
    return target


def _require_existing(target: Path, label: str) -> None:
    """Refuse ``target`` when nothing is there (``evidence_path_not_found``) or it cannot be looked
    at (``evidence_path_unreadable``); whether it is a regular file is checked when it is read."""
    try:
        os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        raise InvalidInput("evidence_path_not_found", f"{label}: no such file") from None
    except OSError as error:
        raise InvalidInput("evidence_path_unreadable", f"{label}: {type(error).__name__}") from None
