"""Small catalogs written for the catalog tests: a valid base to break one rule at a time."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SHIPPED_CATALOG = ROOT / "catalog" / "catalog.v1.json"
DATA = Path(__file__).resolve().parent / "data"

PIN_COMMIT = "1" * 40
REPOSITORY = "https://example.org/profiles.git"


def upstream_provenance(path: str = "profiles/analyst.md", sha256: str = "a" * 64) -> dict[str, Any]:
    """Provenance of a profile adapted from ``path`` at the catalog's pinned commit."""
    return {
        "origin": "upstream",
        "repository": REPOSITORY,
        "upstream_name": "Analyst",
        "source_path": path,
        "source_commit": None,
        "sha256": sha256,
        "license": "MIT",
        "reviewed_on": "2026-01-15",
        "local_reason": None,
    }


def local_provenance() -> dict[str, Any]:
    """Provenance of a profile written here, with no upstream file."""
    return {
        "origin": "local",
        "reviewed_on": "2026-01-15",
        "local_reason": "no upstream profile covers this role",
    }


def profile(profile_id: str, reviewer: str, provenance: dict[str, Any] | None = None) -> dict[str, Any]:
    """A complete, safe profile with the given id and reviewer."""
    words = profile_id.replace("-", " ")
    return {
        "id": profile_id,
        "name": words.title(),
        "guidance": f"Examines the evidence for {words} questions and reports findings with their sources.",
        "deliverables": ["findings with evidence references", "open questions for the operator"],
        "evidence_needs": ["the original work item", "relevant logs or excerpts"],
        "risk_limits": ["recommends only; changes nothing", "states uncertainty instead of guessing"],
        "work_class": "core",
        "reviewer": reviewer,
        "routing": {
            "keywords": [words, f"{words} review"],
            "domains": ["analysis"],
            "roles": [words],
            "task_types": ["investigate", "review"],
        },
        "provenance": provenance if provenance is not None else upstream_provenance(),
    }


def catalog(*profiles: dict[str, Any]) -> dict[str, Any]:
    """A catalog file object; without arguments, three valid profiles reviewing one another."""
    if not profiles:
        profiles = (
            profile("alpha-analyst", "beta-reviewer"),
            profile("beta-reviewer", "alpha-analyst", upstream_provenance("profiles/reviewer.md", "b" * 64)),
            profile("gamma-writer", "alpha-analyst", local_provenance()),
        )
    return {
        "catalog_version": "1.0.0",
        "schema_version": 1,
        "reviewed_on": "2026-01-15",
        "upstream": {"repository": REPOSITORY, "commit": PIN_COMMIT, "license": "MIT"},
        "profiles": [copy.deepcopy(p) for p in profiles],
    }


def shipped_catalog_data() -> dict[str, Any]:
    """The shipped catalog file as parsed JSON (a fresh copy on every call)."""
    data: dict[str, Any] = json.loads(SHIPPED_CATALOG.read_text(encoding="utf-8"))
    return data
