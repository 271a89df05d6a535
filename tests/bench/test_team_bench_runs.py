"""``bench/team_bench.py --quick`` runs end to end and prints one JSON object with its measurements."""

from __future__ import annotations

from pathlib import Path

from tests.bench import bench_report


def test_team_bench_prints_its_measurements_as_json(tmp_path: Path) -> None:
    report = bench_report("team_bench.py", "--quick", cwd=tmp_path, timeout=180)
    assert set(report) == {
        "config",
        "baseline",
        "teams",
        "largest_team_history",
        "ratio_wall_to_one_team",
        "targets",
    }
    assert report["config"]["teams"] == 3
    teams = report["teams"]
    assert teams["model_jobs"] == 36 and teams["model_jobs_per_s"] > 0
    assert 0 < teams["largest_grant_in_a_cycle"] <= 5
    assert teams["coordinator_cycles"] >= teams["lower_bound_cycles"]
    history = report["largest_team_history"]
    assert 0 < history["events"] <= 2000 and 0 < history["bytes"] <= 1_000_000
