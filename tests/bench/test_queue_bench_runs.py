"""``bench/queue_bench.py --quick`` runs end to end and prints one JSON object with its measurements."""

from __future__ import annotations

from pathlib import Path

from tests.bench import bench_report


def test_queue_bench_prints_both_sides_the_ratio_and_every_executions_history(tmp_path: Path) -> None:
    report = bench_report("queue_bench.py", "--quick", cwd=tmp_path)
    assert set(report) == {"config", "direct", "queue", "ratio", "history", "targets", "wall_s"}
    config = report["config"]
    assert config["items"] == 6 and config["slots"] == 3 and config["rounds"] == 1
    assert config["dispatch"].startswith("autopilot")
    assert report["direct"]["wall_s"] > 0 and report["queue"]["wall_s"] > 0
    assert report["direct"]["rounds_s"] == [report["direct"]["wall_s"]]
    assert report["queue"]["rounds_s"] == [report["queue"]["wall_s"]]
    assert abs(report["ratio"] - report["queue"]["wall_s"] / report["direct"]["wall_s"]) < 0.01
    # The queue filled its slots by itself: every item's one run started by the autopilot, never more
    # runs at once than slots, every review PASS and every item in human-review.
    queue = report["queue"]
    assert queue["statuses"] == {"human-review": 6}
    assert queue["runs"] == queue["autopilot_runs"] == 6
    assert queue["verdicts"] == {"PASS": 6}
    assert 1 <= queue["most_runs_at_once"] <= 3
    # Where a run's time in a slot went (medians, never asserted as timings, only as present).
    assert report["direct"]["run_s"] > 0 and queue["run_s"] > 0
    assert queue["seen_after_s"] >= 0 and queue["refill_s"] >= 0
    poll = queue["poll"]
    assert set(poll) == {"reads", "timer_s", "read_s", "cycle_s"} and poll["reads"] >= 1
    # A median of no sample is null (six items make few reads: one read in an execution has no cycle).
    assert all(poll[name] is None or poll[name] >= 0 for name in ("timer_s", "read_s", "cycle_s"))
    lengths = report["history"]["events_per_execution"]
    assert len(lengths) == queue["executions"] >= 2  # it continued as new after 60 events
    assert report["history"]["max_events"] == max(lengths)
    assert set(report["targets"]) == {"ratio_at_most_1_2", "history_at_most_2000"}
    assert report["targets"]["history_at_most_2000"] is (max(lengths) <= 2_000)
