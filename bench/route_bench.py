"""Router throughput and CLI cold start. Prints one JSON object.

Throughput: routes per second over the example work items (median of repeated rounds), next to the
cost of only normalising the same items in the same run, so the ratio means something on a shared,
noisy machine.

Cold start: wall time of ``specialists route --input-json @… --json`` as a fresh process (median),
measured twice: with bytecode caches, as an installed command runs (the caches go to a temporary
``PYTHONPYCACHEPREFIX``, so nothing is written next to the sources), and with every module compiled
from source on each start (``PYTHONDONTWRITEBYTECODE=1``, no caches). Beside them, in the same rounds:
a bare ``python -c pass``, ``python -c "import typer, pydantic"``, and the floor any Typer + pydantic
command pays: importing Typer and defining one pydantic model.

Usage: ``python bench/route_bench.py [--rounds N] [--seconds S] [--cold-runs N]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from catalog.loader import load_catalog  # noqa: E402
from catalog.normalize import normalize_text  # noqa: E402
from catalog.router import route  # noqa: E402
from control.demo import example_work_items  # noqa: E402

EXAMPLE = ROOT / "examples" / "work-items" / "03-slow-query.json"
MODEL_FLOOR = "import typer\nfrom pydantic import BaseModel\nclass M(BaseModel):\n    x: int\n"


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


def _wall(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT, env=env)
    return time.perf_counter() - start


def _ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 1)


def _cold_starts(runs: int) -> dict[str, list[float]]:
    """Wall times of each start command, interleaved round by round so drift hits all alike."""
    python = sys.executable
    cli = str(Path(python).with_name("specialists"))
    route_command = [cli, "route", "--input-json", f"@{EXAMPLE}", "--json"]
    with tempfile.TemporaryDirectory(prefix="route-bench-pycache-") as prefix:
        cached = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cached["PYTHONPYCACHEPREFIX"] = prefix
        uncached = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
        uncached["PYTHONDONTWRITEBYTECODE"] = "1"
        commands = {
            "route_cached": (route_command, cached),
            "route_uncached": (route_command, uncached),
            "bare": ([python, "-c", "pass"], cached),
            "typer_pydantic_import": ([python, "-c", "import typer, pydantic"], cached),
            "typer_pydantic_model": ([python, "-c", MODEL_FLOOR], cached),
        }
        for command, env in commands.values():  # warm file caches and write the bytecode caches
            _wall(command, env)
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(runs):
            for name, (command, env) in commands.items():
                samples[name].append(_wall(command, env))
    return samples


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

    cold = _cold_starts(args.cold_runs)
    route_median = statistics.median(route_rates)
    normalise_median = statistics.median(normalise_rates)
    print(
        json.dumps(
            {
                "items": len(items),
                "routes_per_second_median": round(route_median),
                "normalise_only_per_second_median": round(normalise_median),
                "route_cost_vs_normalise_ratio": round(normalise_median / route_median, 2),
                "cli_route_cold_start_ms_median": _ms(cold["route_cached"]),
                "cli_route_cold_start_without_bytecode_cache_ms_median": _ms(cold["route_uncached"]),
                "python_bare_start_ms_median": _ms(cold["bare"]),
                "python_import_typer_pydantic_ms_median": _ms(cold["typer_pydantic_import"]),
                "python_typer_plus_one_pydantic_model_ms_median": _ms(cold["typer_pydantic_model"]),
                "cli_vs_bare_python_ratio": round(
                    statistics.median(cold["route_cached"]) / statistics.median(cold["bare"]), 2
                ),
                "targets": {"routes_per_second": 20000, "cli_route_cold_start_ms": 400},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
