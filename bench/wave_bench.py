"""A four-pass review wave against four review passes one after another, same run; prints JSON.

Everything runs on one fresh dev server started for this bench (in memory, headless, free ports), a
SQLite store in a temporary directory, an in-process worker from ``worker.build_worker`` and the
scripted loopback model server of the provider tests (``tests/activities/providers/wire_server.py``),
reached through the openai SDK as a registered ``openai:`` model. The server answers every chat
completion after ``--delay-ms`` (a stand-in for model latency) for whoever asks: an analysis, or a
review that agrees, with the profile id the request names, so every answer passes validation.

Wave. A read_only run of a work item whose evidence touches code, tests and CI, created with a review
wave asked for: its contract's roster has four passes (the route's reviewer, code, tests, CI).
Sequential. Four read_only runs of a one-file work item (one reviewer each), one after another. Each
side's figure is its review phase, from the audit trail: from the run's ``reviewing`` status to its
last review job's completion — for the wave, freezing four packs and all four passes; for the
sequential side, the sum of the four runs' review phases. The sides alternate for ``--repetitions``
rounds (wave first in even rounds), after a warm-up of each; the figure to watch is the ratio of the
medians, wave over sequential (target: at most 0.4).

Usage: ``python bench/wave_bench.py [--repetitions N] [--delay-ms D]`` (``--quick``: 1 round, 200 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import re
import secrets
import statistics
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.report_output import report_on_stdout  # noqa: E402

if TYPE_CHECKING:
    from temporalio.client import Client

    from tests.activities.providers.wire_server import Received, Scripted

TARGET_RATIO = 0.4
MODEL = "openai:wave-bench"
KEY_ENV = "WAVE_BENCH_API_KEY"
TASK_QUEUE = "wave-bench"
WAVE_REFS = ["file:src/export.py", "file:tests/test_export.py", "file:.ci/run"]
SINGLE_REFS = ["file:src/export.py"]
PROFILE_LINE = re.compile(r"^Profile: .+ \(([a-z0-9-]+)\)\.$", re.M)
REVIEWER_LINE = "You are the independent reviewer."


def _answer_template() -> dict[str, Any]:
    data = json.loads((ROOT / "examples" / "recordings" / "demo.json").read_text(encoding="utf-8"))
    entry = next(e for e in data["recordings"] if e["kind"] == "analysis")
    answer: dict[str, Any] = copy.deepcopy(entry["response"])
    answer["inspected_evidence"] = []
    answer["findings"] = [{**answer["findings"][0], "evidence_refs": []}]
    return answer


def _responder(delay_s: float) -> Any:
    """Answers a chat completion for the profile its instructions name (a review when they say so)."""
    from tests.activities.providers.wire_server import Scripted, openai_completion

    template = _answer_template()

    def answer(request: Received) -> Scripted:
        system = str(request.body["messages"][0]["content"])
        found = PROFILE_LINE.search(system)
        body = {**template, "role": found.group(1) if found else "unknown"}
        if REVIEWER_LINE in system:
            body["verdict"] = "agree"
        return Scripted(200, openai_completion(json.dumps(body)), delay_s=delay_s)

    return answer


def _prepare_store(database_url: str, base_url: str, token: bytes) -> None:
    from bench.run_bench import ACTOR, bench_key
    from contracts.identity import Signer, TrustAnchor
    from contracts.models import ModelRegistration, ModelSelection
    from store.database import open_store

    signer = Signer(ACTOR, bench_key())
    with open_store(database_url, create=True, anchor=TrustAnchor(token=token)) as store:
        store.bootstrap_actor(ACTOR, "Bench operator", bench_key(), token)
        store.register_model(
            ModelRegistration(id=MODEL, base_url=base_url, api_key_env=KEY_ENV, ceiling=10), signer
        )
        store.select_models(ModelSelection(primary=MODEL), signer)


class WaveDriver:
    """Runs one read_only run to its decision and reads its review phase from its audit trail."""

    def __init__(self, client: Client, token: bytes) -> None:
        from bench.run_bench import ProjectDriver

        self.project = ProjectDriver(client, 0.05, token)

    async def review_seconds(self, refs: list[str], *, wave: bool) -> tuple[float, int]:
        """One run's review phase in seconds and how many review jobs it ran."""
        from bench.run_bench import ACTOR
        from contracts.enums import Tier
        from contracts.ids import new_run_id
        from contracts.runs import RunInput, RunView
        from contracts.temporal_names import RunMessage
        from contracts.work_item import WorkItem
        from control.runs import request_digest

        draft = RunInput(
            run_id=new_run_id(),
            work_item=WorkItem(title="Harden the report export", evidence_refs=refs),
            requested_tier=Tier.READ_ONLY,
            enqueue=True,
            request_digest="",
            created_by=ACTOR,
            review_wave=wave,
        )
        run_input = draft.model_copy(update={"request_digest": request_digest(draft)})
        proof = self.project.proof(run_input.run_id, "create", digest=run_input.request_digest)
        handle = await self.project.start_input(run_input.model_copy(update={"proof": proof}), TASK_QUEUE)
        while (status := await self.project.status(handle)) != "awaiting_decision":
            if status in ("failed", "expired", "cancelled"):
                raise RuntimeError(f"{handle.id} ended {status}{await self.project.failure(handle)}")
            await asyncio.sleep(0.05)
        view = await handle.query(RunMessage.VIEW, result_type=RunView)
        await self.project.decide(handle)
        await handle.result()
        reviewing = next(
            e.at for e in view.audit if e.kind == "status_changed" and e.data.get("to") == "reviewing"
        )
        reviews = [
            e.at for e in view.audit if e.kind == "model_job_completed" and e.data.get("kind") == "review"
        ]
        if wave and (view.wave is None or len(view.wave.passes) != 4):
            raise RuntimeError(f"{handle.id}: expected a four-pass wave, got {view.wave}")
        return (max(reviews) - reviewing).total_seconds(), len(reviews)


async def _measure(address: str, state: Path, repetitions: int, delay_s: float) -> dict[str, Any]:
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter

    from activities.config import ActivityConfig
    from store.database import default_database_url
    from tests.activities.providers.wire_server import running
    from worker import build_worker

    token = secrets.token_urlsafe(32).encode("utf-8")
    os.environ[KEY_ENV] = "wave-bench-key"
    with running() as wire:
        wire.responder = _responder(delay_s)
        database_url = default_database_url(state)
        _prepare_store(database_url, wire.base_url, token)
        client = await Client.connect(address, data_converter=pydantic_data_converter)
        worker = build_worker(
            client,
            task_queue=TASK_QUEUE,
            config=ActivityConfig(database_url=database_url, action_token=token),
        )
        driver = WaveDriver(client, token)
        waves: list[float] = []
        sequential: list[float] = []
        async with worker:
            await driver.review_seconds(WAVE_REFS, wave=True)  # warm-up, untimed
            await driver.review_seconds(SINGLE_REFS, wave=False)

            async def one_wave() -> None:
                seconds, jobs = await driver.review_seconds(WAVE_REFS, wave=True)
                assert jobs == 4
                waves.append(seconds)

            async def four_in_a_row() -> None:
                total = 0.0
                for _ in range(4):
                    seconds, jobs = await driver.review_seconds(SINGLE_REFS, wave=False)
                    assert jobs == 1
                    total += seconds
                sequential.append(total)

            for index in range(repetitions):
                order = (one_wave, four_in_a_row) if index % 2 == 0 else (four_in_a_row, one_wave)
                for side in order:
                    await side()
        most = wire.max_in_flight
    wave_s, sequential_s = statistics.median(waves), statistics.median(sequential)
    ratio = wave_s / sequential_s
    return {
        "config": {"repetitions": repetitions, "delay_ms": round(delay_s * 1000), "passes": 4},
        "wave_review_s": {"median": round(wave_s, 3), "samples": [round(s, 3) for s in waves]},
        "sequential_review_s": {
            "median": round(sequential_s, 3),
            "samples": [round(s, 3) for s in sequential],
        },
        "wire_max_in_flight": most,
        "ratio": round(ratio, 3),
        "targets": {"wave_vs_sequential_ratio_at_most": TARGET_RATIO},
        "target_met": ratio <= TARGET_RATIO,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--delay-ms", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="1 round, 200 ms a call (a smoke test)")
    args = parser.parse_args()
    repetitions, delay_ms = (1, 200) if args.quick else (args.repetitions, args.delay_ms)

    import logging

    from infra.devserver import DevServer, free_port
    from runtime.logs import configure_logging

    configure_logging(logging.WARNING)  # the report is the output; the worker's log stays quiet
    with report_on_stdout() as emit, tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        with DevServer(
            state_dir=state / "server", db_filename=None, port=free_port(), headless=True
        ) as server:
            report = asyncio.run(_measure(server.address, state, repetitions, delay_ms / 1000))
        emit(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
