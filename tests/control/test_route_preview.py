"""What a route preview says ``create`` would refuse: the repository rules of contract capture, by
tier, whether the item names a repository and whether it is registered and active."""

from __future__ import annotations

import pytest

from contracts.enums import Tier
from control.route_preview import create_refusal

EDIT_TIERS = [Tier.WORKTREE, Tier.PR_READY]
ANALYSIS_TIERS = [Tier.RECOMMEND, Tier.READ_ONLY]


@pytest.mark.parametrize("tier", EDIT_TIERS)
def test_an_edit_tier_without_a_repository_would_be_refused_repo_alias_required(tier: Tier) -> None:
    refusal = create_refusal(None, tier, None)
    assert refusal is not None and refusal["code"] == "repo_alias_required"
    assert refusal["message"].startswith(f"a {tier.value} run changes code")


@pytest.mark.parametrize("tier", EDIT_TIERS)
def test_an_edit_tier_on_a_repository_that_is_not_registered_would_be_refused_unknown_repository(
    tier: Tier,
) -> None:
    refusal = create_refusal("orders-service", tier, None)
    assert refusal is not None and refusal["code"] == "unknown_repository"
    assert "'orders-service'" in refusal["message"]


@pytest.mark.parametrize("tier", [*ANALYSIS_TIERS, *EDIT_TIERS])
def test_any_run_on_a_deactivated_repository_would_be_refused(tier: Tier) -> None:
    refusal = create_refusal("orders-service", tier, False)
    assert refusal is not None and refusal["code"] == "repository_deactivated"


@pytest.mark.parametrize("tier", ANALYSIS_TIERS)
def test_a_recommend_or_read_only_run_needs_no_registered_repository(tier: Tier) -> None:
    assert create_refusal(None, tier, None) is None
    assert create_refusal("orders-service", tier, None) is None


@pytest.mark.parametrize("tier", [*ANALYSIS_TIERS, *EDIT_TIERS])
def test_a_run_on_an_active_registered_repository_is_taken(tier: Tier) -> None:
    assert create_refusal("orders-service", tier, True) is None
