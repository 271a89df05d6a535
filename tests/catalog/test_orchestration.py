"""The orchestration decision (``catalog.orchestration.decide``): restraint by default — one coherent
change with its test and docs gets one reviewer — and a review wave when the work crosses
consequential domains, when a high or critical risk conclusion needs an adversarial pass, or when
the operator asks; explained like the route and frozen in the contract under its digest."""

from __future__ import annotations

import datetime as dt

import pytest

from catalog.capture import capture
from catalog.loaded import LoadedCatalog
from catalog.orchestration import catalog_reviewers, decide, path_domain
from catalog.router import route
from contracts.config import PolicyRecord
from contracts.enums import RiskFlag, TaskType, Tier
from contracts.models import ModelSelection, ModelSelectionRecord
from contracts.orchestration import ReviewDomain, ReviewShape
from contracts.policy import AutomationPolicy
from contracts.runs import RunInput
from contracts.work_item import WorkItem

D = ReviewDomain


@pytest.mark.parametrize(
    ("path", "domain"),
    [
        ("src/orders/report.py", D.CODE),
        ("tests/test_report.py", D.TESTS),
        ("web/report.spec.ts", D.TESTS),
        ("docs/report.md", D.DOCS),
        ("README.md", D.DOCS),
        (".github/workflows/ci.yml", D.CI),
        ("Jenkinsfile", D.CI),
        ("CHANGELOG.md", D.RELEASE),
        ("pyproject.toml", D.RELEASE),
        ("infra/k8s/worker.yaml", D.RELEASE),
        ("db/migrations/0042_index.py", D.DATA),
        ("reports/orders.sql", D.DATA),
        ("src/auth/session.py", D.SECURITY),
        ("certs/server.pem", D.SECURITY),
        ("bench/report_bench.py", D.PERFORMANCE),
        ("web/a11y/contrast.css", D.ACCESSIBILITY),
    ],
)
def test_each_path_falls_in_one_review_domain(path: str, domain: ReviewDomain) -> None:
    assert path_domain(path) is domain


def test_one_change_with_its_regression_test_and_docs_gets_one_reviewer(
    loaded_catalog: LoadedCatalog,
) -> None:
    catalog = loaded_catalog
    item = WorkItem(
        title="Fix the rounding of report totals",
        task_type=TaskType.FIX,
        evidence_refs=["file:src/orders/totals.py", "file:tests/test_totals.py", "file:docs/totals.md"],
    )
    decision = decide(item, route(item, catalog), Tier.WORKTREE)
    assert decision.shape is ReviewShape.SINGLE
    assert decision.domains == [D.CODE, D.TESTS, D.DOCS]
    assert decision.consequential == [D.CODE]
    assert decision.evidence[D.TESTS] == ["file:tests/test_totals.py"]
    assert (
        "tests and docs go with the change: they do not count towards a wave (a wave still reviews them)"
        in (decision.reasons)
    )
    assert decision.reasons[-1].endswith("one independent reviewer")


def test_work_crossing_code_ci_and_security_gets_a_review_wave_naming_each_domain_and_why(
    loaded_catalog: LoadedCatalog,
) -> None:
    catalog = loaded_catalog
    item = WorkItem(
        title="Sign release artefacts in the pipeline",
        evidence_refs=["file:src/signing.py", "file:.github/workflows/release.yml", "cve:CVE-2026-1234"],
        risk_flags=[RiskFlag.CREDENTIALS],
    )
    decision = decide(item, route(item, catalog), Tier.WORKTREE)
    assert decision.shape is ReviewShape.WAVE
    assert decision.consequential == [D.CODE, D.CI, D.SECURITY]
    assert decision.evidence[D.SECURITY] == ["cve:CVE-2026-1234", "risk flag credentials"]
    assert any(
        "crosses 3 consequential domains (code, ci, security)" in reason for reason in decision.reasons
    )


def test_a_high_risk_conclusion_gets_an_adversarial_pass_even_in_one_domain(
    loaded_catalog: LoadedCatalog,
) -> None:
    catalog = loaded_catalog
    item = WorkItem(
        title="Customer records exposed by the export job",
        domain="database",
        risk_flags=[RiskFlag.CUSTOMER_DATA, RiskFlag.PRODUCTION, RiskFlag.EXTERNAL_EXPOSURE],
    )
    decided = route(item, catalog)
    assert decided.risk.rank >= 2
    decision = decide(item, decided, Tier.READ_ONLY)
    assert decision.shape is ReviewShape.WAVE and decision.adversarial
    assert any("adversarial challenger pass" in reason for reason in decision.reasons)


def test_the_operator_may_ask_for_a_wave_and_a_recommend_run_is_never_reviewed(
    loaded_catalog: LoadedCatalog,
) -> None:
    catalog = loaded_catalog
    item = WorkItem(title="Tidy the orders report query", evidence_refs=["file:reports/orders.sql"])
    decided = route(item, catalog)
    assert decide(item, decided, Tier.READ_ONLY).shape is ReviewShape.SINGLE
    asked = decide(item, decided, Tier.READ_ONLY, requested=True)
    assert asked.shape is ReviewShape.WAVE and asked.operator_requested
    assert "the operator asked for a review wave" in asked.reasons
    recommend = decide(item, decided, Tier.RECOMMEND, requested=True)
    assert recommend.shape is ReviewShape.NONE and not recommend.adversarial
    assert recommend.reasons[-1] == "a recommend run makes no model pass: nothing is reviewed"


def test_work_that_names_nothing_gets_one_reviewer_and_says_why(loaded_catalog: LoadedCatalog) -> None:
    catalog = loaded_catalog
    item = WorkItem(title="Look into the flaky nightly job")
    decision = decide(item, route(item, catalog), Tier.READ_ONLY)
    assert (decision.shape, decision.domains, decision.consequential) == (ReviewShape.SINGLE, [], [])
    assert decision.reasons[0].startswith("the work names no file, domain, role or flag")


def test_the_decision_is_deterministic_and_frozen_in_the_contract_under_its_digest(
    loaded_catalog: LoadedCatalog,
) -> None:
    catalog = loaded_catalog
    item = WorkItem(title="Sign release artefacts", evidence_refs=["file:src/signing.py", "file:Jenkinsfile"])
    selection = ModelSelectionRecord(
        selection=ModelSelection(primary="replay:demo"),
        selected_by="alice",
        selected_at=dt.datetime(2026, 12, 1, tzinfo=dt.UTC),
    )

    def captured(wave: bool) -> tuple[str, str]:
        run = RunInput(
            run_id="SOR-0123456789ABCDEF",
            work_item=item,
            requested_tier=Tier.READ_ONLY,
            request_digest="0" * 64,
            review_wave=wave,
        )
        result = capture(
            run, catalog, PolicyRecord(policy=AutomationPolicy()), selection,
            read_only_budget_seconds=1800, edit_budget_seconds=3600,
        )  # fmt: skip
        assert result.contract.orchestration == decide(
            item, result.route, Tier.READ_ONLY, requested=wave, reviewers=catalog_reviewers(catalog)
        )
        return result.contract.orchestration.model_dump_json(), result.contract_sha256

    first, again = captured(False), captured(False)
    assert first == again
    assert captured(True)[1] != first[1], "asking for a wave changes what the operator approves"


def test_a_waves_roster_is_frozen_one_pass_per_profile_never_the_primary(
    loaded_catalog: LoadedCatalog,
) -> None:
    catalog = loaded_catalog
    item = WorkItem(
        title="Sign release artefacts in the pipeline",
        evidence_refs=["file:src/signing.py", "file:.github/workflows/release.yml", "cve:CVE-2026-1234"],
        risk_flags=[RiskFlag.CREDENTIALS],
    )
    decided = route(item, catalog)
    assert (decided.primary, decided.reviewer) == ("devops-automator", "code-reviewer")
    decision = decide(item, decided, Tier.WORKTREE, reviewers=catalog_reviewers(catalog))
    # The ci axis would go to devops-automator, the primary: it goes to the primary's own reviewer,
    # code-reviewer, who already has the overall and code axes — one pass with three axes.
    assert [(p.profile, p.axes) for p in decision.roster] == [
        ("code-reviewer", ["overall", "code", "ci"]),
        ("application-security-engineer", ["security"]),
        ("reality-checker", ["challenge"]),
    ]
    assert all(p.profile != decided.primary for p in decision.roster)
    assert all(len(p.axes) == len(p.questions) for p in decision.roster)
    assert decision.reasons[-1].startswith(
        "the wave's roster, frozen with the contract: 3 passes (code-reviewer on overall"
    )


def test_axes_of_one_profile_are_one_pass_and_a_single_review_has_no_roster(
    loaded_catalog: LoadedCatalog,
) -> None:
    catalog = loaded_catalog
    item = WorkItem(
        title="Add an index for the orders report",
        domain="database",
        evidence_refs=[
            "file:db/migrations/0042.py",
            "file:pyproject.toml",
            "file:.ci/run",
            "file:tests/test_x.py",
        ],
    )
    decision = decide(item, route(item, catalog), Tier.WORKTREE, reviewers=catalog_reviewers(catalog))
    assert [(p.profile, p.axes) for p in decision.roster] == [
        ("backend-architect", ["overall", "data"]),
        ("test-automation-engineer", ["tests"]),
        ("devops-automator", ["ci", "release"]),
    ]
    single = WorkItem(title="Tidy the orders report query", evidence_refs=["file:reports/orders.sql"])
    assert decide(single, route(single, catalog), Tier.READ_ONLY).roster == []
