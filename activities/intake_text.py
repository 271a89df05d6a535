"""The text scanners of an intake scan: documented plans and code markers in one file's text
(docs/architecture.md "Goal queue", "Intake").

Plain functions of a path and its text (read from git objects at the scanned commit by
:mod:`activities.intake_scan`); each hit is a :class:`Hit` — sub-kind, 1-based line and the exact
quoted lines. Repository text is only matched, never interpreted: a Python test file is parsed with
:mod:`ast` (which runs nothing) to find empty tests.

* **plans** (``README*``, ``PLAN*``, ``ROADMAP*``, ``TODO*`` and Markdown under ``docs/``): every list
  item under a heading that names next steps, a roadmap, TODOs, plans or future work, and every
  unchecked task-list item (``- [ ]``) anywhere in such a file;
* **code markers** (every other text file): ``TODO``, ``FIXME``, ``HACK`` and ``XXX`` as words; a
  skipped test (``@pytest.mark.skip``, ``@unittest.skip``, ``pytest.skip(``, ``it.skip(``,
  ``test.skip(``, ``describe.skip(``, ``xit(``); an empty test (a Python ``test*`` function whose body
  is only ``pass``, ``...`` or a docstring); a commented-out code block (three or more consecutive
  ``#`` or ``//`` comment lines of which at least two read as code).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Final

from contracts.intake_source import IntakeSubKind

PLAN_NAMES: Final = re.compile(r"^(README|PLAN|ROADMAP|TODO)(\.[A-Za-z0-9]+)?$", re.IGNORECASE)
PLAN_HEADING: Final = re.compile(
    r"\b(next steps?|roadmap|to-?dos?|to do|plans?|planned|future work|backlog|open items)\b", re.IGNORECASE
)
HEADING: Final = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LIST_ITEM: Final = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*\S)")
UNCHECKED: Final = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\[ \]\s+\S")
MARKER: Final = re.compile(r"(?<![A-Za-z0-9_])(TODO|FIXME|HACK|XXX)(?![A-Za-z0-9_])")
SKIPPED: Final = re.compile(
    r"@pytest\.mark\.skip(?:if)?\b|@unittest\.skip\w*|\bpytest\.skip\(|\b(?:it|test|describe)\.skip\(|\bx(?:it|describe)\("
)
COMMENT: Final = re.compile(r"^\s*(#|//)\s?(.*)$")
CODE_LIKE: Final = re.compile(
    r"^(?:def |class |return\b|if |elif |else:|for |while |import |from \S+ import |const |let |var |"
    r"function\b|try:|except\b|print\(|raise\b|await\b)|[;{}]\s*$|\)\s*:?\s*$|^\w[\w.\[\]]*\s*=[^=]"
)
MIN_COMMENTED_LINES: Final = 3


@dataclass(frozen=True)
class Hit:
    """One finding in a file: its sub-kind, first line (1-based) and the exact quoted text."""

    sub_kind: IntakeSubKind
    line: int
    quote: str


def is_plan_file(path: str) -> bool:
    """True for a file whose plans are read: ``README``/``PLAN``/``ROADMAP``/``TODO`` (any extension)
    anywhere, and Markdown under ``docs/``."""
    pure = PurePosixPath(path)
    if PLAN_NAMES.match(pure.name):
        return True
    return pure.parts[:1] == ("docs",) and pure.suffix.lower() in (".md", ".markdown")


def plan_hits(text: str) -> list[Hit]:
    """The plan findings of a plan file (see the module docstring)."""
    hits: list[Hit] = []
    section_level: int | None = None
    fenced = False
    for number, line in enumerate(text.split("\n"), start=1):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced:
            continue
        heading = HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            if section_level is not None and level <= section_level:
                section_level = None
            if section_level is None and PLAN_HEADING.search(heading.group(2)):
                section_level = level
            continue
        if UNCHECKED.match(line):
            hits.append(Hit(IntakeSubKind.UNCHECKED_TASK, number, line.strip()))
        elif (
            section_level is not None
            and LIST_ITEM.match(line)
            and not re.match(r"^\s*[-*+]\s+\[[xX]\]", line)
        ):
            hits.append(Hit(IntakeSubKind.PLAN_SECTION, number, line.strip()))
    return hits


def marker_hits(path: str, text: str) -> list[Hit]:
    """The code-marker findings of a text file (see the module docstring), in line order, at most one
    per line (a commented-out block's lines are not also markers)."""
    lines = text.split("\n")
    hits: dict[int, Hit] = {}
    for block_start, block in _commented_blocks(lines):
        hits[block_start] = Hit(IntakeSubKind.COMMENTED_CODE, block_start, "\n".join(block))
    in_block = {start + offset for start, hit in hits.items() for offset in range(len(hit.quote.split("\n")))}
    for number, line in enumerate(lines, start=1):
        if number in in_block:
            continue
        if MARKER.search(line):
            hits[number] = Hit(IntakeSubKind.MARKER, number, line.strip())
        elif SKIPPED.search(line):
            hits[number] = Hit(IntakeSubKind.SKIPPED_TEST, number, line.strip())
    if _is_python_test(path):
        for number in _empty_tests(text):
            if number not in hits:
                hits[number] = Hit(IntakeSubKind.EMPTY_TEST, number, lines[number - 1].strip())
    return [hits[number] for number in sorted(hits)]


def _is_python_test(path: str) -> bool:
    name = PurePosixPath(path).name
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def _empty_tests(text: str) -> list[int]:
    """The lines of the ``def`` of every test function whose body does nothing (none when the file does
    not parse)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or not node.name.startswith("test"):
            continue
        if all(_does_nothing(statement) for statement in node.body):
            lines.append(node.lineno)
    return lines


def _does_nothing(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Pass):
        return True
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)


def _commented_blocks(lines: list[str]) -> list[tuple[int, list[str]]]:
    """Runs of at least :data:`MIN_COMMENTED_LINES` comment lines of which at least two read as code:
    (first line, the lines exactly)."""
    blocks: list[tuple[int, list[str]]] = []
    run: list[tuple[int, str, str]] = []

    def close() -> None:
        if (
            len(run) >= MIN_COMMENTED_LINES
            and sum(bool(CODE_LIKE.search(body.strip())) for _, _, body in run) >= 2
        ):
            blocks.append((run[0][0], [line for _, line, _ in run]))
        run.clear()

    for number, line in enumerate(lines, start=1):
        match = COMMENT.match(line)
        if match and not line.lstrip().startswith(("#!", "# -*-", "#:")):
            run.append((number, line, match.group(2)))
        else:
            close()
    close()
    return blocks
