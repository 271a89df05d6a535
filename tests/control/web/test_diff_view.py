"""A diff on the run page: every line classed, code tokenized by its file's language, nothing dropped,
and hostile text left as text."""

from __future__ import annotations

from control.web.diff_view import MAX_HIGHLIGHTED_LINE_CHARS, MAX_HIGHLIGHTED_LINES, diff_view, lexer_for
from control.web.rendering import environment

PYTHON_DIFF = """diff --git a/app/queries.py b/app/queries.py
index 1111111..2222222 100644
--- a/app/queries.py
+++ b/app/queries.py
@@ -1,3 +1,5 @@
 def orders(limit):
-    return "SELECT *"  # slow
+    \"\"\"Orders, newest first,
+    at most ``limit``.\"\"\"
+    return 42
 x = 2
\\ No newline at end of file"""


def test_every_line_is_classed_and_kept_exactly() -> None:
    view = diff_view(PYTHON_DIFF)
    assert view.highlighted
    assert [line.kind for line in view.lines] == [
        "file",
        "file",
        "file",
        "file",
        "hunk",
        "ctx",
        "del",
        "add",
        "add",
        "add",
        "ctx",
        "note",
    ]
    assert [line.text for line in view.lines] == PYTHON_DIFF.splitlines()


def test_code_is_tokenized_by_language_and_a_string_spanning_lines_stays_one_string() -> None:
    lines = diff_view(PYTHON_DIFF).lines
    assert ("kw", "def") in lines[5].tokens and ("fn", "orders") in lines[5].tokens
    assert ("com", "# slow") in lines[6].tokens
    assert lines[7].tokens[-1] == ("str", '"""Orders, newest first,')
    assert lines[8].tokens[-1] == ("str", '    at most ``limit``."""')  # the second line of the string
    assert ("num", "42") in lines[9].tokens
    assert lines[7].tokens[0] == ("", "+")  # the marker is never coloured


def test_a_file_of_an_unknown_language_is_classed_but_not_coloured() -> None:
    diff = "diff --git a/notes.xyz b/notes.xyz\n--- a/notes.xyz\n+++ b/notes.xyz\n@@ -1 +1 @@\n-def\n+return"
    view = diff_view(diff)
    assert all(family == "" for line in view.lines for family, _ in line.tokens)
    assert lexer_for("notes.xyz") is None and lexer_for("Makefile") is None
    assert lexer_for(".py") is None  # a dot file is not a python file


def test_past_the_limits_the_diff_is_shown_whole_without_colour_and_says_why() -> None:
    many = "--- a/x.py\n+++ b/x.py\n@@ -0,0 +1 @@\n" + "\n".join(["+x = 1"] * MAX_HIGHLIGHTED_LINES)
    view = diff_view(many)
    assert not view.highlighted and "over 5,000 lines" in view.reason
    assert len(view.lines) == MAX_HIGHLIGHTED_LINES + 3
    wide = "--- a/x.py\n+++ b/x.py\n@@ -0,0 +1 @@\n+" + "y" * MAX_HIGHLIGHTED_LINE_CHARS
    view = diff_view(wide)
    assert not view.highlighted and "over 1,000 characters" in view.reason
    assert view.lines[-1].text == "+" + "y" * MAX_HIGHLIGHTED_LINE_CHARS


def test_no_diff_is_no_lines() -> None:
    assert diff_view(None).lines == [] and diff_view("").lines == []


def test_hostile_code_in_a_diff_renders_as_escaped_text() -> None:
    diff = (
        "--- a/page.html\n+++ b/page.html\n@@ -0,0 +1,2 @@\n"
        '+<script>alert(1)</script><img src=x onerror="alert(2)">\n'
        '+<a href="javascript:alert(3)">\u202eevil</a>'
    )
    template = environment().from_string(
        "{% for line in d | diff_view | attr('lines') %}<span class=\"{{ line.kind }}\">"
        '{% for family, text in line.tokens %}<span class="t-{{ family }}">{{ text }}</span>'
        "{% endfor %}</span>{% endfor %}"
    )
    html = template.render(d=diff)
    assert "<script" not in html and "<img" not in html and "<a " not in html
    assert "&lt;script&gt;" in html and "onerror=" in html  # shown, as text
    assert "⟨U+202E⟩" in html
