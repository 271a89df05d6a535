"""``bench/web_bench.py --quick`` runs end to end on a real deployment and prints every page against
its JSON twin."""

from __future__ import annotations

from pathlib import Path

from tests.bench import bench_report

PAGES = {"overview", "runs", "run", "queue", "research", "team", "policy", "brief", "route_preview"}


def test_web_bench_prints_every_page_against_its_json_twin(tmp_path: Path) -> None:
    report = bench_report("web_bench.py", "--quick", cwd=tmp_path, timeout=400)
    assert report["config"] == {"runs": 50, "rounds": 5}
    assert set(report["pages"]) == PAGES
    for entry in report["pages"].values():
        assert entry["page_ms_median"] > 0 and entry["json_ms_median"] > 0
        assert abs(entry["ratio"] - entry["page_ms_median"] / entry["json_ms_median"]) < 0.02
    assert report["worst_ratio"] == max(entry["ratio"] for entry in report["pages"].values())
    assert report["target_met"] == (report["worst_ratio"] <= 2.0)
