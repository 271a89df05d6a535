"""Work-item text follows the rules of research text: one-line fields refuse control, format and
separator characters; a description keeps line feeds and tabs only; nothing is stripped."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from contracts.text_rules import check_multiline, check_one_line
from contracts.work_item import WorkItem

REFUSED_IN_ONE_LINE = {
    "escape": "\x1b[31mred",
    "bell": "ring\x07",
    "carriage return": "one\rtwo",
    "line feed": "one\ntwo",
    "tab": "one\ttwo",
    "nul": "nul\x00byte",
    "delete": "del\x7f",
    "c1 control": "next\x85line",
    "right-to-left override": "invoice\u202egnp.exe",
    "left-to-right isolate": "x\u2066y",
    "zero-width space": "zero\u200bwidth",
    "byte order mark": "\ufeffbom",
    "line separator": "one\u2028two",
    "paragraph separator": "one\u2029two",
}


@pytest.mark.parametrize("text", REFUSED_IN_ONE_LINE.values(), ids=REFUSED_IN_ONE_LINE.keys())
@pytest.mark.parametrize("field", ["title", "domain", "roles"])
def test_one_line_fields_refuse_control_format_and_separator_characters(field: str, text: str) -> None:
    item = {"title": "A title", field: [text] if field == "roles" else text}
    with pytest.raises(ValidationError) as caught:
        WorkItem.model_validate(item)
    message = str(caught.value)
    assert "one line without control, format or line-separator characters" in message
    bad = next(ch for ch in text if not ch.isprintable() or ch in "\u2028\u2029")
    assert f"U+{ord(bad):04X}" in message


def test_the_error_names_the_role_position_and_character() -> None:
    with pytest.raises(ValidationError) as caught:
        WorkItem.model_validate({"title": "t", "roles": ["dba", "sre\x1b"]})
    assert "roles[1]" in str(caught.value)
    assert "U+001B at character 4" in str(caught.value)


@pytest.mark.parametrize(
    "text",
    ["\x1b[2J", "bell\x07", "nul\x00", "windows\r\nline", "bidi\u202e", "zw\u200d", "sep\u2028x", "\x0b"],
)
def test_a_description_refuses_every_control_but_line_feed_and_tab(text: str) -> None:
    with pytest.raises(ValidationError) as caught:
        WorkItem.model_validate({"title": "t", "description": text})
    assert "description may contain line feeds and tabs" in str(caught.value)


def test_a_description_with_a_windows_line_ending_is_told_to_use_line_feeds() -> None:
    with pytest.raises(ValidationError) as caught:
        WorkItem.model_validate({"title": "t", "description": "first\r\nsecond"})
    assert "use line feeds" in str(caught.value)


def test_a_description_keeps_its_line_feeds_tabs_and_printable_unicode_exactly() -> None:
    text = "Steps:\n\t1. run the query\n\t2. compare the plan — café, 東京, emoji 🚨\n"
    assert WorkItem.model_validate({"title": "Slow query", "description": text}).description == text


def test_printable_unicode_in_one_line_fields_is_kept_as_given() -> None:
    item = WorkItem.model_validate(
        {"title": "  Zürich — 東京 latency 🚨  ", "domain": "données", "roles": ["ingénieur"]}
    )
    assert item.title == "  Zürich — 東京 latency 🚨  "
    assert item.domain == "données"
    assert item.roles == ["ingénieur"]


def test_the_rules_return_accepted_text_unchanged() -> None:
    assert check_one_line("plain text", "f") == "plain text"
    assert check_multiline("a\n\tb", "f") == "a\n\tb"
