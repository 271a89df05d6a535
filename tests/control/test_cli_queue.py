"""``specialists queue`` against a real Temporal dev server and a worker process: add, update, approve,
reject, dispatch, list, show, capacity, autopilot and events with their ``--json`` shapes, refusals with their
structured data and exit codes, and bad flags refused before anything is sent.

One worker process serves the module (its own task queue and state directory, with ``alice``
registered); each test works on items it adds itself.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contracts.queue_approval import GAP_ORDER
from contracts.queue_items import QueueStatus
from infra.devserver import DevServer
from tests.control.cli_harness import ISO_UTC, RUN_ID, Cli, CliResult, running_worker, wait_until
from tests.workflows.queue_harness import SLOW_QUERY_ITEM

ITEM_KEYS = {
    "key",
    "shipped",
    "status",
    "blocker",
    "failure",
    "title",
    "repo_alias",
    "tier",
    "scope",
    "evidence",
    "value",
    "urgency",
    "risk",
    "notes",
    "cycle",
    "runs",
    "rounds",
    "escalations",
    "events",
    "created_at",
    "updated_at",
    "intake",
    "added_by",
}
SCOPE = {
    "problem": "p95 latency of GET /orders exceeds 2 s at 200 rps",
    "evidence": "load test of 2026-11-30",
    "change": "find the cause; propose the smallest fix",
    "judgment_calls": "which index, if any",
    "tests": "the load test stays under 500 ms p95",
    "constraints": "no schema change without a migration",
}


def complete(title: str, **changes: Any) -> dict[str, Any]:
    return {
        "title": title,
        "repo_alias": "orders",
        "scope": SCOPE,
        "evidence": ["issue:123"],
        "value": "H",
        "urgency": "M",
        "risk": "low",
        **changes,
    }


@pytest.fixture(scope="module")
def cli(temporal_dev_server: DevServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """The CLI configured for the shared dev server, with a worker running on its own queue."""
    root = tmp_path_factory.mktemp("cli-queue")
    cli = Cli.isolated(
        root,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"cli-queue-{uuid.uuid4().hex}",
    )
    assert cli.call("actors", "register", "alice", "--name", "Alice").exit_code == 0
    assert cli.call("models", "select", "--primary", "replay:demo", "--actor", "alice").exit_code == 0
    with running_worker(cli.env, root / "worker.log"):
        yield cli


def refusal(result: CliResult, exit_code: int, code: str) -> dict[str, Any]:
    """The ``{"error": {...}}`` of a refused ``--json`` command, with ``code`` and its exit code."""
    assert result.exit_code == exit_code, str(result)
    data = result.json()
    assert set(data) == {"error"}, str(result)
    error = data["error"]
    assert error["code"] == code, str(result)
    assert isinstance(error["message"], str) and error["message"], str(result)
    return dict(error)


def add(cli: Cli, data: dict[str, Any]) -> dict[str, Any]:
    return cli.call("queue", "add", "--input-json", json.dumps(data), "--actor", "alice", "--json").ok()


def test_add_prints_the_item_and_its_spec_and_show_prints_the_same(cli: Cli, tmp_path: Path) -> None:
    source = tmp_path / "item.json"
    source.write_text(json.dumps({"title": "Orders are slow"}), encoding="utf-8")
    added = cli.run("queue", "add", "--input-json", f"@{source}", "--actor", "alice", "--json").ok()
    assert set(added) == {"item", "spec"}
    item = added["item"]
    assert set(item) == ITEM_KEYS
    assert re.fullmatch(r"Q-[1-9][0-9]*", item["key"])
    assert (item["status"], item["blocker"], item["tier"]) == ("proposal", None, "read_only")
    assert added["spec"] == {"complete": False, "gaps": list(GAP_ORDER)}
    assert [event["kind"] for event in item["events"]] == ["added"]
    assert set(item["events"][0]) == {"seq", "at", "kind", "actor", "data"}
    assert re.fullmatch(ISO_UTC, item["created_at"])
    shown = cli.call("queue", "show", item["key"], "--json").ok()
    assert shown == {**added, "attention": None}
    human = cli.call("queue", "show", item["key"])
    assert human.exit_code == 0 and "Orders are slow" in human.stdout and "repo_alias" in human.stdout


def test_an_add_sent_again_with_its_request_id_returns_the_item_it_added(cli: Cli) -> None:
    """A retried ``queue add`` (the operator could not tell whether the first one landed) adds
    nothing new; the same id with another proposal is refused; the id stays with the item through
    its approval's rename."""
    request_id = f"retry-{uuid.uuid4().hex}"
    data = {"title": "Retried add"}
    args = ("queue", "add", "--input-json", json.dumps(data), "--actor", "alice", "--request-id", request_id)
    first = cli.call(*args, "--json").ok()
    item = first["item"]
    assert first["deduplicated"] is False
    assert item["added_by"]["request_id"] == request_id
    assert item["events"][0]["data"] == {"key": item["key"], "request_id": request_id}
    again = cli.call(*args, "--json").ok()
    assert again["deduplicated"] is True and again["item"] == item
    human = cli.call(*args)
    assert human.exit_code == 0 and f"Already added with this request id: {item['key']}" in human.stdout
    listed = cli.call("queue", "list", "--json").ok()
    assert [row["key"] for row in listed["items"] if row["title"] == "Retried add"] == [item["key"]]

    other = json.dumps(complete("Another proposal"))
    conflict = refusal(
        cli.call(
            "queue", "add", "--input-json", other, "--actor", "alice", "--request-id", request_id, "--json"
        ),
        4,
        "request_id_conflict",
    )
    assert conflict["key"] == item["key"]

    fields = {key: value for key, value in complete("Retried add").items() if key != "title"}
    update = ("queue", "update", item["key"], "--input-json", json.dumps(fields), "--actor", "alice")
    cli.call(*update, "--json").ok()
    approved = cli.call("queue", "approve", item["key"], "--actor", "alice", "--json").ok()
    renamed = approved["item"]["key"]
    assert renamed != item["key"] and approved["item"]["added_by"] == item["added_by"]
    after = cli.call(*args, "--json").ok()
    assert after["deduplicated"] is True and after["item"]["key"] == renamed
    assert after["item"]["status"] == "approved"


def test_approval_names_every_gap_then_renames_the_completed_proposal(cli: Cli) -> None:
    key = add(cli, {"title": "Thin at first"})["item"]["key"]
    refused = refusal(
        cli.call("queue", "approve", key, "--actor", "alice", "--json"), 4, "item_contract_incomplete"
    )
    assert refused["gaps"] == list(GAP_ORDER)
    assert refused["spec"] == {"complete": False, "gaps": list(GAP_ORDER)}
    fields = {name: value for name, value in complete("x").items() if name != "title"}
    updated = cli.call(
        "queue", "update", key, "--input-json", json.dumps(fields), "--actor", "alice", "--json"
    ).ok()
    assert updated["spec"] == {"complete": True, "gaps": []}
    approved = cli.call("queue", "approve", key, "--actor", "alice", "--json").ok()
    assert set(approved) == {"item", "spec", "previous_key"}
    assert approved["previous_key"] == key
    new_key = approved["item"]["key"]
    assert re.fullmatch(r"ORD-[1-9][0-9]*", new_key)
    assert approved["item"]["status"] == "approved"
    renamed = [event["data"] for event in approved["item"]["events"] if event["kind"] == "renamed"]
    assert renamed == [{"from": key, "to": new_key}]
    gone = refusal(cli.call("queue", "show", key, "--json"), 3, "unknown_item")
    assert new_key in gone["message"]


def test_an_edit_tier_item_is_approved_only_on_a_registered_repository(cli: Cli) -> None:
    key = add(cli, complete("Fix the slow orders query", tier="worktree", repo_alias="nowhere"))["item"][
        "key"
    ]
    refused = refusal(
        cli.call("queue", "approve", key, "--actor", "alice", "--json"), 3, "unknown_repository"
    )
    assert "nowhere" in refused["message"]
    assert cli.call("queue", "show", key, "--json").ok()["item"]["status"] == "proposal"
    # A read_only item may name one: its run is analysed without the repository.
    key = add(cli, complete("Audit the slow orders query", repo_alias="nowhere"))["item"]["key"]
    assert (
        cli.call("queue", "approve", key, "--actor", "alice", "--json").ok()["item"]["status"] == "approved"
    )


def test_a_refused_move_names_the_status_and_the_allowed_moves(cli: Cli) -> None:
    key = add(cli, complete("Approve then reject"))["item"]["key"]
    cli.call("queue", "approve", key, "--actor", "alice", "--json").ok()
    refused = refusal(
        cli.call("queue", "reject", key, "--actor", "alice", "--reason", "no", "--json"),
        4,
        "transition_refused",
    )
    assert refused["status"] == "approved"
    assert refused["key"] == key
    assert [row["move"] for row in refused["allowed"]] == ["dispatch", "block"]
    assert set(refused["allowed"][0]) == {"move", "to", "by", "blockers"}
    not_proposal = refusal(
        cli.call("queue", "update", key, "--input-json", '{"notes": "late"}', "--actor", "alice", "--json"),
        4,
        "not_a_proposal",
    )
    assert not_proposal["status"] == "approved"
    human = cli.call("queue", "reject", key, "--actor", "alice")
    assert human.exit_code == 4 and "transition_refused" in human.stderr and "dispatch" in human.stderr


def test_reject_keeps_the_reason_in_the_items_events(cli: Cli) -> None:
    key = add(cli, {"title": "Not wanted"})["item"]["key"]
    rejected = cli.call("queue", "reject", key, "--actor", "alice", "--reason", "a duplicate", "--json").ok()
    assert rejected["item"]["status"] == "rejected"
    assert rejected["item"]["events"][-1]["data"]["reason"] == "a duplicate"


def test_list_shows_counts_the_fleet_line_and_the_keys_ready_to_dispatch(cli: Cli) -> None:
    low = add(cli, complete("Low priority", value="L", urgency="L"))["item"]["key"]
    high = add(cli, complete("High priority", value="H", urgency="H"))["item"]["key"]
    for key in (low, high):
        cli.call("queue", "approve", key, "--actor", "alice", "--json").ok()
    listing = cli.call("queue", "list", "--json").ok()
    assert set(listing) == {
        "items",
        "counts",
        "fleet",
        "ready",
        "autopilot",
        "grant",
        "settings",
        "main_writes",
        "archived_count",
        "tombstones_forgotten",
    }
    assert listing["main_writes"] == []
    assert listing["archived_count"] == listing["tombstones_forgotten"] == 0  # nothing ended 30 days ago
    assert listing["grant"] is None  # autopilot off: no standing grant
    assert set(listing["counts"]) == {status.value for status in QueueStatus}
    assert listing["counts"]["approved"] == len(listing["ready"])
    assert listing["ready"].index(high) < listing["ready"].index(low)
    assert listing["fleet"]["line"] == f"0/{listing['fleet']['slots']}"
    row = next(row for row in listing["items"] if row["key"] == high)
    assert row["priority"] == 9 and row["spec"] == {"complete": True, "gaps": []}
    approved = cli.call("queue", "list", "--status", "approved", "--json").ok()
    assert {row["status"] for row in approved["items"]} == {"approved"}
    later = cli.call("queue", "list", "--since", "2999-01-01T00:00:00Z", "--json").ok()
    assert later["items"] == [] and later["counts"] == listing["counts"]
    human = cli.call("queue", "list")
    assert human.exit_code == 0 and "ready to dispatch" in human.stdout and high in human.stdout
    assert "counts (the whole queue):" in human.stdout
    none_later = cli.call("queue", "list", "--since", "2999-01-01T00:00:00Z").stdout
    assert "no item matches" in none_later and "goal queue" not in none_later  # no empty table


def test_capacity_and_autopilot_change_the_settings_and_show_in_events(cli: Cli) -> None:
    capacity = cli.call("queue", "capacity", "4", "--actor", "alice", "--json").ok()
    assert capacity["settings"]["slots"] == 4
    assert capacity["fleet"]["slots"] == 4
    ready = cli.call("queue", "list", "--json").ok()["ready"]
    free = cli.call("queue", "list", "--json").ok()["fleet"]["free"]
    autopilot = cli.call("queue", "autopilot", "on", "--actor", "alice", "--json").ok()
    assert autopilot["settings"]["autopilot"] is True
    # On, the queue itself fills the free slots with the approved items, highest priority first.
    assert ready and free
    picked = set(ready[:free])

    def filled() -> bool:
        return set(cli.call("queue", "list", "--json").ok()["fleet"]["occupied"]) == picked

    assert wait_until(filled, timeout=10)
    grant = cli.call("queue", "list", "--json").ok()["grant"]
    assert grant["granted_by"] == "alice" and re.fullmatch(ISO_UTC, grant["granted_at"])
    assert "autopilot on (runs created by alice, granted" in cli.call("queue", "list").stdout
    cli.call("queue", "autopilot", "off", "--actor", "alice", "--json").ok()
    assert cli.call("queue", "list", "--json").ok()["grant"] is None
    events = cli.call("queue", "events", "--json").ok()["events"]
    settings = [event for event in events if event["kind"] == "settings"]
    assert [event["data"]["setting"] for event in settings][-3:] == ["slots", "autopilot", "autopilot"]
    assert all(event["key"] is None and event["actor"] == "alice" for event in settings)
    ats = [event["at"] for event in events]
    assert ats == sorted(ats)
    assert cli.call("queue", "events", "--since", "2999-01-01T00:00:00Z", "--json").ok() == {"events": []}
    cli.call("queue", "capacity", "50", "--actor", "alice", "--json").ok()  # room for the later tests


def test_recovery_delay_and_escalation_model_are_set_shown_in_list_and_a_bad_model_is_refused(
    cli: Cli,
) -> None:
    delay = cli.call("queue", "recovery-delay", "120", "--actor", "alice", "--json").ok()
    assert delay["settings"]["recovery_delay_seconds"] == 120
    model = cli.call("queue", "escalation-model", "replay:demo", "--actor", "alice", "--json").ok()
    assert model["settings"]["escalation_model"] == "replay:demo"
    listing = cli.call("queue", "list", "--json").ok()
    assert listing["settings"]["recovery_delay_seconds"] == 120
    assert listing["settings"]["escalation_model"] == "replay:demo"
    human = cli.call("queue", "list")
    assert "recovery delay 120 s; escalation model replay:demo" in human.stdout
    # A model that is not registered is refused before anything is sent; none clears the setting.
    unknown = cli.call("queue", "escalation-model", "openai:nowhere", "--actor", "alice", "--json")
    assert "models add openai:nowhere" in unknown.error(3, "unknown_model")
    malformed = cli.call("queue", "escalation-model", "no-colon", "--actor", "alice", "--json")
    malformed.error(2, "invalid_model")
    assert cli.call("queue", "recovery-delay", "-1", "--actor", "alice", "--json").exit_code == 2
    cleared = cli.call("queue", "escalation-model", "none", "--actor", "alice", "--json").ok()
    assert cleared["settings"]["escalation_model"] is None
    cli.call("queue", "recovery-delay", "600", "--actor", "alice", "--json").ok()
    settings = [e for e in cli.call("queue", "events", "--json").ok()["events"] if e["kind"] == "settings"]
    assert [e["data"]["setting"] for e in settings][-4:] == [
        "recovery_delay_seconds",
        "escalation_model",
        "escalation_model",
        "recovery_delay_seconds",
    ]


def test_route_next_records_a_recommendation_under_recommend_mode_and_is_refused_with_automation_off(
    cli: Cli,
) -> None:
    key = add(cli, complete("Route me first", value="H", urgency="H"))["item"]["key"]
    cli.call("queue", "approve", key, "--actor", "alice", "--json").ok()
    ready = cli.call("queue", "list", "--json").ok()["ready"]
    # The default policy (mode recommend): the next item gets a recommendation and no run.
    routed = cli.call("queue", "route-next", "--actor", "alice", "--json").ok()
    assert routed["item"]["key"] == ready[0] and routed["run_id"] is None
    assert routed["routed"]["tier"] == "recommend" and routed["routed"]["policy_mode"] == "recommend"
    assert routed["item"]["status"] == "approved" and routed["item"]["events"][-1]["kind"] == "routed"
    human = cli.call("queue", "route-next", "--actor", "alice")
    assert human.exit_code == 0 and "recommended only (no run started" in human.stdout
    cli.call("policy", "--mode", "off", "--actor", "alice", "--json").ok()
    try:
        refused = cli.call("queue", "route-next", "--actor", "alice", "--json")
        assert "automatic runs are refused" in refused.error(4, "automation_off")
    finally:
        cli.call("policy", "--mode", "recommend", "--actor", "alice", "--json").ok()
    assert cli.call("queue", "route-next", "--json").exit_code == 2  # --actor is required


def test_bad_flags_and_input_are_refused_before_anything_is_sent(cli: Cli) -> None:
    offline = cli.with_env(SPECIALISTS_TEMPORAL_ADDRESS="127.0.0.1:1")
    cases = [
        (("queue", "add", "--input-json", '{"titel": "typo"}', "--actor", "alice"), "invalid_item"),
        (("queue", "add", "--input-json", '{"title": "x"}'), "actor_required"),
        (
            ("queue", "add", "--input-json", '{"title": "x"}', "--actor", "alice", "--request-id", ""),
            "invalid_request_id",
        ),
        (
            ("queue", "add", "--input-json", '{"title": "x"}', "--actor", "alice", "--request-id", "a\nb"),
            "invalid_request_id",
        ),
        (
            ("queue", "add", "--input-json", '{"title": "x"}', "--actor", "alice", "--request-id", "r" * 201),
            "invalid_request_id",
        ),
        (
            ("queue", "update", "Q-1", "--input-json", '{"title": null}', "--actor", "alice"),
            "invalid_item_update",
        ),
        (("queue", "approve", "not-a-key", "--actor", "alice"), "invalid_key"),
        (("queue", "capacity", "0", "--actor", "alice"), "invalid_capacity"),
        (("queue", "autopilot", "maybe", "--actor", "alice"), "invalid_autopilot"),
        (("queue", "list", "--status", "busy"), "invalid_status"),
        (("queue", "events", "--since", "yesterday"), "invalid_since"),
        (("queue", "park", "ORD-1", "--actor", "alice"), "reason_required"),
        (("queue", "list", "--since", "2026-12-01T00:00:00"), "invalid_since"),
    ]
    for args, code in cases:
        result = offline.call(*args, "--json")
        assert result.error(2, code), str(result)
    unknown = offline.call("queue", "approve", "ORD-1", "--actor", "mallory", "--json")
    assert unknown.error(3, "unknown_actor")


def test_dispatch_starts_the_run_the_review_passes_it_and_done_accepts_it(cli: Cli) -> None:
    key = add(cli, SLOW_QUERY_ITEM)["item"]["key"]
    cli.call("queue", "approve", key, "--actor", "alice", "--json").ok()
    early = refusal(cli.call("queue", "done", key, "--actor", "alice", "--json"), 4, "transition_refused")
    assert early["status"] == "approved"
    dispatched = cli.call("queue", "dispatch", key, "--actor", "alice", "--json").ok()
    assert set(dispatched) == {"item", "spec", "run_id"}
    run_id = dispatched["run_id"]
    assert re.fullmatch(RUN_ID, run_id)
    assert dispatched["item"]["status"] == "active"
    assert [run["run_id"] for run in dispatched["item"]["runs"]] == [run_id]
    listing = cli.call("queue", "list", "--json").ok()
    assert key in listing["fleet"]["occupied"] and key not in listing["ready"]

    def in_human_review() -> dict[str, Any] | None:
        shown = cli.call("queue", "show", key, "--json").ok()
        return shown if shown["item"]["status"] == "human-review" else None

    shown = wait_until(in_human_review, timeout=45)
    assert shown["attention"] is None
    [round_] = shown["item"]["rounds"]
    assert (round_["run_id"], round_["verdict"], round_["score"]) == (run_id, "PASS", 0)
    assert cli.call("show", run_id, "--json").ok()["status"] == "awaiting_decision"
    done = cli.call("queue", "done", key, "--actor", "alice", "--note", "looks right", "--json").ok()
    assert set(done) == {"item", "spec", "run_id", "handover"} and done["run_id"] == run_id
    handover = done["handover"]
    assert (handover["run_id"], handover["tier"], handover["decision"]) == (run_id, "read_only", "accepted")
    assert handover["review"] == "agree" and handover["patch"] is None and handover["change"] is None
    assert re.fullmatch(r"[0-9a-f]{64}", handover["contract_sha256"])
    assert done["item"]["status"] == "done"
    assert done["item"]["events"][-1]["data"]["reason"] == "looks right"
    run = cli.call("show", run_id, "--json").ok()
    assert run["status"] == "accepted" and run["decision"]["actor"] == "alice"
    again = refusal(cli.call("queue", "dispatch", key, "--actor", "alice", "--json"), 4, "transition_refused")
    assert again["status"] == "done"


def test_dispatch_refuses_a_high_risk_item_unless_confirmed(cli: Cli) -> None:
    key = add(cli, complete("A risky change", risk="high"))["item"]["key"]
    cli.call("queue", "approve", key, "--actor", "alice", "--json").ok()
    refused = refusal(
        cli.call("queue", "dispatch", key, "--actor", "alice", "--json"), 4, "high_risk_unconfirmed"
    )
    assert refused["key"] == key and refused["risk"] == "high"
    assert cli.call("queue", "show", key, "--json").ok()["item"]["status"] == "approved"
    confirmed = cli.call("queue", "dispatch", key, "--actor", "alice", "--confirm-high-risk", "--json").ok()
    assert confirmed["item"]["status"] == "active"


def test_park_release_and_reopen_are_refused_where_the_table_has_no_such_move(cli: Cli) -> None:
    key = add(cli, {"title": "A proposal"})["item"]["key"]
    for move in (("park", "--reason", "x"), ("release",), ("reopen",)):
        refused = refusal(
            cli.call("queue", move[0], key, *move[1:], "--actor", "alice", "--json"), 4, "transition_refused"
        )
        assert refused["status"] == "proposal" and refused["attempted"] == move[0]


def test_without_a_worker_every_queue_command_says_so_at_once_and_sends_nothing(cli: Cli) -> None:
    idle = cli.with_env(SPECIALISTS_TASK_QUEUE=f"nobody-polls-{uuid.uuid4().hex}")
    for args in (
        ("queue", "list"),
        ("queue", "add", "--input-json", '{"title": "x"}', "--actor", "alice"),
        ("queue", "capacity", "2", "--actor", "alice"),
    ):
        message = idle.call(*args, "--json").error(5, "no_worker")
        assert "no worker is polling task queue" in message
