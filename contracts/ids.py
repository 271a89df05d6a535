"""Domain ids (docs/architecture.md "Operator contract"): run ``SOR-`` + 16, team ``RTM-`` + 16, case ``RSC-``
+ 12; evidence ``EVD-`` + 12; model check ``SMC-`` + 16.

With a request id, the id is derived from sha256 of the request id (first 16 hex digits, upper case),
so repeated delivery of the same request maps to the same workflow id.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from typing import Final

from contracts.text_rules import check_one_line

RUN_PREFIX: Final = "SOR-"
TEAM_PREFIX: Final = "RTM-"
CASE_PREFIX: Final = "RSC-"
EVIDENCE_PREFIX: Final = "EVD-"
CHECK_PREFIX: Final = "SMC-"
_ALPHABET: Final = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
RUN_ID_PATTERN: Final = re.compile(r"^SOR-[0-9A-Z]{16}$")
MAX_REQUEST_ID_CHARS: Final = 200


def _random_chars(count: int) -> str:
    """``count`` characters drawn uniformly from ``[0-9A-Z]``: one draw of a number below 36**count
    (one read of the system's random source, not one per character), written in base 36."""
    value = secrets.randbelow(len(_ALPHABET) ** count)
    chars = []
    for _ in range(count):
        value, digit = divmod(value, len(_ALPHABET))
        chars.append(_ALPHABET[digit])
    return "".join(chars)


def run_id_for_request(request_id: str) -> str:
    """The run id for a caller's request id: ``SOR-`` + first 16 hex digits of its sha256, upper case.

    Raises ``ValueError`` for an empty request id or one over 200 characters.
    """
    return _id_for_request(RUN_PREFIX, request_id)


def team_id_for_request(request_id: str) -> str:
    """The research team id for a caller's request id: ``RTM-`` + first 16 hex digits of its sha256,
    upper case. Raises ``ValueError`` for an empty request id or one over 200 characters."""
    return _id_for_request(TEAM_PREFIX, request_id)


def check_request_id(request_id: str) -> str:
    """``request_id`` when it is a caller's request id an operator can read back: one line of 1–200
    printable characters, not blank. Raises ``ValueError`` saying which rule it breaks."""
    if not request_id.strip():
        raise ValueError("a request id must not be empty or blank")
    if len(request_id) > MAX_REQUEST_ID_CHARS:
        raise ValueError(f"a request id has at most {MAX_REQUEST_ID_CHARS} characters, not {len(request_id)}")
    return check_one_line(request_id, "a request id")


def _id_for_request(prefix: str, request_id: str) -> str:
    if not request_id or len(request_id) > MAX_REQUEST_ID_CHARS:
        raise ValueError(f"request id must be 1..{MAX_REQUEST_ID_CHARS} characters")
    return prefix + hashlib.sha256(request_id.encode("utf-8")).hexdigest()[:16].upper()


def new_run_id() -> str:
    """A fresh random run id: ``SOR-`` + 16 characters from ``[0-9A-Z]``."""
    return RUN_PREFIX + _random_chars(16)


def new_case_id() -> str:
    """A fresh random research case id: ``RSC-`` + 12 characters from ``[0-9A-Z]``."""
    return CASE_PREFIX + _random_chars(12)


def new_evidence_id() -> str:
    """A fresh random evidence record id: ``EVD-`` + 12 characters from ``[0-9A-Z]``."""
    return EVIDENCE_PREFIX + _random_chars(12)


def new_check_id() -> str:
    """A fresh model check id (``specialists models test``): ``SMC-`` + 16 characters ``[0-9A-Z]``."""
    return CHECK_PREFIX + _random_chars(16)


def is_run_id(value: str) -> bool:
    """True when ``value`` has the shape of a run id."""
    return RUN_ID_PATTERN.fullmatch(value) is not None
