"""``bench/failover_bench.py --quick`` runs end to end and prints one JSON object with its measurements."""

from __future__ import annotations

from pathlib import Path

from tests.bench import bench_report

SIDE_KEYS = {
    "samples",
    "decide_to_closed_s_median",
    "decide_to_closed_s_p90",
    "decide_returned_s_median",
    "decide_to_closed_s",
}


def test_failover_bench_prints_its_measurements_as_json(tmp_path: Path) -> None:
    report = bench_report("failover_bench.py", "--quick", cwd=tmp_path)
    assert set(report) == {
        "config",
        "failover",
        "baseline",
        "ratio_median",
        "sticky_queue_timeout_s",
        "target_median_s",
        "target_met",
        "wall_s",
    }
    assert report["config"]["repetitions"] == 1
    failover, baseline = report["failover"], report["baseline"]
    assert set(failover) == SIDE_KEYS | {"taken_over_by_the_other_worker"}
    assert set(baseline) == SIDE_KEYS
    assert failover["samples"] == baseline["samples"] == 1
    # The run was finished by the worker that was polling when the other was killed.
    assert failover["taken_over_by_the_other_worker"] == 1
    for side in (failover, baseline):
        assert 0 < side["decide_returned_s_median"] <= side["decide_to_closed_s_median"]
    assert report["ratio_median"] > 0
    assert report["sticky_queue_timeout_s"] == 1.0
    assert isinstance(report["target_met"], bool)
    assert list(tmp_path.iterdir()) == []  # nothing is written where it runs
