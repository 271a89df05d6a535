"""Mission Control over HTTP (FastAPI's test client against the real app and a real SQLite store; no
Temporal server: the pages that need one say so): hardening headers on every response, sign-in with a
delegation the actor's own key signed, the session cookie's flags, CSRF on every form, pages and their
JSON twins behind the session, and refusals that name their code."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from contracts.errors import ServiceUnavailable
from contracts.identity import ActorKey, Signer, sign_delegation
from control.commands.common import default_policy_record
from control.web.app import WebSettings, create_app
from control.web.console import Deployment
from control.web.sessions import Challenge, delegation_token
from store.database import open_store
from store.store import Store
from tests.identity import STORE_ANCHOR, bootstrap, key_of, register


@pytest.fixture
def store_url(tmp_path: Path) -> Iterator[str]:
    url = f"sqlite:///{tmp_path / 'specialists.db'}"
    store = open_store(url, create=True, anchor=STORE_ANCHOR)
    with store:
        alice = bootstrap(store)
        register(store, "bob", alice)
        register(store, "carol", alice)
        store.deactivate_actor("carol", alice)
    yield url


def _deployment(url: str) -> Deployment:
    async def unreachable() -> Any:
        raise ServiceUnavailable("temporal_unreachable", "no Temporal server in this test")

    def store() -> Store:
        return open_store(url, create=False, anchor=STORE_ANCHOR)

    return Deployment(
        task_queue="web-tests", connect=unreachable, open_store=store, default_policy=default_policy_record
    )


def _client(url: str, *, tls: bool = False) -> TestClient:
    base = "https://console.test" if tls else "http://console.test"
    return TestClient(
        create_app(_deployment(url), WebSettings(tls=tls)), base_url=base, follow_redirects=False
    )


@pytest.fixture
def client(store_url: str) -> TestClient:
    return _client(store_url)


def _challenge(client: TestClient) -> tuple[Challenge, str]:
    page = client.get("/sign-in")
    assert page.status_code == 200
    code = re.search(r"specialists web sign-in (\S+) --actor", page.text)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert code is not None and csrf is not None
    return Challenge.from_code(code.group(1)), csrf.group(1)


def _token(challenge: Challenge, actor: str, key: ActorKey | None = None) -> str:
    delegation = sign_delegation(
        Signer(actor, key or key_of(actor)),
        session_key=challenge.session_key,
        issued_at=challenge.issued_at,
        expires_at=challenge.expires_at,
    )
    return delegation_token(delegation)


def _signed_in(client: TestClient, actor: str = "alice") -> str:
    challenge, csrf = _challenge(client)
    answer = client.post("/sign-in", data={"token": _token(challenge, actor), "csrf_token": csrf})
    assert answer.status_code == 303 and answer.headers["location"] == "/", answer.text
    overview = client.get("/")
    assert overview.status_code == 200, overview.text
    found = re.search(r'name="csrf_token" value="([^"]+)"', overview.text)
    assert found is not None
    return found.group(1)


def _error_code(html: str) -> str:
    found = re.search(r'data-testid="error-code">([^<]+)<', html)
    assert found is not None, html
    return found.group(1)


def test_every_response_carries_the_hardening_headers(client: TestClient) -> None:
    for answer in (
        client.get("/sign-in"),
        client.get("/"),
        client.get("/api/runs"),
        client.get("/static/app.css"),
    ):
        csp = answer.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "'unsafe-inline'" not in csp
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "no-referrer"
        assert answer.headers["cache-control"] == "no-store"
        assert "strict-transport-security" not in answer.headers


def test_pages_need_a_session_and_json_twins_answer_401(client: TestClient) -> None:
    for path in ("/", "/runs", "/runs/SOR-0123456789ABCDEF"):
        answer = client.get(path)
        assert (answer.status_code, answer.headers["location"]) == (303, "/sign-in")
    for path in ("/api/overview", "/api/runs", "/api/runs/SOR-0123456789ABCDEF"):
        answer = client.get(path)
        assert answer.status_code == 401
        assert answer.json()["error"]["code"] == "not_signed_in"
    answer = client.post("/runs/SOR-0123456789ABCDEF/approve", data={"contract_sha256": "a" * 64})
    assert (answer.status_code, answer.headers["location"]) == (303, "/sign-in")


def test_signing_in_with_the_actors_delegation_opens_a_session_with_a_strict_cookie(store_url: str) -> None:
    client = _client(store_url)
    challenge, csrf = _challenge(client)
    answer = client.post("/sign-in", data={"token": _token(challenge, "alice"), "csrf_token": csrf})
    assert answer.status_code == 303
    cookie = next(h for h in answer.headers.get_list("set-cookie") if h.startswith("mc_session="))
    flags = {part.strip().lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "samesite=strict", "path=/"} <= flags
    assert "secure" not in flags
    assert 'signed in as <strong data-testid="actor">alice</strong>' in client.get("/").text

    secure = _client(store_url, tls=True)
    challenge, csrf = _challenge(secure)
    answer = secure.post("/sign-in", data={"token": _token(challenge, "alice"), "csrf_token": csrf})
    cookie = next(h for h in answer.headers.get_list("set-cookie") if h.startswith("mc_session="))
    assert "secure" in {part.strip().lower() for part in cookie.split(";")[1:]}
    assert secure.get("/").headers["strict-transport-security"] == "max-age=31536000"


@pytest.mark.parametrize(
    ("actor", "key", "code"),
    [
        ("alice", "bob", "proof_invalid"),  # bob's key claiming alice
        ("bob", "alice", "proof_invalid"),
        ("carol", "carol", "actor_deactivated"),
        ("mallory", "mallory", "unknown_actor"),
        ("alice", "stranger", "actor_key_unknown"),
    ],
)
def test_a_sign_in_not_signed_by_the_actors_key_in_force_is_refused(
    client: TestClient, actor: str, key: str, code: str
) -> None:
    challenge, csrf = _challenge(client)
    signing = ActorKey.generate() if key == "stranger" else key_of(key)
    answer = client.post("/sign-in", data={"token": _token(challenge, actor, signing), "csrf_token": csrf})
    assert answer.status_code == 400
    assert _error_code(answer.text) == code
    assert client.get("/").status_code == 303  # still signed out


def test_a_sign_in_token_is_good_for_its_own_challenge_once(client: TestClient, store_url: str) -> None:
    challenge, csrf = _challenge(client)
    token = _token(challenge, "alice")
    assert client.post("/sign-in", data={"token": token, "csrf_token": csrf}).status_code == 303
    again = _client(store_url)
    _other, other_csrf = _challenge(again)
    answer = again.post("/sign-in", data={"token": token, "csrf_token": other_csrf})
    assert _error_code(answer.text) == "unknown_challenge"  # another console's (or a used) challenge
    garbage = again.post("/sign-in", data={"token": "not a token", "csrf_token": other_csrf})
    assert _error_code(garbage.text) == "invalid_token"


def test_the_sign_in_form_needs_its_own_csrf_token(client: TestClient) -> None:
    challenge, _csrf = _challenge(client)
    answer = client.post("/sign-in", data={"token": _token(challenge, "alice"), "csrf_token": "guess"})
    assert answer.status_code == 409 and _error_code(answer.text) == "csrf_token_invalid"
    answer = client.post("/sign-in", data={"token": _token(challenge, "alice")})
    assert _error_code(answer.text) == "csrf_token_invalid"


def test_every_action_form_needs_the_sessions_csrf_token(client: TestClient) -> None:
    csrf = _signed_in(client)
    for action in ("approve", "execute", "decide", "cancel"):
        answer = client.post(f"/runs/SOR-0123456789ABCDEF/{action}", data={"contract_sha256": "a" * 64})
        assert answer.status_code == 409 and _error_code(answer.text) == "csrf_token_invalid"
        wrong = client.post(f"/runs/SOR-0123456789ABCDEF/{action}", data={"csrf_token": csrf[::-1]})
        assert _error_code(wrong.text) == "csrf_token_invalid"
    assert client.post("/sign-out", data={}).status_code == 409


def test_a_run_id_that_is_not_one_is_refused_before_anything_is_asked(client: TestClient) -> None:
    csrf = _signed_in(client)
    answer = client.get("/runs/..%2F..%2Fetc")
    assert answer.status_code in (400, 404)
    api = client.get("/api/runs/not-a-run")
    assert api.status_code == 400 and api.json()["error"]["code"] == "invalid_run_id"
    post = client.post("/runs/not-a-run/approve", data={"csrf_token": csrf, "contract_sha256": "a" * 64})
    assert post.status_code == 400 and _error_code(post.text) == "invalid_run_id"
    bad_digest = client.post(
        "/runs/SOR-0123456789ABCDEF/approve", data={"csrf_token": csrf, "contract_sha256": "x"}
    )
    assert _error_code(bad_digest.text) == "contract_digest_required"
    assert "got 1 characters" in bad_digest.text  # says what is wrong with the digest given
    capitals = client.post(
        "/runs/SOR-0123456789ABCDEF/approve-probe",
        data={"csrf_token": csrf, "index": "1", "probe_sha256": "A" * 64},
    )
    assert _error_code(capitals.text) == "probe_digest_required" and "capital letters" in capitals.text


def test_the_overview_and_runs_answer_from_the_store_and_say_when_temporal_does_not(
    client: TestClient,
) -> None:
    _signed_in(client)
    overview = client.get("/api/overview").json()
    assert overview["policy"]["mode"] == default_policy_record().policy.mode.value
    assert overview["queue"] == {"available": False, "reason": "temporal_unreachable"}
    assert {"id", "name", "reviewer", "work_class"} <= set(overview["roster"][0])
    assert client.get("/api/runs").json() == {"runs": []}
    assert client.get("/api/runs?status=nonsense").json()["error"]["code"] == "unknown_status"
    run = client.get("/api/runs/SOR-0123456789ABCDEF")
    assert run.status_code == 503 and run.json()["error"]["code"] == "temporal_unreachable"


def test_signing_out_ends_the_session(client: TestClient) -> None:
    csrf = _signed_in(client)
    answer = client.post("/sign-out", data={"csrf_token": csrf})
    assert (answer.status_code, answer.headers["location"]) == (303, "/sign-in")
    assert client.get("/").status_code == 303


def test_an_ended_session_signs_the_person_out() -> None:
    from control.web.sessions import Sessions

    now = [dt.datetime(2026, 12, 2, 8, 0, tzinfo=dt.UTC)]
    sessions = Sessions(now=lambda: now[0])
    challenge = sessions.challenge()
    session = sessions.complete(_token(challenge, "alice"), lambda actor, key: key_of(actor).public_key)
    assert sessions.get(session.session_id) is session
    now[0] = challenge.expires_at
    assert sessions.get(session.session_id) is None


def test_the_runs_page_lists_the_projection_escaped_and_filtered(client: TestClient, store_url: str) -> None:
    from contracts.enums import Tier
    from contracts.runs import RunStatus, RunSummary

    at = dt.datetime(2026, 12, 2, 9, 0, tzinfo=dt.UTC)
    store = open_store(store_url, create=False, anchor=STORE_ANCHOR)
    with store:
        for index, status in enumerate((RunStatus.READY, RunStatus.ACCEPTED)):
            store.project_run(
                RunSummary(
                    run_id=f"SOR-000000000000000{index}",
                    status=status,
                    tier=Tier.READ_ONLY,
                    automatic=False,
                    primary="database-optimizer",
                    reviewer="backend-architect",
                    risk=None,
                    repo_alias=None,
                    title="<img src=x onerror=alert(1)> slow query",
                    contract_sha256=None,
                    request_id=None,
                    created_at=at,
                    updated_at=at,
                ),
                [],
            )
    _signed_in(client)
    page = client.get("/runs")
    assert page.status_code == 200
    assert "&lt;img src=x onerror=alert(1)&gt; slow query" in page.text and "<img" not in page.text
    ready = client.get("/runs?status=ready")
    assert "SOR-0000000000000000" in ready.text and "SOR-0000000000000001" not in ready.text
    assert [r["run_id"] for r in client.get("/api/runs?status=accepted").json()["runs"]] == [
        "SOR-0000000000000001"
    ]
    overview = client.get("/").text
    assert "SOR-0000000000000000" in overview and "SOR-0000000000000001" not in overview  # active runs only


def test_the_work_brief_previews_a_route_and_writes_nothing(client: TestClient) -> None:
    csrf = _signed_in(client)
    assert "Work brief" in client.get("/brief").text
    form = {
        "csrf_token": csrf, "action": "preview", "title": "Audit the slow query on the orders report",
        "description": "A sequential scan over 90 million rows.", "domain": "database", "roles": "dba",
        "task_type": "audit", "evidence_refs": "plan:orders-report-explain\nlog:pg-slow", "tier": "read_only",
        "risk_flags": ["production", "customer_data"],
    }  # fmt: skip
    answer = client.post("/brief", data=form)
    assert answer.status_code == 200, answer.text
    assert 'data-testid="preview-primary">database-optimizer<' in answer.text
    assert "checked" in answer.text  # the form keeps what was entered
    api = client.post(
        "/api/route",
        json={"work_item": {"title": "Audit the slow query", "domain": "database"}, "tier": "worktree"},
    ).json()
    assert api["route"]["primary"] == "database-optimizer" and api["route"]["effective_tier"] == "worktree"
    assert client.get("/api/runs").json() == {"runs": []}  # nothing was created


def test_the_brief_shows_how_the_run_would_be_reviewed_and_a_wave_the_operator_asks_for(
    client: TestClient,
) -> None:
    csrf = _signed_in(client)
    form = {
        "csrf_token": csrf, "action": "preview", "title": "Sign release artefacts in the pipeline",
        "evidence_refs": "file:src/signing.py\nfile:.github/workflows/release.yml", "tier": "read_only",
    }  # fmt: skip
    crossing = client.post("/brief", data=form)
    assert 'data-testid="preview-review">wave<' in crossing.text
    assert "crosses 2 consequential domains (code, ci)" in crossing.text
    single = {**form, "evidence_refs": "file:src/signing.py"}
    assert 'data-testid="preview-review">single<' in client.post("/brief", data=single).text
    asked = client.post("/brief", data={**single, "review_wave": "yes"})
    assert (
        'data-testid="preview-review">wave<' in asked.text
        and "the operator asked for a review wave" in asked.text
    )
    body = {"work_item": {"title": "Tidy a query"}, "tier": "read_only", "review_wave": True}
    assert client.post("/api/route", json=body).json()["route"]["orchestration"]["operator_requested"]
    refused = client.post("/api/route", json={**body, "review_wave": "yes"})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_review_wave"


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"title": "bell\x07 in a title"}, "invalid_work_item"),
        ({"evidence_refs": "no-kind-here"}, "invalid_work_item"),
        ({"repo_alias": "../../etc"}, "invalid_work_item"),
        ({"repo_alias": "payments-api", "tier": "worktree"}, "unknown_repository"),  # not allow-listed
        ({"tier": ""}, "tier_required"),
        ({"tier": "root"}, "unknown_tier"),
        ({"override_profile": "general-orchestrator"}, "override_reason_required"),
        ({"override_profile": "attacker", "override_reason": "x"}, "unknown_profile"),
        ({"action": "run-shell"}, "invalid_form"),
    ],
)
def test_a_brief_that_breaks_a_rule_is_refused_naming_it(
    client: TestClient, changes: dict[str, str], code: str
) -> None:
    csrf = _signed_in(client)
    form = {
        "csrf_token": csrf,
        "action": "save",
        "title": "Audit the slow query",
        "tier": "read_only",
        **changes,
    }
    answer = client.post("/brief", data=form)
    assert answer.status_code == 400, answer.text
    assert _error_code(answer.text) == code


SHIPPED_SLOW_QUERY = Path(__file__).resolve().parents[3] / "examples" / "work-items" / "03-slow-query.json"


@pytest.mark.parametrize("tier", ["recommend", "read_only"])
def test_the_api_previews_a_recommend_or_read_only_run_on_a_repository_that_is_not_registered(
    client: TestClient, tier: str
) -> None:
    _signed_in(client)
    item = json.loads(SHIPPED_SLOW_QUERY.read_text(encoding="utf-8"))
    assert item["repo_alias"] == "orders-service"  # not registered here, as in a fresh deployment
    answer = client.post("/api/route", json={"work_item": item, "tier": tier})
    assert answer.status_code == 200, answer.text
    assert answer.json()["route"]["effective_tier"] == tier
    assert answer.json()["work_item"]["repo_alias"] == "orders-service"


@pytest.mark.parametrize("tier", ["worktree", "pr_ready"])
def test_the_api_refuses_an_edit_tier_on_a_repository_that_is_not_registered(
    client: TestClient, tier: str
) -> None:
    _signed_in(client)
    item = json.loads(SHIPPED_SLOW_QUERY.read_text(encoding="utf-8"))
    answer = client.post("/api/route", json={"work_item": item, "tier": tier})
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "unknown_repository"
    assert "'orders-service'" in answer.json()["error"]["message"]


@pytest.mark.parametrize(
    ("changes", "code", "named"),
    [
        ({"tier": None}, "tier_required", "choose a tier: recommend, read_only, worktree, pr_ready"),
        ({"tier": "root"}, "unknown_tier", "unknown tier 'root'; use one of: recommend, read_only, worktree"),
        ({"tier": 2}, "unknown_tier", "unknown tier of type int"),
        ({"override": "code-reviewer"}, "invalid_override", "override is an object"),
        ({"override": ["code-reviewer"]}, "invalid_override", "override is an object"),
        ({"override": {"profile": 7, "reason": "x"}}, "invalid_override", "override profile is a string"),
        ({"override": {"profile": "code-reviewer", "reason": True}}, "invalid_override", "override reason"),
        ({"override": {"profile": "code-reviewer", "why": "x"}}, "invalid_override", "unknown keys 'why'"),
        (
            {"override": {"profile": "code-reviewer", "reason": "r" * 2001}},
            "override_reason_too_long",
            "2001 characters; the limit is 2000",
        ),
        (
            {"override": {"profile": "code-reviewer", "reason": "ok\x1b[2J"}},
            "invalid_override_reason",
            "U+001B at character 3",
        ),
        ({"run": True, "actor": "bob"}, "unknown_keys", "unknown keys 'actor', 'run'; allowed: work_item"),
    ],
)
def test_an_api_brief_with_a_wrong_tier_override_or_key_is_refused_naming_it(
    client: TestClient, changes: dict[str, Any], code: str, named: str
) -> None:
    _signed_in(client)
    body = {"work_item": {"title": "Audit the slow query"}, "tier": "read_only", **changes}
    answer = client.post("/api/route", json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == code
    assert named in answer.json()["error"]["message"]


@pytest.mark.parametrize("tier", ["worktree", "pr_ready"])
def test_an_edit_tier_preview_without_a_repository_says_saving_would_be_refused(
    client: TestClient, tier: str
) -> None:
    csrf = _signed_in(client)
    body = {"work_item": {"title": "Add the orders report index", "domain": "database"}, "tier": tier}
    route = client.post("/api/route", json=body).json()["route"]
    assert route["effective_tier"] == tier
    assert route["create_refusal"]["code"] == "repo_alias_required"
    assert f"a {tier} run changes code" in route["create_refusal"]["message"]
    form = {"csrf_token": csrf, "action": "preview", "title": "Add the orders report index", "tier": tier}
    page = client.post("/brief", data=form)
    assert page.status_code == 200, page.text
    assert 'data-testid="preview-create-refusal"' in page.text and "repo_alias_required" in page.text


def test_a_preview_that_create_would_take_says_no_refusal(client: TestClient) -> None:
    csrf = _signed_in(client)
    item = json.loads(SHIPPED_SLOW_QUERY.read_text(encoding="utf-8"))
    for tier in ("recommend", "read_only"):
        route = client.post("/api/route", json={"work_item": item, "tier": tier}).json()["route"]
        assert route["create_refusal"] is None
    form = {"csrf_token": csrf, "action": "preview", "title": "Audit the slow query", "tier": "read_only"}
    assert 'data-testid="preview-create-refusal"' not in client.post("/brief", data=form).text


def test_an_api_brief_takes_a_null_or_blank_override_as_none_and_a_complete_one_as_given(
    client: TestClient,
) -> None:
    _signed_in(client)
    body = {"work_item": {"title": "Audit the slow query", "domain": "database"}, "tier": "read_only"}
    for override in (None, {}, {"profile": None, "reason": None}, {"profile": " ", "reason": ""}):
        answer = client.post("/api/route", json={**body, "override": override})
        assert answer.json()["route"]["primary"] == "database-optimizer", override
    given = {"profile": "code-reviewer", "reason": "the owner asked"}
    answer = client.post("/api/route", json={**body, "override": given})
    assert answer.json()["route"]["primary"] == "code-reviewer"


def test_a_previewed_brief_comes_back_as_typed_with_browser_line_breaks_undone(client: TestClient) -> None:
    csrf = _signed_in(client)
    form = {
        "csrf_token": csrf, "action": "preview", "title": "Audit the slow query", "tier": "read_only",
        "description": "line one\r\nline two", "evidence_refs": "log:pg-slow\r\nplan:explain",
    }  # fmt: skip
    answer = client.post("/brief", data=form)
    assert answer.status_code == 200, answer.text
    assert "log:pg-slow\nplan:explain</textarea>" in answer.text
    assert "line one\nline two</textarea>" in answer.text
    assert "U+000D" not in answer.text


def test_research_and_queue_pages_need_a_session_and_check_their_ids(client: TestClient) -> None:
    for path in ("/research", "/queue", "/research/teams/RTM-0000000000000000"):
        assert client.get(path).status_code == 303
    assert client.get("/api/research").status_code == 401
    csrf = _signed_in(client)
    bad = client.get("/api/research/teams/not-a-team")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_team_id"
    move = client.post("/queue/not-a-key/approve", data={"csrf_token": csrf})
    assert move.status_code == 400 and _error_code(move.text) == "invalid_key"
    unknown = client.post("/queue/ORD-1/merge", data={"csrf_token": csrf})
    assert unknown.status_code == 400 and _error_code(unknown.text) == "invalid_move"
    forged = client.post("/queue/route-next", data={})
    assert _error_code(forged.text) == "csrf_token_invalid"
    wrong = client.post("/research/teams/RTM-0000000000000000/publish", data={"csrf_token": csrf})
    assert wrong.status_code == 400 and _error_code(wrong.text) == "invalid_action"
    stage = client.post(
        "/research/teams/RTM-0000000000000000/adjudicate",
        data={"csrf_token": csrf, "stage": "9", "outcome": "stop"},
    )
    assert _error_code(stage.text) == "invalid_stage"
    for note in ("ok\x1b[2J", "   "):
        hostile = client.post(
            "/research/teams/RTM-0000000000000000/adjudicate",
            data={"csrf_token": csrf, "stage": "1", "outcome": "stop", "note": note},
        )
        assert _error_code(hostile.text) == "invalid_note"
        stop = client.post(
            "/research/teams/RTM-0000000000000000/stop", data={"csrf_token": csrf, "reason": note}
        )
        assert _error_code(stop.text) == "invalid_note"
        reject = client.post("/queue/ORD-1/reject", data={"csrf_token": csrf, "reason": note})
        assert _error_code(reject.text) == "invalid_reason"
    no_csrf = client.post("/research/teams/RTM-0000000000000000/stop", data={})
    assert _error_code(no_csrf.text) == "csrf_token_invalid"


def test_an_unexpected_error_is_a_plain_500_page_with_the_hardening_headers(store_url: str) -> None:
    broken = {"now": False}
    deployment = _deployment(store_url)
    opener = deployment.open_store

    def store() -> Any:
        if broken["now"]:
            raise RuntimeError("secret detail: /var/lib/specialists/specialists.db is gone")
        return opener()

    deployment.open_store = store
    client = TestClient(
        create_app(deployment),
        base_url="http://console.test",
        follow_redirects=False,
        raise_server_exceptions=False,
    )
    _signed_in(client)
    broken["now"] = True
    answer = client.get("/")
    assert answer.status_code == 500
    assert _error_code(answer.text) == "internal_error"
    assert "secret detail" not in answer.text and "/var/lib" not in answer.text
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    assert answer.headers["x-frame-options"] == "DENY"
