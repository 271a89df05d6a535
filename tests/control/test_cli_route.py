"""``specialists route``: the RouteDecision preview, tier previews, input errors, and writing nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.control.cli_harness import PRODUCTION_BREACH, SLOW_QUERY, Cli

ROUTE_KEYS = {
    "primary",
    "reviewer",
    "confidence",
    "score",
    "risk",
    "reasons",
    "alternatives",
    "evidence_gaps",
    "repo_alias",
    "task_type",
    "override",
}
SLOW_QUERY_ARG = f"@{SLOW_QUERY}"


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli.isolated(tmp_path)


def test_route_json_prints_the_route_decision(cli: Cli) -> None:
    result = cli.run("route", "--input-json", SLOW_QUERY_ARG, "--json")

    decision = result.ok()
    assert result.stderr == ""
    assert set(decision) == ROUTE_KEYS
    assert decision["primary"] == "database-optimizer"
    assert decision["reviewer"] == "backend-architect"
    assert decision["risk"] == "low"
    assert 0 <= decision["confidence"] <= 1
    assert decision["score"] > 0
    assert decision["reasons"] and all(isinstance(reason, str) for reason in decision["reasons"])
    for alternative in decision["alternatives"]:
        assert set(alternative) == {"profile", "score"}
        assert alternative["profile"] != decision["primary"]
    assert isinstance(decision["evidence_gaps"], list)
    assert decision["repo_alias"] == "orders-service"
    assert decision["task_type"] == "audit"
    assert decision["override"] is None


def test_route_accepts_the_work_item_inline(cli: Cli) -> None:
    inline = cli.call("route", "--input-json", SLOW_QUERY.read_text(encoding="utf-8"), "--json").ok()
    from_file = cli.call("route", "--input-json", SLOW_QUERY_ARG, "--json").ok()
    assert inline == from_file


def test_same_input_gives_byte_identical_output(cli: Cli) -> None:
    first = cli.run("route", "--input-json", SLOW_QUERY_ARG, "--automatic", "--json")
    second = cli.run("route", "--input-json", SLOW_QUERY_ARG, "--automatic", "--json")
    assert first.exit_code == second.exit_code == 0
    assert first.stdout.encode() == second.stdout.encode()


def test_route_writes_nothing(cli: Cli) -> None:
    before = sorted(cli.cwd.rglob("*"))
    for extra in ([], ["--automatic"]):
        result = cli.run("route", "--input-json", SLOW_QUERY_ARG, *extra, "--json")
        assert result.exit_code == 0, result
    assert cli.call("route", "--input-json", SLOW_QUERY_ARG, "--tier", "read_only").exit_code == 0
    assert not cli.state_dir.exists()
    assert sorted(cli.cwd.rglob("*")) == before


def test_operator_tier_preview_adds_effective_tier_reasons_and_how_the_run_is_reviewed(cli: Cli) -> None:
    decision = cli.call("route", "--input-json", SLOW_QUERY_ARG, "--tier", "read_only", "--json").ok()
    assert set(decision) == ROUTE_KEYS | {"effective_tier", "tier_reasons", "orchestration", "create_refusal"}
    assert decision["effective_tier"] == "read_only"
    assert decision["create_refusal"] is None  # an unregistered repository: analysed without it
    assert decision["tier_reasons"] and all(isinstance(r, str) for r in decision["tier_reasons"])
    # The slow query names a database domain and a role: one consequential domain, one reviewer.
    orchestration = decision["orchestration"]
    assert (orchestration["shape"], orchestration["consequential"]) == ("single", ["data"])
    expected = "one consequential domain (data) at low risk: one independent reviewer"
    assert orchestration["reasons"][-1] == expected


def test_a_review_wave_asked_for_is_previewed_and_needs_a_tier(cli: Cli) -> None:
    asked = cli.call(
        "route", "--input-json", SLOW_QUERY_ARG, "--tier", "read_only", "--review-wave", "--json"
    ).ok()
    assert asked["orchestration"]["shape"] == "wave" and asked["orchestration"]["operator_requested"]
    shown = cli.call("route", "--input-json", SLOW_QUERY_ARG, "--tier", "read_only", "--review-wave")
    assert "the operator asked for a review wave" in shown.stdout
    refused = cli.call("route", "--input-json", SLOW_QUERY_ARG, "--review-wave", "--json")
    assert refused.exit_code == 2 and "tier_required" in refused.stdout


def test_an_advisory_pass_asked_for_is_previewed_on_the_advisory_model(cli: Cli) -> None:
    asked = cli.call(
        "route", "--input-json", SLOW_QUERY_ARG, "--tier", "read_only", "--advisory", "security", "--json"
    ).ok()
    orchestration = asked["orchestration"]
    assert (orchestration["shape"], orchestration["advisory"]) == ("wave", "security")
    assert orchestration["roster"][-1] == {
        "profile": "application-security-engineer",
        "axes": ["advisory-security"],
        "questions": orchestration["roster"][-1]["questions"],
        "substitutes": {},
        "model_class": "advisory",
    }
    shown = cli.call("route", "--input-json", SLOW_QUERY_ARG, "--tier", "read_only", "--advisory", "security")
    assert "application-security-engineer on advisory-security (advisory model)" in shown.stdout
    for args, code in [
        (["--tier", "read_only", "--advisory", "opinions"], "unknown_advisory_topic"),
        (["--tier", "recommend", "--advisory", "security"], "advisory_needs_model_passes"),
        (["--advisory", "security"], "tier_required"),
    ]:
        refused = cli.call("route", "--input-json", SLOW_QUERY_ARG, *args, "--json")
        assert refused.exit_code == 2 and code in refused.stdout, refused.stdout


NO_REPOSITORY = json.dumps({"title": "Add the orders report index", "domain": "database"})


@pytest.mark.parametrize("tier", ["worktree", "pr_ready"])
def test_an_edit_tier_preview_of_an_item_without_a_repository_says_create_would_refuse_it(
    cli: Cli, tier: str
) -> None:
    decision = cli.call("route", "--input-json", NO_REPOSITORY, "--tier", tier, "--json").ok()
    assert decision["effective_tier"] == tier
    assert decision["create_refusal"]["code"] == "repo_alias_required"
    assert f"a {tier} run changes code" in decision["create_refusal"]["message"]
    shown = cli.call("route", "--input-json", NO_REPOSITORY, "--tier", tier)
    assert shown.exit_code == 0
    assert "create would refuse" in shown.stdout and "repo_alias_required" in shown.stdout
    assert not cli.state_dir.exists()


def test_a_preview_says_nothing_would_be_refused_where_create_takes_the_run(cli: Cli) -> None:
    for tier in ("recommend", "read_only"):
        decision = cli.call("route", "--input-json", NO_REPOSITORY, "--tier", tier, "--json").ok()
        assert decision["create_refusal"] is None
        shown = cli.call("route", "--input-json", NO_REPOSITORY, "--tier", tier)
        assert "create would refuse" not in shown.stdout
    assert "create_refusal" not in cli.call("route", "--input-json", NO_REPOSITORY, "--json").ok()


def test_an_edit_tier_preview_names_a_repository_that_is_not_registered_or_deactivated(
    cli: Cli, tmp_path: Path
) -> None:
    from tests.store.git_repository import make_working_tree

    unregistered = cli.call("route", "--input-json", SLOW_QUERY_ARG, "--tier", "pr_ready", "--json").ok()
    assert unregistered["create_refusal"]["code"] == "unknown_repository"
    assert "'orders-service'" in unregistered["create_refusal"]["message"]
    cli.call("actors", "register", "alice", "--name", "Alice", "--json").ok()
    tree = make_working_tree(tmp_path / "orders")
    cli.call("repos", "add", "orders-service", str(tree), "--actor", "alice", "--json").ok()
    registered = cli.call("route", "--input-json", SLOW_QUERY_ARG, "--tier", "worktree", "--json").ok()
    assert registered["create_refusal"] is None
    cli.call("repos", "deactivate", "orders-service", "--actor", "alice", "--json").ok()
    for tier in ("read_only", "worktree"):
        deactivated = cli.call("route", "--input-json", SLOW_QUERY_ARG, "--tier", tier, "--json").ok()
        assert deactivated["create_refusal"]["code"] == "repository_deactivated", tier


def test_automatic_preview_uses_the_default_policy_without_a_store(cli: Cli) -> None:
    decision = cli.call("route", "--input-json", SLOW_QUERY_ARG, "--automatic", "--json").ok()
    assert decision["effective_tier"] == "recommend"
    assert any("recommend" in reason for reason in decision["tier_reasons"])
    assert not cli.state_dir.exists()


def test_automatic_preview_follows_the_stored_policy_and_risk(cli: Cli) -> None:
    assert cli.call("actors", "register", "alice", "--name", "Alice").exit_code == 0
    changed = cli.call(
        "policy", "--mode", "guarded", "--maximum-automatic-tier", "read_only", "--actor", "alice"
    )
    assert changed.exit_code == 0, changed

    low = cli.call("route", "--input-json", SLOW_QUERY_ARG, "--automatic", "--json").ok()
    high = cli.call("route", "--input-json", f"@{PRODUCTION_BREACH}", "--automatic", "--json").ok()

    assert (low["risk"], low["effective_tier"]) == ("low", "read_only")
    assert high["risk"] in ("high", "critical")
    assert high["effective_tier"] == "recommend"


def test_override_uses_the_named_profile_and_records_why(cli: Cli) -> None:
    decision = cli.call(
        "route",
        "--input-json",
        SLOW_QUERY_ARG,
        "--override",
        "code-reviewer",
        "--override-reason",
        "the index change needs a code review",
        "--json",
    ).ok()
    assert decision["primary"] == "code-reviewer"
    assert decision["reviewer"] != "code-reviewer"
    assert decision["override"] == {
        "profile": "code-reviewer",
        "reason": "the index change needs a code review",
    }


def test_route_without_json_prints_a_table(cli: Cli) -> None:
    result = cli.run("route", "--input-json", SLOW_QUERY_ARG, "--tier", "read_only")
    assert result.exit_code == 0, result
    assert result.stderr == ""
    for text in ("database-optimizer", "backend-architect", "effective tier", "read_only"):
        assert text in result.stdout


ITEM = json.dumps({"title": "Slow orders report"})


@pytest.mark.parametrize(
    ("args", "exit_code", "code"),
    [
        (["--input-json", ITEM, "--automatic", "--tier", "read_only"], 2, "tier_conflict"),
        (["--input-json", ITEM, "--tier", "sometimes"], 2, "unknown_tier"),
        (["--input-json", '{"title": "unterminated'], 2, "invalid_json"),
        (["--input-json", "[1, 2]"], 2, "invalid_work_item"),
        (["--input-json", json.dumps({"title": "x", "owner": "bob"})], 2, "invalid_work_item"),
        (["--input-json", json.dumps({"title": "x" * 201})], 2, "invalid_work_item"),
        (["--input-json", json.dumps({"description": "no title"})], 2, "invalid_work_item"),
        (["--input-json", json.dumps({"title": "red\x1b[31m alert"})], 2, "invalid_work_item"),
        (["--input-json", json.dumps({"title": "two\nrows"})], 2, "invalid_work_item"),
        (["--input-json", json.dumps({"title": "t", "description": "bidi \u202e"})], 2, "invalid_work_item"),
        (["--input-json", "@/nonexistent/item.json"], 2, "input_not_found"),
        (["--input-json", ITEM, "--override", "unknown-x", "--override-reason", "r"], 3, "unknown_profile"),
        (["--input-json", ITEM, "--override", "code-reviewer"], 2, "override_reason_required"),
        (["--input-json", ITEM, "--override", "code-reviewer", "--override-reason", "  "], 2,
         "override_reason_required"),
        (["--input-json", ITEM, "--override-reason", "because"], 2, "override_profile_required"),
    ],
)  # fmt: skip
def test_bad_route_input_is_refused_with_a_json_error(
    cli: Cli, args: list[str], exit_code: int, code: str
) -> None:
    result = cli.call("route", *args, "--json")
    result.error(exit_code, code)
    assert result.stderr == ""
    assert not cli.state_dir.exists()


def test_unknown_key_and_long_title_are_named_in_the_message(cli: Cli) -> None:
    unknown = cli.call("route", "--input-json", json.dumps({"title": "x", "owner": "bob"}), "--json")
    assert "owner: unknown key" in unknown.error(2, "invalid_work_item")
    long_title = cli.call("route", "--input-json", json.dumps({"title": "x" * 201}), "--json")
    assert "title" in long_title.error(2, "invalid_work_item")
    escape = cli.call("route", "--input-json", json.dumps({"title": "ok\x1b[2J"}), "--json")
    assert "title must be one line" in escape.error(2, "invalid_work_item")
    assert "U+001B at character 3" in escape.error(2, "invalid_work_item")


def test_errors_without_json_go_to_stderr_as_text(cli: Cli) -> None:
    result = cli.run("route", "--input-json", "{not json")
    assert result.exit_code == 2, result
    assert result.stdout == ""
    assert result.stderr.startswith("error [invalid_json]: ")
    assert result.stderr.count("\n") == 1


def test_errors_with_json_are_one_object_on_stdout(cli: Cli) -> None:
    result = cli.run(
        "route", "--input-json", ITEM, "--override", "unknown-x", "--override-reason", "r", "--json"
    )
    assert "unknown-x" in result.error(3, "unknown_profile")
    assert result.stderr == ""


def test_an_input_file_that_is_not_a_regular_file_or_too_large_is_refused_before_it_is_read(
    cli: Cli, tmp_path: Path
) -> None:
    # /dev/zero never ends: reading it whole would take all the memory there is.
    assert "not a regular file" in cli.call("route", "--input-json", "@/dev/zero", "--json").error(
        2, "input_not_a_file"
    )
    sparse = tmp_path / "sparse.json"
    with sparse.open("wb") as file:
        file.truncate(1024**3)  # 1 GiB that takes no disk: its size is refused from the open file
    message = cli.call("route", "--input-json", f"@{sparse}", "--json").error(2, "input_too_large")
    assert f"is {1024**3} bytes; the limit is 65536" in message


def test_json_nested_deeper_than_the_parser_reads_is_refused_as_invalid_json(
    cli: Cli, tmp_path: Path
) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 30_000 + "]" * 30_000)
    result = cli.call("route", "--input-json", f"@{deep}", "--json")
    assert "nested too deeply" in result.error(2, "invalid_json")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("reason", "code", "said"),
    [
        ("r" * 2001, "override_reason_too_long", "2001 characters; the limit is 2000"),
        ("owner asked\x1b[2J", "invalid_override_reason", "U+001B at character 12"),
        ("owner asked \u202eevil", "invalid_override_reason", "U+202E"),
        ("two\nlines", "invalid_override_reason", "U+000A"),
    ],
)
def test_an_override_reason_is_one_line_of_printable_text_within_its_limit(
    cli: Cli, reason: str, code: str, said: str
) -> None:
    result = cli.call(
        "route", "--input-json", ITEM, "--override", "code-reviewer", "--override-reason", reason, "--json"
    )
    assert said in result.error(2, code)
