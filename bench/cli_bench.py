"""CLI start-up: ``specialists route`` as a fresh process against the cost of starting Python with the
two libraries every command needs. Prints one JSON object.

In the same run, alternating so that noise on this shared machine hits both alike: ``--runs`` cold
starts (fresh subprocesses) of the venv's ``specialists`` console script, ``specialists route
--input-json @<example> --json``, and as many of ``python -c "import pydantic, typer"`` with the same
interpreter. The figure to watch is the ratio of their wall-time medians (target: at most 2.0).
Beside it, the medians of the CPU time each start used (user + system), which another process
holding a core disturbs less than wall time, and — in the same rounds — a floor: a Typer command
with ``route``'s six options that validates its input as one pydantic model and prints it as JSON
(:data:`FLOOR_CODE`), i.e. what any Typer + pydantic command pays before it does its own work.

Both run with bytecode caches, as an installed command does: the caches go to a temporary
``PYTHONPYCACHEPREFIX`` (written by one untimed warm-up start of each, which also warms the file
cache), so nothing is written next to the sources. ``PYTHONDONTWRITEBYTECODE`` is removed for them;
without caches every module of ours would be compiled from source on each start.

Usage: ``python bench/cli_bench.py [--runs N] [--example FILE]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "work-items" / "03-slow-query.json"
BASELINE_CODE = "import pydantic, typer"
FLOOR_CODE = """
import json, sys
from typing import Annotated
import typer
from pydantic import BaseModel

class Item(BaseModel):
    title: str

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

@app.command()
def route(
    input_json: Annotated[str, typer.Option("--input-json")],
    tier: Annotated[str | None, typer.Option("--tier")] = None,
    automatic: Annotated[bool, typer.Option("--automatic")] = False,
    override: Annotated[str | None, typer.Option("--override")] = None,
    override_reason: Annotated[str | None, typer.Option("--override-reason")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    with open(input_json.removeprefix("@"), encoding="utf-8") as file:
        item = Item.model_validate_json(file.read())
    sys.stdout.write(json.dumps(item.model_dump()) + "\\n")

app(args=sys.argv[1:], standalone_mode=False)
"""
"""The floor: a Typer command shaped like ``route`` that parses its work item as one pydantic model."""
TARGET_RATIO = 2.0


def _start(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds from starting ``command`` to its exit, and the CPU seconds it used (user + system);
    fails unless it exits 0."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    completed = subprocess.run(
        command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode != 0:
        raise SystemExit(f"{command[0]} exited {completed.returncode}: {completed.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10, help="cold starts of each command (default 10)")
    parser.add_argument("--example", type=Path, default=EXAMPLE, help="the work item routed")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    python = sys.executable
    specialists = str(Path(python).with_name("specialists"))
    cli = [specialists, "route", "--input-json", f"@{args.example.resolve()}", "--json"]
    baseline = [python, "-c", BASELINE_CODE]
    floor = [python, "-c", FLOOR_CODE, "--input-json", f"@{args.example.resolve()}", "--json"]
    with tempfile.TemporaryDirectory(prefix="cli-bench-pycache-") as prefix:
        env = {
            name: value
            for name, value in os.environ.items()
            if name != "PYTHONDONTWRITEBYTECODE" and not name.startswith("SPECIALISTS_")
        }
        env["PYTHONPYCACHEPREFIX"] = prefix
        for command in (cli, baseline, floor):  # untimed: writes the bytecode caches, warms the file cache
            _start(command, env)
        cli_samples: list[tuple[float, float]] = []
        baseline_samples: list[tuple[float, float]] = []
        floor_samples: list[tuple[float, float]] = []
        for _ in range(args.runs):
            cli_samples.append(_start(cli, env))
            baseline_samples.append(_start(baseline, env))
            floor_samples.append(_start(floor, env))

    cli_median = statistics.median(wall for wall, _ in cli_samples)
    baseline_median = statistics.median(wall for wall, _ in baseline_samples)
    ratio = round(cli_median / baseline_median, 2)
    floor_median = statistics.median(wall for wall, _ in floor_samples)
    cli_cpu = statistics.median(cpu for _, cpu in cli_samples)
    baseline_cpu = statistics.median(cpu for _, cpu in baseline_samples)
    print(
        json.dumps(
            {
                "cli_command": ["specialists", *cli[1:]],
                "baseline_command": ["python", "-c", BASELINE_CODE],
                "runs": args.runs,
                "cli_route_ms_median": _ms(cli_median),
                "baseline_ms_median": _ms(baseline_median),
                "cli_route_ms_samples": [_ms(wall) for wall, _ in cli_samples],
                "baseline_ms_samples": [_ms(wall) for wall, _ in baseline_samples],
                "ratio": ratio,
                "target": TARGET_RATIO,
                "target_met": ratio <= TARGET_RATIO,
                "cli_route_cpu_ms_median": _ms(cli_cpu),
                "baseline_cpu_ms_median": _ms(baseline_cpu),
                "cpu_ratio": round(cli_cpu / baseline_cpu, 2),
                "floor_ms_median": _ms(floor_median),
                "floor_ms_samples": [_ms(wall) for wall, _ in floor_samples],
                "floor_ratio": round(floor_median / baseline_median, 2),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
