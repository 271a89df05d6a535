"""The human CLI view shows untrusted text literally: no rich markup, no terminal control sequences.

Model output, provider error messages, audit data, work item titles and operator notes reach the
console only through ``control.output.safe_text`` (table cells included). ``--json`` is untouched.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table
from rich.text import Text

from contracts.enums import RiskLevel, TaskType, Tier
from contracts.errors import ServiceUnavailable
from contracts.model_jobs import ModelCheckResult
from contracts.output import ClosureStatus, ConfidenceBand, Finding, ReviewVerdict, SpecialistOutput
from contracts.routing import RouteDecision, RouteOverride
from contracts.runs import (
    AuditEvent,
    Decision,
    DecisionOutcome,
    RunError,
    RunStatus,
    RunSummary,
    RunView,
)
from control import run_views, views
from control.output import emit, report_error, safe_text, table, visible_controls

HOSTILE_TITLE = "stray [/bold] tag \x1b]0;pwned\x07 \x1b[2J"
HOSTILE_ERROR = "upstream said [/red] \x1b[31mno\x1b[0m"
LINK = "[link=https://evil.example]click[/link]"
AT = dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
BIDI_CONTROLS = [chr(code) for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))]


def rendered(value: object) -> str:
    """What a plain 200-column console prints for ``value``."""
    return render_with(lambda console: console.print(value))


def render_with(render: Callable[[Console], None], *, terminal: bool = False) -> str:
    """What ``render`` prints on a 200-column console: plain text, or a colour terminal's bytes."""
    buffer = io.StringIO()
    if terminal:
        console = Console(file=buffer, width=200, force_terminal=True, color_system="truecolor")
    else:
        console = Console(file=buffer, width=200, force_terminal=False, color_system=None)
    render(console)
    return buffer.getvalue()


def hostile_output(*, verdict: ReviewVerdict | None = None) -> SpecialistOutput:
    return SpecialistOutput(
        role="reviewer" if verdict else "incident-responder",
        axis=f"security {LINK}",
        inspected_evidence=["ev-1"],
        findings=[
            Finding(
                severity=RiskLevel.HIGH,
                title=HOSTILE_TITLE,
                evidence_refs=["ev-1 [bold]"],
                detail="detail [/i] \x1b[5m",
            )
        ],
        confidence=0.8,
        confidence_band=ConfidenceBand.HIGH,
        gaps=["gap [/u] \u202eevil"],
        closure=ClosureStatus.PARTIAL,
        recommended_next_action=f"next {LINK} \x9b2J",
        verdict=verdict,
    )


def hostile_view() -> RunView:
    route = RouteDecision(
        primary="incident-responder",
        reviewer="senior-secops-engineer",
        confidence=0.8,
        score=17.0,
        risk=RiskLevel.CRITICAL,
        reasons=["title matches '[/b]'"],
        alternatives=[],
        evidence_gaps=["gap [/s] \x1b[2J"],
        repo_alias=None,
        task_type=TaskType.INVESTIGATE,
    )
    return RunView(
        run_id="SOR-0123456789ABCDEF",
        status=RunStatus.FAILED,
        tier=Tier.READ_ONLY,
        automatic=False,
        route=route,
        contract=None,
        contract_sha256=None,
        result=hostile_output(),
        review=hostile_output(verdict=ReviewVerdict.AGREE),
        decision=Decision(actor="alice", outcome=DecisionOutcome.REJECTED, note=f"note [/] {LINK}", at=AT),
        error=RunError(type="model_task", message=HOSTILE_ERROR),
        request_digest="0" * 64,
        created_at=AT,
        audit=[
            AuditEvent(seq=1, at=AT, kind="created", actor="alice", data={"title": "work [/bold] \x1b[2J"}),
            AuditEvent(seq=2, at=AT, kind="job_failed", data={"message": HOSTILE_ERROR}),
        ],
    )


# ------------------------------------------------------------------------------------------ the helper


def test_safe_text_shows_markup_as_written_and_never_interprets_it() -> None:
    raw = f"stray [/bold] {LINK} [bold red]loud[/]"

    text = safe_text(raw)

    assert isinstance(text, Text)
    assert text.plain == raw
    assert text.spans == []
    assert rendered(text) == raw + "\n"


def test_safe_text_shows_emoji_codes_and_a_trailing_backslash_as_written() -> None:
    assert rendered(safe_text(":warning: C:\\")) == ":warning: C:\\\n"


def test_safe_text_replaces_escape_sequences_with_visible_escapes() -> None:
    assert safe_text("\x1b[2J").plain == "\\x1b[2J"
    assert safe_text("\x1b]0;pwned\x07").plain == "\\x1b]0;pwned\\x07"
    assert safe_text("\x1b[31mno\x1b[0m").plain == "\\x1b[31mno\\x1b[0m"


def test_safe_text_replaces_every_c0_control_but_newline_and_tab() -> None:
    controls = [chr(code) for code in range(0x20) if chr(code) not in "\n\t"]

    assert safe_text("".join(controls)).plain == "".join(f"\\x{ord(c):02x}" for c in controls)


def test_safe_text_replaces_del_and_c1_controls() -> None:
    assert safe_text("a\x7fb").plain == "a\\x7fb"
    assert safe_text("\x80 \x9b2J \x9d0;t\x9c \x9f").plain == "\\x80 \\x9b2J \\x9d0;t\\x9c \\x9f"


@pytest.mark.parametrize("control", BIDI_CONTROLS, ids=[f"U+{ord(c):04X}" for c in BIDI_CONTROLS])
def test_safe_text_replaces_bidi_embedding_override_and_isolate_controls(control: str) -> None:
    assert safe_text(f"invoice{control}fdp.exe").plain == f"invoice\\u{ord(control):04x}fdp.exe"


def test_safe_text_keeps_newline_tab_and_printable_unicode() -> None:
    raw = "line one\n\tline two — é 漢字 ✓ \u00a0 \u200d"

    assert safe_text(raw).plain == raw
    assert rendered(safe_text("one\ntwo")) == "one\ntwo\n"


def test_safe_text_accepts_any_value_and_takes_style_only_from_the_caller() -> None:
    assert safe_text(42).plain == "42"
    assert safe_text(None).plain == "None"
    assert safe_text("[bold]x", style="italic").style == "italic"


def test_visible_controls_makes_controls_visible_but_leaves_markup_alone() -> None:
    assert visible_controls(HOSTILE_ERROR) == "upstream said [/red] \\x1b[31mno\\x1b[0m"


# ------------------------------------------------------------------------------------------- the tables


def test_table_cells_and_title_show_markup_literally() -> None:
    out = render_with(lambda console: console.print(table(f"title {LINK}", ["a", "b"], [["[/bold]", LINK]])))

    assert "title [link=https://evil.example]click[/link]" in out
    assert "[/bold]" in out and LINK in out


def test_table_draws_ordinary_text_exactly_as_a_markup_table_did_on_a_terminal() -> None:
    rows = [["run", "SOR-0123456789ABCDEF"], ["error", "model_task: upstream 502 — é"]]
    before = Table(title="run SOR-0123456789ABCDEF", title_justify="left")
    for column in ("key", "value"):
        before.add_column(column)
    for row in rows:
        before.add_row(*row)

    now = table("run SOR-0123456789ABCDEF", ["key", "value"], rows)

    assert render_with(lambda c: c.print(now), terminal=True) == render_with(
        lambda c: c.print(before), terminal=True
    )


# ------------------------------------------------------------------------------------------- run views


def test_show_renders_a_run_whose_finding_title_closes_an_unopened_tag() -> None:
    view = hostile_view()

    out = render_with(lambda console: run_views.render_run(console, view, {}))

    assert "stray [/bold] tag \\x1b]0;pwned\\x07 \\x1b[2J" in out
    assert "upstream said [/red] \\x1b[31mno\\x1b[0m" in out
    assert "\x1b" not in out and "\x07" not in out


def test_show_prints_no_escape_character_from_untrusted_text() -> None:
    view = hostile_view()

    out = render_with(lambda console: run_views.render_run(console, view, {"history": []}))

    assert "\x1b" not in out
    assert "\x9b" not in out


def test_show_on_a_terminal_sends_no_untrusted_control_sequence_or_hyperlink() -> None:
    view = hostile_view()

    out = render_with(lambda console: run_views.render_run(console, view, {}), terminal=True)

    # rich's own styling (CSI ... m) is allowed; what the model or provider sent is not.
    assert "\x1b]" not in out  # no OSC: neither the window title nor a [link] hyperlink
    assert "\x1b[2J" not in out and "\x1b[31mno" not in out
    assert "\\x1b]0;pwned\\x07" in out and "[/bold]" in out


def test_show_displays_decision_notes_and_audit_data_literally() -> None:
    view = hostile_view()

    out = render_with(lambda console: run_views.render_run(console, view, {}))

    assert f"decision: rejected by alice — note [/] {LINK}" in out
    assert "title=work [/bold] \\x1b[2J" in out
    assert "gap [/s] \\x1b[2J" in out
    assert "ev-1 [bold]" in out


def test_list_displays_work_item_titles_literally() -> None:
    summary = RunSummary(
        run_id="SOR-0123456789ABCDEF",
        status=RunStatus.QUEUED,
        tier=None,
        automatic=True,
        primary=None,
        reviewer=None,
        risk=None,
        repo_alias=None,
        title=HOSTILE_TITLE,
        contract_sha256=None,
        request_id=None,
        created_at=AT,
        updated_at=AT,
    )

    out = render_with(lambda console: run_views.render_list(console, [summary]))

    assert "stray [/bold] tag \\x1b]0;pwned\\x07 \\x1b[2J" in out
    assert "\x1b" not in out


def test_show_json_is_the_exact_view_with_untrusted_text_unchanged(
    capsys: pytest.CaptureFixture[str],
) -> None:
    view = hostile_view()

    def never(console: Console) -> None:
        raise AssertionError("--json must not render")

    emit(run_views.run_json(view), True, never)

    stdout = capsys.readouterr().out
    assert (
        stdout
        == json.dumps(
            view.model_dump(mode="json", exclude={"context_packs"}), sort_keys=True, ensure_ascii=False
        )
        + "\n"
    )
    assert json.loads(stdout)["result"]["findings"][0]["title"] == HOSTILE_TITLE
    assert json.loads(stdout)["error"]["message"] == HOSTILE_ERROR


# ---------------------------------------------------------------------------- configuration views, errors


def test_models_test_shows_a_failing_providers_message_literally() -> None:
    result = ModelCheckResult(
        check_id="chk-1",
        model_id="openai:gpt [/x]",
        ok=False,
        error_type="model_http",
        message=HOSTILE_ERROR,
    )

    out = render_with(lambda console: views.render_model_check(console, result), terminal=True)

    assert out == (
        "model openai:gpt [/x]: failed [model_http] upstream said [/red] \\x1b[31mno\\x1b[0m (check chk-1)\n"
    )


def test_route_shows_override_reasons_and_route_reasons_literally() -> None:
    decision = hostile_view().route
    assert decision is not None
    decision = decision.model_copy(update={"override": RouteOverride(profile="p", reason=HOSTILE_ERROR)})

    out = render_with(lambda console: views.render_route(console, decision))

    assert "p: upstream said [/red] \\x1b[31mno\\x1b[0m" in out
    assert "title matches '[/b]'" in out
    assert "\x1b" not in out


def test_human_errors_on_stderr_carry_no_control_characters(capsys: pytest.CaptureFixture[str]) -> None:
    code = report_error(ServiceUnavailable("provider_down", HOSTILE_ERROR), as_json=False)

    err = capsys.readouterr().err
    assert err == "error [provider_down]: upstream said [/red] \\x1b[31mno\\x1b[0m\n"
    assert code == ServiceUnavailable("x", "y").exit_code


def test_json_errors_keep_the_message_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    report_error(ServiceUnavailable("provider_down", HOSTILE_ERROR), as_json=True)

    assert json.loads(capsys.readouterr().out) == {
        "error": {"code": "provider_down", "message": HOSTILE_ERROR}
    }


def hostile_wave_view() -> RunView:
    from contracts.review_waves import PassOutcome, WaveConflict, WaveConsolidation, WavePass, WaveRecord

    wave = WaveRecord(
        passes=[
            WavePass(
                index=1, profile="code-reviewer", axes=["overall"], questions=["q [/b]"], job_id="j-1",
                pack_sha256="0" * 64, pack_bytes=10, outcome=PassOutcome.COMPLETED,
                output=hostile_output(verdict=ReviewVerdict.DISAGREE),
            ),
            WavePass(
                index=2, profile="devops-automator", axes=["ci"], questions=["q"], job_id="j-2",
                pack_sha256="1" * 64, pack_bytes=9, outcome=PassOutcome.FAILED, error_type="model_safety",
                message=HOSTILE_ERROR,
            ),
        ],
        max_in_flight=2,
        consolidation=WaveConsolidation(
            agreements=[f"agreement {LINK} <img src=x onerror=alert(1)>"],
            conflicts=[WaveConflict(about=f"conflict {HOSTILE_TITLE}", agreeing=[1], disagreeing=[2])],
            gaps=[f"gap {HOSTILE_ERROR}"],
        ),
    )  # fmt: skip
    return hostile_view().model_copy(update={"wave": wave})


def test_a_review_waves_passes_and_consolidation_are_shown_literally() -> None:
    out = render_with(lambda console: run_views.render_run(console, hostile_wave_view(), {}), terminal=True)
    assert "\x1b]0;pwned" not in out and "\x1b[2J" not in out
    assert "review wave (at most 2 in flight)" in out
    assert "[link=https://evil.example]click[/link]" in out  # shown as written, not made a link
    assert "devops-automator" in out and "model_safety" in out


def test_mission_controls_run_page_shows_a_wave_escaped_and_made_visible() -> None:
    from types import SimpleNamespace

    from control.show_run import run_json
    from control.web.rendering import environment

    view = hostile_wave_view()
    session = SimpleNamespace(actor="alice", csrf="token")
    html = (
        environment()
        .get_template("run.html")
        .render(run=run_json(view, diff=True), view=view, session=session, csrf="token", notice=None)
    )
    assert 'data-testid="wave"' in html and 'data-testid="wave-conflicts"' in html
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "[link=https://evil.example]click[/link]" in html
    assert "\x1b" not in html and "⟨U+001B⟩]0;pwned" in html


def test_show_prints_each_passes_class_model_independence_and_controls() -> None:
    from contracts.pass_records import pass_controls

    requested, observed = pass_controls(
        edit_tier=True, contract_sha256="c" * 64, approved_by="alice", approved_digest="c" * 64
    )
    view = hostile_wave_view()
    assert view.wave is not None
    first = view.wave.passes[0].model_copy(
        update={
            "controls_requested": requested, "controls_observed": observed, "independent": True,
            "independence": ["made by code-reviewer, not the primary"], "model_id": "openai:gpt",
        }
    )  # fmt: skip
    wave = view.wave.model_copy(update={"passes": [first, *view.wave.passes[1:]]})
    out = render_with(
        lambda console: run_views.render_run(console, view.model_copy(update={"wave": wave}), {}),
        terminal=True,
    )
    assert "approved by alice (the contract's digest)" in out
    assert "yes: made by code-reviewer, not the primary" in out
    assert "openai:gpt" in out


def test_queue_list_and_the_board_show_a_main_write_with_its_commits_and_open_items() -> None:
    import datetime as dt

    from contracts.queue_keys import KeyAllocator
    from contracts.queue_messages import QueueSettings, QueueView
    from contracts.shipping import MainWrite
    from control.queue_views import listing_json, render_listing
    from control.web.rendering import environment

    write = MainWrite(
        at=dt.datetime(2026, 12, 4, 9, 0, tzinfo=dt.UTC), repo_alias="orders", branch="main",
        before="a" * 40, after="b" * 40, items=["ORD-3"],
    )  # fmt: skip
    view = QueueView(
        workflow_id="queue", items=[], settings=QueueSettings(), allocator=KeyAllocator(),
        settings_changes=[], refusals=[], runs=0, history_events=1, main_writes=[write],
    )  # fmt: skip
    data = listing_json(view)
    assert data["main_writes"][0]["after"] == "b" * 40
    out = render_with(lambda console: render_listing(console, data))
    assert (
        f"main_write 2026-12-04T09:00:00Z: orders main moved {'a' * 40} -> {'b' * 40} while open: ORD-3"
        in out
    )
    from types import SimpleNamespace

    session = SimpleNamespace(actor="alice", csrf="t")
    html = (
        environment()
        .get_template("queue.html")
        .render(data={**data, "columns": {}}, session=session, csrf="t", notice=None)
    )
    assert 'data-testid="main-write"' in html and "ORD-3" in html


def test_the_boards_proposals_show_their_evidence_and_the_scanned_finding_escaped(tmp_path: Path) -> None:
    import datetime as dt
    from types import SimpleNamespace

    from activities.intake_scan import scan_repository_at
    from contracts.intake_diff import apply_intake
    from contracts.queue_keys import KeyAllocator
    from contracts.queue_messages import QueueSettings, QueueView
    from contracts.queue_transitions import Mover, QueueMove, apply_move
    from control.web.queue_board import board_data
    from control.web.rendering import environment
    from tests.activities.intake_repository import make_intake_repository

    repo = make_intake_repository(tmp_path)
    (repo / "src" / "markup.py").write_text("# TODO: <script>window.__pwned = 1</script> fix\n")
    from tests.store.git_repository import git

    git(repo, "add", "src/markup.py")
    git(repo, "commit", "--quiet", "--no-gpg-sign", "-m", "markup")
    at = dt.datetime(2026, 12, 4, tzinfo=dt.UTC)
    applied = apply_intake(scan_repository_at(repo, "demo", "main"), [], KeyAllocator(), at=at, actor="alice")
    view = QueueView(
        workflow_id="queue", items=applied.items, settings=QueueSettings(), allocator=applied.allocator,
        settings_changes=[], refusals=[], runs=0, history_events=1,
    )  # fmt: skip
    data = board_data(view)
    proposals = data["columns"]["proposal"]
    assert proposals and all(p["intake"] is not None and p["evidence"] for p in proposals)
    # An item past proposal shows neither (the keys are there, empty: the template is strict).
    rejected = apply_move(
        applied.items[0], QueueMove.REJECT, Mover.OPERATOR, actor="alice", at=at, reason="no"
    )
    later = board_data(view.model_copy(update={"items": [rejected, *applied.items[1:]]}))
    (shown,) = later["columns"]["rejected"]
    assert (shown["evidence"], shown["intake"]) == ([], None)
    environment().get_template("queue.html").render(
        data=later, session=SimpleNamespace(actor="alice", csrf="t"), csrf="t", notice=None
    )
    session = SimpleNamespace(actor="alice", csrf="t")
    html = environment().get_template("queue.html").render(data=data, session=session, csrf="t", notice=None)
    for proposal in proposals:
        assert f'data-testid="intake-{proposal["key"]}"' in html
        assert f'data-testid="evidence-{proposal["key"]}"' in html
    assert "<script>window.__pwned" not in html and "&lt;script&gt;window.__pwned" in html
    assert 'data-testid="archived"' not in html  # nothing archived: no line
    archived = board_data(view.model_copy(update={"archived_count": 3}))
    html = (
        environment().get_template("queue.html").render(data=archived, session=session, csrf="t", notice=None)
    )
    assert 'data-testid="archived">3 ended items archived' in html


def test_queue_list_and_the_board_show_a_rejected_proposal_without_the_gaps_nobody_will_fill() -> None:
    import datetime as dt

    from contracts.queue_items import ItemProposal, QueueEventKind, QueueStatus, new_item
    from contracts.queue_keys import KeyAllocator
    from contracts.queue_messages import QueueSettings, QueueView
    from control.queue_views import listing_json, render_listing

    at = dt.datetime(2026, 12, 4, 9, 0, tzinfo=dt.UTC)
    open_one = new_item(ItemProposal(title="Still open"), key="ORD-1", at=at, actor="alice")
    rejected = new_item(ItemProposal(title="Turned down"), key="ORD-2", at=at, actor="alice").with_event(
        QueueEventKind.MOVED, at, "alice", {"to": "rejected"}, status=QueueStatus.REJECTED
    )
    view = QueueView(
        workflow_id="queue", items=[open_one, rejected], settings=QueueSettings(), allocator=KeyAllocator(),
        settings_changes=[], refusals=[], runs=0, history_events=1, main_writes=[],
    )  # fmt: skip
    data = listing_json(view)
    gaps = len(data["items"][0]["spec"]["gaps"])
    assert gaps and data["items"][1]["spec"]["gaps"]  # --json keeps every item's gaps
    lines = render_with(lambda console: render_listing(console, data)).splitlines()
    assert f"{gaps} gaps" in next(line for line in lines if "Still open" in line)
    row = next(line for line in lines if "Turned down" in line)
    assert "gaps" not in row and " - " in row

    from types import SimpleNamespace

    from control.web.queue_board import board_data
    from control.web.rendering import environment

    html = (
        environment()
        .get_template("queue.html")
        .render(
            data=board_data(view), session=SimpleNamespace(actor="alice", csrf="t"), csrf="t", notice=None
        )
    )
    assert 'data-testid="gaps-ORD-1"' in html and 'data-testid="gaps-ORD-2"' not in html


def test_the_wait_of_a_run_that_ended_failed_says_its_error_on_stderr_with_controls_shown_not_sent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import typer

    from control.commands.waiting import exit_unless_successful

    hostile = "log:\x1b[2J\x1b[31mPWNED\x1b]8;;http://evil\x07link\u202eevil"
    view = hostile_view().model_copy(update={"error": RunError(type="model_output_invalid", message=hostile)})
    with pytest.raises(typer.Exit) as ended:
        exit_unless_successful(view)
    assert ended.value.exit_code == 7
    said = capsys.readouterr().err
    assert said == (
        "run SOR-0123456789ABCDEF ended failed: model_output_invalid: "
        "log:\\x1b[2J\\x1b[31mPWNED\\x1b]8;;http://evil\\x07link\\u202eevil\n"
    )
