"""``make demo``: the main job on the embedded defaults, end to end.

1. Routes every example work item in ``examples/work-items/`` and prints the decisions.
2. Starts the embedded Temporal dev server (or uses one already listening on the configured address)
   and a worker, registers a demo operator and selects the ``replay:demo`` model.
3. Runs every example as a ``recommend`` run, then takes one ``read_only`` run through analysis and
   independent review to an accepted decision.
4. Prints a summary table and the Temporal UI URL, then stops what it started.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from catalog.loaded import LoadedCatalog
from catalog.loader import load_catalog
from catalog.router import route
from contracts.enums import Tier
from contracts.ids import new_run_id
from contracts.models import ModelSelection
from contracts.runs import DecisionOutcome, RunInput, RunStatus, RunView
from contracts.work_item import WorkItem
from control.output import console, table

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples" / "work-items"
DEMO_ACTOR = "demo-operator"
DEMO_MODEL = "replay:demo"
READ_ONLY_EXAMPLE = "03-slow-query.json"


def example_work_items(directory: Path = EXAMPLES_DIR) -> list[tuple[str, WorkItem]]:
    """Every ``*.json`` work item in ``directory``, sorted by file name. Raises on an invalid file."""
    return [
        (path.name, WorkItem.model_validate_json(path.read_text(encoding="utf-8")))
        for path in sorted(directory.glob("*.json"))
    ]


def print_routes(catalog: LoadedCatalog, items: list[tuple[str, WorkItem]]) -> None:
    """The route table: one row per example."""
    rows = []
    for name, item in items:
        decision = route(item, catalog)
        rows.append(
            [
                name,
                item.title,
                decision.primary,
                decision.reviewer,
                decision.risk.value,
                f"{decision.confidence:.2f}",
                "; ".join(decision.evidence_gaps) or "-",
            ]
        )
    console().print(
        table(
            f"routes on catalog {catalog.version} (sha256 {catalog.sha256[:16]}…)",
            ["example", "title", "primary", "reviewer", "risk", "confidence", "evidence gaps"],
            rows,
        )
    )


def _prepare_store(database_url: str) -> None:
    """Register the demo operator and select the replay model (once; later runs reuse them)."""
    from store.database import open_store

    with open_store(database_url) as store:
        if not store.actor_exists(DEMO_ACTOR):
            first = not store.list_actors()
            by = None if first else store.list_actors()[0].id
            store.register_actor(DEMO_ACTOR, "Demo operator", by)
        current = store.get_model_selection()
        if current is None or current.selection.primary != DEMO_MODEL:
            store.select_models(ModelSelection(primary=DEMO_MODEL), DEMO_ACTOR)


async def _run_jobs(settings: Any, items: list[tuple[str, WorkItem]]) -> list[tuple[str, RunView]]:
    from activities.config import ActivityConfig
    from control.runs import create_run, decide_run, request_digest, settled, wait_for_view
    from control.temporal import connect
    from worker import build_worker

    client = await connect(settings)
    worker = build_worker(
        client, task_queue=settings.task_queue, config=ActivityConfig(database_url=settings.database_url)
    )
    results: list[tuple[str, RunView]] = []
    async with worker:
        jobs = [(name, item, Tier.RECOMMEND, False) for name, item in items]
        jobs += [(name, item, Tier.READ_ONLY, True) for name, item in items if name == READ_ONLY_EXAMPLE]
        for name, item, tier, enqueue in jobs:
            draft = RunInput(
                run_id=new_run_id(),
                work_item=item,
                requested_tier=tier,
                enqueue=enqueue,
                request_digest="",
                created_by=DEMO_ACTOR,
            )
            run_input = draft.model_copy(update={"request_digest": request_digest(draft)})
            view, _ = await create_run(client, run_input, task_queue=settings.task_queue)
            view = await wait_for_view(client, view.run_id, settled, timeout=120)
            if view.status is RunStatus.AWAITING_DECISION:
                await decide_run(
                    client, view.run_id, DEMO_ACTOR, DecisionOutcome.ACCEPTED, "demo: findings accepted"
                )
                view = await wait_for_view(client, view.run_id, lambda v: v.status.terminal, timeout=30)
            print(f"  {view.run_id}  {tier.value:<9}  {view.status.value:<12}  {name}", flush=True)
            results.append((name, view))
    return results


def print_summary(results: list[tuple[str, RunView]]) -> None:
    """One row per run, then the read-only run's findings and review."""
    out = console()
    out.print(
        table(
            "demo runs",
            ["run", "example", "tier", "status", "primary", "reviewer", "risk", "contract sha256"],
            [
                [
                    view.run_id,
                    name,
                    view.tier.value if view.tier else "-",
                    view.status.value,
                    view.route.primary if view.route else "-",
                    view.route.reviewer if view.route else "-",
                    view.route.risk.value if view.route else "-",
                    (view.contract_sha256 or "-")[:16],
                ]
                for name, view in results
            ],
        )
    )
    for _, view in results:
        if view.result is None:
            continue
        out.print(
            table(
                f"{view.run_id} findings ({view.route.primary if view.route else ''})",
                ["severity", "finding"],
                [[f.severity.value, f.title] for f in view.result.findings],
            )
        )
        if view.review is not None and view.review.verdict is not None:
            out.print(
                f"independent review: {view.review.verdict.value} (confidence {view.review.confidence})"
            )
        if view.decision is not None:
            out.print(f"decision: {view.decision.outcome.value} by {view.decision.actor}")


def main() -> int:
    """Run the demo; returns the exit code."""
    from contracts.errors import OperatorError
    from control.dev import dev_server_for
    from control.settings import Settings
    from infra.devserver import is_reachable

    catalog = load_catalog()
    items = example_work_items()
    print_routes(catalog, items)
    try:
        settings = Settings.from_env()
        settings.state_dir.mkdir(parents=True, exist_ok=True)
        _prepare_store(settings.database_url)
        server = None
        if not is_reachable(settings.temporal_address):
            server = dev_server_for(settings).start()
            print(f"started the embedded Temporal dev server on {server.address}", flush=True)
        else:
            print(f"using the Temporal server already on {settings.temporal_address}", flush=True)
        try:
            print("runs:", flush=True)
            results = asyncio.run(_run_jobs(settings, items))
        finally:
            if server is not None:
                server.stop()
    except OperatorError as error:
        sys.stderr.write(f"error [{error.code}]: {error.message}\n")
        return error.exit_code
    print_summary(results)
    ui_port = settings.temporal_ui_port
    print(
        f"Temporal UI: http://127.0.0.1:{ui_port}/namespaces/{settings.namespace}/workflows "
        "(start the server again with `specialists dev` to browse the demo's runs); "
        "`specialists list` lists them from the projection."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
