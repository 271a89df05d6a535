"""``bench/model_bench.py --jobs 6`` runs end to end and prints one JSON object with its measurements;
the model server never sees more calls at once than the model's ceiling."""

from __future__ import annotations

import os
from pathlib import Path

from tests.bench import bench_report

CEILING = 5

SIDE_KEYS = {
    "jobs",
    "latency_ms_p50",
    "latency_ms_p95",
    "latency_ms_min",
    "latency_ms_max",
    "http_call_ms_p50",
    "jobs_per_s",
    "cpu_ms_per_job",
    "wire_max_in_flight",
    "wire_requests",
    "request_body_bytes_median",
}


def test_model_bench_prints_its_measurements_as_json(tmp_path: Path) -> None:
    report = bench_report(
        "model_bench.py",
        "--jobs",
        "6",
        "--warmup",
        "1",
        "--burst",
        "8",
        "--ceiling",
        str(CEILING),
        cwd=tmp_path,
    )
    assert set(report) == {
        "jobs",
        "concurrency",
        "ceiling",
        "model_delay_ms",
        "full_path_ms",
        "baseline_ms",
        "ratio",
        "target",
        "wire_max_in_flight_full_path",
        "ceiling_max_held",
        "full_path",
        "baseline",
        "ceiling_workflow",
        "burst",
        "breakdown",
        "config",
        "environment",
        "wall_s",
    }
    assert (report["jobs"], report["concurrency"], report["ceiling"]) == (6, 5, CEILING)
    for side in ("full_path_ms", "baseline_ms"):
        assert 0 < report[side]["p50"] <= report[side]["p95"]
    assert report["ratio"]["p50"] > 0 and report["ratio"]["p95"] > 0
    assert isinstance(report["target"]["met"], bool)
    assert report["target"]["full_path_p50_max_ratio"] == 1.5

    # Against the ceiling this test set, not the one the report echoes.
    ceiling = CEILING
    assert 1 <= report["wire_max_in_flight_full_path"] <= ceiling
    assert 1 <= report["ceiling_max_held"] <= ceiling
    assert 1 <= report["burst"]["wire_max_in_flight"] <= ceiling
    assert report["burst"]["ceiling"]["max_held"] <= ceiling
    assert report["burst"]["wire_requests"] == 8
    state = report["burst"]["ceiling"]
    assert (state["held_now"], state["waiting_now"], state["reclaimed_total"]) == (0, 0, 0)

    for side in ("full_path", "baseline"):
        assert set(report[side]) == SIDE_KEYS
        assert report[side]["jobs"] == report[side]["wire_requests"] == 6
    # The baseline sends the very request the full path sends.
    assert report["full_path"]["request_body_bytes_median"] == report["baseline"]["request_body_bytes_median"]

    full = report["breakdown"]["full_path"]
    assert full["jobs_sampled"] == 6
    assert all(value is not None for value in full["segments_ms_median"].values())
    assert set(full["segments_ms_median"]) >= {"first_workflow_task", "call_activity_run"}
    baseline = report["breakdown"]["baseline"]
    assert baseline["per_job_median"]["workflow_tasks"] <= full["per_job_median"]["workflow_tasks"]
    # Pack and lease request run as local activities; the call as the one activity.
    per_job = full["per_job_median"]
    assert (per_job["local_activities"], per_job["activity:call_model"]) == (2, 1)
    ceiling_history = report["breakdown"]["ceiling_workflow"]
    assert ceiling_history["try_acquire_updates"] + ceiling_history["acquire_signals"] >= 6
    assert report["environment"]["cpu_count"] == os.cpu_count()
    assert list(tmp_path.iterdir()) == []  # nothing is written where it runs
