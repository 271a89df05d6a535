"""A unified diff as lines for the run page: each classed (file header, hunk, added, deleted, context)
and its code split into syntax tokens (docs/architecture.md "Mission Control").

The diff is untrusted text. Nothing here produces HTML: a line is a list of ``(token class, text)``
pairs the template prints escaped. The language is chosen from the file's extension among an
allow-list of lexers (a path never names a lexer or a file to load), and each side of a hunk — the
old lines and the new ones — is tokenized as one text, so a string or comment spanning lines is
coloured as one. A diff beyond the highlighting limits (lines, line length) is shown whole, every
line classed, with no token colours, and says so; nothing is dropped or shortened.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Final

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.token import Comment, Keyword, Name, Number, Operator, String, _TokenType

# Highlighting is skipped (the diff still shown whole) past these: a regex lexer's cost grows with
# its input, and a page must render in bounded time whatever a change contains.
MAX_HIGHLIGHTED_LINES: Final = 5_000
MAX_HIGHLIGHTED_LINE_CHARS: Final = 1_000

# Extension → Pygments lexer alias. Only these lexers ever run.
LEXERS: Final = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".ts": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".rb": "ruby",
    ".sh": "bash",
    ".bash": "bash",
    ".sql": "sql",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".json": "json",
    ".ini": "ini",
    ".cfg": "ini",
    ".md": "markdown",
    ".html": "html",
    ".css": "css",
    ".tf": "terraform",
}

# Token families the stylesheet colours (class ``t-<family>``); anything else prints plain.
_FAMILIES: Final[tuple[tuple[_TokenType, str], ...]] = (
    (Comment, "com"),
    (String, "str"),
    (Number, "num"),
    (Keyword, "kw"),
    (Name.Decorator, "dec"),
    (Name.Builtin, "bi"),
    (Name.Function, "fn"),
    (Name.Class, "fn"),
    (Operator.Word, "kw"),
)

_FILE_PREFIXES: Final = (
    "diff --git",
    "+++",
    "---",
    "index ",
    "rename ",
    "new file",
    "deleted file",
    "old mode",
    "new mode",
    "similarity index",
    "Binary files",
)


@dataclass
class DiffLine:
    """One line of the diff: ``kind`` is ``file``, ``hunk``, ``add``, ``del``, ``ctx`` or ``note`` (git's
    "no newline at end of file"); ``tokens``
    the line's text in order as ``(family, text)`` (``family`` empty for plain text). Joined, the
    tokens are the line exactly."""

    kind: str
    tokens: list[tuple[str, str]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(text for _, text in self.tokens)


@dataclass
class DiffView:
    """The diff's lines and whether their code is coloured (``highlighted``; ``False`` past the limits,
    with ``reason`` saying which)."""

    lines: list[DiffLine]
    highlighted: bool
    reason: str = ""


def diff_view(diff: str | None) -> DiffView:
    """The lines of ``diff`` (a unified diff as git prints it), classed and, within the limits,
    tokenized by the language of each file."""
    if not diff:
        return DiffView([], highlighted=False)
    raw = diff.splitlines()
    lines = [DiffLine(_kind(line), [("", line)]) for line in raw]
    if len(raw) > MAX_HIGHLIGHTED_LINES:
        return DiffView(lines, False, f"not highlighted: over {MAX_HIGHLIGHTED_LINES:,} lines")
    if any(len(line) > MAX_HIGHLIGHTED_LINE_CHARS for line in raw):
        return DiffView(
            lines, False, f"not highlighted: a line over {MAX_HIGHLIGHTED_LINE_CHARS:,} characters"
        )
    lexer: Lexer | None = None
    hunk: list[DiffLine] = []
    for line in lines:
        if line.kind in ("file", "hunk"):
            _colour(hunk, lexer)
            hunk = []
            if line.kind == "file" and (path := _new_path(line.text)) is not None:
                lexer = lexer_for(path)
        elif line.kind != "note":
            hunk.append(line)
    _colour(hunk, lexer)
    return DiffView(lines, highlighted=True)


def lexer_for(path: str) -> Lexer | None:
    """The allow-listed lexer for ``path``'s extension, or ``None``."""
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    alias = LEXERS.get(name[dot:].lower()) if dot > 0 else None
    return None if alias is None else _lexer(alias)


@functools.cache
def _lexer(alias: str) -> Lexer:
    return get_lexer_by_name(alias, stripnl=False, stripall=False, ensurenl=False)


def _kind(line: str) -> str:
    if line.startswith(_FILE_PREFIXES):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("\\"):
        return "note"  # "\ No newline at end of file"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "ctx"


def _new_path(header: str) -> str | None:
    """The path a file header names (``+++ b/P``, ``--- a/P`` or ``diff --git a/P b/P``)."""
    for prefix in ("+++ b/", "--- a/"):
        if header.startswith(prefix):
            return header[len(prefix) :]
    if header.startswith("diff --git ") and " b/" in header:
        return header.rsplit(" b/", 1)[1]
    return None


def _colour(hunk: list[DiffLine], lexer: Lexer | None) -> None:
    """Tokenize the old side (context and deleted lines) and the new side (context and added lines)
    of ``hunk`` each as one text; give every line the tokens of its side (context: the new side)."""
    if lexer is None or not hunk:
        return
    old = [line for line in hunk if line.kind in ("ctx", "del")]
    new = [line for line in hunk if line.kind in ("ctx", "add")]
    old_tokens = _tokens_by_line(lexer, [line.text[1:] for line in old])
    new_tokens = _tokens_by_line(lexer, [line.text[1:] for line in new])
    for line, tokens in zip(old, old_tokens, strict=True):
        if line.kind == "del":
            line.tokens = [("", line.text[:1]), *tokens]
    for line, tokens in zip(new, new_tokens, strict=True):
        line.tokens = [("", line.text[:1]), *tokens]


def _tokens_by_line(lexer: Lexer, texts: list[str]) -> list[list[tuple[str, str]]]:
    """``texts`` tokenized as one text joined by newlines, split back into one token list per text.
    Falls back to plain text for a side whose tokens do not rebuild it exactly."""
    rows: list[list[tuple[str, str]]] = [[]]
    for token_type, value in lexer.get_tokens("\n".join(texts)):
        family = _family(token_type)
        pieces = value.split("\n")
        for index, piece in enumerate(pieces):
            if index:
                rows.append([])
            if not piece:
                continue
            row = rows[-1]
            if row and row[-1][0] == family:  # one span per run of the same family
                row[-1] = (family, row[-1][1] + piece)
            else:
                row.append((family, piece))
    if len(rows) != len(texts) or any(
        "".join(text for _, text in row) != text for row, text in zip(rows, texts, strict=True)
    ):
        return [[("", text)] if text else [] for text in texts]
    return rows


def _family(token_type: _TokenType) -> str:
    for parent, family in _FAMILIES:
        if token_type in parent:
            return family
    return ""
