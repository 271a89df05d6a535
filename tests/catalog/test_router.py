"""The deterministic router: routing cases, required routes, determinism, overrides, risk, gaps and
text normalisation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from catalog.loaded import LoadedCatalog
from catalog.normalize import normalize_text
from catalog.router import (
    FALLBACK_PROFILE,
    GAP_NO_EVIDENCE,
    GAP_NO_REPOSITORY,
    GAP_NO_SIGNAL,
    MAX_ALTERNATIVES,
    _canonical,
    route,
)
from catalog.schema import CatalogFile
from catalog.validation import validate_catalog_file
from contracts.enums import RiskFlag, RiskLevel, TaskType
from contracts.errors import InvalidInput, NotFound
from contracts.routing import RouteDecision, RouteOverride
from contracts.work_item import WorkItem

ROOT = Path(__file__).resolve().parents[2]
CASES_PATH = Path(__file__).with_name("routing_cases.json")
CASES: list[dict[str, Any]] = json.loads(CASES_PATH.read_text())
EXAMPLES_DIR = ROOT / "examples" / "work-items"

REQUIRED_ROUTES = [
    ("Investigate a breach or production incident", "incident-responder", "senior-secops-engineer"),
    ("Repair a GitHub Actions release gate", "devops-automator", "code-reviewer"),
    ("Audit a slow query or missing index", "database-optimizer", "backend-architect"),
    (
        "Review authentication or reachable application-security risk",
        "application-security-engineer",
        "senior-secops-engineer",
    ),
    ("Correct a responsive dashboard screen", "frontend-developer", "ui-designer"),
    ("Audit WCAG behaviour", "accessibility-auditor", "frontend-developer"),
    ("Prepare source-backed threat research", "threat-intelligence-analyst", "senior-secops-engineer"),
    (
        "Map SOC 2 / ISO 27001 / HIPAA / NIST / CIS / NIS2 evidence",
        "compliance-auditor",
        "privacy-engineer",
    ),
]

EXAMPLE_ROUTES = {
    "01-production-breach.json": ("incident-responder", "senior-secops-engineer"),
    "02-release-gate.json": ("devops-automator", "code-reviewer"),
    "03-slow-query.json": ("database-optimizer", "backend-architect"),
    "04-authentication-review.json": ("application-security-engineer", "senior-secops-engineer"),
    "05-responsive-dashboard.json": ("frontend-developer", "ui-designer"),
    "06-wcag-audit.json": ("accessibility-auditor", "frontend-developer"),
    "07-threat-research.json": ("threat-intelligence-analyst", "senior-secops-engineer"),
    "08-compliance-evidence.json": ("compliance-auditor", "privacy-engineer"),
    "09-ambiguous.json": ("general-orchestrator", "reality-checker"),
}


def _fresh_catalog() -> LoadedCatalog:
    """The shipped catalog validated again: equal content, a different object."""
    report = validate_catalog_file(ROOT / "catalog" / "catalog.v1.json")
    assert report.catalog is not None, report.violations
    return report.catalog


def _item(title: str, **fields: Any) -> WorkItem:
    return WorkItem.model_validate({"title": title, **fields})


def _ambiguity(decision: RouteDecision) -> list[str]:
    return [gap for gap in decision.evidence_gaps if gap.startswith("ambiguous scope")]


def _catalog_with(profiles: list[dict[str, Any]]) -> LoadedCatalog:
    """A small catalog of the given profiles (plus a general-orchestrator) for structural tests."""
    base = json.loads((ROOT / "catalog" / "catalog.v1.json").read_text())
    orchestrator = next(p for p in base["profiles"] if p["id"] == FALLBACK_PROFILE)
    template = {k: v for k, v in orchestrator.items() if k not in {"id", "name", "reviewer", "routing"}}
    built = [{**template, "name": p["id"], **p} for p in profiles]
    base["profiles"] = [{**orchestrator, "reviewer": profiles[0]["id"]}, *built]
    return LoadedCatalog(file=CatalogFile.model_validate(base), sha256="0" * 64)


# --- routing cases ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[case["item"]["title"][:60] for case in CASES])
def test_routing_case_reaches_expected_primary_and_reviewer(
    case: dict[str, Any], loaded_catalog: LoadedCatalog
) -> None:
    decision = route(WorkItem.model_validate(case["item"]), loaded_catalog)
    assert (decision.primary, decision.reviewer) == (case["primary"], case["reviewer"]), decision.reasons
    if case.get("ambiguous"):
        assert _ambiguity(decision), decision.evidence_gaps
        assert decision.score == 0.0
    else:
        assert not _ambiguity(decision), decision.evidence_gaps
        assert decision.score > 0


def test_routing_cases_cover_every_profile_twice_and_ambiguous_scope(loaded_catalog: LoadedCatalog) -> None:
    assert len(CASES) >= 60
    clear = [case["primary"] for case in CASES if not case.get("ambiguous")]
    for profile in loaded_catalog.profiles:
        assert clear.count(profile) >= 2, profile
    assert sum(1 for case in CASES if case.get("ambiguous")) >= 5


def test_routing_case_reviewers_are_the_catalog_reviewers(loaded_catalog: LoadedCatalog) -> None:
    for case in CASES:
        assert case["reviewer"] == loaded_catalog.profiles[case["primary"]].reviewer


# --- required routes -------------------------------------------------------------------------------


@pytest.mark.parametrize(("title", "primary", "reviewer"), REQUIRED_ROUTES)
def test_required_route_from_title_alone(
    title: str, primary: str, reviewer: str, loaded_catalog: LoadedCatalog
) -> None:
    decision = route(_item(title), loaded_catalog)
    assert (decision.primary, decision.reviewer) == (primary, reviewer)
    assert not _ambiguity(decision)


def test_example_files_cover_every_required_route() -> None:
    assert sorted(path.name for path in EXAMPLES_DIR.glob("*.json")) == sorted(EXAMPLE_ROUTES)
    assert {route for name, route in EXAMPLE_ROUTES.items() if name != "09-ambiguous.json"} == {
        (primary, reviewer) for _, primary, reviewer in REQUIRED_ROUTES
    }


@pytest.mark.parametrize("name", sorted(EXAMPLE_ROUTES))
def test_example_work_item_routes_as_documented(name: str, loaded_catalog: LoadedCatalog) -> None:
    item = WorkItem.model_validate_json((EXAMPLES_DIR / name).read_text())
    decision = route(item, loaded_catalog)
    assert (decision.primary, decision.reviewer) == EXAMPLE_ROUTES[name]
    if name == "09-ambiguous.json":
        assert _ambiguity(decision)
    else:
        assert decision.evidence_gaps == []
        assert decision.confidence >= 0.7


# --- determinism and ordering ----------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES[::7], ids=[case["item"]["title"][:40] for case in CASES[::7]])
def test_same_input_gives_byte_identical_json(case: dict[str, Any], loaded_catalog: LoadedCatalog) -> None:
    item = WorkItem.model_validate(case["item"])
    first = route(item, loaded_catalog).model_dump_json()
    second = route(WorkItem.model_validate(case["item"]), loaded_catalog).model_dump_json()
    from_fresh_catalog = route(item, _fresh_catalog()).model_dump_json()
    assert first == second == from_fresh_catalog


def test_equal_scores_are_ordered_by_profile_id(loaded_catalog: LoadedCatalog) -> None:
    decision = route(_item("Review the frontend and the backend"), loaded_catalog)
    assert [(a.profile, a.score) for a in decision.alternatives] == [
        ("backend-architect", 3.0),
        ("frontend-developer", 3.0),
    ]
    assert "backend-architect and frontend-developer match about equally" in decision.evidence_gaps[0]


def test_exact_tie_breaks_by_id_whatever_the_catalog_order() -> None:
    signals = {"keywords": ["widget"], "task_types": ["fix"]}
    tied = [{"id": "zeta-profile", "reviewer": "alpha-profile", "routing": signals}]
    tied.append({"id": "alpha-profile", "reviewer": "zeta-profile", "routing": signals})
    for profiles in (tied, tied[::-1]):
        decision = route(_item("Widget renders twice", task_type="fix"), _catalog_with(profiles))
        assert decision.primary == FALLBACK_PROFILE
        assert [a.profile for a in decision.alternatives] == ["alpha-profile", "zeta-profile"]
        assert _ambiguity(decision) == ["ambiguous scope: alpha-profile and zeta-profile match about equally"]


def test_clear_leader_wins_over_a_weaker_shared_keyword() -> None:
    catalog = _catalog_with(
        [
            {"id": "alpha-profile", "reviewer": "beta-profile", "routing": {"keywords": ["widget"]}},
            {
                "id": "beta-profile",
                "reviewer": "alpha-profile",
                "routing": {"keywords": ["widget", "gadget"]},
            },
        ]
    )
    decision = route(_item("Widget and gadget"), catalog)
    assert (decision.primary, decision.reviewer, decision.score) == ("beta-profile", "alpha-profile", 6.0)
    assert [(a.profile, a.score) for a in decision.alternatives] == [("alpha-profile", 3.0)]


def test_alternatives_are_best_first_bounded_and_exclude_the_primary(loaded_catalog: LoadedCatalog) -> None:
    item = _item(
        "Security review of the dashboard, pipeline, database, docs, roadmap and privacy",
        description="Also the test suite, the design system and the WCAG state.",
    )
    decision = route(item, loaded_catalog)
    assert 0 < len(decision.alternatives) <= MAX_ALTERNATIVES
    assert decision.primary not in {a.profile for a in decision.alternatives}
    keys = [(-a.score, a.profile) for a in decision.alternatives]
    assert keys == sorted(keys)
    assert all(a.score > 0 for a in decision.alternatives)


def test_task_type_alone_never_routes(loaded_catalog: LoadedCatalog) -> None:
    decision = route(_item("Please help with this", task_type="document"), loaded_catalog)
    assert decision.primary == FALLBACK_PROFILE
    assert decision.alternatives == []
    assert decision.confidence == 0.0
    assert GAP_NO_SIGNAL in decision.evidence_gaps


def test_keyword_in_title_outweighs_the_same_keyword_in_description(loaded_catalog: LoadedCatalog) -> None:
    in_title = route(_item("Runbook for the cache"), loaded_catalog)
    in_description = route(_item("Cache", description="A runbook for the cache."), loaded_catalog)
    assert in_title.primary == "technical-writer"
    assert in_description.primary == FALLBACK_PROFILE  # 1.5 is below the routing threshold
    assert in_description.alternatives[0].profile == "technical-writer"
    assert in_description.alternatives[0].score < in_title.score


def test_domain_and_role_signals_route_without_keywords(loaded_catalog: LoadedCatalog) -> None:
    decision = route(_item("Look at this", domain="Database", roles=["DBA"]), loaded_catalog)
    assert decision.primary == "database-optimizer"
    assert "domain 'database' fits database-optimizer" in decision.reasons
    assert "role 'dba' fits database-optimizer" in decision.reasons


def test_reasons_explain_the_match(loaded_catalog: LoadedCatalog) -> None:
    decision = route(_item("Audit a slow query or missing index", task_type="audit"), loaded_catalog)
    assert decision.reasons[:2] == [
        "title matches 'slow query', 'missing index'",
        "task type audit fits database-optimizer",
    ]
    assert any(reason.startswith("routed to database-optimizer") for reason in decision.reasons)


def test_confidence_is_higher_for_stronger_clearer_routes(loaded_catalog: LoadedCatalog) -> None:
    weak = route(_item("Audit WCAG behaviour"), loaded_catalog)
    strong = route(
        WorkItem.model_validate_json((EXAMPLES_DIR / "06-wcag-audit.json").read_text()), loaded_catalog
    )
    tied = route(_item("Review the frontend and the backend"), loaded_catalog)
    assert 0.0 <= tied.confidence < weak.confidence < strong.confidence <= 1.0


def test_missing_fallback_profile_is_reported_when_a_fallback_is_needed() -> None:
    base = json.loads((ROOT / "catalog" / "catalog.v1.json").read_text())
    base["profiles"] = [p for p in base["profiles"] if p["id"] != FALLBACK_PROFILE]
    catalog = LoadedCatalog(file=CatalogFile.model_validate(base), sha256="0" * 64)
    assert route(_item("Audit WCAG behaviour"), catalog).primary == "accessibility-auditor"
    with pytest.raises(NotFound) as caught:
        route(_item("Look into the thing"), catalog)
    assert caught.value.code == "unknown_profile"
    assert FALLBACK_PROFILE in caught.value.message


# --- override --------------------------------------------------------------------------------------


def test_override_sets_primary_and_catalog_reviewer_and_is_recorded(loaded_catalog: LoadedCatalog) -> None:
    item = _item("Audit a slow query or missing index", task_type="audit")
    computed = route(item, loaded_catalog)
    override = RouteOverride(profile="technical-writer", reason="need the findings written up first")
    decision = route(item, loaded_catalog, override=override)
    assert (decision.primary, decision.reviewer) == ("technical-writer", "reality-checker")
    assert decision.override == override
    assert decision.score == 0.0
    assert decision.confidence == computed.confidence
    assert decision.risk == computed.risk
    assert "operator override: need the findings written up first" in decision.reasons
    assert "operator override selects technical-writer instead of database-optimizer" in decision.reasons
    assert decision.alternatives[0].profile == "database-optimizer"
    assert "technical-writer" not in {a.profile for a in decision.alternatives}
    assert decision.to_json_dict()["override"] == {
        "profile": "technical-writer",
        "reason": "need the findings written up first",
    }


def test_override_naming_the_computed_primary_is_still_recorded(loaded_catalog: LoadedCatalog) -> None:
    item = _item("Audit WCAG behaviour")
    decision = route(
        item, loaded_catalog, override=RouteOverride(profile="accessibility-auditor", reason="x")
    )
    assert decision.primary == "accessibility-auditor"
    assert decision.override is not None
    assert "operator override confirms computed primary accessibility-auditor" in decision.reasons
    assert "operator override: x" in decision.reasons


def test_override_resolves_an_ambiguous_route_but_keeps_the_gap(loaded_catalog: LoadedCatalog) -> None:
    item = _item("Review the frontend and the backend")
    decision = route(item, loaded_catalog, override=RouteOverride(profile="frontend-developer", reason="UI"))
    assert (decision.primary, decision.reviewer) == ("frontend-developer", "ui-designer")
    assert _ambiguity(decision)
    assert [a.profile for a in decision.alternatives] == ["backend-architect"]


def test_override_code_gap_follows_the_chosen_profile(loaded_catalog: LoadedCatalog) -> None:
    item = _item("Audit WCAG behaviour", task_type="test", evidence_refs=["page:home"])
    assert route(item, loaded_catalog).evidence_gaps == []
    chosen = route(
        item, loaded_catalog, override=RouteOverride(profile="frontend-developer", reason="fix it")
    )
    assert chosen.evidence_gaps == [GAP_NO_REPOSITORY]


def test_unknown_override_profile_is_not_found(loaded_catalog: LoadedCatalog) -> None:
    override = RouteOverride(profile="chief-wizard", reason="feels right")
    with pytest.raises(NotFound) as caught:
        route(_item("Audit WCAG behaviour"), loaded_catalog, override=override)
    assert caught.value.code == "unknown_profile"
    assert caught.value.exit_code == 3
    assert "chief-wizard" in caught.value.message
    assert "specialists catalog" in caught.value.message


@pytest.mark.parametrize("reason", ["", "   ", "\t\n"])
def test_blank_override_reason_is_refused(reason: str, loaded_catalog: LoadedCatalog) -> None:
    override = RouteOverride(profile="technical-writer", reason=reason)
    with pytest.raises(InvalidInput) as caught:
        route(_item("Audit WCAG behaviour"), loaded_catalog, override=override)
    assert caught.value.code == "override_reason_required"
    assert caught.value.exit_code == 2


# --- risk ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "level"),
    [
        ({"title": "Audit WCAG behaviour"}, RiskLevel.LOW),
        ({"title": "Audit WCAG behaviour", "risk_flags": ["production"]}, RiskLevel.MEDIUM),
        ({"title": "Audit WCAG behaviour", "risk_flags": ["regulated"]}, RiskLevel.MEDIUM),
        ({"title": "Audit WCAG behaviour", "risk_flags": ["credentials"]}, RiskLevel.HIGH),
        ({"title": "Audit WCAG behaviour", "risk_flags": ["production", "customer_data"]}, RiskLevel.HIGH),
        ({"title": "Audit WCAG behaviour", "risk_flags": ["credentials", "data_loss"]}, RiskLevel.CRITICAL),
        ({"title": "Check the outage timeline"}, RiskLevel.MEDIUM),
        ({"title": "Investigate a breach"}, RiskLevel.HIGH),
        (
            {"title": "Investigate a breach", "risk_flags": ["production", "external_exposure"]},
            RiskLevel.CRITICAL,
        ),
        (
            {"title": "Ransomware on the file servers", "description": "Customer data may be affected."},
            RiskLevel.CRITICAL,
        ),
    ],
)
def test_risk_level_from_flags_and_text(
    fields: dict[str, Any], level: RiskLevel, loaded_catalog: LoadedCatalog
) -> None:
    assert route(WorkItem.model_validate(fields), loaded_catalog).risk is level


def test_every_risk_flag_raises_risk_with_a_reason(loaded_catalog: LoadedCatalog) -> None:
    for flag in RiskFlag:
        decision = route(_item("Audit WCAG behaviour", risk_flags=[flag.value]), loaded_catalog)
        assert decision.risk is not RiskLevel.LOW, flag
        assert any(r.startswith(f"risk flag {flag.value} raises risk") for r in decision.reasons), flag


def test_risk_text_signals_are_named_in_reasons(loaded_catalog: LoadedCatalog) -> None:
    decision = route(
        _item("Investigate a BREACH", description="Leaked keys found; customer data exposed."), loaded_catalog
    )
    reasons = decision.reasons
    assert any(r.startswith("text mentions 'breach'") for r in reasons)
    assert any(r.startswith("text mentions 'leaked key'") for r in reasons)
    assert any(r.startswith("text mentions 'customer data'") for r in reasons)
    assert decision.risk is RiskLevel.CRITICAL
    assert reasons[-1] == "risk critical from 8 points"


def test_risk_term_inside_a_neutral_phrase_does_not_raise_risk(loaded_catalog: LoadedCatalog) -> None:
    decision = route(_item("Collect indicators of compromise for the campaign"), loaded_catalog)
    assert decision.risk is RiskLevel.LOW
    assert not any(r.startswith("text mentions") for r in decision.reasons)


def test_risk_words_match_whole_words_only(loaded_catalog: LoadedCatalog) -> None:
    assert (
        route(_item("Preproduction layout of the outages-free banner"), loaded_catalog).risk
        is RiskLevel.MEDIUM
    )
    assert route(_item("Preproduction layout of the banner"), loaded_catalog).risk is RiskLevel.LOW


# --- evidence gaps ---------------------------------------------------------------------------------


def test_no_evidence_refs_is_a_gap(loaded_catalog: LoadedCatalog) -> None:
    assert route(_item("Audit WCAG behaviour"), loaded_catalog).evidence_gaps == [GAP_NO_EVIDENCE]
    with_refs = _item("Audit WCAG behaviour", evidence_refs=["page:checkout"])
    assert route(with_refs, loaded_catalog).evidence_gaps == []


def test_fix_without_repository_alias_is_a_gap(loaded_catalog: LoadedCatalog) -> None:
    item = _item("Repair a GitHub Actions release gate", task_type="fix", evidence_refs=["ci:run-8812"])
    assert route(item, loaded_catalog).evidence_gaps == [GAP_NO_REPOSITORY]
    with_repo = item.model_copy(update={"repo_alias": "payments-api"})
    assert route(with_repo, loaded_catalog).evidence_gaps == []


def test_test_task_needs_a_repository_only_for_a_code_profile(loaded_catalog: LoadedCatalog) -> None:
    code = _item("Flaky tests in the integration test suite", task_type="test", evidence_refs=["ci:run-1"])
    assert route(code, loaded_catalog).evidence_gaps == [GAP_NO_REPOSITORY]
    audit = _item("Audit WCAG behaviour", task_type="test", evidence_refs=["page:home"])
    assert route(audit, loaded_catalog).evidence_gaps == []


def test_ambiguous_scope_gap_comes_first_and_names_no_signal(loaded_catalog: LoadedCatalog) -> None:
    decision = route(_item("Look into the thing", task_type=TaskType.FIX), loaded_catalog)
    assert decision.evidence_gaps == [GAP_NO_SIGNAL, GAP_NO_EVIDENCE, GAP_NO_REPOSITORY]
    assert decision.primary == FALLBACK_PROFILE
    assert decision.reviewer == loaded_catalog.profiles[FALLBACK_PROFILE].reviewer


# --- normalisation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "title",
    [
        "Audit ＷＣＡＧ behaviour",  # full-width letters
        "AUDIT wcag BEHAVIOUR",  # mixed case
        "  Audit   WCAG  behaviour ",  # whitespace runs
    ],
)
def test_normalised_spellings_route_byte_identically(title: str, loaded_catalog: LoadedCatalog) -> None:
    plain = route(_item("Audit WCAG behaviour"), loaded_catalog)
    assert route(_item(title), loaded_catalog).model_dump_json() == plain.model_dump_json()


@pytest.mark.parametrize(
    "title",
    [
        "Audit W\u200bC\u200dAG behaviour",  # zero-width characters inside the keyword
        "  Audit\tWCAG\n behaviour ",  # tab and line feed
        "Audit WCAG\u00ad behaviour",  # soft hyphen
    ],
)
def test_the_router_normalises_even_what_work_item_validation_refuses(
    title: str, loaded_catalog: LoadedCatalog
) -> None:
    # A WorkItem refuses these characters in a title (contracts.text_rules); the router does not rely
    # on that and reads them as the plain spelling.
    plain = route(_item("Audit WCAG behaviour"), loaded_catalog)
    unchecked = WorkItem.model_construct(**{**_item("x").model_dump(), "title": title})
    assert route(unchecked, loaded_catalog).model_dump_json() == plain.model_dump_json()


def test_full_width_multi_word_keyword_and_hyphen_spelling_route_alike(loaded_catalog: LoadedCatalog) -> None:
    spaced = route(_item("Review application security risk"), loaded_catalog)
    hyphenated = route(_item("Review application-security risk"), loaded_catalog)
    full_width = route(_item("Review ａｐｐｌｉｃａｔｉｏｎ ＳＥＣＵＲＩＴＹ risk"), loaded_catalog)
    assert spaced.primary == "application-security-engineer"
    assert spaced.model_dump_json() == hyphenated.model_dump_json() == full_width.model_dump_json()


def test_keywords_match_whole_words_and_plurals(loaded_catalog: LoadedCatalog) -> None:
    assert route(_item("Cisco pricing tables"), loaded_catalog).primary == "product-manager"  # not 'cis'
    plural = route(_item("Two missing indexes on orders"), loaded_catalog)
    assert plural.primary == "database-optimizer"
    assert plural.reasons[0] == "title matches 'missing index'"


def test_longer_keyword_hides_the_shorter_one_inside_it(loaded_catalog: LoadedCatalog) -> None:
    decision = route(_item("SQL injection in the search filter"), loaded_catalog)
    assert decision.primary == "application-security-engineer"
    assert "database-optimizer" not in {a.profile for a in decision.alternatives}


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_ascii_shortcut_matches_full_normalisation(text: str) -> None:
    slow = " ".join("".join(c if c.isalnum() else " " for c in normalize_text(text).casefold()).split())
    assert _canonical(text) == slow


def test_catalog_matchers_are_compiled_once_per_catalog(loaded_catalog: LoadedCatalog) -> None:
    from catalog.router import _compiled

    first = _compiled(loaded_catalog)
    route(_item("Audit WCAG behaviour"), loaded_catalog)
    assert _compiled(loaded_catalog) is first
    assert _compiled(_fresh_catalog()) is not first
