"""Mission Control's pages against their JSON twins, on a real deployment. Prints one JSON object.

Everything runs for this bench alone, in a temporary directory: a Temporal dev server (in memory,
headless, free ports), ``python -m worker`` and the console (``specialists web`` on a free loopback
port) as processes, and a SQLite store. Through the CLI, as an operator would, the bench registers an
operator, selects ``replay:demo``, allow-lists a small git repository, creates a read-only run and
waits for it to await its decision, adds two items to the goal queue and runs the demo's research
team to its human review. Then ``--runs`` more runs (default 1,000, each with three audit events) are
projected into the store, so that every list holds a full page of history.

Signed in over HTTP as the operator, the bench fetches each page and its JSON twin, which serves the
same data as plain JSON: the overview, the runs list, the run, the queue board, research, the team,
the policy, the work brief and a route preview (the brief form posted with ``preview`` against
``POST /api/route``). In each of ``--rounds`` rounds every pair is fetched once, page then JSON, so
that noise on this shared machine hits both alike. The figure to watch is each pair's ratio of
medians, page over JSON (target: at most 2.0 for every page).

Usage: ``python bench/web_bench.py [--runs N] [--rounds N]`` (``--quick``: 50 runs, 5 rounds).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.report_output import report_on_stdout  # noqa: E402

TARGET_RATIO = 2.0
ACTOR = "bench-operator"
ACTION_TOKEN = secrets.token_urlsafe(32)
ALIAS = "orders-service"
SLOW_QUERY = ROOT / "examples" / "work-items" / "03-slow-query.json"
RESEARCH = ROOT / "examples" / "research"
START_TIMEOUT_S = 90.0


@dataclass(frozen=True)
class Request:
    """One timed request: ``GET path``, or ``POST path`` with a form or a JSON body."""

    path: str
    form: dict[str, str] | None = None
    body: dict[str, Any] | None = None


def _environment(root: Path, address: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("SPECIALISTS_")}
    env.update(
        SPECIALISTS_STATE_DIR=str(root / "state"),
        SPECIALISTS_TEMPORAL_ADDRESS=address,
        SPECIALISTS_TASK_QUEUE="web-bench",
        SPECIALISTS_ACTION_TOKEN=ACTION_TOKEN,
        SPECIALISTS_ACTOR_KEY_FILE=str(root / f"{ACTOR}.key"),
        SPECIALISTS_TEAM_CYCLE_SECONDS="1",
        SPECIALISTS_LOG_LEVEL="warning",
    )
    return env


def _cli(env: dict[str, str], cwd: Path, *argv: str, timeout: float = 180) -> dict[str, Any]:
    """``specialists ARGV --json`` as a process (the tests' CLI harness); its JSON object."""
    from tests.control.cli_harness import Cli

    return Cli(cwd=cwd, env=env).run(*argv, "--json", timeout=timeout).ok()


def _orders_repository(path: Path) -> Path:
    """A one-commit git repository to allow-list (the bench never edits it)."""
    path.mkdir()
    (path / "schema.sql").write_text(
        "CREATE TABLE orders (id bigint, merchant_id bigint);\n", encoding="utf-8"
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(path),
        "GIT_AUTHOR_NAME": "Bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "Bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    }
    for argv in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "-A"],
        ["git", "commit", "-qm", "schema"],
    ):
        subprocess.run(argv, cwd=path, env=env, check=True, capture_output=True)
    return path


def _deploy(env: dict[str, str], root: Path) -> None:
    """The operator, the model and the repository, as ``specialists`` sets them."""
    _cli(env, root, "actors", "register", ACTOR, "--name", "Bench Operator")
    _cli(env, root, "models", "select", "--primary", "replay:demo", "--actor", ACTOR)
    _cli(env, root, "repos", "add", ALIAS, str(_orders_repository(root / "orders")), "--actor", ACTOR)


def _work(env: dict[str, str], root: Path) -> dict[str, str]:
    """A run awaiting its decision, two queue items and the demo's research team at its human review:
    the run's and the team's ids and the team's status."""
    created = _cli(
        env, root, "create", "--input-json", f"@{SLOW_QUERY}", "--tier", "read_only", "--enqueue",
        "--wait", "--actor", ACTOR, timeout=300,
    )  # fmt: skip
    run_id = str(created["run_id"])
    if created["status"] != "awaiting_decision":
        raise RuntimeError(f"run {run_id} is {created['status']}, not awaiting its decision")
    from bench.queue_bench import ITEM

    for item in ({"title": "Orders are slow"}, ITEM):  # one with gaps, one complete
        _cli(env, root, "queue", "add", "--input-json", json.dumps(item), "--actor", ACTOR)
    case_id = str(
        _cli(env, root, "research", "case-create", "--actor", ACTOR, "--input", str(RESEARCH / "case.json"))[
            "case_id"
        ]
    )
    team = _cli(
        env, root, "research", "team-start", "--actor", ACTOR, "--case-id", case_id,
        "--input", str(RESEARCH / "request.json"), "--wait", timeout=300,
    )  # fmt: skip
    return {"run_id": run_id, "team_id": str(team["team_id"]), "team_status": str(team["status"])}


def _fill(database_url: str, count: int) -> None:
    from contracts.enums import RiskLevel, Tier
    from contracts.identity import TrustAnchor
    from contracts.runs import AuditEvent, RunStatus, RunSummary
    from store.database import open_store

    statuses = [RunStatus.AWAITING_DECISION, RunStatus.ACCEPTED, RunStatus.READY, RunStatus.REJECTED]
    start = dt.datetime(2026, 12, 1, 8, 0, tzinfo=dt.UTC)
    store = open_store(database_url, create=False, anchor=TrustAnchor(token=ACTION_TOKEN.encode("utf-8")))
    with store:
        for index in range(count):
            at = start + dt.timedelta(seconds=index)
            run_id = f"SOR-{index:016d}"
            summary = RunSummary(
                run_id=run_id,
                status=statuses[index % len(statuses)],
                tier=Tier.READ_ONLY,
                automatic=False,
                primary="database-optimizer",
                reviewer="backend-architect",
                risk=RiskLevel.MEDIUM,
                repo_alias=ALIAS,
                title=f"Audit the slow query on report {index} <and a possible missing index>",
                contract_sha256=secrets.token_hex(32),
                request_id=None,
                created_at=at,
                updated_at=at,
            )
            events = [
                AuditEvent(seq=seq, at=at, kind=kind, actor=ACTOR if seq == 3 else None, data={"n": index})
                for seq, kind in ((1, "run_created"), (2, "contract_captured"), (3, "status_changed"))
            ]
            store.project_run(summary, events)


def _signed_in(env: dict[str, str], root: Path, base: str) -> tuple[Any, str]:
    """An HTTP client holding the operator's console session, and the session's CSRF token."""
    import httpx

    client = httpx.Client(base_url=base, follow_redirects=False, timeout=60)
    page = client.get("/sign-in").text
    code = re.search(r"specialists web sign-in (\S+) --actor", page)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
    if code is None or csrf is None:
        raise RuntimeError(f"the sign-in page shows no challenge: {page[:500]}")
    token = _cli(env, root, "web", "sign-in", code.group(1), "--actor", ACTOR)["token"]
    answer = client.post("/sign-in", data={"token": token, "csrf_token": csrf.group(1)})
    if answer.status_code != 303:
        raise RuntimeError(f"sign-in answered {answer.status_code}: {answer.text[:500]}")
    session_csrf = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/brief").text)
    if session_csrf is None:
        raise RuntimeError("the brief form carries no CSRF token")
    return client, session_csrf.group(1)


def _pairs(ids: dict[str, str], csrf: str) -> dict[str, tuple[Request, Request]]:
    """Each page and its JSON twin."""
    item = json.loads(SLOW_QUERY.read_text(encoding="utf-8"))
    brief = {
        "title": item["title"],
        "description": item["description"],
        "domain": item["domain"],
        "roles": ",".join(item["roles"]),
        "repo_alias": item["repo_alias"],
        "evidence_refs": "\n".join(item["evidence_refs"]),
        "task_type": item["task_type"],
        "tier": "read_only",
        "action": "preview",
        "csrf_token": csrf,
    }
    route = {"work_item": item, "tier": "read_only"}
    run, team = ids["run_id"], ids["team_id"]
    return {
        "overview": (Request("/"), Request("/api/overview")),
        "runs": (Request("/runs"), Request("/api/runs")),
        "run": (Request(f"/runs/{run}"), Request(f"/api/runs/{run}")),
        "queue": (Request("/queue"), Request("/api/queue")),
        "research": (Request("/research"), Request("/api/research")),
        "team": (Request(f"/research/teams/{team}"), Request(f"/api/research/teams/{team}")),
        "policy": (Request("/policy"), Request("/api/policy")),
        "brief": (Request("/brief"), Request("/api/brief")),
        "route_preview": (Request("/brief", form=brief), Request("/api/route", body=route)),
    }


def _time(client: Any, request: Request) -> float:
    started = time.perf_counter()
    if request.form is not None:
        answer = client.post(request.path, data=request.form)
    elif request.body is not None:
        answer = client.post(request.path, json=request.body)
    else:
        answer = client.get(request.path)
    elapsed = time.perf_counter() - started
    if answer.status_code != 200 or 'data-testid="error-code"' in answer.text:
        raise RuntimeError(f"{request.path} answered {answer.status_code}: {answer.text[:500]}")
    return elapsed


def _measure(client: Any, pairs: dict[str, tuple[Request, Request]], rounds: int) -> dict[str, Any]:
    for page, twin in pairs.values():  # warm caches, templates and connections, untimed
        _time(client, page)
        _time(client, twin)
    timings: dict[str, dict[str, list[float]]] = {name: {"page": [], "json": []} for name in pairs}
    for _ in range(rounds):
        for name, (page, twin) in pairs.items():
            timings[name]["page"].append(_time(client, page))
            timings[name]["json"].append(_time(client, twin))
    pages: dict[str, Any] = {}
    for name, measured in timings.items():
        page_ms = statistics.median(measured["page"]) * 1000
        json_ms = statistics.median(measured["json"]) * 1000
        pages[name] = {
            "page_ms_median": round(page_ms, 2),
            "json_ms_median": round(json_ms, 2),
            "ratio": round(page_ms / json_ms, 2),
        }
    return pages


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="50 runs, 5 rounds (a smoke test)")
    args = parser.parse_args()
    runs, rounds = (50, 5) if args.quick else (args.runs, args.rounds)

    from infra.devserver import DevServer, free_port
    from store.database import default_database_url
    from tests.control.cli_harness import Cli, running_worker
    from tests.control.web.browser import running_console

    with report_on_stdout() as emit, tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        (root / "state").mkdir()
        with DevServer(
            state_dir=root / "server", db_filename=None, port=free_port(), headless=True
        ) as server:
            env = _environment(root, server.address)
            _deploy(env, root)
            with (
                running_worker(env, root / "worker.log", timeout=START_TIMEOUT_S),
                running_console(
                    Cli(cwd=root, env=env), root / "console.log", timeout=START_TIMEOUT_S
                ) as base,
            ):
                ids = _work(env, root)
                _fill(default_database_url(root / "state"), runs)
                client, csrf = _signed_in(env, root, base)
                try:
                    pages = _measure(client, _pairs(ids, csrf), rounds)
                finally:
                    client.close()

        worst = max(entry["ratio"] for entry in pages.values())
        report = {
            "config": {"runs": runs, "rounds": rounds},
            "team_status": ids["team_status"],
            "pages": pages,
            "worst_ratio": worst,
            "targets": {"page_vs_json_ratio_at_most": TARGET_RATIO},
            "target_met": worst <= TARGET_RATIO,
        }
        emit(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
