"""Turning untrusted text into inert HTML (docs/architecture.md "Mission Control").

The templates autoescape every value; :func:`visible` is also the environment's ``finalize``, so every
value a template prints has its control and format characters (bidi overrides, zero-width
characters, escape sequences) replaced by a visible ``⟨U+XXXX⟩`` before it is escaped: text shows
what it is, not what it pretends to be. :func:`control.web.diff_view.diff_view`
splits a diff into classed, tokenized lines.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Final

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from control.web.diff_view import diff_view

TEMPLATES: Final = Path(__file__).resolve().parent / "templates"
_KEPT: Final = frozenset("\n\t")


def visible(value: object) -> object:
    """``value`` with every control or format character but newline and tab shown as ``⟨U+XXXX⟩``
    (strings only; other values pass through to be escaped as they are)."""
    if not isinstance(value, str):
        return "" if value is None else value
    if value.isascii() and value.isprintable():
        return value
    return "".join(
        f"⟨U+{ord(c):04X}⟩"
        if c not in _KEPT and unicodedata.category(c) in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp")
        else c
        for c in value
    )


def environment() -> Environment:
    """The console's template environment: autoescaped, strict, every value made visible."""
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        finalize=visible,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["diff_view"] = diff_view
    return env
