"""``RouteDecision.to_json_dict`` is exactly pydantic's JSON-mode dump (it is written out by hand so a
route preview never pays for pydantic's first JSON-mode dump), without the tier keys unless a tier
preview was made (and then with the orchestration decision a run at that tier would get)."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.enums import RiskLevel, TaskType, Tier
from contracts.orchestration import OrchestrationDecision, ReviewDomain, ReviewShape
from contracts.routing import RouteDecision

WAVE = OrchestrationDecision(
    shape=ReviewShape.WAVE,
    domains=[ReviewDomain.CODE, ReviewDomain.TESTS, ReviewDomain.CI],
    consequential=[ReviewDomain.CODE, ReviewDomain.CI],
    evidence={
        ReviewDomain.CODE: ["file:src/a.py"],
        ReviewDomain.CI: ["file:.ci/run"],
        ReviewDomain.TESTS: [],
    },
    adversarial=True,
    operator_requested=False,
    reasons=["it crosses 2 consequential domains (code, ci): one review pass per axis"],
)


def _decision(**changes: Any) -> RouteDecision:
    data: dict[str, Any] = {
        "primary": "database-optimizer",
        "reviewer": "backend-architect",
        "confidence": 0.779,
        "score": 14.0,
        "risk": "medium",
        "reasons": ["title matches 'slow query'", "risk medium from 2 points"],
        "alternatives": [{"profile": "backend-architect", "score": 1.5}, {"profile": "sre", "score": 1.0}],
        "evidence_gaps": ["no evidence refs"],
        "repo_alias": "orders-service",
        "task_type": "audit",
        "override": None,
    }
    return RouteDecision.model_validate({**data, **changes})


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"alternatives": [], "evidence_gaps": [], "repo_alias": None, "score": 0.0, "confidence": 0.0},
        {"override": {"profile": "technical-writer", "reason": "a written summary first"}},
        {"risk": RiskLevel.CRITICAL, "task_type": TaskType.FIX, "reasons": []},
    ],
    ids=["routed", "empty", "override", "enums"],
)
def test_json_dict_is_the_json_mode_dump_without_the_tier_keys(changes: dict[str, Any]) -> None:
    decision = _decision(**changes)
    expected = decision.model_dump(mode="json")
    assert expected.pop("effective_tier") is None
    assert expected.pop("tier_reasons") is None
    assert expected.pop("orchestration") is None
    assert decision.to_json_dict() == expected
    assert list(decision.to_json_dict()) == list(expected)


@pytest.mark.parametrize("tier_reasons", [["risk high: recommend only"], [], None])
def test_json_dict_of_a_tier_preview_is_the_whole_json_mode_dump(tier_reasons: list[str] | None) -> None:
    decision = _decision().model_copy(
        update={"effective_tier": Tier.READ_ONLY, "tier_reasons": tier_reasons, "orchestration": WAVE}
    )
    assert decision.to_json_dict() == decision.model_dump(mode="json")
    assert list(decision.to_json_dict()) == list(decision.model_dump(mode="json"))


def test_json_dict_shares_no_list_with_the_decision() -> None:
    decision = _decision()
    data = decision.to_json_dict()
    assert isinstance(data["reasons"], list)
    data["reasons"].append("changed")
    assert "changed" not in decision.reasons
