"""``contracts.refusal_detail``: a refusal raised by an activity says which class of operator error it
is, the run's error keeps that exit code, and the CLI gets the same class back."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError

from activities.errors import refusal
from contracts.errors import (
    InvalidInput,
    NotFound,
    OperatorError,
    Refused,
    ServiceUnavailable,
    VerificationFailed,
)
from contracts.execution import WorktreeLocation
from contracts.failures import WorktreeFailureDetail, failure_detail
from contracts.refusal_detail import RefusalDetail, operator_error
from contracts.runs import RunError

CLASSES = [InvalidInput, NotFound, Refused, ServiceUnavailable, VerificationFailed, OperatorError]


@pytest.mark.parametrize("error_class", CLASSES, ids=lambda error_class: error_class.__name__)
def test_a_refusal_carries_its_exit_code_and_the_same_class_comes_back(
    error_class: type[OperatorError],
) -> None:
    raised = refusal(error_class("some_code", "why"), RefusalDetail.of(error_class("some_code", "why")))

    detail = failure_detail(raised, RefusalDetail)

    assert detail == RefusalDetail(exit_code=error_class.exit_code)
    back = operator_error(raised.type or "", raised.message, detail.exit_code)
    assert type(back) is error_class
    assert (back.code, back.message, back.exit_code) == ("some_code", "why", error_class.exit_code)
    assert raised.non_retryable is (error_class is not ServiceUnavailable)


def test_a_refusal_without_a_detail_and_other_details_read_as_none() -> None:
    assert failure_detail(refusal(Refused("automation_off", "off")), RefusalDetail) is None
    assert failure_detail(ApplicationError("failed", type="x"), RefusalDetail) is None
    location = WorktreeLocation(attempt=1, worktree="/w", repository="/r", base_commit="a" * 40, host="h")
    worktree = ApplicationError("failed", WorktreeFailureDetail(location=location).model_dump(mode="json"))
    assert failure_detail(worktree, RefusalDetail) is None
    assert (
        failure_detail(
            refusal(NotFound("unknown_run", "no"), RefusalDetail.of(NotFound("a", "b"))),
            WorktreeFailureDetail,
        )
        is None
    )


def test_a_run_error_recorded_before_the_exit_code_existed_decodes_without_one() -> None:
    assert RunError.model_validate({"type": "automation_off", "message": "off"}).exit_code is None
    assert RunError(type="unknown_profile", message="no", exit_code=3).model_dump(mode="json") == {
        "type": "unknown_profile",
        "message": "no",
        "exit_code": 3,
    }


def test_an_exit_code_outside_the_operator_contract_is_refused() -> None:
    with pytest.raises(ValueError):
        RefusalDetail(exit_code=7)
