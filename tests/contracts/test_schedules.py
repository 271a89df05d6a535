"""What the daily case analysis needs of the automation policy: its runs are automatic and
analysis-only, so only mode ``guarded`` with ceiling ``read_only`` gives them anything to run."""

from __future__ import annotations

import pytest

from contracts.enums import AutomationMode, Tier
from contracts.policy import AutomationPolicy
from contracts.schedules import case_sweep_policy_problem


def test_guarded_with_a_read_only_ceiling_lets_the_case_sweep_run() -> None:
    policy = AutomationPolicy(mode=AutomationMode.GUARDED, maximum_automatic_tier=Tier.READ_ONLY)
    assert case_sweep_policy_problem(policy) is None


def test_an_off_policy_is_named_as_such() -> None:
    assert (
        case_sweep_policy_problem(AutomationPolicy(mode=AutomationMode.OFF)) == "the automation policy is off"
    )


@pytest.mark.parametrize(
    ("mode", "ceiling"),
    [
        (AutomationMode.RECOMMEND, Tier.RECOMMEND),
        (AutomationMode.RECOMMEND, Tier.READ_ONLY),
        (AutomationMode.GUARDED, Tier.RECOMMEND),
    ],
)
def test_a_policy_without_automatic_read_only_says_what_to_set(mode: AutomationMode, ceiling: Tier) -> None:
    problem = case_sweep_policy_problem(AutomationPolicy(mode=mode, maximum_automatic_tier=ceiling))
    assert problem == (
        f"the automation policy ({mode.value}, ceiling {ceiling.value}) gives automatic runs no read_only "
        "analysis: set mode guarded with ceiling read_only"
    )
