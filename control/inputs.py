"""Turning operator input (``--input-json JSON|@FILE``, flag values) into contracts.

Every failure is an :class:`contracts.errors.InvalidInput` with a one-line message; nothing is guessed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

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
    """Parse ``value`` as JSON, or the file it names when it starts with ``@``.

    Raises ``InvalidInput`` (``input_not_found``, ``input_too_large``, ``invalid_json``).
    """
    if value.startswith("@"):
        path = Path(value[1:])
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise InvalidInput("input_not_found", f"{what} file {str(path)!r} does not exist") from None
        except OSError as error:
            raise InvalidInput("input_unreadable", f"{what} file {str(path)!r}: {error.strerror}") from None
        source = f"file {str(path)!r}"
    else:
        raw = value.encode("utf-8", errors="surrogatepass")
        source = "argument"
    if len(raw) > MAX_INPUT_BYTES:
        raise InvalidInput(
            "input_too_large", f"{what} {source} is {len(raw)} bytes; the limit is {MAX_INPUT_BYTES}"
        )
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InvalidInput("invalid_json", f"{what} {source} is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise InvalidInput(
            "invalid_json",
            f"{what} {source} is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}",
        ) from None


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
