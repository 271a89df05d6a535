"""``contracts.failures``: one typed detail per failure, read back the same way whether it was raised
as one model or — in histories recorded before — positionally."""

from __future__ import annotations

from temporalio.exceptions import ApplicationError

from contracts.execution import CommandReport, WorktreeLocation
from contracts.failures import (
    ModelCallFailureDetail,
    ModelJobFailureDetail,
    WorktreeFailureDetail,
    failure_detail,
)
from contracts.model_jobs import CallUsage, ModelAttempt

LOCATION = WorktreeLocation(
    attempt=2, worktree="/state/worktrees/SOR-X/attempt-2", repository="/repo", base_commit="a" * 40, host="h"
)
REPORT = CommandReport(exit_status=3, duration_seconds=1.5, timed_out=False, stdout="out")
ATTEMPT = ModelAttempt(model_id="replay:demo", outcome="failed", error_type="model_quota", fallback=True)


def _error(*details: object) -> ApplicationError:
    return ApplicationError("failed", *details, type="patch_does_not_apply")


def test_a_worktree_failure_reads_back_from_its_one_detail() -> None:
    detail = WorktreeFailureDetail(location=LOCATION, command=REPORT)
    error = _error(detail.model_dump(mode="json"))
    assert failure_detail(error, WorktreeFailureDetail) == detail


def test_a_worktree_failure_raised_positionally_reads_the_same() -> None:
    # Before the detail model: the location first, then (once the agent ran) its report.
    both = _error(LOCATION.model_dump(mode="json"), REPORT.model_dump(mode="json"))
    assert failure_detail(both, WorktreeFailureDetail) == WorktreeFailureDetail(
        location=LOCATION, command=REPORT
    )
    located = _error(LOCATION.model_dump(mode="json"))
    assert failure_detail(located, WorktreeFailureDetail) == WorktreeFailureDetail(location=LOCATION)


def test_a_model_job_failure_reads_back_from_its_one_detail_and_positionally() -> None:
    detail = ModelJobFailureDetail(attempts=[ATTEMPT], pack_sha256="b" * 64)
    assert failure_detail(_error(detail.model_dump(mode="json")), ModelJobFailureDetail) == detail
    positional = _error([ATTEMPT.model_dump(mode="json")], {"pack_sha256": "b" * 64})
    assert failure_detail(positional, ModelJobFailureDetail) == detail
    # A job whose pack could not be built carried an empty attempt list and nothing else.
    assert failure_detail(_error([]), ModelJobFailureDetail) == ModelJobFailureDetail()


def test_attempts_keep_the_fields_they_travelled_with() -> None:
    # An attempt recorded before ``attempt``, ``retried`` and ``usage`` existed is audited as it was.
    old = {
        "model_id": "replay:demo",
        "outcome": "failed",
        "error_type": "model_task",
        "message": "x",
        "fallback": False,
    }
    detail = failure_detail(_error([old]), ModelJobFailureDetail)
    assert detail is not None and detail.attempts_data() == [old]
    assert detail.attempts[0].attempt == 1 and detail.attempts[0].usage == CallUsage()


def test_a_model_call_failure_reads_its_usage_both_ways() -> None:
    usage = CallUsage(latency_ms=12, input_tokens=3, output_tokens=None)
    detail = ModelCallFailureDetail(usage=usage)
    assert failure_detail(_error(detail.model_dump(mode="json")), ModelCallFailureDetail) == detail
    assert failure_detail(_error(usage.model_dump(mode="json")), ModelCallFailureDetail) == detail


def test_no_detail_or_another_kind_of_detail_reads_as_none() -> None:
    assert failure_detail(_error(), WorktreeFailureDetail) is None
    assert failure_detail(ValueError("no details"), WorktreeFailureDetail) is None
    # A model call's usage is never mistaken for a worktree's location (extra fields are refused).
    usage = ModelCallFailureDetail(usage=CallUsage(latency_ms=1)).model_dump(mode="json")
    assert failure_detail(_error(usage), WorktreeFailureDetail) is None
    assert failure_detail(_error("text", 3), ModelJobFailureDetail) is None
