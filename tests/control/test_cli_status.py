"""``specialists status`` as an operator's first look at a deployment, and where the deployment is.

The state directory defaults to an absolute path (``$XDG_STATE_HOME/specialists``, else
``~/.local/state/specialists``), so the CLI finds the same deployment from any working directory.
``status`` reports it, Temporal's reachability (within 2 s) and the workers polling the task queue,
the database with its credentials masked, its schema revision against the Alembic head, and the
runs the projection shows active; configuration this process cannot verify (no trust anchor) is
reported as unknown with the reason, and the rest as it is. Real components throughout: CLI
processes, the shared dev server and a worker process, SQLite and (when configured) PostgreSQL.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import subprocess
import time
import uuid
from pathlib import Path

from contracts.enums import Tier
from contracts.runs import RunStatus, RunSummary
from infra.devserver import DevServer
from runtime.settings import Settings
from store.database import open_store
from tests.control.cli_harness import Cli, running_worker, wait_until

CONFIGURATION_KEYS = {"catalog", "policy", "models", "repositories", "actors"}
DEPLOYMENT_KEYS = {"state_dir", "temporal", "database", "runs", "worker_settings"}


def _at_home(root: Path, cwd: Path, **extra: str) -> Cli:
    """The CLI in working directory ``cwd`` with no ``SPECIALISTS_STATE_DIR``: only ``HOME`` (a
    directory under ``root``) and ``extra`` decide where the state lives."""
    cli = Cli.isolated(root)
    env = {name: value for name, value in cli.env.items() if name not in ("SPECIALISTS_STATE_DIR",)}
    env.pop("XDG_STATE_HOME", None)
    env["HOME"] = str(root / "home")
    env["SPECIALISTS_TEMPORAL_ADDRESS"] = f"127.0.0.1:{_closed_port()}"
    env.update(extra)
    cwd.mkdir(parents=True, exist_ok=True)
    return Cli(cwd=cwd, env=env)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ------------------------------------------------------------------------------------ state directory


def test_the_default_state_directory_is_the_same_from_any_working_directory(tmp_path: Path) -> None:
    here = _at_home(tmp_path, tmp_path / "clone")
    there = _at_home(tmp_path, tmp_path / "elsewhere" / "deeper")
    expected = str(tmp_path / "home" / ".local" / "state" / "specialists")

    assert here.call("status", "--json").ok()["state_dir"] == expected
    assert there.call("status", "--json").ok()["state_dir"] == expected

    here.call("actors", "register", "alice", "--name", "Alice", "--json").ok()
    assert [actor["id"] for actor in there.call("actors", "--json").ok()["actors"]] == ["alice"]
    assert (tmp_path / "home" / ".local" / "state" / "specialists" / "specialists.db").is_file()
    assert not (tmp_path / "clone" / ".specialists").exists()
    assert not (tmp_path / "elsewhere" / "deeper" / ".specialists").exists()


def test_xdg_state_home_is_used_when_absolute_and_ignored_when_relative(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    absolute = _at_home(tmp_path, tmp_path / "a", XDG_STATE_HOME=str(xdg))
    relative = _at_home(tmp_path, tmp_path / "b", XDG_STATE_HOME="relative/state")

    assert absolute.call("status", "--json").ok()["state_dir"] == str(xdg / "specialists")
    assert relative.call("status", "--json").ok()["state_dir"] == str(
        tmp_path / "home" / ".local" / "state" / "specialists"
    )


def test_specialists_state_dir_overrides_the_default(tmp_path: Path) -> None:
    chosen = tmp_path / "chosen"
    cli = _at_home(tmp_path, tmp_path / "a", SPECIALISTS_STATE_DIR=str(chosen))
    status = cli.call("status", "--json").ok()
    assert status["state_dir"] == str(chosen)
    assert status["database"]["url"] == f"sqlite:///{chosen}/specialists.db"


def test_this_test_session_keeps_its_default_state_out_of_the_real_home() -> None:
    # tests/conftest.py points XDG_STATE_HOME at a temporary directory for the whole session.
    environ = {key: value for key, value in os.environ.items() if key != "SPECIALISTS_STATE_DIR"}
    default = Settings.from_env(environ).state_dir
    assert not default.is_relative_to(Path(os.path.expanduser("~")))


# ------------------------------------------------------------------------------------------- Temporal


def test_status_names_the_workers_polling_the_task_queue(
    temporal_dev_server: DevServer, tmp_path: Path
) -> None:
    cli = Cli.isolated(
        tmp_path,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"status-{uuid.uuid4().hex}",
    )
    idle = cli.call("status", "--json").ok()["temporal"]
    assert idle == {
        "address": temporal_dev_server.address,
        "namespace": "default",
        "tls": False,
        "client_certificate": False,
        "api_key_set": False,
        "profile": None,
        "config_file": None,
        "task_queue": cli.env["SPECIALISTS_TASK_QUEUE"],
        "reachable": True,
        "error": None,
        "workers": {"count": 0, "identities": []},
    }
    assert "none polling task queue" in cli.call("status").stdout

    with running_worker(cli.env, tmp_path / "worker.log"):
        # The worker's first polls reach the server a moment after it says it is polling.
        temporal = wait_until(
            lambda: (found := cli.call("status", "--json").ok()["temporal"])["workers"]["count"] and found
        )
        shown = cli.call("status").stdout
    assert temporal["workers"]["count"] == 1
    (identity,) = temporal["workers"]["identities"]
    assert identity.endswith(f"@{socket.gethostname()}")
    assert identity in shown and "1 polling task queue" in shown


def test_temporal_that_does_not_answer_is_reported_within_2_seconds(tmp_path: Path) -> None:
    # A port that accepts connections and never speaks: the connection hangs rather than failing.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        cli = Cli.isolated(tmp_path, SPECIALISTS_TEMPORAL_ADDRESS=address)
        started = time.monotonic()
        status = cli.call("status", "--json").ok()
        elapsed = time.monotonic() - started
    assert elapsed < 4.0, elapsed
    temporal = status["temporal"]
    assert (temporal["address"], temporal["reachable"], temporal["workers"]) == (address, False, None)
    assert address in temporal["error"]


# ------------------------------------------------------------------------------------------- database


def _summary(run_id: str, status: RunStatus) -> RunSummary:
    now = dt.datetime.now(dt.UTC)
    return RunSummary(
        run_id=run_id,
        status=status,
        tier=Tier.READ_ONLY,
        automatic=False,
        primary="database-optimizer",
        reviewer="backend-architect",
        risk=None,
        repo_alias=None,
        title="a run",
        contract_sha256=None,
        request_id=None,
        created_at=now,
        updated_at=now,
    )


def test_status_reports_the_schema_at_head_and_the_active_runs(database_url: str, tmp_path: Path) -> None:
    with open_store(database_url, create=True) as store:
        for index, status in enumerate(
            [RunStatus.RUNNING, RunStatus.AWAITING_APPROVAL, RunStatus.ACCEPTED, RunStatus.FAILED]
        ):
            store.project_run(_summary(f"SOR-{index:016d}", status), [])
    cli = Cli.isolated(tmp_path, SPECIALISTS_DATABASE_URL=database_url)

    status = cli.call("status", "--json").ok()

    assert set(status) >= CONFIGURATION_KEYS | DEPLOYMENT_KEYS
    database = status["database"]
    assert (database["reachable"], database["error"]) == (True, None)
    schema = database["schema"]
    assert schema["exists"] is True
    assert schema["current"] == schema["head"]
    assert schema["migration_needed"] is False
    assert status["runs"] == {"active": 2}
    assert status["policy"] is not None
    assert "(head, current)" in cli.call("status").stdout


def test_a_database_behind_the_migrations_is_reported_as_needing_one(tmp_path: Path) -> None:
    from alembic import command

    from store.database import parse_database_url
    from store.engine import create_store_engine
    from store.migrate import alembic_config

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = create_store_engine(parse_database_url(url), create=True)
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0005")
    engine.dispose()
    cli = Cli.isolated(tmp_path, SPECIALISTS_DATABASE_URL=url)

    status = cli.call("status", "--json").ok()

    schema = status["database"]["schema"]
    assert schema["current"] == "0005"
    assert schema["head"] != "0005"
    assert schema["migration_needed"] is True
    assert status["runs"] == {"active": None}
    assert {key: status[key] for key in ("policy", "models", "repositories", "actors")} == dict.fromkeys(
        ("policy", "models", "repositories", "actors")
    )
    shown = cli.call("status").stdout
    assert "migration needed" in shown and "0005" in shown


def test_a_store_path_where_no_store_can_be_created_is_reported_and_list_names_the_store_it_found_none_at(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    url = f"sqlite:///{blocker / 'state' / 'specialists.db'}"
    cli = Cli.isolated(tmp_path, SPECIALISTS_DATABASE_URL=url)

    schema = cli.call("status", "--json").ok()["database"]["schema"]
    shown = cli.call("status").stdout
    listed = cli.call("list")

    assert (schema["exists"], schema["cannot_be_created"]) == (False, f"{blocker} is not a directory")
    assert "none can be created there" in shown
    assert listed.exit_code == 0 and f"no store yet at {url}" in listed.stdout, str(listed)
    assert cli.call("list", "--json").ok() == {"runs": []}


def test_status_reports_each_worker_setting_a_worker_would_refuse_and_still_exits_0(tmp_path: Path) -> None:
    (tmp_path / "valid").mkdir()
    (tmp_path / "broken").mkdir()
    valid = Cli.isolated(tmp_path / "valid")
    broken = Cli.isolated(
        tmp_path / "broken",
        SPECIALISTS_LOG_LEVEL="loud",
        SPECIALISTS_TEAM_CYCLE_SECONDS="0",
        SPECIALISTS_CLASS_CEILINGS="core=many",
        SPECIALISTS_BUILD_ID="b1",
    )

    assert valid.call("status", "--json").ok()["worker_settings"] == []
    problems = broken.call("status", "--json").ok()["worker_settings"]
    shown = broken.call("status")

    assert [problem["code"] for problem in problems] == ["invalid_setting"] * 4
    named = " ".join(problem["message"] for problem in problems)
    for variable in (
        "SPECIALISTS_LOG_LEVEL", "SPECIALISTS_TEAM_CYCLE_SECONDS", "SPECIALISTS_CLASS_CEILINGS",
        "SPECIALISTS_DEPLOYMENT_NAME",
    ):  # fmt: skip
        assert variable in named
    assert shown.exit_code == 0 and "would refuse them" in shown.stdout


def test_a_malformed_trust_root_or_action_token_is_reported_and_status_still_exits_0(tmp_path: Path) -> None:
    short_token = "short-tok"
    cli = Cli.isolated(tmp_path, SPECIALISTS_TRUST_ROOT="zz", SPECIALISTS_ACTION_TOKEN=short_token)

    result = cli.call("status", "--json")
    status = result.ok()

    assert status["policy"] is None and status["configuration_error"]["code"] == "invalid_setting"
    assert {problem["code"] for problem in status["worker_settings"]} == {
        "invalid_setting",
        "action_token_invalid",
    }
    assert set(status) >= CONFIGURATION_KEYS | DEPLOYMENT_KEYS  # the rest is still reported
    assert short_token not in result.stdout + result.stderr


def test_database_credentials_are_masked_and_an_unreachable_database_is_reported(tmp_path: Path) -> None:
    port = _closed_port()
    url = f"postgresql+psycopg://operator:s3cret-pass@127.0.0.1:{port}/specialists"
    cli = Cli.isolated(tmp_path, SPECIALISTS_DATABASE_URL=url)

    result = cli.call("status", "--json")
    shown = cli.call("status")

    database = result.ok()["database"]
    assert database["url"] == f"postgresql+psycopg://operator:***@127.0.0.1:{port}/specialists"
    assert database["reachable"] is False and database["error"]
    for output in (result.stdout, result.stderr, shown.stdout, shown.stderr):
        assert "s3cret-pass" not in output


# ---------------------------------------------------------------------------------------- trust anchor


def test_without_a_trust_anchor_status_reports_the_deployment_and_why_the_configuration_is_unknown(
    tmp_path: Path,
) -> None:
    cli = Cli.isolated(tmp_path, SPECIALISTS_TEMPORAL_ADDRESS=f"127.0.0.1:{_closed_port()}")
    root = cli.call("actors", "register", "alice", "--name", "Alice", "--json").ok()["trust_root"]
    with open_store(f"sqlite:///{cli.database}") as store:  # the run projection is not signed
        store.project_run(_summary("SOR-0000000000000001", RunStatus.RUNNING), [])
    bare = cli.without_token()

    status = bare.call("status", "--json").ok()

    assert {key: status[key] for key in ("policy", "models", "repositories", "actors")} == dict.fromkeys(
        ("policy", "models", "repositories", "actors")
    )
    refused = status["configuration_error"]
    assert refused["code"] == "trust_root_not_configured"
    assert "SPECIALISTS_ACTION_TOKEN_FILE" in refused["message"]
    assert "SPECIALISTS_TRUST_ROOT" in refused["message"]
    assert status["state_dir"] == str(cli.state_dir)
    assert status["catalog"]["profiles"] == 20
    assert (status["database"]["reachable"], status["database"]["error"]) == (True, None)
    assert status["database"]["schema"]["migration_needed"] is False
    assert status["runs"] == {"active": 1}
    assert status["temporal"]["reachable"] is False and status["temporal"]["error"]

    shown = bare.call("status")
    assert shown.exit_code == 0, shown
    assert "trust_root_not_configured" in shown.stdout and "SPECIALISTS_TRUST_ROOT" in shown.stdout
    assert "active runs" in shown.stdout

    pinned = bare.with_env(SPECIALISTS_TRUST_ROOT=root).call("status", "--json").ok()
    assert (pinned["configuration_error"], pinned["actors"]) == (None, 1)


def test_make_demo_and_make_dev_keep_their_state_in_the_clone() -> None:
    root = Path(__file__).resolve().parents[2]
    planned = subprocess.run(
        ["make", "-n", "-s", "demo", "dev"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    clone_state = f'SPECIALISTS_STATE_DIR="${{SPECIALISTS_STATE_DIR:-{root}/.specialists}}"'
    for command in ("-m control.demo", "specialists dev"):
        (line,) = [line for line in planned if line.endswith(command)]
        assert line.startswith(clone_state), line
