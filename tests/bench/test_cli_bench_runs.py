"""``bench/cli_bench.py`` runs with one cold start of each command and prints one JSON object."""

from __future__ import annotations

from pathlib import Path

from tests.bench import bench_report


def test_cli_bench_prints_both_medians_every_sample_and_the_ratio(tmp_path: Path) -> None:
    report = bench_report("cli_bench.py", "--runs", "2", cwd=tmp_path)

    assert set(report) == {
        "cli_command",
        "baseline_command",
        "runs",
        "cli_route_ms_median",
        "baseline_ms_median",
        "cli_route_ms_samples",
        "baseline_ms_samples",
        "ratio",
        "target",
        "target_met",
        "cli_route_cpu_ms_median",
        "baseline_cpu_ms_median",
        "cpu_ratio",
        "floor_ms_median",
        "floor_ms_samples",
        "floor_ratio",
    }
    assert report["cli_command"][:2] == ["specialists", "route"] and report["cli_command"][-1] == "--json"
    assert report["baseline_command"] == ["python", "-c", "import pydantic, typer"]
    assert report["runs"] == 2
    assert len(report["cli_route_ms_samples"]) == len(report["baseline_ms_samples"]) == 2
    assert len(report["floor_ms_samples"]) == 2 and report["floor_ms_median"] > 0
    assert all(sample > 0 for sample in report["cli_route_ms_samples"] + report["baseline_ms_samples"])
    assert report["cli_route_ms_median"] > 0 and report["baseline_ms_median"] > 0
    assert abs(report["ratio"] - report["cli_route_ms_median"] / report["baseline_ms_median"]) < 0.011
    assert report["target"] == 2.0
    assert report["target_met"] is (report["ratio"] <= 2.0)
    assert report["cli_route_cpu_ms_median"] > 0 and report["baseline_cpu_ms_median"] > 0
    assert list(tmp_path.iterdir()) == []  # nothing is written where it runs
