"""The router against the plain reference implementation of its rules (tests/catalog/reference_router.py):
byte-identical decisions for the examples, the routing cases, generated work items and generated
catalogs, including overrides and refusals."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog.loaded import LoadedCatalog
from catalog.router import MAX_ALTERNATIVES, RISK_TERMS, route
from catalog.schema import CatalogFile
from contracts.enums import RiskFlag, TaskType
from contracts.errors import OperatorError
from contracts.routing import RouteOverride
from contracts.work_item import WorkItem
from tests.catalog import reference_router

ROOT = Path(__file__).resolve().parents[2]
SHIPPED: dict[str, Any] = json.loads((ROOT / "catalog" / "catalog.v1.json").read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = json.loads(Path(__file__).with_name("routing_cases.json").read_text())
EXAMPLES = sorted((ROOT / "examples" / "work-items").glob("*.json"))

KEYWORDS = sorted({k for p in SHIPPED["profiles"] for k in p["routing"]["keywords"]})
DOMAINS = sorted({d for p in SHIPPED["profiles"] for d in p["routing"]["domains"]})
ROLES = sorted({r for p in SHIPPED["profiles"] for r in p["routing"]["roles"]})
# Spellings that test plurals, phrases inside phrases, separators and normalisation.
TRICKY = [
    "ci", "cis", "index", "indexes", "missing index", "query", "queries", "policy", "policies",
    "api key", "api keys", "key", "keys", "sql", "sql injection", "injection", "data", "data loss",
    "bus", "buses", "buse", "x y z", "x y", "y z", "--", "a-b", "A_B", "Ｓｑｌ", "é-té", "se\u200bcret",
    "indicators of compromise", "compromise", "leaked key", "Data-Loss", "the", "of", "on call",
]  # fmt: skip
WORDS = KEYWORDS + TRICKY + list(RISK_TERMS)
SEPARATORS = [" ", " ", " ", "-", ", ", "_", ". ", "  ", "\t", "/"]
# What a work item may carry (contracts.text_rules): no format characters anywhere, and a one-line
# field no tab either. Catalog keywords keep every spelling.
ITEM_WORDS = [word for word in WORDS if "\u200b" not in word]
ONE_LINE_SEPARATORS = [sep for sep in SEPARATORS if sep != "\t"]
PROFILE_IDS = [p["id"] for p in SHIPPED["profiles"]]


def _same(item: WorkItem, catalog: LoadedCatalog, override: RouteOverride | None = None) -> None:
    def outcome(decide: Any) -> str:
        try:
            return str(decide(item, catalog, override=override).model_dump_json())
        except OperatorError as error:
            return f"{type(error).__name__} {error.code}: {error.message}"

    assert outcome(route) == outcome(reference_router.route)


@st.composite
def _texts(draw: st.DrawFn, most: int, separators: list[str] = SEPARATORS) -> str:
    words = draw(st.lists(st.sampled_from(ITEM_WORDS), max_size=most))
    glue = draw(st.lists(st.sampled_from(separators), min_size=len(words), max_size=len(words)))
    return "".join(word + sep for word, sep in zip(words, glue, strict=True))


def _full_width(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


# Spellings of a label that mean the same label: case, separators, spacing, full-width forms.
_VARIANTS = (str, str.upper, lambda t: t.replace(" ", "-"), lambda t: f"  {t.title()}_", _full_width)


@st.composite
def _label(draw: st.DrawFn, labels: list[str]) -> str:
    return str(draw(st.sampled_from(_VARIANTS))(draw(st.sampled_from(labels))))[:64]


@st.composite
def _items(draw: st.DrawFn) -> WorkItem:
    title = draw(_texts(8, ONE_LINE_SEPARATORS))[:200]
    data: dict[str, Any] = {
        "title": title if title.strip() else "x",
        "description": draw(_texts(30)),
        "domain": draw(st.one_of(st.just(""), _label([*DOMAINS, "--", "ci"]))),
        "roles": draw(st.lists(_label([*ROLES, "--", "a-b"]), max_size=3)),
        "risk_flags": draw(st.lists(st.sampled_from([f.value for f in RiskFlag]), max_size=3, unique=True)),
        "task_type": draw(st.sampled_from([t.value for t in TaskType])),
    }
    if draw(st.booleans()):
        data["repo_alias"] = "payments-api"
    if draw(st.booleans()):
        data["evidence_refs"] = ["ticket:1"]
    return WorkItem.model_validate(data)


@st.composite
def _catalogs(draw: st.DrawFn) -> LoadedCatalog:
    data = copy.deepcopy(SHIPPED)
    for profile in data["profiles"]:
        routing = profile["routing"]
        routing["keywords"] = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=20))
        routing["domains"] = draw(st.lists(st.sampled_from([*DOMAINS, "--", "ci"]), max_size=3))
        routing["roles"] = draw(st.lists(st.sampled_from([*ROLES, "--", "DBA"]), max_size=3))
        routing["task_types"] = draw(st.lists(st.sampled_from([t.value for t in TaskType]), max_size=4))
    if draw(st.booleans()):
        data["profiles"] = [p for p in data["profiles"] if p["id"] != "general-orchestrator"]
    return LoadedCatalog(file=CatalogFile.model_validate(data), sha256="0" * 64)


@pytest.mark.parametrize("path", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_examples_match_the_reference(path: Path, loaded_catalog: LoadedCatalog) -> None:
    _same(WorkItem.model_validate_json(path.read_text(encoding="utf-8")), loaded_catalog)


def test_routing_cases_match_the_reference(loaded_catalog: LoadedCatalog) -> None:
    for case in CASES:
        _same(WorkItem.model_validate(case["item"]), loaded_catalog)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(item=_items())
def test_generated_work_items_match_the_reference(item: WorkItem, loaded_catalog: LoadedCatalog) -> None:
    _same(item, loaded_catalog)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(catalog=_catalogs(), items=st.lists(_items(), min_size=1, max_size=3))
def test_generated_catalogs_match_the_reference(catalog: LoadedCatalog, items: list[WorkItem]) -> None:
    for item in items:
        _same(item, catalog)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    item=_items(),
    profile=st.sampled_from([*PROFILE_IDS, "no-such-profile"]),
    reason=st.sampled_from(["why", "  ", "x\u200by  z", "Ｆｕｌｌ width"]),
)
def test_overrides_match_the_reference(
    item: WorkItem, profile: str, reason: str, loaded_catalog: LoadedCatalog
) -> None:
    _same(item, loaded_catalog, RouteOverride(profile=profile, reason=reason))


def test_generated_items_reach_every_branch(loaded_catalog: LoadedCatalog) -> None:
    """The strategies are not vacuous: they produce clear routes, ties, no-signal items and long
    alternative lists."""
    seen: set[str] = set()

    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(item=_items())
    def collect(item: WorkItem) -> None:
        decision = route(item, loaded_catalog)
        gaps = " ".join(decision.evidence_gaps)
        seen.add("clear" if decision.score > 0 else "fallback")
        seen.update(kind for kind in ("no clear routing signal", "match about equally") if kind in gaps)
        if len(decision.alternatives) == MAX_ALTERNATIVES:
            seen.add("full alternatives")

    collect()
    expected = {"clear", "fallback", "no clear routing signal", "match about equally", "full alternatives"}
    assert seen >= expected


def test_weights_are_whole_thousandths() -> None:
    """The router sums scores as integer thousandths of a point; that equals the float sum rounded to
    three decimals only while every weight is a whole number of thousandths."""
    from catalog import router

    for weight, milli in (
        (router.TITLE_WEIGHT, router._TITLE_MILLI),
        (router.DESCRIPTION_WEIGHT, router._DESCRIPTION_MILLI),
        (router.DOMAIN_WEIGHT, router._DOMAIN_MILLI),
        (router.ROLE_WEIGHT, router._ROLE_MILLI),
        (router.TASK_TYPE_WEIGHT, router._TASK_TYPE_MILLI),
    ):
        assert weight * 1000 == milli
