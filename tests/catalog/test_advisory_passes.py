"""Advisory passes (docs/architecture.md "Orchestration", "Model selection"): only an operator's
explicit request adds one — never a label, a domain or a risk flag; it is a pass of its own in a
review wave, of class ``advisory``, on the selection's advisory model, captured under the digest; a
request with no advisory model selected is refused before anything runs."""

from __future__ import annotations

import datetime as dt

import pytest

from catalog.capture import capture
from catalog.loaded import LoadedCatalog
from catalog.orchestration import catalog_reviewers, decide
from catalog.router import route
from contracts.config import PolicyRecord
from contracts.enums import RiskFlag, Tier
from contracts.errors import Refused
from contracts.model_classes import ModelClass
from contracts.models import ModelSelection, ModelSelectionRecord
from contracts.orchestration import AdvisoryTopic, ReviewShape
from contracts.policy import AutomationPolicy
from contracts.runs import CapturedContract, RunInput
from contracts.work_item import WorkItem

ITEM = WorkItem(title="Tidy the orders report query", evidence_refs=["file:reports/orders.sql"])


def _selection(advisory: str | None) -> ModelSelectionRecord:
    return ModelSelectionRecord(
        selection=ModelSelection(primary="replay:demo", advisory=advisory),
        selected_by="alice",
        selected_at=dt.datetime(2026, 12, 1, tzinfo=dt.UTC),
    )


def _capture(
    catalog: LoadedCatalog, advisory: AdvisoryTopic | None, selected: str | None, tier: Tier = Tier.READ_ONLY
) -> CapturedContract:
    run = RunInput(
        run_id="SOR-0123456789ABCDEF", work_item=ITEM, requested_tier=tier, request_digest="0" * 64,
        advisory=advisory,
    )  # fmt: skip
    return capture(
        run, catalog, PolicyRecord(policy=AutomationPolicy()), _selection(selected),
        read_only_budget_seconds=1800, edit_budget_seconds=3600,
    )  # fmt: skip


def test_an_advisory_request_adds_a_pass_of_its_own_in_a_wave_on_the_advisory_class(
    loaded_catalog: LoadedCatalog,
) -> None:
    decided = route(ITEM, loaded_catalog)
    assert decide(ITEM, decided, Tier.READ_ONLY).shape is ReviewShape.SINGLE
    decision = decide(
        ITEM, decided, Tier.READ_ONLY, advisory=AdvisoryTopic.SECURITY,
        reviewers=catalog_reviewers(loaded_catalog),
    )  # fmt: skip
    assert decision.shape is ReviewShape.WAVE and decision.advisory is AdvisoryTopic.SECURITY
    assert not decision.operator_requested, "an advisory pass is not a request for a review wave"
    *reviews, advisory = decision.roster
    assert [p.model_class for p in reviews] == [None] * len(reviews)
    assert (advisory.profile, advisory.axes, advisory.model_class) == (
        "application-security-engineer", ["advisory-security"], ModelClass.ADVISORY,
    )  # fmt: skip
    assert advisory.questions[0].startswith("As a security adviser")
    assert any("asked for a security advisory pass" in reason for reason in decision.reasons)
    assert "(advisory model)" in decision.reasons[-1]
    assert decision.to_json_dict() == decision.model_dump(mode="json")
    assert decision.to_json_dict()["advisory"] == "security"


def test_an_advisory_pass_stays_its_own_pass_even_when_its_profile_reviews_another_axis(
    loaded_catalog: LoadedCatalog,
) -> None:
    item = WorkItem(
        title="Rotate the session keys", evidence_refs=["file:src/auth/session.py", "file:.ci/run"]
    )
    decided = route(item, loaded_catalog)
    decision = decide(
        item, decided, Tier.READ_ONLY, advisory=AdvisoryTopic.SECURITY,
        reviewers=catalog_reviewers(loaded_catalog),
    )  # fmt: skip
    by_class = [(p.profile, p.model_class) for p in decision.roster]
    assert by_class.count(("application-security-engineer", ModelClass.ADVISORY)) == 1
    advisory = [p for p in decision.roster if p.model_class is ModelClass.ADVISORY]
    assert len(advisory) == 1 and advisory[0].axes == ["advisory-security"]
    assert all(p.profile != decided.primary for p in decision.roster)


def test_a_primary_never_advises_on_its_own_work_its_reviewer_takes_the_pass_in_line(
    loaded_catalog: LoadedCatalog,
) -> None:
    item = WorkItem(
        title="Review the service boundaries of the export API", domain="backend", roles=["backend-architect"]
    )
    decided = route(item, loaded_catalog)
    assert decided.primary == "backend-architect"
    decision = decide(
        item, decided, Tier.READ_ONLY, advisory=AdvisoryTopic.ARCHITECTURE,
        reviewers=catalog_reviewers(loaded_catalog),
    )  # fmt: skip
    advisory = decision.roster[-1]
    assert advisory.profile == loaded_catalog.profiles["backend-architect"].reviewer
    assert advisory.substitutes == {"advisory-architecture": "backend-architect"}


@pytest.mark.parametrize(
    "item",
    [
        WorkItem(
            title="Audit the token store", domain="security", roles=["security architect", "architecture"],
            risk_flags=[RiskFlag.CREDENTIALS, RiskFlag.PRODUCTION, RiskFlag.EXTERNAL_EXPOSURE],
        ),
        WorkItem(title="Design the architecture", evidence_refs=["file:src/auth/x.py", "advisory:GHSA-1"]),
    ],
)  # fmt: skip
def test_no_label_domain_or_risk_flag_ever_chooses_an_advisory_pass(
    loaded_catalog: LoadedCatalog, item: WorkItem
) -> None:
    decision = decide(item, route(item, loaded_catalog), Tier.READ_ONLY, requested=True)
    assert decision.advisory is None
    assert all(p.model_class is None for p in decision.roster)


def test_a_recommend_run_takes_no_advisory_pass_and_says_so(loaded_catalog: LoadedCatalog) -> None:
    decision = decide(ITEM, route(ITEM, loaded_catalog), Tier.RECOMMEND, advisory=AdvisoryTopic.ARCHITECTURE)
    assert (decision.shape, decision.advisory, decision.roster) == (ReviewShape.NONE, None, [])
    assert decision.reasons[-1] == "the architecture advisory pass asked for is not taken: no pass is made"


def test_the_advisory_model_is_captured_only_for_a_requested_pass_and_covered_by_the_digest(
    loaded_catalog: LoadedCatalog,
) -> None:
    plain = _capture(loaded_catalog, None, "openai:adviser")
    assert plain.contract.model is not None and plain.contract.model.advisory is None
    asked = _capture(loaded_catalog, AdvisoryTopic.ARCHITECTURE, "openai:adviser")
    assert asked.contract.model is not None and asked.contract.model.advisory == "openai:adviser"
    assert asked.contract.orchestration is not None
    assert asked.contract.orchestration.advisory is AdvisoryTopic.ARCHITECTURE
    assert asked.contract_sha256 != plain.contract_sha256
    alone = asked.contract.model.for_advisory()
    assert (alone.chain, alone.assignments) == (["openai:adviser"], [])


def test_an_advisory_request_without_an_advisory_model_is_refused_naming_the_fix(
    loaded_catalog: LoadedCatalog,
) -> None:
    with pytest.raises(Refused) as refused:
        _capture(loaded_catalog, AdvisoryTopic.SECURITY, None)
    assert refused.value.code == "advisory_model_missing"
    assert "--advisory provider:name" in refused.value.message
    assert _capture(loaded_catalog, None, None).contract.orchestration is not None


def test_the_request_digest_covers_an_advisory_request_only_when_made() -> None:
    from contracts.runs import run_request_digest

    base = RunInput(
        run_id="SOR-0123456789ABCDEF", work_item=ITEM, requested_tier=Tier.READ_ONLY, request_digest=""
    )
    asked = base.model_copy(update={"advisory": AdvisoryTopic.SECURITY})
    assert run_request_digest(base) != run_request_digest(asked)
    assert "advisory" not in base.model_dump(mode="json", exclude_none=True)
