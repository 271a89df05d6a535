"""Text normalisation shared by the router and the catalog's safety checks.

``normalize_text`` applies Unicode NFKC (so compatibility forms such as full-width letters or ligatures
become their plain equivalents, per Unicode Standard Annex #15), removes control and invisible
characters (format characters, category Cf: zero-width, bidi controls, soft hyphen, tag characters),
and collapses runs of whitespace into one space.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

# Characters that change how text displays without being visible. Listed explicitly (beyond category
# Cf) so the rule is readable: zero-width space/joiners, word joiner, BOM, soft hyphen, bidi embeddings,
# overrides and isolates, Arabic letter mark, Mongolian vowel separator.
INVISIBLE_CODEPOINTS: Final = frozenset(
    [
        0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180E, 0x3164, 0xFEFF, 0xFFA0,
        *range(0x200B, 0x2010),  # zero-width space … right-to-left mark
        *range(0x202A, 0x202F),  # bidi embeddings and overrides
        *range(0x2060, 0x2070),  # word joiner, invisible operators, bidi isolates
        *range(0xFE00, 0xFE10),  # variation selectors
        *range(0xE0000, 0xE0080),  # tag characters
    ]
)  # fmt: skip

_WHITESPACE = re.compile(r"\s+")
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def is_invisible(char: str) -> bool:
    """True for an invisible or direction-changing character (see :data:`INVISIBLE_CODEPOINTS`)."""
    return ord(char) in INVISIBLE_CODEPOINTS or unicodedata.category(char) == "Cf"


def is_control(char: str) -> bool:
    """True for a control character other than tab, newline and carriage return."""
    return unicodedata.category(char) == "Cc" and char not in "\t\n\r"


def invisible_characters(text: str) -> list[str]:
    """The invisible or direction-changing characters in ``text``, as ``U+XXXX`` names, in order."""
    return [f"U+{ord(c):04X}" for c in text if is_invisible(c)]


def normalize_text(text: str) -> str:
    """NFKC, drop control/invisible characters, collapse whitespace, strip. Case is kept."""
    if text.isascii():
        # ASCII is already NFKC and holds no invisible characters; only controls need replacing.
        text = _ASCII_CONTROL.sub(" ", text)
    else:
        text = unicodedata.normalize("NFKC", text)
        text = "".join(" " if is_control(c) else c for c in text if not is_invisible(c))
    return _WHITESPACE.sub(" ", text).strip()
