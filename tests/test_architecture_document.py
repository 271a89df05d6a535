"""The architecture document is the repository's own: every comment that cites it names a section it
has, and nothing cites a design document outside the repository."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCUMENT = ROOT / "docs" / "architecture.md"
# A citation: docs/architecture.md followed by one or more quoted section names ("A", "B").
CITATION = re.compile(r'docs/architecture\.md\s*\(?((?:"[^"\n]+"(?:\s*,\s*|\s+and\s+)?)+)')


def _tracked_text_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.py", "*.md", "*.toml", "*.sh", "Makefile"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).is_file()]


def _sections() -> set[str]:
    headings = re.findall(r"^#{2,4} (.+)$", DOCUMENT.read_text(encoding="utf-8"), re.MULTILINE)
    return {heading.strip() for heading in headings}


def test_every_cited_section_of_the_architecture_document_exists() -> None:
    sections = _sections()
    missing = []
    for path in _tracked_text_files():
        if path == DOCUMENT:
            continue
        text = " ".join(path.read_text(encoding="utf-8").split())  # citations may wrap across lines
        for match in CITATION.finditer(text):
            for name in re.findall(r'"([^"]+)"', match.group(1)):
                if name not in sections:
                    missing.append(f"{path.relative_to(ROOT)}: {name!r}")
    assert missing == [], f"sections cited but not in docs/architecture.md: {missing}"


def test_nothing_cites_a_design_document_outside_the_repository() -> None:
    citing = [
        str(path.relative_to(ROOT))
        for path in _tracked_text_files()
        if path != Path(__file__) and "DESIGN.md" in path.read_text(encoding="utf-8")
    ]
    assert citing == []
