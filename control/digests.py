"""Digests an operator gives back — a contract's or a probe's sha256 — checked the same way by the
CLI (``--contract-sha256``, ``--probe-sha256``) and by Mission Control's forms (docs/architecture.md
"Operator contract"): 64 lowercase hex digits, and when not, what is wrong with the one given."""

from __future__ import annotations

import re
from typing import Final

DIGEST_PATTERN: Final = re.compile(r"[0-9a-f]{64}")


def digest_problem(value: str | None) -> str | None:
    """``None`` when ``value`` is a sha256 digest as the project writes it; else what is wrong with
    it, as a clause to append: ``""`` when none was given (``None``), else its length, its capitals
    or its other characters (`` (got 12 characters)``)."""
    if value is not None and DIGEST_PATTERN.fullmatch(value):
        return None
    if value is None:
        return ""
    if len(value) != 64:
        return f" (got {len(value)} characters)"
    if re.fullmatch(r"[0-9a-fA-F]{64}", value):
        return " (got capital letters: digests are written in lowercase)"
    return " (got characters other than 0-9 and a-f)"
