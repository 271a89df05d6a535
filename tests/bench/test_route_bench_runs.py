"""``bench/route_bench.py`` runs with tiny arguments and prints one JSON object with its measurements."""

from __future__ import annotations

from pathlib import Path

from tests.bench import BENCH_DIR, bench_report


def test_route_bench_prints_its_measurements_as_json(tmp_path: Path) -> None:
    report = bench_report(
        "route_bench.py", "--rounds", "1", "--seconds", "0.05", "--cold-runs", "1", cwd=tmp_path
    )
    assert set(report) == {
        "items",
        "routes_per_second_median",
        "normalise_only_per_second_median",
        "route_cost_vs_normalise_ratio",
        "cli_route_cold_start_ms_median",
        "python_bare_start_ms_median",
        "cli_vs_bare_python_ratio",
        "cli_route_cold_start_without_bytecode_cache_ms_median",
        "python_import_typer_pydantic_ms_median",
        "python_typer_plus_one_pydantic_model_ms_median",
        "targets",
    }
    assert report["items"] == len(list((BENCH_DIR.parent / "examples" / "work-items").glob("*.json")))
    for key in ("routes_per_second_median", "normalise_only_per_second_median"):
        assert report[key] > 0
    for key in ("cli_route_cold_start_ms_median", "python_bare_start_ms_median"):
        assert report[key] > 0
    assert report["targets"] == {"routes_per_second": 20000, "cli_route_cold_start_ms": 400}
    assert list(tmp_path.iterdir()) == []  # nothing is written where it runs
