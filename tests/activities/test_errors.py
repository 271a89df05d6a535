"""How an activity's refusal reaches Temporal and the worker's log: an operator refusal is one
``activity_refused`` line and an expected (benign) failure the worker does not log again as a warning
with a traceback; an unreachable service stays an ordinary, retryable failure."""

from __future__ import annotations

from structlog.testing import capture_logs
from temporalio.exceptions import ApplicationErrorCategory

from activities.errors import refusal
from contracts.errors import InvalidInput, NotFound, Refused, ServiceUnavailable


def test_an_operator_refusal_is_logged_once_and_marked_benign() -> None:
    for error in (
        Refused("policy_ceiling", "the policy allows at most read_only"),
        InvalidInput("repo_alias_required", "a worktree run names its repository"),
        NotFound("unknown_repository", "no repository 'orders'"),
    ):
        with capture_logs() as logs:
            raised = refusal(error)
        assert (raised.type, raised.non_retryable) == (error.code, True)
        assert raised.category is ApplicationErrorCategory.BENIGN
        assert [(entry["event"], entry["code"], entry["message"]) for entry in logs] == [
            ("activity_refused", error.code, error.message)
        ]


def test_an_unreachable_service_is_a_retryable_failure_the_worker_warns_about() -> None:
    with capture_logs() as logs:
        raised = refusal(ServiceUnavailable("database_unreachable", "cannot reach the database"))
    assert (raised.type, raised.non_retryable) == ("database_unreachable", False)
    assert raised.category is ApplicationErrorCategory.UNSPECIFIED
    assert logs == []
