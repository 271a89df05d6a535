"""``specialists research`` team commands against a real Temporal dev server and a worker process:
``team-start``, ``teams``, ``team-show``, ``adjudicate`` and ``team-cancel``.

A team started on the demo case with ``replay:demo`` runs its six reviewed stages and ends at
``awaiting_human_review``; the same request id returns the same team, and on another case it is
refused. Before anything is started the CLI checks the case, the actor, the action token and that the
case's active evidence fits a team. A finished team takes no adjudication and no cancel; a team id that
does not exist is not found (exit 3), a malformed one is invalid input (exit 2). The human view says
that nothing is approved or published and shows untrusted text literally.

One worker process serves the whole module (its own task queue and state directory, with ``alice``
registered, ``replay:demo`` selected and the demo case created), and one team is started on it and
shared by the tests that only read it.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contracts.ids import team_id_for_request
from contracts.research_teams import (
    STAGES,
    Adjudication,
    AdjudicationOutcome,
    StageBlock,
    StageRecord,
    TeamStatus,
    TeamView,
)
from contracts.runs import AuditEvent
from infra.devserver import DevServer
from tests.control.cli_harness import ISO_UTC, ROOT, SHA256_HEX, Cli, running_worker, wait_until

DEMO_CASE = ROOT / "examples" / "research" / "case.json"
TEAM_ID = r"RTM-[0-9A-Z]{16}"
TEAM_KEYS = {
    "team_id",
    "case_id",
    "request_id",
    "status",
    "started_by",
    "created_at",
    "deadline_at",
    "current_stage",
    "jobs_used",
    "jobs_limit",
    "block",
    "error",
    "capture",
    "stages",
    "audit",
}
STAGE_KEYS = {
    "number",
    "name",
    "profile",
    "reviewer",
    "state",
    "analysis",
    "review",
    "limitations",
    "adjudication",
    "omitted",
    "drew_on",
    "jobs",
}
OUTPUT_KEYS = {"job_id", "sha256", "model", "findings", "max_severity"}
MALFORMED_TEAM_ID = "RTM-lowercase"
UNKNOWN_TEAM_ID = "RTM-0000000000000000"


@pytest.fixture(scope="module")
def cli(temporal_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """The CLI configured for the shared dev server, with a worker running on its own queue."""
    root = tmp_path_factory.mktemp("cli-research-teams")
    cli = Cli.isolated(
        root,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"cli-teams-{uuid.uuid4().hex}",
    )
    assert cli.call("actors", "register", "alice", "--name", "Alice").exit_code == 0
    assert cli.call("models", "select", "--primary", "replay:demo", "--actor", "alice").exit_code == 0
    with running_worker(cli.env, root / "worker.log"):
        yield cli


@pytest.fixture(scope="module")
def demo_case(cli: Cli) -> str:
    """The demo case (examples/research/case.json), created with ``research case-create``."""
    return _create_case(cli, DEMO_CASE)


@pytest.fixture(scope="module")
def request_file(cli: Cli) -> Path:
    """A request file with a request id of this module's own (the dev server is shared)."""
    return _write_json(cli.cwd / "request.json", {"request_id": f"cli-teams-{uuid.uuid4().hex}"})


@pytest.fixture(scope="module")
def demo_team(cli: Cli, demo_case: str, request_file: Path) -> dict[str, Any]:
    """``research team-start --wait --json`` on the demo case, as a separate process."""
    result = cli.run(
        "research",
        "team-start",
        "--actor",
        "alice",
        "--case-id",
        demo_case,
        "--input",
        str(request_file),
        "--wait",
        "--json",
        timeout=120,
    )
    return result.ok()


def _write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _create_case(cli: Cli, case_file: Path) -> str:
    created = cli.call("research", "case-create", "--actor", "alice", "--input", str(case_file), "--json")
    case_id = created.ok()["case_id"]
    assert isinstance(case_id, str)
    return case_id


def _team_start(cli: Cli, case_id: str, request_file: Path, *extra: str) -> Any:
    return cli.call(
        "research",
        "team-start",
        "--actor",
        "alice",
        "--case-id",
        case_id,
        "--input",
        str(request_file),
        "--json",
        *extra,
    )


def _fresh_request(cli: Cli) -> tuple[Path, str]:
    request_id = f"cli-teams-{uuid.uuid4().hex}"
    path = _write_json(cli.cwd / f"request-{request_id}.json", {"request_id": request_id})
    return path, team_id_for_request(request_id)


def _not_started(cli: Cli, team_id: str) -> None:
    cli.call("research", "team-show", team_id, "--json").error(3, "unknown_team")


# ------------------------------------------------------------------------------------------ start


def test_team_start_on_the_demo_case_waits_until_the_team_awaits_human_review(
    demo_team: dict[str, Any], demo_case: str, request_file: Path
) -> None:
    team = demo_team
    request_id = json.loads(request_file.read_text())["request_id"]
    assert set(team) == TEAM_KEYS | {"deduplicated"}
    assert team["team_id"] == team_id_for_request(request_id)
    assert (team["case_id"], team["request_id"], team["started_by"]) == (demo_case, request_id, "alice")
    assert team["status"] == "awaiting_human_review", team["error"]
    assert team["deduplicated"] is False
    assert (team["jobs_used"], team["jobs_limit"]) == (12, 12)
    assert (team["block"], team["error"], team["current_stage"]) == (None, None, None)
    assert [stage["state"] for stage in team["stages"]] == ["done"] * 6
    assert team["capture"]["case_id"] == demo_case
    assert team["capture"]["model"]["primary"] == "replay:demo"
    assert team["audit"][0]["kind"] == "team_started"
    assert "team_completed" in [event["kind"] for event in team["audit"]]


def test_the_same_request_id_for_the_same_case_returns_the_same_team(
    cli: Cli, demo_team: dict[str, Any], demo_case: str, request_file: Path
) -> None:
    again = _team_start(cli, demo_case, request_file).ok()

    assert again["deduplicated"] is True
    assert again["team_id"] == demo_team["team_id"]
    assert again["status"] == "awaiting_human_review"
    assert again["created_at"] == demo_team["created_at"]


def test_a_second_delivery_returns_the_same_team_even_after_the_case_changed(cli: Cli) -> None:
    case_id = _create_case(cli, DEMO_CASE)
    request_file, team_id = _fresh_request(cli)
    first = _team_start(cli, case_id, request_file, "--wait").ok()
    # The case no longer fits a new team (no active record); the delivered start is still that team.
    shown = cli.call("research", "case-show", case_id, "--json").ok()
    for record in shown["evidence"]:
        cli.call(
            "research", "evidence-deactivate", case_id, record["evidence_id"], "--actor", "alice", "--json"
        ).ok()
    again = _team_start(cli, case_id, request_file).ok()
    assert (again["team_id"], again["deduplicated"]) == (team_id, True)
    assert again["created_at"] == first["created_at"]
    fresh, _ = _fresh_request(cli)
    _team_start(cli, case_id, fresh).error(4, "team_evidence_empty")


def test_coordinator_shows_the_limits_and_the_cycles_of_the_teams_it_advanced(
    cli: Cli, demo_team: dict[str, Any]
) -> None:
    state = cli.call("research", "coordinator", "--json").ok()
    assert state["running"] is True
    assert (state["max_active"], state["advances_per_cycle"], state["cycle_seconds"]) == (20, 5, 1)
    assert demo_team["team_id"] not in state["active"]  # it finished and gave its place back
    granted = [entry for cycle in state["recent_cycles"] for entry in cycle["granted"]]
    assert [f"{demo_team['team_id']}:{n}" for n in range(1, 7)] == [
        entry for entry in granted if entry.startswith(demo_team["team_id"])
    ]
    assert all(len(cycle["granted"]) <= 5 for cycle in state["recent_cycles"])
    assert all(cycle["at"].endswith("Z") for cycle in state["recent_cycles"])
    human = cli.call("research", "coordinator")
    assert human.exit_code == 0 and "teams active" in human.stdout


def test_the_same_request_id_for_another_case_is_refused(
    cli: Cli, demo_team: dict[str, Any], request_file: Path
) -> None:
    other_case = _create_case(cli, DEMO_CASE)

    message = _team_start(cli, other_case, request_file).error(4, "request_id_conflict")

    assert demo_team["case_id"] in message


def test_a_case_with_26_active_records_is_refused_and_no_team_is_started(cli: Cli) -> None:
    records = [
        {"kind": "code", "content": f"line {n}: parse(input)", "source_ref": f"repo@abc:src/{n}.c"}
        for n in range(26)
    ]
    subject = {"kind": "vulnerability", "identifier": "CVE-2026-0026", "title": "Twenty-six records"}
    big_case = _create_case(
        cli, _write_json(cli.cwd / "big-case.json", {"subject": subject, "evidence": records})
    )
    request, team_id = _fresh_request(cli)

    message = _team_start(cli, big_case, request).error(4, "team_evidence_limit")

    assert "26" in message and "Narrow the case" in message
    _not_started(cli, team_id)


def test_team_start_without_a_key_is_refused_and_starts_nothing(cli: Cli, demo_case: str) -> None:
    request, team_id = _fresh_request(cli)

    _team_start(cli.without_key(), demo_case, request).error(4, "actor_key_missing")

    _not_started(cli, team_id)


def test_team_start_signed_with_a_key_nobody_holds_is_refused_by_the_worker_and_runs_no_job(
    cli: Cli, demo_case: str
) -> None:
    request, team_id = _fresh_request(cli)

    _team_start(cli.stranger(), demo_case, request).error(4, "actor_key_unknown")

    shown = cli.call("research", "team-show", team_id, "--json").ok()
    assert (shown["status"], shown["jobs_used"], shown["capture"]) == ("failed", 0, None)


def test_team_start_refuses_an_unknown_case_an_unknown_actor_and_a_bad_request_file(
    cli: Cli, demo_case: str
) -> None:
    request, team_id = _fresh_request(cli)
    _team_start(cli, "RSC-000000000000", request).error(3, "unknown_case")
    cli.call(
        "research",
        "team-start",
        "--actor",
        "mallory",
        "--case-id",
        demo_case,
        "--input",
        str(request),
        "--json",
    ).error(3, "unknown_actor")
    unknown_key = _write_json(cli.cwd / "unknown-key.json", {"request_id": "x", "priority": "high"})
    _team_start(cli, demo_case, unknown_key).error(2, "invalid_team_start_input")
    _team_start(cli, "case-1", request).error(2, "invalid_case_id")
    _not_started(cli, team_id)


# ------------------------------------------------------------------------------------ show and list


def test_team_show_prints_the_team_view(cli: Cli, demo_team: dict[str, Any]) -> None:
    shown = cli.call("research", "team-show", demo_team["team_id"], "--json").ok()

    assert set(shown) == TEAM_KEYS
    assert re.fullmatch(TEAM_ID, shown["team_id"])
    assert shown["status"] == "awaiting_human_review"
    for key in ("created_at", "deadline_at"):
        assert re.fullmatch(ISO_UTC, shown[key])
    assert [stage["number"] for stage in shown["stages"]] == [1, 2, 3, 4, 5, 6]
    for stage, spec in zip(shown["stages"], STAGES, strict=True):
        assert set(stage) == STAGE_KEYS
        assert (stage["name"], stage["profile"]) == (spec.name, spec.profile_id)
        assert stage["reviewer"] and stage["reviewer"] != stage["profile"]
        assert set(stage["analysis"]) == OUTPUT_KEYS
        assert set(stage["review"]) == OUTPUT_KEYS | {"verdict"}
        for output in (stage["analysis"], stage["review"]):
            assert re.fullmatch(SHA256_HEX, output["sha256"])
            assert output["model"] == "replay:demo"
        assert set(stage["omitted"]) == {"analysis", "review"}
        assert any("blinded review" in item for item in stage["omitted"]["review"])
        assert stage["adjudication"] is None
        assert stage["jobs"] == 2
    assert len(shown["stages"][5]["drew_on"]) == 10
    assert shown["stages"][1]["limitations"]  # the replay reviewer of stage 2 found the evidence short
    audit = shown["audit"]
    assert [event["seq"] for event in audit] == list(range(1, len(audit) + 1))
    for event in audit:
        assert set(event) == {"seq", "at", "kind", "actor", "data"}
        assert re.fullmatch(ISO_UTC, event["at"])


def test_team_show_says_that_nothing_is_approved_and_the_results_await_human_review(
    cli: Cli, demo_team: dict[str, Any]
) -> None:
    shown = cli.call("research", "team-show", demo_team["team_id"])

    assert shown.exit_code == 0, str(shown)
    text = " ".join(shown.stdout.split())
    assert demo_team["team_id"] in text and "awaiting_human_review" in text
    assert "12/12" in text
    assert "Nothing here is approved or published" in text
    assert "The results await human review" in text


def test_team_results_show_every_stage_s_stored_analysis_and_review_in_full(
    cli: Cli, demo_team: dict[str, Any]
) -> None:
    results = cli.call("research", "team-results", demo_team["team_id"], "--json").ok()
    assert results["team_id"] == demo_team["team_id"] and "nothing here is approved" in results["note"]
    assert [stage["number"] for stage in results["stages"]] == [1, 2, 3, 4, 5, 6]
    for stage, shown in zip(results["stages"], demo_team["stages"], strict=True):
        for part in ("analysis", "review"):
            assert stage[part]["stored"] and stage[part]["digest_ok"], (stage["number"], part)
            assert stage[part]["job_id"] == shown[part]["job_id"]
        assert stage["review"]["output"]["verdict"] in ("agree", "insufficient_evidence")
    first = results["stages"][0]["analysis"]["output"]
    assert first["findings"][0]["title"] == "Advisory and code agree: attribute lookups reach dunder names"
    assert len(results["stages"][5]["drew_on"]) == 10
    human = cli.call("research", "team-results", demo_team["team_id"])
    assert human.exit_code == 0, str(human)
    text = " ".join(human.stdout.split())
    assert "Advisory and code agree" in text and "verdict insufficient_evidence" in text
    assert "nothing here is approved, published or evidence" in text


def test_teams_lists_the_case_s_team(cli: Cli, demo_team: dict[str, Any]) -> None:
    def listed() -> list[dict[str, Any]]:
        teams = cli.call("research", "teams", "--case-id", demo_team["case_id"], "--json").ok()["teams"]
        assert isinstance(teams, list)
        return teams

    # Temporal's visibility store is eventually consistent.
    teams = wait_until(lambda: [t for t in listed() if t["status"] == "awaiting_human_review"])
    assert [team["team_id"] for team in teams] == [demo_team["team_id"]]
    row = teams[0]
    assert set(row) == {"team_id", "case_id", "status", "started_at", "closed_at"}
    assert row["case_id"] == demo_team["case_id"]
    assert re.fullmatch(ISO_UTC, row["started_at"]) and re.fullmatch(ISO_UTC, row["closed_at"])
    cli.call("research", "teams", "--case-id", "nope", "--json").error(2, "invalid_case_id")
    cli.call("research", "teams", "--case-id", "RSC-000000000000", "--json").error(3, "unknown_case")
    # --status keeps the teams with that status (the search attribute TeamStatus).
    finished = cli.call("research", "teams", "--status", "awaiting_human_review", "--json").ok()["teams"]
    assert demo_team["team_id"] in [team["team_id"] for team in finished]
    assert all(team["status"] == "awaiting_human_review" for team in finished)
    blocked = cli.call("research", "teams", "--status", "blocked", "--json").ok()["teams"]
    assert demo_team["team_id"] not in [team["team_id"] for team in blocked]
    cli.call("research", "teams", "--status", "sleeping", "--json").error(2, "invalid_status")


# ------------------------------------------------------------------------------- adjudicate and cancel


def test_adjudicate_on_a_finished_team_is_refused(cli: Cli, demo_team: dict[str, Any]) -> None:
    result = cli.call(
        "research",
        "adjudicate",
        "--actor",
        "alice",
        "--id",
        demo_team["team_id"],
        "--stage",
        "6",
        "--outcome",
        "accept_primary",
        "--json",
    )

    assert "awaiting_human_review" in result.error(4, "team_finished")
    shown = cli.call("research", "team-show", demo_team["team_id"], "--json").ok()
    assert shown["audit"] == demo_team["audit"]


def test_team_cancel_on_a_finished_team_is_refused_already_finished(
    cli: Cli, demo_team: dict[str, Any]
) -> None:
    cli.call("research", "team-cancel", "--actor", "alice", "--id", demo_team["team_id"], "--json").error(
        4, "already_finished"
    )


def test_an_unknown_team_id_is_not_found(cli: Cli) -> None:
    cli.call("research", "team-show", UNKNOWN_TEAM_ID, "--json").error(3, "unknown_team")
    cli.call(
        "research",
        "adjudicate",
        "--actor",
        "alice",
        "--id",
        UNKNOWN_TEAM_ID,
        "--stage",
        "1",
        "--outcome",
        "stop",
        "--json",
    ).error(3, "unknown_team")
    cli.call("research", "team-cancel", "--actor", "alice", "--id", UNKNOWN_TEAM_ID, "--json").error(
        3, "unknown_team"
    )


def test_a_malformed_team_id_or_outcome_is_invalid_input(cli: Cli, demo_team: dict[str, Any]) -> None:
    cli.call("research", "team-show", MALFORMED_TEAM_ID, "--json").error(2, "invalid_team_id")
    cli.call(
        "research",
        "adjudicate",
        "--actor",
        "alice",
        "--id",
        MALFORMED_TEAM_ID,
        "--stage",
        "1",
        "--outcome",
        "stop",
        "--json",
    ).error(2, "invalid_team_id")
    cli.call("research", "team-cancel", "--actor", "alice", "--id", MALFORMED_TEAM_ID, "--json").error(
        2, "invalid_team_id"
    )
    cli.call(
        "research",
        "adjudicate",
        "--actor",
        "alice",
        "--id",
        demo_team["team_id"],
        "--stage",
        "1",
        "--outcome",
        "approve",
        "--json",
    ).error(2, "unknown_outcome")


@pytest.mark.parametrize("text", ["ok\x1b[2J", "ok\u202e", "   "])
def test_an_adjudication_note_or_cancel_reason_with_control_characters_or_only_blanks_is_refused(
    cli: Cli, demo_team: dict[str, Any], text: str
) -> None:
    team = demo_team["team_id"]
    cli.call(
        "research", "adjudicate", "--actor", "alice", "--id", team, "--stage", "1", "--outcome", "stop",
        "--note", text, "--json",
    ).error(2, "invalid_note")  # fmt: skip
    cli.call("research", "team-cancel", "--actor", "alice", "--id", team, "--reason", text, "--json").error(
        2, "invalid_reason"
    )
    assert cli.call("research", "team-show", team, "--json").json()["status"] == demo_team["status"]


def test_adjudicate_and_team_cancel_without_a_key_are_refused(cli: Cli, demo_team: dict[str, Any]) -> None:
    bare = cli.without_key()
    bare.call(
        "research",
        "adjudicate",
        "--actor",
        "alice",
        "--id",
        demo_team["team_id"],
        "--stage",
        "1",
        "--outcome",
        "stop",
        "--json",
    ).error(4, "actor_key_missing")
    bare.call("research", "team-cancel", "--actor", "alice", "--id", demo_team["team_id"], "--json").error(
        4, "actor_key_missing"
    )


# ----------------------------------------------------------------------- a blocked team: adjudicate, cancel


@pytest.fixture(scope="module")
def unrecorded_case(cli: Cli) -> str:
    """A case whose title ``replay:demo`` has no recording for: its first job fails and blocks stage 1."""
    subject = {"kind": "vulnerability", "identifier": "CVE-2026-0404", "title": "No recording [bold]here[/]"}
    evidence = [{"kind": "code", "content": "eval(template)", "source_ref": "repo@abc:render.py#L1"}]
    return _create_case(
        cli, _write_json(cli.cwd / "unrecorded.json", {"subject": subject, "evidence": evidence})
    )


def _blocked_team(cli: Cli, case_id: str) -> dict[str, Any]:
    request, team_id = _fresh_request(cli)
    team: dict[str, Any] = _team_start(cli, case_id, request, "--wait").ok()
    assert team["team_id"] == team_id
    assert (team["status"], team["current_stage"], team["jobs_used"]) == ("blocked", 1, 1), team
    assert team["block"]["stage"] == 1 and team["block"]["kind"] == "analysis"
    assert team["block"]["error_type"] == "replay_no_recording"
    assert team["stages"][0]["state"] == "blocked"
    return team


def test_a_blocked_stage_takes_only_its_own_block_outcomes_and_stop_ends_the_team(
    cli: Cli, unrecorded_case: str
) -> None:
    team_id = _blocked_team(cli, unrecorded_case)["team_id"]
    shown = cli.call("research", "team-show", team_id)
    assert shown.exit_code == 0, str(shown)
    assert "waits for a person" in " ".join(shown.stdout.split())
    assert "No recording [bold]here[/]" in shown.stdout  # the case's title, shown literally

    def adjudicate(stage: str, outcome: str, *extra: str) -> Any:
        return cli.call(
            "research",
            "adjudicate",
            "--actor",
            "alice",
            "--id",
            team_id,
            "--stage",
            stage,
            "--outcome",
            outcome,
            "--json",
            *extra,
        )

    adjudicate("2", "stop").error(4, "wrong_stage")
    adjudicate("1", "accept_primary").error(4, "outcome_not_allowed")
    stopped = adjudicate("1", "stop", "--note", "no recording: stop here").ok()

    assert stopped["status"] == "failed"
    assert stopped["block"] is None
    adjudication = stopped["stages"][0]["adjudication"]
    assert (adjudication["outcome"], adjudication["actor"], adjudication["note"]) == (
        "stop",
        "alice",
        "no recording: stop here",
    )
    assert re.fullmatch(ISO_UTC, adjudication["at"])
    assert "adjudicated" in [event["kind"] for event in stopped["audit"]]
    assert stopped["jobs_used"] == 1


def test_team_cancel_stops_a_waiting_team(cli: Cli, unrecorded_case: str) -> None:
    team_id = _blocked_team(cli, unrecorded_case)["team_id"]

    cancelled = cli.call(
        "research", "team-cancel", "--actor", "alice", "--id", team_id, "--reason", "not needed", "--json"
    ).ok()

    events = [event for event in cancelled["audit"] if event["kind"] == "cancel_requested"]
    assert [(event["actor"], event["data"]["reason"]) for event in events] == [("alice", "not needed")]

    def ended() -> dict[str, Any] | None:
        shown = cli.call("research", "team-show", team_id, "--json").ok()
        return shown if shown["status"] == "cancelled" else None

    assert wait_until(ended)["jobs_used"] == 1


# ----------------------------------------------------------------------------------- untrusted text


def test_the_human_view_shows_model_and_operator_text_literally() -> None:
    from rich.console import Console

    from contracts.output import JobKind
    from control.team_views import render_team

    hostile = "[bold red]APPROVED[/] \x1b[2J\u202eevil :smile:"
    at = dt.datetime(2026, 11, 25, 10, 0, tzinfo=dt.UTC)
    stages = [StageRecord(number=s.number, name=s.name, profile_id=s.profile_id) for s in STAGES]
    stages[0] = stages[0].model_copy(
        update={
            "limitations": [f"limitation {hostile}"],
            "adjudication": Adjudication(
                stage=1, outcome=AdjudicationOutcome.RECORD_BOTH, actor="alice", note=f"note {hostile}", at=at
            ),
        }
    )
    view = TeamView(
        team_id="RTM-0123456789ABCDEF",
        case_id="RSC-0123456789AB",
        request_id=f"request {hostile}",
        started_by="alice",
        status=TeamStatus.BLOCKED,
        created_at=at,
        stages=stages,
        current_stage=2,
        jobs_used=3,
        block=StageBlock(stage=2, kind=JobKind.ANALYSIS, error_type="model_task", message=f"block {hostile}"),
        audit=[AuditEvent(seq=1, at=at, kind="stage_blocked", data={"message": hostile})],
    )
    console = Console(record=True, width=400, force_terminal=True, color_system="standard")

    render_team(console, view)

    text = console.export_text(styles=False)
    assert "\x1b" not in text and "\u202e" not in text
    assert "[bold red]APPROVED[/]" in text and ":smile:" in text
    assert "\\x1b[2J" in text and "\\u202e" in text
    for label in ("limitation", "note", "request", "block"):
        assert f"{label} [bold red]APPROVED[/]" in text
    assert "waits for a person" in text and "Nothing here is approved or published" in text
