"""Untrusted text in Mission Control's templates: escaped, with control and format characters made
visible, whatever template prints it."""

from __future__ import annotations

from control.web.rendering import environment, visible


def test_control_and_format_characters_are_shown_not_obeyed() -> None:
    assert visible("admin\u202etxt.exe") == "admin⟨U+202E⟩txt.exe"
    assert visible("zero\u200bwidth\x1b[31m") == "zero⟨U+200B⟩width⟨U+001B⟩[31m"
    assert visible("line one\nline two\ttabbed") == "line one\nline two\ttabbed"
    assert visible("café ✓") == "café ✓"
    assert visible(None) == ""
    assert visible(3) == 3


def test_every_printed_value_is_escaped_and_made_visible() -> None:
    template = environment().from_string("<p>{{ value }}</p><p>{{ items | join(', ') }}</p>")
    html = template.render(value="<script>alert(1)</script>\u202e", items=["<b>", 'a"b'])
    assert html == ("<p>&lt;script&gt;alert(1)&lt;/script&gt;⟨U+202E⟩</p><p>&lt;b&gt;, a&#34;b</p>")


def test_the_route_next_notice_shows_only_an_item_key_and_a_tier_route_next_yields() -> None:
    from control.web.queue_board import routed_notice

    assert (
        routed_notice("ORD-3", "recommend")
        == "route-next: ORD-3 recommended only (no run started; see its events)"
    )
    assert routed_notice("ORD-3", "read_only") == "route-next: ORD-3 dispatched as an automatic read_only run"
    for key, tier in (("<script>", "recommend"), ("ORD-3", "worktree"), (None, "read_only"), ("ORD-3", None)):
        assert routed_notice(key, tier) is None


def test_a_runs_probe_requests_are_listed_escaped_with_their_evidence() -> None:
    from contracts.probes import ProbeEvidence, ProbeRecord, ProbeRequest

    request = ProbeRequest(
        hypothesis="<script>alert(1)</script>\u202e",
        argv=["grep", "<b>x</b>"],
        cwd="docs",
        expected_confirming="found",
        expected_falsifying="not found",
        anticipated_effects="none",
    )
    record = ProbeRecord(
        index=1,
        sha256="a" * 64,
        request=request,
        status="completed",
        approved_by="alice",
        evidence=ProbeEvidence(
            commit="c" * 40,
            commit_source="base_commit",
            argv=request.argv,
            cwd="docs",
            exit_status=0,
            stdout="<img src=x onerror=alert(1)>",
        ),
    )
    run = {"run_id": "SOR-0123456789ABCDEF", "probes": [record.model_dump(mode="json")]}
    html = environment().get_template("_probes.html").render(run=run)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;⟨U+202E⟩" in html and "<script>" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "<img" not in html
    assert "probe 1: completed" in html and "a" * 64 in html and "approved by" in html
    assert (
        environment().get_template("_probes.html").render(run={"run_id": "SOR-X", "probes": []}).strip() == ""
    )
