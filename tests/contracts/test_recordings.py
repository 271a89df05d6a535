"""Replay recordings files: the format, every problem named by entry and field, the rules of a live
answer applied to recorded ones, duplicate keys refused, and a stable text form."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contracts.recordings import (
    InvalidRecordings,
    Recording,
    RecordingKind,
    parse_recordings,
    recordings_from_answers,
)

DEMO = Path(__file__).resolve().parents[2] / "examples" / "recordings" / "demo.json"


def _response(role: str = "database-optimizer", **changes: Any) -> dict[str, Any]:
    response: dict[str, Any] = {
        "role": role,
        "axis": "query plan",
        "inspected_evidence": ["log:slow"],
        "findings": [
            {"severity": "high", "title": "Sequential scan", "evidence_refs": ["log:slow"], "detail": "d"}
        ],
        "confidence": 0.8,
        "confidence_band": "high",
        "closure": "closed",
        "recommended_next_action": "add the index",
    }
    response.update(changes)
    return {key: value for key, value in response.items() if value is not None}


def _entry(
    profile: str = "database-optimizer", kind: str = "analysis", title: str = "Slow query", **changes: Any
) -> dict[str, Any]:
    return {"profile": profile, "kind": kind, "title": title, "response": _response(profile, **changes)}


def _text(*entries: dict[str, Any]) -> str:
    return json.dumps({"recordings": list(entries)})


def _problems(text: str) -> list[str]:
    with pytest.raises(InvalidRecordings) as raised:
        parse_recordings(text)
    return raised.value.problems


def test_the_shipped_demo_recordings_are_a_valid_file() -> None:
    parsed = parse_recordings(DEMO.read_text(encoding="utf-8"))
    assert len(parsed.recordings) == len(json.loads(DEMO.read_text(encoding="utf-8"))["recordings"])


def test_a_valid_file_gives_each_key_its_response_as_canonical_json() -> None:
    parsed = parse_recordings(_text(_entry(), _entry(kind="review", verdict="agree")))
    table = parsed.table()
    assert set(table) == {
        ("database-optimizer", "analysis", "Slow query", ""),
        ("database-optimizer", "review", "Slow query", ""),
    }
    answer = json.loads(table[("database-optimizer", "review", "Slow query", "")])
    assert answer["verdict"] == "agree"
    assert table[("database-optimizer", "review", "Slow query", "")] == json.dumps(answer, sort_keys=True)


def test_not_json_and_not_the_format_are_refused_with_the_reason() -> None:
    assert _problems("{not json")[0].startswith("not JSON: ")
    assert _problems(json.dumps({"recordings": []}))[0].startswith("file: recordings: ")
    assert _problems(json.dumps({"records": []})) == [
        "file: recordings: Field required",
        "file: records: unknown key",
    ]


def test_every_broken_entry_is_named_by_index_and_field_at_once() -> None:
    problems = _problems(
        _text(
            _entry(),
            _entry(kind="summary"),
            _entry(title="two\nlines"),
            {**_entry(), "extra": 1},
            _entry(confidence=1.5),
        )
    )
    assert any(problem.startswith("entry 1: kind: ") for problem in problems)
    assert any(problem.startswith("entry 2: title: ") and "one line" in problem for problem in problems)
    assert "entry 3: extra: unknown key" in problems
    assert any(problem.startswith("entry 4: response.confidence: ") for problem in problems)
    assert not any(problem.startswith("entry 0") for problem in problems)


@pytest.mark.parametrize(
    ("entry", "rule"),
    [
        (_entry(kind="review"), "a review result must carry a verdict"),
        (_entry(verdict="agree"), "an analysis result must not carry a verdict"),
        (_entry(kind="change"), "a worktree change result must carry its change in 'patch'"),
        (_entry(patch="diff --git a/x b/x\n"), "only a worktree run's change job may return a patch"),
        ({**_entry(), "response": _response("backend-architect")}, "is not the job's profile"),
    ],
    ids=[
        "review_without_verdict",
        "analysis_with_verdict",
        "change_without_patch",
        "patch_outside_change",
        "role",
    ],
)
def test_a_recorded_answer_must_satisfy_the_rules_of_a_live_one(entry: dict[str, Any], rule: str) -> None:
    (problem,) = _problems(_text(entry))
    assert problem.startswith("entry 0: response: ") and rule in problem


def test_a_change_recording_carries_its_patch() -> None:
    parsed = parse_recordings(_text(_entry(kind="change", patch="diff --git a/x b/x\n")))
    assert parsed.recordings[0].kind is RecordingKind.CHANGE


def test_a_key_recorded_twice_is_refused_naming_both_entries() -> None:
    (problem,) = _problems(_text(_entry(), _entry(kind="review", verdict="agree"), _entry()))
    assert problem == (
        "entry 2: profile 'database-optimizer', job 'analysis', title 'Slow query' "
        "is already recorded by entry 0"
    )


def test_titles_that_differ_only_in_case_are_different_keys() -> None:
    parsed = parse_recordings(_text(_entry(title="Slow query"), _entry(title="slow query")))
    assert len(parsed.table()) == 2


def test_the_text_form_is_sorted_by_key_and_parses_back_to_the_same_file() -> None:
    parsed = parse_recordings(_text(_entry(title="b"), _entry(title="a")))
    text = parsed.to_json()
    assert [entry["title"] for entry in json.loads(text)["recordings"]] == ["a", "b"]
    assert parse_recordings(text).table() == parsed.table()
    assert text.endswith("\n")


def test_answers_collected_from_a_run_make_a_file_checked_like_any_other() -> None:
    answer = Recording.model_validate(_entry())
    assert recordings_from_answers([answer]).table() == parse_recordings(_text(_entry())).table()
    with pytest.raises(InvalidRecordings):
        recordings_from_answers([answer, answer])


def test_a_recording_that_names_task_contains_answers_only_a_task_that_contains_it() -> None:
    from contracts.recordings import select_recording

    plain = _entry()
    later = {**_entry(axis="after review"), "task_contains": "Findings of earlier review rounds"}
    longer = {
        **_entry(axis="round 2"),
        "task_contains": "Findings of earlier review rounds (resolve each):",
    }
    parsed = parse_recordings(_text(plain, later, longer))
    table = parsed.table()
    key = ("database-optimizer", "analysis", "Slow query")

    def axis(task: str) -> str | None:
        answer = select_recording(table, *key, task)
        return None if answer is None else str(json.loads(answer)["axis"])

    assert axis("Slow query\n\nthe scope") == "query plan"
    assert axis("Slow query\n\nFindings of earlier review rounds:\n- round 1") == "after review"
    # When several texts are contained, the longest names the recording.
    assert axis("Findings of earlier review rounds (resolve each):\n- round 1") == "round 2"
    assert select_recording(table, "database-optimizer", "review", "Slow query", "any task") is None
    # Without a plain recording, a task without the text finds none.
    only_later = parse_recordings(_text(later)).table()
    assert select_recording(only_later, *key, "Slow query") is None
    # The marker is part of the key: the same marker twice is refused, and the file keeps it.
    assert "already recorded by entry 1" in " ".join(_problems(_text(plain, later, later)))
    assert parse_recordings(parsed.to_json()).table() == table
    assert any("task_contains" in entry for entry in json.loads(parsed.to_json())["recordings"])


def test_task_contains_is_one_non_blank_line() -> None:
    assert any("task_contains" in problem for problem in _problems(_text({**_entry(), "task_contains": " "})))
    assert any(
        "task_contains" in problem for problem in _problems(_text({**_entry(), "task_contains": "a\nb"}))
    )


def test_json_nested_deeper_than_the_parser_reads_is_not_a_recordings_file() -> None:
    assert _problems("[" * 30_000 + "]" * 30_000) == ["not JSON this parser reads: nested too deeply"]
