"""Text normalisation shared by the router and the catalog's safety checks.

``normalize_text`` applies Unicode NFKC (so compatibility forms such as full-width letters or ligatures
become their plain equivalents, per Unicode Standard Annex #15), removes control and invisible
characters (format characters, category Cf: zero-width, bidi controls, soft hyphen, tag characters),
and collapses runs of whitespace into one space.

``fold_for_matching`` goes further, for the safety scan only (the router keeps ``normalize_text``):
NFKC, every hidden character removed (format, private-use, unassigned, variation selectors), case
folding, combining marks removed (NFKD), and letters of other scripts that look like Latin ones mapped
to them (:data:`CONFUSABLES`; Unicode Technical Standard #39 lists such confusables), so a disguised
word reads as the word a person sees. ``visual_order`` puts text inside a right-to-left override
(U+202E … U+202C, UAX #9) in the order it is displayed.
"""

from __future__ import annotations

import functools
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
ASCII_CONTROL: Final = _ASCII_CONTROL
"""The ASCII characters :func:`is_control` is true for (C0 controls but tab, newline and CR; DEL)."""


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


# ------------------------------------------------------------------------------- matching form

# Letters that render like a Latin letter, mapped after case folding (so upper case is covered by its
# lower case): Cyrillic, Greek, Armenian and Cherokee look-alikes, Latin small capitals, IPA and
# stroked letters that NFKD does not decompose, and regional indicator letters.
# fmt: off
CONFUSABLES: Final = {
    # Cyrillic
    "а": "a", "в": "b", "г": "r", "д": "d", "е": "e", "ё": "e", "з": "3", "и": "u", "й": "u",
    "к": "k", "л": "n", "м": "m", "н": "h", "о": "o", "п": "n", "р": "p", "с": "c", "т": "t",
    "у": "y", "х": "x", "ц": "u", "ш": "w", "щ": "w", "ь": "b", "ѕ": "s", "і": "i", "ї": "i",
    "ј": "j", "ԁ": "d", "һ": "h", "ԛ": "q", "ԝ": "w", "ӏ": "l", "ү": "y", "ѵ": "v", "ѡ": "w",
    "ꙇ": "i", "ԍ": "g", "ӄ": "k", "ҫ": "c", "ꮃ": "w",
    # Greek
    "α": "a", "β": "b", "γ": "y", "δ": "d", "ε": "e", "ζ": "z", "η": "n", "ι": "i", "κ": "k",
    "μ": "u", "ν": "v", "ο": "o", "ρ": "p", "σ": "o", "ς": "c", "τ": "t", "υ": "u", "χ": "x",
    "ω": "w", "ϲ": "c", "ϳ": "j", "ϵ": "e", "ϱ": "p", "ϰ": "k",
    # Armenian
    "օ": "o", "ս": "u", "հ": "h", "ո": "n", "ց": "g", "ք": "p", "ա": "w", "զ": "q", "ե": "t",
    # Cherokee (small letters, what case folding makes of the capitals)
    "ꭺ": "a", "ꮟ": "b", "ꮯ": "c", "ꭰ": "d", "ꭼ": "e", "ꮐ": "g", "ꮋ": "h", "ꭻ": "j", "ꮶ": "k",
    "ꮮ": "l", "ꮇ": "m", "ꮲ": "p", "ꮪ": "s", "ꭲ": "t", "ꮩ": "v", "ꮤ": "w", "ꮓ": "z", "ꭵ": "i",
    # Latin small capitals, IPA and stroked letters
    "ᴀ": "a", "ʙ": "b", "ᴄ": "c", "ᴅ": "d", "ᴇ": "e", "ɢ": "g", "ʜ": "h", "ɪ": "i", "ᴊ": "j",
    "ᴋ": "k", "ʟ": "l", "ᴍ": "m", "ɴ": "n", "ᴏ": "o", "ᴘ": "p", "ʀ": "r", "ꜱ": "s", "ᴛ": "t",
    "ᴜ": "u", "ᴠ": "v", "ᴡ": "w", "ʏ": "y", "ᴢ": "z", "ı": "i", "ȷ": "j", "ɑ": "a", "ɩ": "i",
    "ɡ": "g", "ℓ": "l", "ł": "l", "đ": "d", "ħ": "h", "ø": "o", "ŧ": "t", "ƀ": "b", "ɨ": "i",
    "ʉ": "u", "ɇ": "e", "ƶ": "z", "ɍ": "r", "ɏ": "y", "ǥ": "g", "ꞵ": "b", "ɛ": "e", "ɔ": "c",
    "ʋ": "u",
    # Regional indicator symbols (flag letters)
    **{chr(0x1F1E6 + offset): chr(ord("a") + offset) for offset in range(26)},
}
# fmt: on

# Hidden for matching beyond is_invisible: the variation selectors supplement (category Mn) and
# private-use, surrogate and unassigned code points.
_EXTRA_HIDDEN: Final = range(0xE0100, 0xE01F0)
_HIDDEN_CATEGORIES: Final = frozenset({"Co", "Cs", "Cn"})
_RIGHT_TO_LEFT_OVERRIDE: Final = "\u202e"
_POP_DIRECTIONAL: Final = frozenset({"\u202c", "\u2069"})


def is_hidden(char: str) -> bool:
    """True for a character a reader does not see: :func:`is_invisible`, the variation selectors
    supplement, private-use, surrogate and unassigned code points."""
    return (
        is_invisible(char) or ord(char) in _EXTRA_HIDDEN or unicodedata.category(char) in _HIDDEN_CATEGORIES
    )


@functools.cache
def _confusable_table() -> dict[int, str]:
    return str.maketrans(CONFUSABLES)


def fold_for_matching(text: str) -> str:
    """The text as phrase matching reads it: NFKC, hidden characters removed, case folded, combining
    marks removed, confusable letters mapped to Latin (see the module docstring). Line breaks and
    punctuation are kept; the result is NFKC."""
    if text.isascii():
        return text.lower()  # ASCII is NFKC and has no hidden, combining or confusable characters
    text = unicodedata.normalize("NFKC", text)
    text = "".join(c for c in text if not is_hidden(c))
    text = unicodedata.normalize("NFKD", text.casefold())
    text = "".join(c for c in text if unicodedata.category(c) not in ("Mn", "Me"))
    return unicodedata.normalize("NFKC", text.translate(_confusable_table()))


def visual_order(text: str) -> str | None:
    """``text`` with each right-to-left override run (U+202E up to U+202C, U+2069 or the end of the
    line) reversed, as it is displayed; ``None`` when the text has no override."""
    if _RIGHT_TO_LEFT_OVERRIDE not in text:
        return None
    lines = []
    for line in text.split("\n"):
        out: list[str] = []
        run: list[str] | None = None
        for char in line:
            if char == _RIGHT_TO_LEFT_OVERRIDE:
                if run is not None:
                    out.extend(reversed(run))
                run = []
            elif char in _POP_DIRECTIONAL and run is not None:
                out.extend(reversed(run))
                run = None
            elif run is not None:
                run.append(char)
            else:
                out.append(char)
        if run is not None:
            out.extend(reversed(run))
        lines.append("".join(out))
    return "\n".join(lines)
