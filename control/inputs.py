"""Turning operator input (``--input-json JSON|@FILE``, flag values) into contracts.

Every failure is an :class:`contracts.errors.InvalidInput` with a one-line message; nothing is guessed.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, Final, TypeVar

from pydantic import BaseModel, ValidationError

from contracts.errors import InvalidInput

MAX_INPUT_BYTES = 64 * 1024

ModelT = TypeVar("ModelT", bound=BaseModel)


def describe_validation_error(error: ValidationError) -> str:
    """One line: ``field: problem; field: problem`` for every error pydantic reported."""
    parts = []
    for item in error.errors():
        location = ".".join(str(part) for part in item["loc"]) or "input"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unknown key (not allowed)"
        elif item["type"] == "value_error":
            # A rule of ours (a validator's ValueError): its own words, without pydantic's prefix.
            message = message.removeprefix("Value error, ")
        parts.append(f"{location}: {message}")
    return "; ".join(parts)


def read_json_argument(value: str, *, what: str) -> Any:
    """Parse ``value`` as JSON, or the file it names when it starts with ``@`` (a regular file of at
    most :data:`MAX_INPUT_BYTES`, refused before it is read when larger).

    Raises ``InvalidInput`` (``input_not_found``, ``input_unreadable``, ``input_not_a_file``,
    ``input_too_large``, ``invalid_json``).
    """
    if value.startswith("@"):
        path = Path(value[1:])
        raw = read_bounded(path, MAX_INPUT_BYTES, what=f"{what} file", codes="input")
        source = f"file {str(path)!r}"
    else:
        raw = value.encode("utf-8", errors="surrogatepass")
        source = "argument"
        if len(raw) > MAX_INPUT_BYTES:
            raise InvalidInput(
                "input_too_large", f"{what} {source} is {len(raw)} bytes; the limit is {MAX_INPUT_BYTES}"
            )
    return parse_json_bytes(raw, what=f"{what} {source}")


def parse_json_bytes(raw: bytes, *, what: str, code: str = "invalid_json") -> Any:
    """``raw`` parsed as UTF-8 JSON. Raises ``InvalidInput`` ``code`` saying why not: not UTF-8, not
    JSON (where), or nested deeper than the parser reads (``[[[…]]]`` thousands deep)."""
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InvalidInput(code, f"{what} is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise InvalidInput(
            code, f"{what} is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    except RecursionError:
        raise InvalidInput(code, f"{what} is nested too deeply to be read") from None


_FILE_ERRORS: Final = {
    "input": ("input_not_found", "input_unreadable", "input_not_a_file", "input_too_large"),
    "evidence": (
        "evidence_path_not_found",
        "evidence_path_unreadable",
        "evidence_path_not_a_file",
        "evidence_too_large",
    ),
}


def read_bounded(path: Path, limit: int, *, what: str, codes: str) -> bytes:
    """The bytes of the regular file ``path``, refused when over ``limit`` bytes: checked on the open
    file before reading, and again while reading in case it grew. ``codes`` (``input`` or
    ``evidence``) picks the error codes of :data:`_FILE_ERRORS`."""
    not_found, unreadable, not_a_file, too_large = _FILE_ERRORS[codes]
    shown = str(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below as not a file.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise InvalidInput(not_found, f"{what} {shown!r} does not exist") from None
    except OSError as error:
        raise InvalidInput(unreadable, f"{what} {shown!r}: {error.strerror}") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise InvalidInput(not_a_file, f"{what} {shown!r} is not a regular file")
        if status.st_size > limit:
            raise InvalidInput(too_large, f"{what} {shown!r} is {status.st_size} bytes; the limit is {limit}")
        chunks: list[bytes] = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(descriptor, min(remaining, 1024 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    except OSError as error:
        raise InvalidInput(unreadable, f"{what} {shown!r}: {error.strerror}") from None
    finally:
        os.close(descriptor)
    raw = b"".join(chunks)
    if len(raw) > limit:
        raise InvalidInput(too_large, f"{what} {shown!r} is over {limit} bytes; the limit is {limit}")
    return raw


def parse_model(model: type[ModelT], data: Any, *, what: str, code: str) -> ModelT:
    """Validate ``data`` as ``model``; a failure becomes ``InvalidInput(code)`` naming every field."""
    if not isinstance(data, dict):
        raise InvalidInput(code, f"{what} must be a JSON object, not {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise InvalidInput(code, f"invalid {what}: {describe_validation_error(error)}") from None


def parse_efforts(values: list[str]) -> dict[str, str]:
    """``--effort CLASS=EFFORT`` values as efforts by class. Raises :class:`InvalidInput`
    ``invalid_model_selection`` for an unknown class or effort, or a class given twice."""
    from contracts.model_classes import ModelClass, ReasoningEffort

    classes = ", ".join(c.value for c in ModelClass)
    efforts_known = ", ".join(e.value for e in ReasoningEffort)
    efforts: dict[str, str] = {}
    for value in values:
        name, sep, effort = value.partition("=")
        if not sep or name not in {c.value for c in ModelClass}:
            raise InvalidInput(
                "invalid_model_selection",
                f"--effort {value!r}: expected CLASS=EFFORT with CLASS one of {classes}",
            )
        if effort not in {e.value for e in ReasoningEffort}:
            raise InvalidInput(
                "invalid_model_selection", f"--effort {value!r}: the effort must be one of {efforts_known}"
            )
        if name in efforts:
            raise InvalidInput("invalid_model_selection", f"--effort: class {name} is given twice")
        efforts[name] = effort
    return efforts
