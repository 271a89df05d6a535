"""The goal queue's intake: scan a repository and diff its findings against the queue
(docs/architecture.md "Goal queue", "Intake").

The ``intake`` update of ``WorkQueue`` authorises the actor (action ``queue_intake``, like ``add``),
runs the ``scan_repository`` activity here, then applies
:func:`contracts.intake_diff.apply_intake` to the queue as it is once the scan has returned (another
update may have changed it meanwhile), in one workflow task. A scan never approves anything.

Deterministic: no I/O of its own; imported by workflow modules.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from contracts.intake import IntakeAnswer, IntakeRequest, ScanRequest, ScanResult
    from contracts.temporal_names import ActivityName

PATCH_INTAKE = "queue-intake-scan"
"""Executions that take an ``intake`` update record this marker where the update first runs (no
recorded history took one: they replay unchanged)."""
SCAN_TIMEOUT = timedelta(minutes=5)
SCAN_RETRY = RetryPolicy(maximum_attempts=2, initial_interval=timedelta(seconds=1))


async def scan_repository(request: IntakeRequest) -> ScanResult | IntakeAnswer:
    """The scan of ``request.repo_alias``, or a refused answer carrying the activity's error type
    (``unknown_repository``, ``repository_deactivated``, ``git_failed`` …) and message."""
    try:
        result: ScanResult = await workflow.execute_activity(
            ActivityName.SCAN_REPOSITORY,
            ScanRequest(repo_alias=request.repo_alias, bounds=request.bounds),
            result_type=ScanResult,
            start_to_close_timeout=SCAN_TIMEOUT,
            retry_policy=SCAN_RETRY,
        )
    except ActivityError as error:
        cause = error.cause
        code = cause.type if isinstance(cause, ApplicationError) and cause.type else "scan_failed"
        message = cause.message if isinstance(cause, ApplicationError) else str(error)
        return IntakeAnswer(accepted=False, code=code, message=message, repo_alias=request.repo_alias)
    return result
