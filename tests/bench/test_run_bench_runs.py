"""``bench/run_bench.py --quick`` runs end to end and prints one JSON object with its measurements."""

from __future__ import annotations

from pathlib import Path

from tests.bench import bench_report

SIDE_KEYS = {
    "runs",
    "runs_per_s",
    "latency_ms_p50",
    "latency_ms_p95",
    "status_polls_per_run_median",
    "cpu_s_per_run",
    "bench_process_cpu_ms_per_run_by_place",
}
PLACES = {
    "workflow_instance_creation",
    "workflow_activations",
    "activity_bodies",
    "activity_bodies_total",
    "elsewhere",
}


def test_run_bench_prints_its_measurements_as_json(tmp_path: Path) -> None:
    report = bench_report("run_bench.py", "--quick", cwd=tmp_path)
    assert set(report) == {
        "config",
        "baseline",
        "sequential_latency",
        "throughput",
        "profile",
        "worker_tuning",
        "resume",
        "targets",
        "wall_s",
    }

    plans = report["baseline"]["plans"]
    assert plans["recommend"] and set(plans["recommend"]) == {"activity"}
    assert plans["read_only"].count("decision") == 1
    assert [step for step in plans["read_only"] if step.startswith("child:")] == [
        "child:1+1",
        "child:1+1",
    ]  # the call, and the context pack as a local activity (a replay model takes no lease)

    for tier in ("recommend", "read_only"):
        row = report["throughput"][tier]
        assert set(row["project"]) == SIDE_KEYS
        assert set(row["baseline"]) == SIDE_KEYS
        assert row["project"]["runs"] == row["baseline"]["runs"] == report["config"][f"{tier}_runs_per_side"]
        assert row["project"]["runs_per_s"] > 0 and row["baseline"]["runs_per_s"] > 0
        assert row["throughput_ratio"] > 0
        assert isinstance(row["target_met"], bool)
        assert row["cpu_ratio_without_activity_bodies"] > 0
        for side in ("project", "baseline"):
            places = row[side]["bench_process_cpu_ms_per_run_by_place"]
            assert set(places) == PLACES
            assert places["workflow_instance_creation"] > 0 and places["workflow_activations"] > 0
        # Where the project's activity bodies went, by name; the baseline's are its no-ops.
        project_bodies = row["project"]["bench_process_cpu_ms_per_run_by_place"]["activity_bodies"]
        assert {"capture_contract", "project_run"} <= set(project_bodies)
        assert set(row["baseline"]["bench_process_cpu_ms_per_run_by_place"]["activity_bodies"]) <= {
            "bench_noop"
        }
        assert set(report["profile"][tier]) == {"project", "baseline"}
    # The baseline mirrors the project's activities one for one.
    project = report["profile"]["read_only"]["project"]["per_run"]
    baseline = report["profile"]["read_only"]["baseline"]["per_run"]
    project_activities = sum(v for k, v in project.items() if k.startswith("activity:"))
    assert baseline["activity:bench_noop"] == project_activities
    assert baseline["child_workflows"] == project["child_workflows"] == 2

    resume = report["resume"]
    assert len(resume["samples"]) == 1
    sample = resume["samples"][0]
    assert 0 < sample["spawn_to_polling_s"] < sample["spawn_to_accepted_s"]
    assert resume["sticky_queue_timeout_s"] > 0
    assert isinstance(resume["target_met"], bool)
    assert set(report["targets"]) >= {"recommend_throughput_met", "read_only_throughput_met", "resume_met"}
    assert list(tmp_path.iterdir()) == []  # nothing is written where it runs
