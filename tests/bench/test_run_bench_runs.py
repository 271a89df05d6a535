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
        "baseline_same_visibility",
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
    # The same-visibility plan: the same steps, with the run's own upserts and payload sizes.
    visible = report["baseline_same_visibility"]["plans"]
    for tier in ("recommend", "read_only"):
        added = ("upsert:", "result:", "pad:")
        kinds = [step.split(":")[0] for step in visible[tier] if not step.startswith(added)]
        assert kinds == [step.split(":")[0] for step in plans[tier]]
        assert any(step.startswith("upsert:") and "SpecialistStatus" in step for step in visible[tier])
        assert not any("TemporalChangeVersion" in step for step in visible[tier])
        assert int(visible[tier][-2 if visible[tier][-1].startswith("pad:") else -1].split(":")[1]) > 1000

    for tier in ("recommend", "read_only"):
        row = report["throughput"][tier]
        for side in ("project", "baseline", "baseline_same_visibility"):
            assert set(row[side]) == SIDE_KEYS
            assert row[side]["runs"] == report["config"][f"{tier}_runs_per_side"]
        assert row["project"]["runs_per_s"] > 0 and row["baseline"]["runs_per_s"] > 0
        assert row["throughput_ratio"] > 0
        assert isinstance(row["target_met"], bool)
        assert row["cpu_ratio_without_activity_bodies"] > 0
        assert row["throughput_ratio_same_visibility"] > 0
        assert row["cpu_ratio_without_activity_bodies_same_visibility"] > 0
        assert set(row["visibility_and_payload_cpu_ms_per_run"]) == {"server", "bench_process"}
        for side in ("project", "baseline", "baseline_same_visibility"):
            places = row[side]["bench_process_cpu_ms_per_run_by_place"]
            assert set(places) == PLACES
            assert places["workflow_instance_creation"] > 0 and places["workflow_activations"] > 0
        # Where the project's activity bodies went, by name; the baseline's are its no-ops.
        project_bodies = row["project"]["bench_process_cpu_ms_per_run_by_place"]["activity_bodies"]
        assert {"capture_contract", "project_run"} <= set(project_bodies)
        assert set(row["baseline"]["bench_process_cpu_ms_per_run_by_place"]["activity_bodies"]) <= {
            "bench_noop"
        }
        assert set(report["profile"][tier]) == {"project", "baseline", "baseline_same_visibility"}
    # The baseline mirrors the project's activities one for one.
    project = report["profile"]["read_only"]["project"]["per_run"]
    baseline = report["profile"]["read_only"]["baseline"]["per_run"]
    project_activities = sum(v for k, v in project.items() if k.startswith("activity:"))
    assert baseline["activity:bench_noop"] == project_activities
    assert baseline["child_workflows"] == project["child_workflows"] == 2
    # The same-visibility baseline upserts where the run upserts its own search attributes.
    visible_profile = report["profile"]["read_only"]["baseline_same_visibility"]["per_run"]
    assert visible_profile["activity:bench_noop"] == project_activities
    assert 0 < visible_profile["search_attribute_upserts"] < project["search_attribute_upserts"]
    assert "search_attribute_upserts" not in baseline

    resume = report["resume"]
    assert len(resume["samples"]) == 1
    sample = resume["samples"][0]
    assert 0 < sample["spawn_to_polling_s"] < sample["spawn_to_accepted_s"]
    assert resume["sticky_queue_timeout_s"] > 0
    assert isinstance(resume["target_met"], bool)
    assert set(report["targets"]) >= {"recommend_throughput_met", "read_only_throughput_met", "resume_met"}
    assert list(tmp_path.iterdir()) == []  # nothing is written where it runs
