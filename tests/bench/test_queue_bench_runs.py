"""``bench/queue_bench.py --quick`` runs end to end and prints one JSON object with its measurements."""

from __future__ import annotations

from pathlib import Path

from tests.bench import bench_report


def test_queue_bench_prints_both_sides_the_ratio_and_every_executions_history(tmp_path: Path) -> None:
    report = bench_report("queue_bench.py", "--quick", cwd=tmp_path)
    assert set(report) == {"config", "direct", "queue", "ratio", "history", "targets", "wall_s"}
    assert report["config"]["items"] == 6 and report["config"]["slots"] == 3
    assert report["direct"]["wall_s"] > 0 and report["queue"]["wall_s"] > 0
    assert abs(report["ratio"] - report["queue"]["wall_s"] / report["direct"]["wall_s"]) < 0.01
    lengths = report["history"]["events_per_execution"]
    assert len(lengths) == report["queue"]["executions"] >= 2  # it continued as new after 60 events
    assert report["history"]["max_events"] == max(lengths)
    assert set(report["targets"]) == {"ratio_at_most_1_2", "history_at_most_2000"}
