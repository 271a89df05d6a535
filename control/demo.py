"""``make demo``: the main job on the embedded defaults.

Routes every example work item in ``examples/work-items/`` and prints the decisions as a table.
"""

from __future__ import annotations

import sys
from pathlib import Path

from catalog.loader import load_catalog
from catalog.router import route
from contracts.work_item import WorkItem
from control.output import console, table

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples" / "work-items"


def example_work_items(directory: Path = EXAMPLES_DIR) -> list[tuple[str, WorkItem]]:
    """Every ``*.json`` work item in ``directory``, sorted by file name. Raises on an invalid file."""
    return [
        (path.name, WorkItem.model_validate_json(path.read_text(encoding="utf-8")))
        for path in sorted(directory.glob("*.json"))
    ]


def main() -> int:
    """Route the examples and print the table; returns the exit code."""
    catalog = load_catalog()
    rows = []
    for name, item in example_work_items():
        decision = route(item, catalog)
        rows.append(
            [
                name,
                item.title,
                decision.primary,
                decision.reviewer,
                decision.risk.value,
                f"{decision.confidence:.2f}",
                "; ".join(decision.evidence_gaps) or "-",
            ]
        )
    out = console()
    out.print(
        table(
            f"routes on catalog {catalog.version} (sha256 {catalog.sha256[:16]}…)",
            ["example", "title", "primary", "reviewer", "risk", "confidence", "evidence gaps"],
            rows,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
