"""``specialists research``: creating a case from a JSON file, showing and listing cases, adding and
deactivating evidence.

An input file is parsed strictly (unknown keys and kinds are refused, naming the field); a record's
``path`` is read relative to the input file's directory and must be a regular UTF-8 file of at most
48 KiB. Any bad record writes nothing (exit 2). Creating, adding and deactivating are protected (the
deployment's action token) and need a registered actor. The JSON shapes follow docs/architecture.md; content
is shown only with ``case-show --content``, and the human view shows untrusted text literally.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from contracts.research import MAX_EVIDENCE_CONTENT_BYTES, content_sha256, evidence_digest
from tests.control.cli_harness import ISO_UTC, SHA256_HEX, Cli

CASE_ID = r"RSC-[0-9A-Z]{12}"
EVIDENCE_ID = r"EVD-[0-9A-Z]{12}"
SUBJECT = {"kind": "vulnerability", "identifier": "CVE-2026-0001", "title": "Heap overflow in the parser"}
CODE = {"kind": "code", "content": "memcpy(buf, src, len);", "source_ref": "repo@abc123:src/parse.c"}
NOTE = {"kind": "analyst_note", "content": "Likely reachable from the network.", "source_ref": "note:alice"}
CASE_KEYS = {
    "case_id", "subject", "created_by", "created_at", "evidence", "evidence_digest", "status",
    "status_changed_by", "status_changed_at",
}  # fmt: skip
EVIDENCE_KEYS = {
    "evidence_id",
    "kind",
    "factual",
    "source_ref",
    "sha256",
    "active",
    "size_bytes",
    "added_by",
    "added_at",
    "deactivated_by",
    "deactivated_at",
}


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli.isolated(tmp_path)


@pytest.fixture
def alice(cli: Cli) -> Cli:
    """The CLI with a store in which ``alice`` is registered."""
    cli.call("actors", "register", "alice", "--name", "Alice", "--json").ok()
    return cli


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def create(cli: Cli, input_file: Path, *extra: str) -> Any:
    return cli.call(
        "research", "case-create", "--actor", "alice", "--input", str(input_file), "--json", *extra
    )


def created_case(cli: Cli, tmp_path: Path, *evidence: dict[str, Any]) -> dict[str, Any]:
    data = {"subject": SUBJECT, "evidence": list(evidence) or [CODE, NOTE]}
    return dict(create(cli, write_json(tmp_path / "case.json", data)).ok())


def cases(cli: Cli) -> list[dict[str, Any]]:
    listed = cli.call("research", "cases", "--json").ok()["cases"]
    assert isinstance(listed, list)
    return listed


def active_digest(case: dict[str, Any]) -> str:
    return evidence_digest(
        [(item["evidence_id"], item["sha256"]) for item in case["evidence"] if item["active"]]
    )


# ----------------------------------------------------------------------------------------------- create


def test_a_created_case_is_printed_with_digests_and_without_content(alice: Cli, tmp_path: Path) -> None:
    case = created_case(alice, tmp_path, CODE, NOTE)

    assert set(case) == CASE_KEYS
    assert re.fullmatch(CASE_ID, case["case_id"])
    assert case["subject"] == SUBJECT
    assert case["created_by"] == "alice"
    assert re.fullmatch(ISO_UTC, case["created_at"])
    for item, given in zip(case["evidence"], [CODE, NOTE], strict=True):
        assert set(item) == EVIDENCE_KEYS
        assert re.fullmatch(EVIDENCE_ID, item["evidence_id"])
        assert (item["kind"], item["source_ref"]) == (given["kind"], given["source_ref"])
        assert item["sha256"] == content_sha256(given["content"])
        assert item["size_bytes"] == len(given["content"].encode("utf-8"))
        assert item["active"] is True and item["added_by"] == "alice"
        assert re.fullmatch(ISO_UTC, item["added_at"])
    assert [item["factual"] for item in case["evidence"]] == [True, False]
    assert re.fullmatch(SHA256_HEX, case["evidence_digest"])
    assert case["evidence_digest"] == active_digest(case)


def test_case_show_prints_the_same_case_and_its_content_only_when_asked(alice: Cli, tmp_path: Path) -> None:
    case = created_case(alice, tmp_path, CODE, NOTE)
    assert alice.call("research", "case-show", case["case_id"], "--json").ok() == case

    with_content = alice.call("research", "case-show", case["case_id"], "--content", "--json").ok()
    assert [item.pop("content") for item in with_content["evidence"]] == [CODE["content"], NOTE["content"]]
    assert with_content == case


def test_evidence_given_by_path_is_read_relative_to_the_input_file(alice: Cli, tmp_path: Path) -> None:
    inputs = tmp_path / "inputs"
    (inputs / "evidence").mkdir(parents=True)
    trace = "Thread 1 SIGSEGV\n  #0 parse() at parse.c:42\n  ünïcode ✓\n"
    (inputs / "evidence" / "trace.txt").write_text(trace, encoding="utf-8")
    data = {
        "subject": SUBJECT,
        "evidence": [{"kind": "trace", "path": "evidence/trace.txt", "source_ref": "t:9"}],
    }
    # The CLI's working directory is tmp_path, where evidence/trace.txt does not exist.
    case = create(alice, write_json(inputs / "case.json", data)).ok()

    [item] = case["evidence"]
    assert item["sha256"] == content_sha256(trace)
    assert item["size_bytes"] == len(trace.encode("utf-8"))
    shown = alice.call("research", "case-show", case["case_id"], "--content", "--json").ok()
    assert shown["evidence"][0]["content"] == trace


def test_cases_are_listed_newest_first_with_their_evidence_counts(alice: Cli, tmp_path: Path) -> None:
    first = created_case(alice, tmp_path, CODE)
    second = created_case(alice, tmp_path, CODE, NOTE)
    alice.call(
        "research",
        "evidence-deactivate",
        second["case_id"],
        second["evidence"][1]["evidence_id"],
        "--actor",
        "alice",
        "--json",
    ).ok()

    listed = cases(alice)
    assert [row["case_id"] for row in listed] == [second["case_id"], first["case_id"]]
    assert listed[0] == {
        "case_id": second["case_id"],
        "kind": "vulnerability",
        "identifier": "CVE-2026-0001",
        "title": "Heap overflow in the parser",
        "evidence_active": 1,
        "evidence_total": 2,
        "created_at": second["created_at"],
        "status": "open",
    }


def test_without_a_store_there_are_no_cases_and_none_is_created(cli: Cli) -> None:
    assert cases(cli) == []
    assert not cli.database.exists()


# ------------------------------------------------------------------------------------- refused input


def refused_input(cli: Cli, tmp_path: Path, data: Any, code: str, *fragments: str) -> str:
    """Create from ``data``: exit 2 with ``code``, the message holding every fragment, nothing written."""
    result = create(cli, write_json(tmp_path / "case.json", data))
    message = result.error(2, code)
    for fragment in fragments:
        assert fragment in message, message
    assert cases(cli) == []
    return str(message)


def test_an_unknown_key_is_refused_naming_it(alice: Cli, tmp_path: Path) -> None:
    refused_input(
        alice,
        tmp_path,
        {"subject": SUBJECT, "evidence": [CODE], "priority": 1},
        "invalid_case_input",
        "priority",
    )
    item = {**CODE, "contents": "typo"}
    refused_input(
        alice, tmp_path, {"subject": SUBJECT, "evidence": [item]}, "invalid_case_input", "evidence.0.contents"
    )
    subject = {**SUBJECT, "severity": "high"}
    refused_input(
        alice, tmp_path, {"subject": subject, "evidence": [CODE]}, "invalid_case_input", "subject.severity"
    )


def test_an_unknown_evidence_kind_is_refused_naming_the_field(alice: Cli, tmp_path: Path) -> None:
    item = {**CODE, "kind": "rumour"}
    refused_input(
        alice,
        tmp_path,
        {"subject": SUBJECT, "evidence": [CODE, item]},
        "invalid_case_input",
        "evidence.1.kind",
    )


def test_a_record_with_both_content_and_path_or_neither_is_refused(alice: Cli, tmp_path: Path) -> None:
    (tmp_path / "x.c").write_text("int x;", encoding="utf-8")
    both = {**CODE, "path": "x.c"}
    refused_input(
        alice, tmp_path, {"subject": SUBJECT, "evidence": [both]}, "invalid_case_input", "exactly one"
    )
    neither = {"kind": "code", "source_ref": "s"}
    message = refused_input(
        alice, tmp_path, {"subject": SUBJECT, "evidence": [neither]}, "invalid_case_input", "exactly one"
    )
    # Our rule in our words: "evidence.0: give exactly one of ...", without pydantic's prefix.
    assert "evidence.0: give exactly one of 'content' or 'path'" in message and "Value error" not in message


def test_an_oversize_evidence_file_is_refused_naming_its_size_and_the_limit(
    alice: Cli, tmp_path: Path
) -> None:
    size = MAX_EVIDENCE_CONTENT_BYTES + 1
    (tmp_path / "big.log").write_bytes(b"x" * size)
    big = {"kind": "trace", "path": "big.log", "source_ref": "log"}
    refused_input(
        alice,
        tmp_path,
        {"subject": SUBJECT, "evidence": [CODE, big]},
        "evidence_too_large",
        "big.log",
        str(size),
        str(MAX_EVIDENCE_CONTENT_BYTES),
    )


def test_an_evidence_file_of_exactly_the_limit_is_accepted(alice: Cli, tmp_path: Path) -> None:
    (tmp_path / "full.log").write_bytes(b"y" * MAX_EVIDENCE_CONTENT_BYTES)
    case = created_case(alice, tmp_path, {"kind": "trace", "path": "full.log", "source_ref": "log"})
    assert case["evidence"][0]["size_bytes"] == MAX_EVIDENCE_CONTENT_BYTES


def test_oversize_inline_content_is_refused(alice: Cli, tmp_path: Path) -> None:
    big = {**CODE, "content": "z" * (MAX_EVIDENCE_CONTENT_BYTES + 1)}
    refused_input(alice, tmp_path, {"subject": SUBJECT, "evidence": [big]}, "invalid_case_input", "limit")


def test_an_evidence_file_that_is_not_utf8_is_refused_naming_it(alice: Cli, tmp_path: Path) -> None:
    (tmp_path / "latin1.txt").write_bytes("café".encode("latin-1"))
    item = {"kind": "source_excerpt", "path": "latin1.txt", "source_ref": "s"}
    refused_input(
        alice, tmp_path, {"subject": SUBJECT, "evidence": [item]}, "evidence_not_utf8", "latin1.txt"
    )


def test_an_evidence_file_with_nul_bytes_is_refused(alice: Cli, tmp_path: Path) -> None:
    (tmp_path / "binary.bin").write_bytes(b"ELF\x00\x01\x02")
    item = {"kind": "code", "path": "binary.bin", "source_ref": "s"}
    refused_input(
        alice, tmp_path, {"subject": SUBJECT, "evidence": [item]}, "invalid_evidence", "binary.bin", "NUL"
    )


def test_an_evidence_path_must_name_an_existing_regular_file(alice: Cli, tmp_path: Path) -> None:
    (tmp_path / "a-directory").mkdir()
    directory = {"kind": "code", "path": "a-directory", "source_ref": "s"}
    refused_input(
        alice,
        tmp_path,
        {"subject": SUBJECT, "evidence": [directory]},
        "evidence_path_not_a_file",
        "a-directory",
    )
    os.mkfifo(tmp_path / "a-pipe")  # opening it for reading must not wait for a writer
    pipe = {"kind": "code", "path": "a-pipe", "source_ref": "s"}
    refused_input(
        alice, tmp_path, {"subject": SUBJECT, "evidence": [pipe]}, "evidence_path_not_a_file", "a-pipe"
    )
    missing = {"kind": "code", "path": "missing.c", "source_ref": "s"}
    refused_input(
        alice, tmp_path, {"subject": SUBJECT, "evidence": [missing]}, "evidence_path_not_found", "missing.c"
    )


def test_an_evidence_path_outside_the_input_files_directory_is_refused_and_nothing_is_read(
    alice: Cli, tmp_path: Path
) -> None:
    # Evidence goes to model providers in full: a case file may only name files beside it.
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("SECRET-OUTSIDE", encoding="utf-8")
    (tmp_path / "link.txt").symlink_to(outside)
    (tmp_path / "device").symlink_to(os.devnull)
    for path in (str(outside), f"../{outside.name}", "link.txt", "device", os.devnull):
        item = {"kind": "code", "path": path, "source_ref": "s"}
        refused_input(
            alice, tmp_path, {"subject": SUBJECT, "evidence": [item]}, "evidence_path_outside_input_dir"
        )
    (tmp_path / "inside").mkdir()
    (tmp_path / "inside" / "ok.txt").write_text("fine", encoding="utf-8")
    (tmp_path / "inner-link.txt").symlink_to(tmp_path / "inside" / "ok.txt")
    item = {"kind": "code", "path": "inner-link.txt", "source_ref": "s"}
    case = created_case(alice, tmp_path, item)
    assert [record["sha256"] for record in case["evidence"]] == [hashlib.sha256(b"fine").hexdigest()]


def test_an_evidence_path_outside_is_refused_as_outside_whether_or_not_a_file_is_there(
    alice: Cli, tmp_path: Path
) -> None:
    # The answer must not tell which files exist outside the input file's directory.
    (tmp_path.parent / f"{tmp_path.name}-there.txt").write_text("SECRET", encoding="utf-8")
    absent = tmp_path.parent / f"{tmp_path.name}-absent.txt"
    (tmp_path / "dangling-out.txt").symlink_to(absent)
    (tmp_path / "sub").mkdir()
    paths = [
        f"../{tmp_path.name}-there.txt",
        f"../{tmp_path.name}-absent.txt",
        f"sub/../../{tmp_path.name}-absent.txt",
        "dangling-out.txt",
        "../no-such-directory/passwd",
    ]
    messages = []
    for path in paths:
        item = {"kind": "code", "path": path, "source_ref": "s"}
        data = {"subject": SUBJECT, "evidence": [item]}
        message = refused_input(alice, tmp_path, data, "evidence_path_outside_input_dir", path)
        messages.append(message.replace(path, "PATH"))
    assert len(set(messages)) == 1  # word for word the same, a file there or not


def test_a_missing_evidence_path_inside_the_directory_is_not_found(alice: Cli, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "dangling-in.txt").symlink_to(tmp_path / "sub" / "gone.txt")
    for path in ("sub/missing.c", "sub/../missing.c", "dangling-in.txt", "nowhere/missing.c"):
        item = {"kind": "code", "path": path, "source_ref": "s"}
        data = {"subject": SUBJECT, "evidence": [item]}
        refused_input(alice, tmp_path, data, "evidence_path_not_found", path)


def test_an_empty_evidence_file_is_refused(alice: Cli, tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("  \n", encoding="utf-8")
    item = {"kind": "trace", "path": "empty.txt", "source_ref": "s"}
    refused_input(alice, tmp_path, {"subject": SUBJECT, "evidence": [item]}, "invalid_evidence", "empty.txt")


def test_an_input_file_that_is_missing_or_not_json_is_refused(alice: Cli, tmp_path: Path) -> None:
    create(alice, tmp_path / "nowhere.json").error(2, "input_not_found")
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    create(alice, tmp_path / "broken.json").error(2, "invalid_json")
    assert cases(alice) == []


# ------------------------------------------------------------------------------------ actor and token


def test_creating_a_case_as_an_unregistered_actor_is_not_found(alice: Cli, tmp_path: Path) -> None:
    input_file = write_json(tmp_path / "case.json", {"subject": SUBJECT, "evidence": [CODE]})
    result = alice.call("research", "case-create", "--actor", "mallory", "--input", str(input_file), "--json")
    result.error(3, "unknown_actor")
    assert cases(alice) == []


def test_creating_a_case_needs_an_actor(alice: Cli, tmp_path: Path) -> None:
    input_file = write_json(tmp_path / "case.json", {"subject": SUBJECT, "evidence": [CODE]})
    alice.call("research", "case-create", "--input", str(input_file), "--json").error(2, "actor_required")


def test_protected_research_commands_are_refused_without_the_actors_key(alice: Cli, tmp_path: Path) -> None:
    case = created_case(alice, tmp_path)
    bare = alice.without_key()
    create(bare, write_json(tmp_path / "again.json", {"subject": SUBJECT, "evidence": [CODE]})).error(
        4, "actor_key_missing"
    )
    add = write_json(tmp_path / "add.json", {"evidence": [NOTE]})
    bare.call(
        "research", "evidence-add", case["case_id"], "--actor", "alice", "--input", str(add), "--json"
    ).error(4, "actor_key_missing")
    bare.call(
        "research",
        "evidence-deactivate",
        case["case_id"],
        case["evidence"][0]["evidence_id"],
        "--actor",
        "alice",
        "--json",
    ).error(4, "actor_key_missing")
    assert bare.call("research", "case-show", case["case_id"], "--json").ok() == case
    assert len(cases(bare)) == 1


def test_a_case_is_not_created_with_another_actors_key(alice: Cli, tmp_path: Path) -> None:
    assert alice.call("actors", "register", "bob", "--name", "Bob", "--actor", "alice").exit_code == 0
    input_file = write_json(tmp_path / "case.json", {"subject": SUBJECT, "evidence": [CODE]})
    create(alice.as_actor("bob"), input_file).error(4, "actor_key_mismatch")
    assert cases(alice) == []


def test_creating_a_case_without_a_key_in_a_new_state_directory_creates_no_store(tmp_path: Path) -> None:
    cli = Cli.isolated(tmp_path).without_key()
    input_file = write_json(tmp_path / "case.json", {"subject": SUBJECT, "evidence": [CODE]})
    create(cli, input_file).error(4, "actor_key_missing")
    assert not cli.database.exists()


# --------------------------------------------------------------------------------- add and deactivate


def add(cli: Cli, case_id: str, input_file: Path) -> Any:
    return cli.call(
        "research", "evidence-add", case_id, "--actor", "alice", "--input", str(input_file), "--json"
    )


def deactivate(cli: Cli, case_id: str, evidence_id: str) -> Any:
    return cli.call("research", "evidence-deactivate", case_id, evidence_id, "--actor", "alice", "--json")


def test_added_evidence_is_appended_and_changes_the_digest(alice: Cli, tmp_path: Path) -> None:
    case = created_case(alice, tmp_path, CODE)
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "out.txt").write_text("exit status 139\n", encoding="utf-8")
    more = {"evidence": [NOTE, {"kind": "experiment_output", "path": "out.txt", "source_ref": "run:1"}]}
    after = add(alice, case["case_id"], write_json(tmp_path / "more" / "add.json", more)).ok()

    assert set(after) == CASE_KEYS
    assert after["evidence"][0] == case["evidence"][0]
    assert [item["kind"] for item in after["evidence"]] == ["code", "analyst_note", "experiment_output"]
    assert after["evidence"][2]["sha256"] == content_sha256("exit status 139\n")
    assert after["evidence_digest"] == active_digest(after) != case["evidence_digest"]


def test_adding_evidence_is_all_or_nothing(alice: Cli, tmp_path: Path) -> None:
    case = created_case(alice, tmp_path, CODE)
    batch = {"evidence": [NOTE, {"kind": "trace", "path": "missing.log", "source_ref": "s"}]}
    add(alice, case["case_id"], write_json(tmp_path / "add.json", batch)).error(2, "evidence_path_not_found")
    assert alice.call("research", "case-show", case["case_id"], "--json").ok() == case


def test_adding_evidence_refuses_unknown_keys_and_unknown_cases(alice: Cli, tmp_path: Path) -> None:
    case = created_case(alice, tmp_path, CODE)
    with_subject = write_json(tmp_path / "add.json", {"subject": SUBJECT, "evidence": [NOTE]})
    message = add(alice, case["case_id"], with_subject).error(2, "invalid_evidence_input")
    assert "subject" in message
    good = write_json(tmp_path / "good.json", {"evidence": [NOTE]})
    add(alice, "RSC-000000000000", good).error(3, "unknown_case")
    add(alice, "not-a-case", good).error(2, "invalid_case_id")
    assert alice.call("research", "case-show", case["case_id"], "--json").ok() == case


def test_a_deactivated_record_stays_listed_inactive_and_leaves_the_digest(alice: Cli, tmp_path: Path) -> None:
    case = created_case(alice, tmp_path, CODE, NOTE)
    target = case["evidence"][1]["evidence_id"]
    after = deactivate(alice, case["case_id"], target).ok()

    assert [item["active"] for item in after["evidence"]] == [True, False]
    assert after["evidence"][1]["sha256"] == case["evidence"][1]["sha256"]
    # Who deactivated it, and when, is shown; the active record has neither.
    assert after["evidence"][1]["deactivated_by"] == "alice"
    assert re.fullmatch(ISO_UTC, after["evidence"][1]["deactivated_at"])
    assert (after["evidence"][0]["deactivated_by"], after["evidence"][0]["deactivated_at"]) == (None, None)
    human = alice.call("research", "case-show", case["case_id"])
    assert "no (by alice at" in " ".join(human.stdout.split())
    assert after["evidence_digest"] == evidence_digest(
        [(case["evidence"][0]["evidence_id"], case["evidence"][0]["sha256"])]
    )
    assert after["evidence_digest"] != case["evidence_digest"]


def test_deactivating_twice_is_refused_and_another_cases_record_is_not_found(
    alice: Cli, tmp_path: Path
) -> None:
    one = created_case(alice, tmp_path, CODE, NOTE)
    other = created_case(alice, tmp_path, CODE)
    deactivate(alice, one["case_id"], one["evidence"][0]["evidence_id"]).ok()
    deactivate(alice, one["case_id"], one["evidence"][0]["evidence_id"]).error(4, "evidence_inactive")
    deactivate(alice, one["case_id"], other["evidence"][0]["evidence_id"]).error(3, "unknown_evidence")
    deactivate(alice, one["case_id"], "EVD-bad").error(2, "invalid_evidence_id")
    assert alice.call("research", "case-show", other["case_id"], "--json").ok() == other


# ------------------------------------------------------------------------------------------------ show


def test_showing_a_malformed_or_unknown_case(alice: Cli) -> None:
    alice.call("research", "case-show", "RSC-123", "--json").error(2, "invalid_case_id")
    alice.call("research", "case-show", "RSC-000000000000", "--json").error(3, "unknown_case")


def test_showing_a_case_without_a_store_is_not_found_and_creates_none(tmp_path: Path) -> None:
    cli = Cli.isolated(tmp_path)
    cli.call("research", "case-show", "RSC-000000000000", "--json").error(3, "unknown_case")
    assert not cli.database.exists()


def test_errors_without_json_are_one_line_on_stderr(alice: Cli) -> None:
    result = alice.call("research", "case-show", "RSC-000000000000")
    assert result.exit_code == 3
    assert result.stdout == ""
    assert result.stderr.startswith("error [unknown_case]: ")


HOSTILE = "stray [/bold] tag \x1b]0;pwned\x07 \x1b[2J [link=https://evil.example]x[/link]"


def test_the_human_view_shows_untrusted_text_literally_and_content_only_when_asked(
    alice: Cli, tmp_path: Path
) -> None:
    excerpt = {
        "kind": "source_excerpt",
        "content": f"secret-looking excerpt {HOSTILE}",
        "source_ref": "src:[red]x",
    }
    subject = {**SUBJECT, "title": "Title [/bold] with markup"}
    data = {"subject": subject, "evidence": [excerpt]}
    case = create(alice, write_json(tmp_path / "case.json", data)).ok()

    plain = alice.call("research", "case-show", case["case_id"])
    assert plain.exit_code == 0, plain
    assert "Title [/bold] with markup" in plain.stdout
    assert "src:[red]x" in plain.stdout
    assert case["evidence"][0]["evidence_id"] in plain.stdout
    assert "secret-looking excerpt" not in plain.stdout

    shown = alice.call("research", "case-show", case["case_id"], "--content")
    assert shown.exit_code == 0, shown
    assert "secret-looking excerpt" in shown.stdout
    assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout
    assert "\\x1b]0;pwned\\x07" in shown.stdout
    assert "[link=https://evil.example]x[/link]" in shown.stdout

    listed = alice.call("research", "cases")
    assert listed.exit_code == 0, listed
    assert "Title [/bold] with markup" in listed.stdout
    assert "1/1" in listed.stdout


def test_the_research_commands_are_listed_in_help(cli: Cli) -> None:
    result = cli.call("research", "--help")
    assert result.exit_code == 0, result
    for command in ("case-create", "case-show", "evidence-add", "evidence-deactivate", "cases"):
        assert command in result.stdout


def test_the_research_group_s_summary_names_exactly_its_commands() -> None:
    import re

    import typer.main

    from control.commands.research import app

    group = typer.main.get_command(app)
    assert isinstance(group, typer.main.TyperGroup)
    summary = app.info.help
    assert isinstance(summary, str)
    named = {name for part in re.findall(r"\(([^)]*)\)", summary) for name in part.split(", ")}
    assert named == set(group.commands)


# ----------------------------------------------------------------------------------------------- status


def test_a_person_moves_a_case_along_its_statuses_and_every_move_is_kept_with_who_and_when(
    alice: Cli, tmp_path: Path
) -> None:
    case = created_case(alice, tmp_path)
    assert (case["status"], case["status_changed_by"], case["status_changed_at"]) == ("open", None, None)
    case_id = case["case_id"]
    for status in ("validation", "ready_to_publish", "validation", "closed", "open"):
        moved = alice.call("research", "case-status", case_id, status, "--actor", "alice", "--json").ok()
        assert (moved["status"], moved["status_changed_by"]) == (status, "alice")
        assert moved["status_changed_at"].endswith("Z")
    shown = alice.call("research", "case-show", case_id, "--json").ok()
    assert shown["status"] == "open" and cases(alice)[0]["status"] == "open"
    assert "open" in alice.call("research", "case-show", case_id).stdout


def test_a_move_the_table_does_not_have_an_unknown_case_and_a_bad_status_are_refused_and_change_nothing(
    alice: Cli, tmp_path: Path
) -> None:
    case_id = created_case(alice, tmp_path)["case_id"]

    def status(*args: str) -> Any:
        return alice.call("research", "case-status", *args, "--json")

    skipped = status(case_id, "ready_to_publish", "--actor", "alice").error(4, "case_transition_refused")
    assert "from 'open' it may move to: closed, validation" in skipped
    status(case_id, "open", "--actor", "alice").error(4, "case_status_unchanged")
    status("RSC-000000000000", "validation", "--actor", "alice").error(3, "unknown_case")
    status(case_id, "published", "--actor", "alice").error(2, "invalid_case_status")
    status(case_id, "validation").error(2, "actor_required")
    status(case_id, "validation", "--actor", "mallory").error(3, "unknown_actor")
    assert alice.call("research", "case-show", case_id, "--json").ok()["status"] == "open"
