"""Mission Control's page rendering against its JSON twins. Prints one JSON object.

A temporary SQLite store holds ``--runs`` projected runs (default 1,000, each with three audit events);
the console app runs in this process behind FastAPI's test client, signed in as a bootstrapped actor,
with no Temporal server (the overview's queue line answers "not available" at once on both sides). In
the same rounds, alternating so that noise on this shared machine hits both alike, each page
(``/`` and ``/runs``) is fetched ``--rounds`` times and so is its JSON twin (``/api/overview``,
``/api/runs``), which serves the same data as plain JSON. The figure to watch is the ratio of the
medians, page over JSON (target: at most 2.0).

Usage: ``python bench/web_bench.py [--runs N] [--rounds N]`` (``--quick``: 50 runs, 5 rounds).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from contracts.enums import RiskLevel, Tier  # noqa: E402
from contracts.errors import ServiceUnavailable  # noqa: E402
from contracts.identity import ActorKey, Signer, TrustAnchor, sign_delegation  # noqa: E402
from contracts.runs import AuditEvent, RunStatus, RunSummary  # noqa: E402

PAGES = {"overview": ("/", "/api/overview"), "runs": ("/runs", "/api/runs")}
TARGET_RATIO = 2.0
STATUSES = [RunStatus.AWAITING_DECISION, RunStatus.ACCEPTED, RunStatus.READY, RunStatus.REJECTED]


def _fill(store: Any, count: int) -> None:
    start = dt.datetime(2026, 12, 1, 8, 0, tzinfo=dt.UTC)
    for index in range(count):
        at = start + dt.timedelta(seconds=index)
        run_id = f"SOR-{index:016d}"
        summary = RunSummary(
            run_id=run_id,
            status=STATUSES[index % len(STATUSES)],
            tier=Tier.READ_ONLY,
            automatic=False,
            primary="database-optimizer",
            reviewer="backend-architect",
            risk=RiskLevel.MEDIUM,
            repo_alias="orders-service",
            title=f"Audit the slow query on report {index} <and a possible missing index>",
            contract_sha256=secrets.token_hex(32),
            request_id=None,
            created_at=at,
            updated_at=at,
        )
        events = [
            AuditEvent(seq=seq, at=at, kind=kind, actor="alice" if seq == 3 else None, data={"n": index})
            for seq, kind in ((1, "run_created"), (2, "contract_captured"), (3, "status_changed"))
        ]
        store.project_run(summary, events)


def _signed_in_client(url: str, anchor: TrustAnchor, key: ActorKey) -> Any:
    from fastapi.testclient import TestClient

    from control.commands.common import default_policy_record
    from control.web.app import create_app
    from control.web.console import Deployment
    from control.web.sessions import Challenge, delegation_token
    from store.database import open_store

    async def no_temporal() -> Any:
        raise ServiceUnavailable("temporal_unreachable", "the bench runs without Temporal")

    deployment = Deployment(
        task_queue="web-bench",
        connect=no_temporal,
        open_store=lambda: open_store(url, create=False, anchor=anchor),
        default_policy=default_policy_record,
    )
    client = TestClient(create_app(deployment), base_url="http://bench.test", follow_redirects=False)
    page = client.get("/sign-in").text
    code = re.search(r"specialists web sign-in (\S+) --actor", page)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert code is not None and csrf is not None
    challenge = Challenge.from_code(code.group(1))
    delegation = sign_delegation(
        Signer("alice", key),
        session_key=challenge.session_key,
        issued_at=challenge.issued_at,
        expires_at=challenge.expires_at,
    )
    answer = client.post(
        "/sign-in", data={"token": delegation_token(delegation), "csrf_token": csrf.group(1)}
    )
    assert answer.status_code == 303, answer.text
    return client


def _time(client: Any, path: str) -> float:
    started = time.perf_counter()
    answer = client.get(path)
    elapsed = time.perf_counter() - started
    assert answer.status_code == 200, (path, answer.status_code, answer.text[:300])
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="50 runs, 5 rounds (a smoke test)")
    args = parser.parse_args()
    runs, rounds = (50, 5) if args.quick else (args.runs, args.rounds)

    from store.database import open_store

    token = secrets.token_bytes(24)
    anchor = TrustAnchor(token=token)
    key = ActorKey.generate()
    with tempfile.TemporaryDirectory() as directory:
        url = f"sqlite:///{Path(directory) / 'specialists.db'}"
        store = open_store(url, create=True, anchor=anchor)
        with store:
            store.bootstrap_actor("alice", "Alice Operator", key, token)
            _fill(store, runs)
        client = _signed_in_client(url, anchor, key)
        for page, api in PAGES.values():  # warm caches and templates, untimed
            _time(client, page)
            _time(client, api)
        timings: dict[str, dict[str, list[float]]] = {name: {"page": [], "json": []} for name in PAGES}
        for _ in range(rounds):
            for name, (page, api) in PAGES.items():
                timings[name]["page"].append(_time(client, page))
                timings[name]["json"].append(_time(client, api))
        client.close()

    report: dict[str, Any] = {"config": {"runs": runs, "rounds": rounds}, "pages": {}}
    for name, measured in timings.items():
        page_ms = statistics.median(measured["page"]) * 1000
        json_ms = statistics.median(measured["json"]) * 1000
        report["pages"][name] = {
            "page_ms_median": round(page_ms, 2),
            "json_ms_median": round(json_ms, 2),
            "ratio": round(page_ms / json_ms, 2),
        }
    worst = max(entry["ratio"] for entry in report["pages"].values())
    report["worst_ratio"] = worst
    report["targets"] = {"page_vs_json_ratio_at_most": TARGET_RATIO}
    report["target_met"] = worst <= TARGET_RATIO
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
