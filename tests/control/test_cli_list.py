"""``specialists list`` (``control.commands.inspect``) on a store seeded here: the newest runs first,
at most ``--limit`` of them, and the human view says when more runs match than it lists."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from contracts.enums import Tier
from contracts.runs import RunStatus, RunSummary
from store.database import open_store
from tests.control.cli_harness import Cli

START = dt.datetime(2026, 11, 1, 9, 30, tzinfo=dt.UTC)
MORE = "more runs match"


def _summary(index: int, status: RunStatus) -> RunSummary:
    at = START + dt.timedelta(minutes=index)
    return RunSummary(
        run_id=f"SOR-{index:016d}",
        status=status,
        tier=Tier.READ_ONLY,
        automatic=False,
        primary="database-optimizer",
        reviewer="backend-architect",
        risk=None,
        repo_alias=None,
        title=f"run {index}",
        contract_sha256=None,
        request_id=None,
        created_at=at,
        updated_at=at,
    )


def _seeded(database_url: str, tmp_path: Path) -> Cli:
    with open_store(database_url, create=True) as store:
        for index in range(3):
            store.project_run(_summary(index, RunStatus.ACCEPTED), [])
        store.project_run(_summary(3, RunStatus.FAILED), [])
    return Cli.isolated(tmp_path, SPECIALISTS_DATABASE_URL=database_url)


def test_list_says_when_more_runs_match_than_its_limit_lists(database_url: str, tmp_path: Path) -> None:
    cli = _seeded(database_url, tmp_path)

    result = cli.call("list", "--limit", "2")
    out = result.stdout

    assert result.exit_code == 0, str(result)

    assert "SOR-0000000000000003" in out and "SOR-0000000000000002" in out
    assert "SOR-0000000000000001" not in out
    assert "only the newest 2 are listed: more runs match" in out


def test_list_says_nothing_of_more_runs_when_it_lists_every_match(database_url: str, tmp_path: Path) -> None:
    cli = _seeded(database_url, tmp_path)

    assert MORE not in cli.call("list", "--limit", "4").stdout
    assert MORE not in cli.call("list", "--status", "failed", "--limit", "1").stdout
    assert MORE in cli.call("list", "--status", "accepted", "--limit", "2").stdout


def test_list_json_keeps_its_shape_and_lists_at_most_the_limit(database_url: str, tmp_path: Path) -> None:
    cli = _seeded(database_url, tmp_path)

    listed = cli.call("list", "--limit", "2", "--json").ok()

    assert list(listed) == ["runs"]
    assert [r["run_id"] for r in listed["runs"]] == ["SOR-0000000000000003", "SOR-0000000000000002"]
