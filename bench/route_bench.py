"""Router throughput and CLI cold start. Prints one JSON object.

Throughput: routes per second over the example work items (median of repeated rounds), next to the
cost of only normalising the same items in the same run, so the ratio means something on a shared,
noisy machine. Cold start: wall time of ``specialists route --json`` as a fresh process (median), next
to a bare ``python -c pass`` measured in the same run.

Usage: ``python bench/route_bench.py [--rounds N] [--seconds S] [--cold-runs N]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from catalog.loader import load_catalog  # noqa: E402
from catalog.normalize import normalize_text  # noqa: E402
from catalog.router import route  # noqa: E402
from control.demo import example_work_items  # noqa: E402


def _rate(action: object, items: list[object], seconds: float) -> float:
    """Calls per second of ``action(item)`` cycling over ``items`` for about ``seconds``."""
    assert callable(action)
    count = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for item in items:
            action(item)
        count += len(items)
    return count / (time.perf_counter() - start)


def _wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=0.5)
    parser.add_argument("--cold-runs", type=int, default=9)
    args = parser.parse_args()

    catalog = load_catalog()
    items = [item for _, item in example_work_items()]
    route(items[0], catalog)  # warm the per-catalog matcher cache

    def normalise(item: object) -> None:
        normalize_text(item.title).casefold()  # type: ignore[attr-defined]
        normalize_text(item.description).casefold()  # type: ignore[attr-defined]

    route_rates, normalise_rates = [], []
    for _ in range(args.rounds):
        route_rates.append(_rate(lambda item: route(item, catalog), items, args.seconds))  # type: ignore[arg-type]
        normalise_rates.append(_rate(normalise, items, args.seconds))

    cli = str(Path(sys.executable).with_name("specialists"))
    example = ROOT / "examples" / "work-items" / sorted(os.listdir(ROOT / "examples" / "work-items"))[0]
    route_command = [cli, "route", "--input-json", f"@{example}", "--json"]
    _wall(route_command)  # the first run pays for cold file caches
    cold = [_wall(route_command) for _ in range(args.cold_runs)]
    bare = [_wall([sys.executable, "-c", "pass"]) for _ in range(args.cold_runs)]

    route_median = statistics.median(route_rates)
    normalise_median = statistics.median(normalise_rates)
    print(
        json.dumps(
            {
                "items": len(items),
                "routes_per_second_median": round(route_median),
                "normalise_only_per_second_median": round(normalise_median),
                "route_cost_vs_normalise_ratio": round(normalise_median / route_median, 2),
                "cli_route_cold_start_ms_median": round(statistics.median(cold) * 1000, 1),
                "python_bare_start_ms_median": round(statistics.median(bare) * 1000, 1),
                "cli_vs_bare_python_ratio": round(statistics.median(cold) / statistics.median(bare), 2),
                "targets": {"routes_per_second": 20000, "cli_route_cold_start_ms": 400},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
