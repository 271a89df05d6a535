"""A research case's status (``contracts.research``): a person moves it along the table — forward one
step, back one step, to ``closed`` from anywhere, ``closed`` back to ``open`` — and the system never
moves it at all (the daily analysis reads the status, nothing more)."""

from __future__ import annotations

import itertools

import pytest

from contracts.errors import Refused
from contracts.research import CASE_TRANSITIONS, SWEPT_STATUSES, CaseMover, CaseStatus, check_case_transition

S = CaseStatus
ALLOWED = {
    (S.OPEN, S.VALIDATION), (S.OPEN, S.CLOSED),
    (S.VALIDATION, S.OPEN), (S.VALIDATION, S.READY_TO_PUBLISH), (S.VALIDATION, S.CLOSED),
    (S.READY_TO_PUBLISH, S.VALIDATION), (S.READY_TO_PUBLISH, S.CLOSED),
    (S.CLOSED, S.OPEN),
}  # fmt: skip


@pytest.mark.parametrize(("current", "target"), list(itertools.product(S, S)))
def test_a_person_makes_exactly_the_moves_of_the_table(current: CaseStatus, target: CaseStatus) -> None:
    if (current, target) in ALLOWED:
        check_case_transition(current, target, CaseMover.HUMAN)
        return
    with pytest.raises(Refused) as refused:
        check_case_transition(current, target, CaseMover.HUMAN)
    expected = "case_status_unchanged" if current is target else "case_transition_refused"
    assert refused.value.code == expected


@pytest.mark.parametrize(("current", "target"), sorted(ALLOWED))
def test_the_system_never_moves_a_case_not_even_along_the_table(
    current: CaseStatus, target: CaseStatus
) -> None:
    with pytest.raises(Refused) as refused:
        check_case_transition(current, target, CaseMover.SYSTEM)
    assert refused.value.code == "case_status_system_refused"


def test_the_table_is_the_documented_one_and_only_validation_and_ready_to_publish_are_swept() -> None:
    assert {(a, b) for a, targets in CASE_TRANSITIONS.items() for b in targets} == ALLOWED
    assert {S.VALIDATION, S.READY_TO_PUBLISH} == SWEPT_STATUSES
