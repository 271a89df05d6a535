"""``bench/team_bench.py --quick`` runs end to end and prints one JSON object with its measurements."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "team_bench.py"


def test_team_bench_prints_its_measurements_as_json(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, str(BENCH), "--quick"],
        cwd=tmp_path,
        env={name: value for name, value in os.environ.items() if not name.startswith("SPECIALISTS_")},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )

    assert completed.returncode == 0, completed.stderr[-4000:]
    report = json.loads(completed.stdout)
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
