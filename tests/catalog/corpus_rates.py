"""Rates of the text-safety corpus: how much hostile text is rejected with its category, how much benign
text is accepted, per category, for the tuned files and the held-out files apart.

``python -m tests.catalog.corpus_rates`` prints the table the README reports; ``--json`` prints it as one
JSON object, ``--failures`` lists the entries of the *tuned* files that miss (the held-out files are only
counted, never listed, so they are not tuned on by accident).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catalog.safety import scan_text

CORPUS = Path(__file__).resolve().parent / "corpus"
TUNED = ("hostile.json", "benign.json")
HELD_OUT = ("hostile_holdout.json", "benign_holdout.json")


def load_entries(name: str) -> list[dict[str, Any]]:
    """The entries of one corpus file (``text``, ``category`` and ``form`` or ``source``)."""
    entries: list[dict[str, Any]] = json.loads((CORPUS / name).read_text(encoding="utf-8"))["entries"]
    return entries


def hostile_rejected(entry: dict[str, Any]) -> bool:
    """Whether a hostile entry is rejected with its own category among the findings."""
    return entry["category"] in {finding.rule.value for finding in scan_text(entry["text"])}


def benign_accepted(entry: dict[str, Any]) -> bool:
    """Whether a benign entry passes with no finding at all."""
    return scan_text(entry["text"]) == []


@dataclass(frozen=True)
class Rate:
    """``passed`` of ``total`` entries of one category behaved as they must."""

    category: str
    passed: int
    total: int

    @property
    def percent(self) -> float:
        return 100.0 * self.passed / self.total if self.total else 100.0


def rates(entries: Sequence[dict[str, Any]], *, hostile: bool) -> list[Rate]:
    """Per-category rates, categories sorted, then one ``all`` row."""
    check = hostile_rejected if hostile else benign_accepted
    by_category: dict[str, list[bool]] = {}
    for entry in entries:
        by_category.setdefault(entry["category"], []).append(check(entry))
    rows = [Rate(category, sum(results), len(results)) for category, results in sorted(by_category.items())]
    rows.append(Rate("all", sum(row.passed for row in rows), sum(row.total for row in rows)))
    return rows


def report() -> dict[str, Any]:
    """Every rate: ``{"tuned"|"held_out": {"hostile_rejected"|"benign_accepted": [rows]}}``."""
    result: dict[str, Any] = {}
    for label, (hostile_file, benign_file) in (("tuned", TUNED), ("held_out", HELD_OUT)):
        result[label] = {
            "hostile_rejected": [row.__dict__ for row in rates(load_entries(hostile_file), hostile=True)],
            "benign_accepted": [row.__dict__ for row in rates(load_entries(benign_file), hostile=False)],
        }
    return result


def table(data: dict[str, Any]) -> str:
    """The Markdown table the README reports (one row per category, then `all`)."""
    lines = [
        "| category | hostile rejected (tuned) | benign accepted (tuned) | hostile rejected (held out) "
        "| benign accepted (held out) |",
        "|---|---|---|---|---|",
    ]
    columns = [
        data["tuned"]["hostile_rejected"],
        data["tuned"]["benign_accepted"],
        data["held_out"]["hostile_rejected"],
        data["held_out"]["benign_accepted"],
    ]
    categories = [*sorted({row["category"] for column in columns for row in column} - {"all"}), "all"]
    for category in categories:
        cells = []
        for column in columns:
            row = next((row for row in column if row["category"] == category), None)
            cells.append(
                "–"
                if row is None
                else f"{row['passed']}/{row['total']} ({100 * row['passed'] / row['total']:.0f} %)"
            )
        lines.append(f"| {category} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _failures() -> list[str]:
    lines = []
    for entry in load_entries(TUNED[0]):
        if not hostile_rejected(entry):
            found = sorted({finding.rule.value for finding in scan_text(entry["text"])})
            lines.append(f"hostile missed  [{entry['category']}] {entry['text']!r} found {found}")
    for entry in load_entries(TUNED[1]):
        findings = scan_text(entry["text"])
        if findings:
            shown = [f"{finding.rule.value}: {finding.detail}" for finding in findings]
            lines.append(f"benign rejected [{entry['category']}] {entry['text']!r} {shown}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the rates as one JSON object")
    parser.add_argument("--failures", action="store_true", help="list the tuned entries that miss")
    args = parser.parse_args(argv)
    data = report()
    print(json.dumps(data, indent=2) if args.json else table(data))
    if args.failures:
        print("\n".join(_failures()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
