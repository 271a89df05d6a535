"""``bench/wave_bench.py --quick`` runs end to end and prints the wave against four passes in a row."""

from __future__ import annotations

from pathlib import Path

from tests.bench import bench_report


def test_wave_bench_prints_a_four_pass_wave_against_four_sequential_passes(tmp_path: Path) -> None:
    report = bench_report("wave_bench.py", "--quick", cwd=tmp_path, timeout=300)
    assert report["config"] == {"repetitions": 1, "delay_ms": 200, "passes": 4}
    wave, sequential = report["wave_review_s"]["median"], report["sequential_review_s"]["median"]
    assert wave > 0 and sequential > 0
    assert abs(report["ratio"] - wave / sequential) < 0.01
    assert report["wire_max_in_flight"] == 4  # the wave's four passes were at the model at once
    assert report["target_met"] == (report["ratio"] <= 0.4)
