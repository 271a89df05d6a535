"""What the Temporal UI shows (``contracts.ui_summaries``): operator text made inert markdown on one
line, a summary visibly shortened rather than cut silently, and details that say the status, what a
run waits for and who may act."""

from __future__ import annotations

from contracts.ui_summaries import (
    MAX_SUMMARY_CHARS,
    inert,
    model_job_details,
    model_job_summary,
    queue_details,
    queue_summary,
    run_details,
    run_summary,
    team_details,
    team_summary,
)


def test_markdown_and_control_characters_in_operator_text_are_made_inert_on_one_line() -> None:
    hostile = "[click](javascript:alert(1)) <img src=x onerror=alert(1)>\n# heading\u202e\u0007 *bold*"
    shown = inert(hostile)
    assert "\n" not in shown and "\u202e" not in shown and "\u0007" not in shown
    assert shown.startswith("\\[click\\]\\(javascript:alert\\(1\\)\\) \\<img")
    assert "\\# heading" in shown and "\\*bold\\*" in shown


def test_a_run_summary_names_title_tier_and_item_and_a_long_one_ends_visibly_shortened() -> None:
    assert run_summary("Slow orders report", "read_only") == "Slow orders report · read\\_only"
    assert run_summary("Slow orders report", None, "ORD-3") == "ORD\\-3 · Slow orders report · automatic"
    long = run_summary("x" * 500, "read_only")
    assert len(long) == MAX_SUMMARY_CHARS and long.endswith("…")
    escapes = run_summary("*" * 300, "worktree")  # never half an escape before the ellipsis
    assert escapes.endswith("\\*…")
    assert team_summary("RSC-1", "alice") == "research team on case RSC\\-1 · started by alice"
    assert queue_summary("specialists") == "goal queue of task queue specialists"


def test_run_details_say_what_the_run_waits_for_and_who_may_act() -> None:
    waiting = run_details("awaiting_approval", "worktree", "database-optimizer")
    assert waiting.splitlines() == [
        "**status** awaiting\\_approval",
        "**tier** worktree · **primary** database\\-optimizer",
        "**waits for** a person's approval of the contract digest; **who may act** an active registered "
        "human (`specialists approve RUN --contract-sha256 H`)",
    ]
    assert run_details("routing", None, None) == "**status** routing"
    assert "waits for" not in run_details("running", "read_only", "code-reviewer")


def test_team_queue_and_model_job_details() -> None:
    assert team_details("running", 2, 6) == "**status** running\n**stage** 2 of 6"
    details = queue_details(2, 3, True, {"approved": 1, "active": 2, "done": 0})
    assert details == "**fleet** 2/3 slots · **autopilot** on\n**items** approved 1, active 2"
    assert queue_details(0, 3, False, {"done": 0}).endswith("**items** no items")
    assert (
        model_job_details("review", "code-reviewer", "run SOR-1")
        == "**review** by code\\-reviewer · run SOR\\-1"
    )
    assert model_job_summary("review", "code-reviewer", "Slow *orders* query") == (
        "review by code\\-reviewer · Slow \\*orders\\* query"
    )
