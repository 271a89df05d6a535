"""What operator text may contain (docs/architecture.md "Values").

Operator text is shown to models and to people — one-line fields as one row of a table, descriptions
as a block — so it may not carry characters that change how it is displayed or read:

* **one-line text** (a work item's title, domain and roles; a research case's subject; a source
  reference) refuses every Unicode control (``Cc``: ESC, BEL, NUL, CR, LF, TAB…), format (``Cf``: bidi
  overrides and isolates, zero-width characters), surrogate (``Cs``) and line or paragraph separator
  (``Zl``, ``Zp``) character;
* **multi-line text** (a work item's description) refuses the same except the line feed and the tab.

A refused character is named by its code point and its position; nothing is ever stripped or replaced.
Pure: no I/O.
"""

from __future__ import annotations

import unicodedata
from typing import Final

REFUSED_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Unicode control, format (bidi and invisible), surrogate and line/paragraph separator categories."""

MULTILINE_ALLOWED: Final = frozenset({"\n", "\t"})
"""The only refused-category characters a multi-line text keeps: line feed and tab."""


def _first_refused(value: str, allowed: frozenset[str]) -> tuple[int, str] | None:
    for index, ch in enumerate(value):
        if ch not in allowed and unicodedata.category(ch) in REFUSED_CATEGORIES:
            return index, ch
    return None


def check_one_line(value: str, field: str) -> str:
    """Return ``value`` when it is one line of printable text; else raise ``ValueError`` naming
    ``field``, the character (``U+XXXX``) and its position (1-based)."""
    found = _first_refused(value, frozenset())
    if found is not None:
        index, ch = found
        raise ValueError(
            f"{field} must be one line without control, format or line-separator characters "
            f"(found U+{ord(ch):04X} at character {index + 1})"
        )
    return value


def check_multiline(value: str, field: str) -> str:
    """Return ``value`` when its only control characters are line feeds and tabs; else raise
    ``ValueError`` naming ``field``, the character and its position (a CR — of a Windows line ending
    too — is refused: write line feeds only)."""
    found = _first_refused(value, MULTILINE_ALLOWED)
    if found is not None:
        index, ch = found
        hint = ": use line feeds (\\n) only" if ch == "\r" else ""
        raise ValueError(
            f"{field} may contain line feeds and tabs but no other control, format or separator "
            f"characters (found U+{ord(ch):04X} at character {index + 1}){hint}"
        )
    return value
