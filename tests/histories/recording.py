"""What every history recorder shares (``python -m tests.histories.record_*``): a fresh in-memory dev
server with the search attributes registered, and writing fetched histories beside their
``workflow-ids.json`` (the replay test reads each file under the workflow id named there)."""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from temporalio.client import Client

from contracts.search_attributes import SEARCH_ATTRIBUTES
from infra.devserver import DevServer, free_port


def record_on_a_fresh_server(record: Callable[[DevServer, Path], Awaitable[None]]) -> None:
    """Run ``record(server, state)`` against a fresh, headless, in-memory dev server; ``state`` is a
    temporary directory removed afterwards."""
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        with DevServer(
            state_dir=state / "temporal",
            db_filename=None,
            port=free_port(),
            headless=True,
            search_attributes=SEARCH_ATTRIBUTES,
        ) as server:
            asyncio.run(record(server, state))


async def write_histories(client: Client, here: Path, ids: Mapping[str, str]) -> dict[str, int]:
    """Fetch the history of each ``name -> workflow id`` of ``ids`` into ``here/<name>.json`` and
    write ``here/workflow-ids.json``; returns each name's event count."""
    here.mkdir(parents=True, exist_ok=True)
    counts = {}
    for name, workflow_id in ids.items():
        history = await client.get_workflow_handle(workflow_id).fetch_history()
        (here / f"{name}.json").write_text(history.to_json(), encoding="utf-8")
        counts[name] = len(history.events)
    (here / "workflow-ids.json").write_text(
        json.dumps(dict(ids), indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    return counts
