"""Mission Control in a real browser (headless Chromium driven by Playwright) against a real dev server,
a worker process and the console process: a person signs in with their own key (which never reaches
the console), approves exactly the digest a worktree run shows, runs it in its worktree, sees the diff
git computed and accepts it; a stale digest, a form without its CSRF token and one actor's token
claiming another are refused and change nothing; hostile model output renders inert.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from activities.config import DEFAULT_RECORDINGS_DIR
from contracts.identity import ActorKey, Signer, sign_delegation
from infra.devserver import DevServer
from tests.activities.confined import requires_bubblewrap
from tests.control.cli_harness import SLOW_QUERY, Cli, running_worker
from tests.control.test_cli_execute import ALIAS, make_orders_repository
from tests.control.web.browser import api, browser, require_chromium, running_console, screenshot, sign_in

HOSTILE_TITLE = "Review the dashboard export for injected markup"


def _hostile_recordings(path: Path) -> Path:
    """``replay:hostile``'s recordings: the demo's slow-query answers under another title, their text
    replaced by markup, script, event handlers, a ``javascript:`` link and a bidi override."""
    data = json.loads((DEFAULT_RECORDINGS_DIR / "demo.json").read_text(encoding="utf-8"))
    title = json.loads(SLOW_QUERY.read_text(encoding="utf-8"))["title"]
    entries = []
    for entry in data["recordings"]:
        if entry["title"] != title or entry["kind"] == "change":
            continue
        response = dict(entry["response"])
        finding = dict(response["findings"][0])
        finding["title"] = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
        finding["detail"] = '<a href="javascript:window.__pwned=3">click</a> admin\u202etxt.exe'
        response["findings"] = [finding, *response["findings"][1:]]
        response["axis"] = "<b onmouseover=alert(1)>axis</b>"
        entries.append({**entry, "title": HOSTILE_TITLE, "response": response})
    path.write_text(json.dumps({"recordings": entries}), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def deployment(temporal_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    require_chromium()
    root = tmp_path_factory.mktemp("mission-control")
    repository = make_orders_repository(root / "orders")
    cli = Cli.isolated(
        root,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"mission-control-{uuid.uuid4().hex}",
    )
    cli.run("actors", "register", "alice", "--name", "Alice", "--json").ok()
    cli.run("actors", "register", "bob", "--name", "Bob", "--actor", "alice", "--json").ok()
    cli.run("models", "select", "--primary", "replay:demo", "--actor", "alice", "--json").ok()
    cli.run("repos", "add", ALIAS, str(repository), "--actor", "alice", "--json").ok()
    hostile = _hostile_recordings(root / "hostile.json")
    cli.run(
        "models", "add", "replay:hostile", "--recordings", str(hostile), "--actor", "alice", "--json"
    ).ok()
    with (
        running_worker(cli.env, root / "worker.log"),
        running_console(cli, root / "console.log") as base,
        browser() as chromium,
    ):
        yield cli, base, chromium, root


def _worktree_run(cli: Cli) -> dict[str, Any]:
    item = {**json.loads(SLOW_QUERY.read_text(encoding="utf-8")), "repo_alias": ALIAS}
    created = cli.run("create", "--input-json", json.dumps(item), "--tier", "worktree", "--json").ok()
    assert created["status"] == "awaiting_approval", created
    return created


def _wait_for_status(page: Any, base: str, run_id: str, wanted: set[str], timeout: float = 60.0) -> str:
    deadline = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=timeout)
    while True:
        status = str(api(page, base, f"/api/runs/{run_id}")["status"])
        if status in wanted:
            return status
        assert dt.datetime.now(dt.UTC) < deadline, f"run {run_id} still {status}"
        page.wait_for_timeout(300)


def test_sign_in_approve_the_shown_digest_run_in_worktree_see_the_diff_and_accept(deployment: Any) -> None:
    cli, base, chromium, root = deployment
    page = chromium.new_page()
    sign_in(page, base, cli, "alice")
    screenshot(page, "overview", root)
    run = _worktree_run(cli)
    run_id, digest = run["run_id"], run["contract_sha256"]

    page.goto(f"{base}/runs/{run_id}")
    assert page.get_by_test_id("status").inner_text() == "awaiting_approval"
    assert page.get_by_test_id("approve-digest").inner_text() == digest
    screenshot(page, "run-awaiting-approval", root)
    page.get_by_test_id("approve").click()
    page.wait_for_url(f"{base}/runs/{run_id}?done=approve")
    assert _wait_for_status(page, base, run_id, {"approved"}) == "approved"

    page.goto(f"{base}/runs/{run_id}")
    page.get_by_test_id("execute").click()
    page.wait_for_load_state()
    assert page.url == f"{base}/runs/{run_id}?done=execute", page.content()
    assert _wait_for_status(page, base, run_id, {"awaiting_decision", "failed"}) == "awaiting_decision"

    page.goto(f"{base}/runs/{run_id}")
    assert "reports.sql" in page.get_by_test_id("files").inner_text() or "migrations/" in (
        page.get_by_test_id("files").inner_text()
    )
    assert page.locator("pre.diff span.add").count() > 0
    assert page.locator("pre.diff span.add span[class^='t-']").count() > 0  # its code tokenized
    assert page.get_by_test_id("verdict").count() == 1  # the blinded review beside the findings
    screenshot(page, "run-diff-and-review", root)
    page.get_by_test_id("accept").click()
    page.wait_for_url(f"{base}/runs/{run_id}?done=decide")
    assert _wait_for_status(page, base, run_id, {"accepted"}) == "accepted"

    shown = cli.run("show", run_id, "--json").ok()
    approved = [e for e in shown["audit"] if e["kind"] == "approved"]
    assert approved and approved[0]["actor"] == "alice"
    assert approved[0]["data"]["contract_sha256"] == digest
    assert shown["decision"]["actor"] == "alice"


@requires_bubblewrap
def test_a_probe_is_approved_from_the_run_page_runs_confined_and_its_evidence_is_shown(
    deployment: Any,
) -> None:
    from tests.control.test_cli_probes import WORK_ITEM

    cli, base, chromium, _root = deployment
    item = {**WORK_ITEM, "repo_alias": ALIAS}
    run = cli.run(
        "create", "--input-json", json.dumps(item), "--tier", "read_only", "--enqueue", "--actor", "alice",
        "--wait", "--json",
    ).ok()  # fmt: skip
    assert run["status"] == "awaiting_decision", run
    (probe,) = run["probes"]
    page = chromium.new_page()
    sign_in(page, base, cli, "alice")
    page.goto(f"{base}/runs/{run['run_id']}")
    page.get_by_test_id("approve-probe-1").click()
    page.wait_for_url(f"{base}/runs/{run['run_id']}?done=approve-probe")
    deadline = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=60)
    while api(page, base, f"/api/runs/{run['run_id']}")["probes"][0]["status"] not in ("completed", "failed"):
        assert dt.datetime.now(dt.UTC) < deadline, "the probe did not finish"
        page.wait_for_timeout(300)
    page.goto(f"{base}/runs/{run['run_id']}")
    assert "created_at" in page.get_by_test_id("probe-1-stdout").inner_text()
    assert page.get_by_test_id("approve-probe-1-form").count() == 0, (
        "an approved probe offers no second approval"
    )
    shown = cli.run("show", run["run_id"], "--json").ok()
    (approved,) = [e for e in shown["audit"] if e["kind"] == "probe_approved"]
    assert (approved["actor"], approved["data"]["sha256"]) == ("alice", probe["sha256"])
    assert shown["probes"][0]["evidence"]["confined"] is True


def test_a_stale_digest_is_refused_and_the_run_stays_awaiting_approval(deployment: Any) -> None:
    cli, base, chromium, _root = deployment
    page = chromium.new_page()
    sign_in(page, base, cli, "alice")
    run_id = _worktree_run(cli)["run_id"]
    page.goto(f"{base}/runs/{run_id}")
    page.evaluate("document.querySelector('input[name=contract_sha256]').value = 'a'.repeat(64)")
    page.get_by_test_id("approve").click()
    assert page.get_by_test_id("error-code").inner_text() == "stale_contract_digest"
    assert api(page, base, f"/api/runs/{run_id}")["status"] == "awaiting_approval"


def test_a_form_without_its_csrf_token_is_refused_and_changes_nothing(deployment: Any) -> None:
    cli, base, chromium, _root = deployment
    page = chromium.new_page()
    sign_in(page, base, cli, "alice")
    run_id = _worktree_run(cli)["run_id"]
    page.goto(f"{base}/runs/{run_id}")
    page.evaluate("document.querySelector('[data-testid=approve-form] input[name=csrf_token]').remove()")
    page.get_by_test_id("approve").click()
    assert page.get_by_test_id("error-code").inner_text() == "csrf_token_invalid"
    page.goto(f"{base}/runs/{run_id}")
    page.evaluate("document.querySelector('[data-testid=approve-form] input[name=csrf_token]').value = 'x'")
    page.get_by_test_id("approve").click()
    assert page.get_by_test_id("error-code").inner_text() == "csrf_token_invalid"
    view = cli.run("show", run_id, "--json").ok()
    assert view["status"] == "awaiting_approval"
    assert "approved" not in [e["kind"] for e in view["audit"]]


def test_one_actor_cannot_sign_in_or_act_as_another(deployment: Any) -> None:
    cli, base, chromium, _root = deployment
    page = chromium.new_page()
    page.goto(f"{base}/sign-in")
    code = page.get_by_test_id("sign-in-command").inner_text().split()[3]
    # bob's CLI refuses to sign as alice before anything is made ...
    cli.as_actor("bob").run("web", "sign-in", code, "--actor", "alice", "--json").error(
        4, "actor_key_mismatch"
    )
    # ... and a token made with bob's key claiming alice is refused by the console.
    from control.web.sessions import Challenge, delegation_token

    challenge = Challenge.from_code(code)
    bobs_key = ActorKey.from_pem(cli.key_file("bob").read_bytes())
    forged = sign_delegation(
        Signer("alice", bobs_key),
        session_key=challenge.session_key,
        issued_at=challenge.issued_at,
        expires_at=challenge.expires_at,
    )
    page.fill("#token", delegation_token(forged))
    page.click("button[type=submit]")
    assert page.get_by_test_id("error-code").inner_text() == "proof_invalid"
    assert page.get_by_test_id("actor").count() == 0

    # Signed in as bob, every action is bob's: the run's audit names bob, never alice.
    sign_in(page, base, cli.as_actor("bob"), "bob")
    run_id = _worktree_run(cli)["run_id"]
    page.goto(f"{base}/runs/{run_id}")
    page.get_by_test_id("cancel").click()
    page.wait_for_url(f"{base}/runs/{run_id}?done=cancel")
    view = cli.run("show", run_id, "--json").ok()
    cancels = [e for e in view["audit"] if e["kind"] in ("cancel_requested", "cancelled")]
    assert cancels and {e["actor"] for e in cancels if e["actor"]} == {"bob"}


def test_hostile_model_output_renders_inert(deployment: Any) -> None:
    cli, base, chromium, root = deployment
    cli.run("models", "select", "--primary", "replay:hostile", "--actor", "alice", "--json").ok()
    try:
        item = {**json.loads(SLOW_QUERY.read_text(encoding="utf-8")), "title": HOSTILE_TITLE}
        created = cli.run(
            "create", "--input-json", json.dumps(item), "--tier", "read_only", "--enqueue",
            "--actor", "alice", "--wait", "--timeout", "120", "--json",
        ).ok()  # fmt: skip
    finally:
        cli.run("models", "select", "--primary", "replay:demo", "--actor", "alice", "--json").ok()
    assert created["status"] == "awaiting_decision", created
    page = chromium.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    sign_in(page, base, cli, "alice")
    page.goto(f"{base}/runs/{created['run_id']}")
    findings = page.locator(".findings").first
    text = findings.inner_text()
    assert "<script>window.__pwned = 1</script>" in text  # shown as text
    assert "⟨U+202E⟩" in text  # the bidi override made visible
    assert findings.locator("script, img, a, b").count() == 0
    page.locator(".meta").first.hover()
    assert page.evaluate("window.__pwned === undefined")
    assert dialogs == []
    headers = page.request.get(f"{base}/runs/{created['run_id']}").headers
    assert "script-src 'self'" in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY"
    screenshot(page, "run-hostile-output", root)


def test_a_work_brief_is_routed_then_queued_as_a_read_only_run(deployment: Any) -> None:
    cli, base, chromium, root = deployment
    item = json.loads(SLOW_QUERY.read_text(encoding="utf-8"))
    page = chromium.new_page()
    sign_in(page, base, cli, "alice")
    page.goto(f"{base}/brief")
    page.fill("#title", item["title"])
    page.fill("#description", item["description"])
    page.fill("#domain", item["domain"])
    page.fill("#roles", ",".join(item["roles"]))
    page.select_option("#task_type", item["task_type"])
    page.fill("#evidence_refs", "\n".join(item["evidence_refs"]))
    page.select_option("#repo_alias", ALIAS)
    page.select_option("#tier", "read_only")
    page.get_by_test_id("preview").click()
    assert page.get_by_test_id("preview-primary").inner_text() == "database-optimizer"
    assert page.get_by_test_id("preview-tier").inner_text() == "read_only"
    assert page.input_value("#title") == item["title"]  # the form keeps what was entered
    screenshot(page, "work-brief", root)
    page.get_by_test_id("queue").click()
    page.wait_for_url(f"{base}/runs/SOR-*")
    run_id = page.url.rsplit("/", 1)[1]
    status = _wait_for_status(page, base, run_id, {"awaiting_decision", "failed"})
    shown = cli.run("show", run_id, "--json").ok()
    assert status == "awaiting_decision", shown["error"]
    created = next(e for e in shown["audit"] if e["kind"] == "run_created")
    assert created["data"]["title"] == item["title"] and shown["tier"] == "read_only"


def _queue_item(page: Any, base: str, title: str) -> dict[str, Any]:
    items = [item for column in api(page, base, "/api/queue")["columns"].values() for item in column]
    return next(item for item in items if item["title"] == title)


def test_the_queue_board_shows_gaps_approves_dispatches_and_a_person_marks_done(deployment: Any) -> None:
    from tests.workflows.queue_harness import SLOW_QUERY_ITEM

    cli, base, chromium, root = deployment
    thin = cli.run(
        "queue", "add", "--input-json", json.dumps({"title": "Orders are slow"}), "--actor", "alice", "--json"
    ).ok()
    full = cli.run(
        "queue", "add", "--input-json", json.dumps(SLOW_QUERY_ITEM), "--actor", "alice", "--json"
    ).ok()
    page = chromium.new_page()
    sign_in(page, base, cli, "alice")
    page.goto(f"{base}/queue")
    thin_key, full_key = thin["item"]["key"], full["item"]["key"]
    assert "repo_alias" in page.get_by_test_id(f"gaps-{thin_key}").inner_text()
    page.get_by_test_id(f"approve-{thin_key}").click()
    assert page.get_by_test_id("error-code").inner_text() == "item_contract_incomplete"
    assert "gaps" in page.get_by_test_id("error-extra").inner_text()  # every gap, named at once

    page.goto(f"{base}/queue")
    page.get_by_test_id(f"approve-{full_key}").click()
    page.wait_for_url(f"{base}/queue?done=approve")
    approved = _queue_item(page, base, SLOW_QUERY_ITEM["title"])
    assert approved["status"] == "approved"
    key = approved["key"]  # renamed into its repository's series at approval
    screenshot(page, "queue-board", root)
    # Route next under the default policy (mode recommend): a recommendation, no run.
    ready = api(page, base, "/api/queue")["ready"]
    page.get_by_test_id("route-next").click()
    page.wait_for_url(f"{base}/queue?routed={ready[0]}&tier=recommend")
    notice = page.get_by_test_id("notice").inner_text()
    assert notice == f"route-next: {ready[0]} recommended only (no run started; see its events)"
    page.get_by_test_id(f"dispatch-{key}").click()
    page.wait_for_url(f"{base}/queue?done=dispatch")
    deadline = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=90)
    while _queue_item(page, base, SLOW_QUERY_ITEM["title"])["status"] != "human-review":
        assert dt.datetime.now(dt.UTC) < deadline, _queue_item(page, base, SLOW_QUERY_ITEM["title"])
        page.wait_for_timeout(500)
    page.goto(f"{base}/queue")
    page.get_by_test_id(f"done-{key}").click()
    page.wait_for_url(f"{base}/queue?done=done")
    assert _queue_item(page, base, SLOW_QUERY_ITEM["title"])["status"] == "done"
    shown = cli.run("queue", "show", key, "--json").ok()["item"]
    done = [
        event for event in shown["events"] if event["kind"] == "moved" and event["data"].get("to") == "done"
    ]
    assert done and done[-1]["actor"] == "alice"


def test_a_blocked_research_team_is_seen_stage_by_stage_and_stopped_by_adjudication(deployment: Any) -> None:
    cli, base, chromium, root = deployment
    subject = {"kind": "vulnerability", "identifier": "CVE-2026-0404", "title": "No recording <b>here</b>"}
    evidence = [{"kind": "code", "content": "eval(template)", "source_ref": "repo@abc:render.py#L1"}]
    case_file = root / "unrecorded-case.json"
    case_file.write_text(json.dumps({"subject": subject, "evidence": evidence}), encoding="utf-8")
    case_id = cli.run(
        "research", "case-create", "--actor", "alice", "--input", str(case_file), "--json"
    ).ok()["case_id"]
    request = root / f"team-{uuid.uuid4().hex}.json"
    request.write_text(json.dumps({"request_id": uuid.uuid4().hex}), encoding="utf-8")
    team = cli.run(
        "research", "team-start", "--actor", "alice", "--case-id", case_id, "--input", str(request),
        "--wait", "--json", timeout=120,
    ).ok()  # fmt: skip
    assert team["status"] == "blocked", team
    page = chromium.new_page()
    sign_in(page, base, cli, "alice")
    page.goto(f"{base}/research")
    assert team["team_id"] in page.get_by_test_id("teams").inner_text()
    assert "No recording <b>here</b>" in page.get_by_test_id("cases").inner_text()  # shown, not rendered
    page.goto(f"{base}/research/teams/{team['team_id']}")
    assert page.get_by_test_id("team-status").inner_text() == "blocked"
    assert "replay_no_recording" in page.get_by_test_id("block").inner_text()
    screenshot(page, "research-team-blocked", root)
    page.select_option("#outcome", "accept_primary")  # not an outcome a blocked stage takes
    page.get_by_test_id("adjudicate").click()
    assert page.get_by_test_id("error-code").inner_text() == "outcome_not_allowed"
    page.goto(f"{base}/research/teams/{team['team_id']}")
    page.select_option("#outcome", "stop")
    page.fill("input[name=note]", "no recording: stop here")
    page.get_by_test_id("adjudicate").click()
    page.wait_for_url(f"{base}/research/teams/{team['team_id']}?done=adjudicate")
    deadline = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=30)
    while api(page, base, f"/api/research/teams/{team['team_id']}")["status"] != "failed":
        assert dt.datetime.now(dt.UTC) < deadline
        page.wait_for_timeout(300)
    shown = api(page, base, f"/api/research/teams/{team['team_id']}")
    adjudication = shown["stages"][0]["adjudication"]
    assert (adjudication["outcome"], adjudication["actor"], adjudication["note"]) == (
        "stop",
        "alice",
        "no recording: stop here",
    )


def test_the_policy_form_saves_through_the_session_keeps_unsaved_values_and_never_fakes_success(
    deployment: Any,
) -> None:
    import sqlite3

    cli, base, chromium, root = deployment
    page = chromium.new_page()
    sign_in(page, base, cli, "alice")
    page.goto(f"{base}/policy")
    page.select_option("#mode", "guarded")
    page.select_option("#maximum_automatic_tier", "read_only")
    page.get_by_test_id("save-policy").click()
    page.wait_for_url(f"{base}/policy?saved=1")
    assert page.get_by_test_id("current-mode").inner_text() == "guarded"
    policy = cli.run("policy", "--json").ok()  # the CLI verifies the session-signed record
    assert (policy["mode"], policy["maximum_automatic_tier"], policy["set_by"]) == (
        "guarded",
        "read_only",
        "alice",
    )
    screenshot(page, "policy", root)

    # A background refresh shows what is in force now and leaves the unsaved form alone.
    page.select_option("#mode", "off")
    cli.run(
        "policy", "--mode", "recommend", "--maximum-automatic-tier", "recommend", "--actor", "alice", "--json"
    ).ok()
    deadline = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=15)
    while page.get_by_test_id("current-mode").inner_text() != "recommend":  # refreshed in place
        assert dt.datetime.now(dt.UTC) < deadline
        page.wait_for_timeout(200)
    assert page.input_value("#mode") == "off"
    assert page.get_by_test_id("dirty-marker").is_visible()

    # A write that does not read back as written is an error with the form still dirty.
    database = sqlite3.connect(cli.database)
    try:
        database.execute(
            "CREATE TRIGGER lose_policy AFTER UPDATE OF signature ON automation_policy "
            "BEGIN DELETE FROM automation_policy WHERE id = NEW.id; END"
        )
        database.commit()
        page.select_option("#mode", "guarded")
        page.select_option("#maximum_automatic_tier", "read_only")
        page.get_by_test_id("save-policy").click()
        assert page.get_by_test_id("error-code").inner_text() == "policy_write_unverified"
        assert (
            page.input_value("#mode") == "guarded"
            and page.input_value("#maximum_automatic_tier") == "read_only"
        )
        assert page.get_attribute("[data-testid=policy-form]", "data-dirty") == "yes"
        assert page.get_by_test_id("saved").count() == 0
    finally:
        database.execute("DROP TRIGGER IF EXISTS lose_policy")
        database.commit()
        database.close()
    assert cli.run("policy", "--json").ok()["mode"] == "recommend"
