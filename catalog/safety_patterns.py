"""Compiling the text safety phrases (``catalog.safety_phrases``) into patterns (catalog.safety).

Cost. The words of a text become one character each (:class:`Lexicon`), so every phrase is a regular
expression over a short string whose quantifiers are bounded (``{0,n}``) and apply only to a single
character or character class: no quantifier is nested inside another, no phrase can span more than a
bounded number of words, and a scan is linear in the length of the text
(``tests/catalog/test_safety_patterns.py`` checks the structure of every compiled pattern). The patterns
are compiled once, on the first scan.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from catalog.safety_phrases import (
    CLAUSE_WORDS,
    LITERAL_SOURCES,
    PHRASE_SOURCES,
    ROLE_LINE_SOURCE,
    SETS,
    inflect,
    set_of,
)
from catalog.safety_rules import SafetyRule


class Lexicon:
    """Every word the phrases use, each given one private-use character; any other word reads as
    :attr:`other`. A phrase becomes a regular expression over these characters."""

    BASE: Final = 0xE001

    def __init__(self, words: Iterable[str]) -> None:
        ordered = sorted(set(words))
        if len(ordered) > 0xF8FF - self.BASE:
            raise ValueError("too many words for the private-use area")
        self.codes = {word: chr(self.BASE + offset) for offset, word in enumerate(ordered)}
        self.other = "\ue000"
        self.prefixes = frozenset(word[:end] for word in ordered for end in range(1, len(word) + 1))
        self.longest = max(len(word) for word in ordered)

    def encode(self, words: Sequence[str]) -> str:
        return "".join(self.codes.get(word, self.other) for word in words)

    def atom(self, entries: Iterable[str]) -> tuple[str, bool]:
        """A regex for one of ``entries`` (each one or more words) and whether it is one character."""
        singles = sorted({self.codes[entry] for entry in entries if " " not in entry})
        multis = sorted({"".join(self.codes[w] for w in entry.split()) for entry in entries if " " in entry})
        klass = "[" + "".join(singles) + "]" if len(singles) > 1 else "".join(singles)
        if not multis:
            if not klass:
                raise ValueError("an empty word set")
            return klass, True
        alternatives = [*sorted(multis, key=len, reverse=True), *([klass] if klass else [])]
        return "(?:" + "|".join(alternatives) + ")", False

    def window(self) -> str:
        """One word that is not a clause word."""
        return "[^" + "".join(self.codes[word] for word in CLAUSE_WORDS) + "]"


_DSL_TOKEN: Final = re.compile(r"\s*(\(|\)|\||\?|!|\*\d+|~\d*|\{[a-z_]+\}|@[a-z0-9]+|[a-z0-9]+)")


def _dsl_tokens(source: str) -> list[str]:
    tokens: list[str] = []
    position = 0
    source = source.strip()
    while position < len(source):
        match = _DSL_TOKEN.match(source, position)
        if match is None:
            raise ValueError(f"cannot read phrase {source!r} at {position}")
        tokens.append(match.group(1))
        position = match.end()
    return tokens


def _entries(token: str) -> tuple[str, ...] | None:
    """The words a DSL token stands for (``None`` for structure: groups, quantifiers, windows)."""
    if token.startswith("{"):
        return SETS[token[1:-1]]
    if token.startswith("@"):
        return inflect(token[1:])
    if token[0].isalnum():
        return (token,)
    return None


def _multiword_verbs(tokens: list[str]) -> list[str]:
    """Join ``@verb word`` when the pair is a known multi-word verb (``@turn off``)."""
    joined: list[str] = []
    for token in tokens:
        if (
            joined
            and joined[-1].startswith("@")
            and token[0].isalnum()
            and f"{joined[-1][1:]} {token}" in _MULTIWORD
        ):
            joined[-1] = f"{joined[-1]} {token}"
        else:
            joined.append(token)
    return joined


_MULTIWORD: Final = set_of(
    "turn off|switch off|get around|work around|go around|break out|break out of|get past|go past|"
    "set aside|throw out|type out|write output|spell out|read out|zero out|clear out|tear down|"
    "blow away|put up|open source|roll out|go live|cut over|kick off|ramp up|roll back|force push|"
    "open up|tell me|e mail",
    "|",
)


class Compiler:
    """Compiles a phrase into a regex over the lexicon's characters. Quantifiers are ``?`` and
    ``{0,N}``, applied to one character, one character class, or a group holding no quantifier."""

    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon

    def compile(self, source: str) -> str:
        tokens = _multiword_verbs(_dsl_tokens(source))
        expression, _, position = self._alternatives(tokens, 0)
        if position != len(tokens):
            raise ValueError(f"unbalanced phrase {source!r}")
        return expression

    def _alternatives(self, tokens: list[str], position: int) -> tuple[str, bool, int]:
        """(regex, holds a quantifier, next position) up to a closing bracket or the end."""
        alternatives: list[str] = []
        parts: list[str] = []
        quantified_any = False
        while position < len(tokens) and tokens[position] != ")":
            token = tokens[position]
            if token == "|":
                alternatives.append("".join(parts))
                parts = []
                position += 1
                continue
            negated = token == "!"
            if negated:
                position += 1
            atom, single, quantified, position = self._atom(tokens, position)
            if negated:
                parts.append("(?!" + atom + ")")
                continue
            if position < len(tokens) and (tokens[position] == "?" or tokens[position].startswith("*")):
                quantifier = tokens[position]
                if quantified:
                    raise ValueError(f"a quantifier on a quantified part at {token!r}")
                if quantifier.startswith("*") and not single:
                    raise ValueError(f"a repetition of more than one word at {token!r}")
                atom += "?" if quantifier == "?" else "{0," + quantifier[1:] + "}"
                quantified = True
                position += 1
            quantified_any = quantified_any or quantified
            parts.append(atom)
        alternatives.append("".join(parts))
        expression = alternatives[0] if len(alternatives) == 1 else "(?:" + "|".join(alternatives) + ")"
        return expression, quantified_any, position

    def _atom(self, tokens: list[str], position: int) -> tuple[str, bool, bool, int]:
        """(regex, is one character, holds a quantifier, next position)."""
        token = tokens[position]
        if token == "(":
            inner, quantified, after = self._alternatives(tokens, position + 1)
            if after >= len(tokens) or tokens[after] != ")":
                raise ValueError("unclosed group")
            return "(?:" + inner + ")", False, quantified, after + 1
        if token.startswith("~"):
            count = token[1:]
            window = self.lexicon.window()
            return (
                (window if not count else window + "{0," + count + "}"),
                not count,
                bool(count),
                position + 1,
            )
        entries = _entries(token)
        if entries is None:
            raise ValueError(f"unexpected {token!r}")
        expression, single = self.lexicon.atom(entries)
        return expression, single, False, position + 1


def _all_sources() -> Iterator[str]:
    for _rule, verbs, fixed in PHRASE_SOURCES:
        yield from verbs
        yield from fixed


def _lexicon_words() -> set[str]:
    words: set[str] = set(CLAUSE_WORDS)
    for source in _all_sources():
        for token in _multiword_verbs(_dsl_tokens(source)):
            for entry in _entries(token) or ():
                words.update(entry.split())
    return words


@dataclass(frozen=True)
class RulePatterns:
    rule: SafetyRule
    instruction: re.Pattern[str] | None  # reported in instruction position only
    anywhere: re.Pattern[str] | None


class Patterns:
    """The compiled rule patterns. Compiling them takes a noticeable part of a CLI start, and only a
    catalog validation needs them, so they are compiled on the first scan (see :func:`compiled_patterns`)."""

    def __init__(self) -> None:
        self.lexicon = Lexicon(_lexicon_words())
        compiler = Compiler(self.lexicon)

        def union(sources: Sequence[str]) -> re.Pattern[str] | None:
            if not sources:
                return None
            parts = [compiler.compile(source) for source in sources]
            return re.compile("|".join(f"(?:{part})" for part in parts), re.DOTALL)

        self.rules = tuple(
            RulePatterns(rule, union(verbs), union(fixed)) for rule, verbs, fixed in PHRASE_SOURCES
        )
        self.literals = tuple((rule, re.compile(source)) for rule, source in LITERAL_SOURCES)
        self.role_line = re.compile(ROLE_LINE_SOURCE)


@functools.cache
def compiled_patterns() -> Patterns:
    return Patterns()
