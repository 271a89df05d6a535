"""``CaseSweep``: one pass of the daily case analysis, started by its Temporal Schedule
(docs/architecture.md "Schedules").

The story: check the schedule's grant (the ``authorize_action`` activity verifies the enabling
person's signature with their key in force); list the eligible cases (``list_sweep_cases``); for each,
start an ordinary ``SpecialistRun`` — automatic, analysis-only, carrying the grant — as an abandoned
child whose id is derived from the case and its factual evidence digest, with a reuse policy that
refuses a duplicate, so a rerun or an overlapping sweep finds the run already there and starts
nothing; then wait for each run's analysis and review and attach them once as ``analyst_note``
evidence (``attach_case_notes``). The sweep never decides a run, never moves a case and never starts
a research team.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import (
    RetryPolicy,
    SearchAttributeKey,
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDReusePolicy,
)
from temporalio.exceptions import ActivityError, WorkflowAlreadyStartedError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from contracts.enums import TaskType
    from contracts.runs import AuthorizeResult, RunInput, RunStatus, run_request_digest
    from contracts.schedules import (
        AttachNotesRequest,
        AttachNotesResult,
        CaseGrant,
        CaseSweepInput,
        CaseSweepResult,
        SweepCase,
        SweepCases,
        SweepCasesRequest,
        SweepOutcome,
    )
    from contracts.search_attributes import SearchAttribute
    from contracts.temporal_names import ActivityName, WorkflowType
    from contracts.work_item import WorkItem
    from workflows.authorization import schedule_grant_request
    from workflows.versioning import auto_upgrade

_SHORT = timedelta(seconds=30)
_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(milliseconds=500))
_NOTE_WAIT_SECONDS = 3600
_STATUS_KEY = SearchAttributeKey.for_keyword(SearchAttribute.SPECIALIST_STATUS)
_CASE_KEY = SearchAttributeKey.for_keyword(SearchAttribute.RESEARCH_CASE_ID)


@workflow.defn(name=WorkflowType.CASE_SWEEP, versioning_behavior=auto_upgrade())
class CaseSweepWorkflow:
    """Route each eligible research case to one analysis-only run and attach its summaries once."""

    @workflow.init
    def __init__(self, sweep: CaseSweepInput) -> None:
        self._input = sweep

    @workflow.run
    async def run(self, sweep: CaseSweepInput) -> CaseSweepResult:
        grant = sweep.grant
        allowed = await workflow.execute_activity(
            ActivityName.AUTHORIZE_ACTION,
            schedule_grant_request(grant, workflow.info().workflow_id),
            result_type=AuthorizeResult,
            start_to_close_timeout=_SHORT,
            retry_policy=_RETRY,
        )
        if not allowed.allowed:
            return CaseSweepResult(routed=[], skipped=[], refused=f"{allowed.code}: {allowed.message}")
        listed = await workflow.execute_activity(
            ActivityName.LIST_SWEEP_CASES,
            SweepCasesRequest(sweep_workflow_id=workflow.info().workflow_id),
            result_type=SweepCases,
            start_to_close_timeout=_SHORT,
            retry_policy=_RETRY,
        )
        outcomes = await asyncio.gather(*(self._route(case) for case in listed.cases))
        return CaseSweepResult(routed=list(outcomes), skipped=listed.skipped)

    async def _route(self, case: SweepCase) -> SweepOutcome:
        """Start the case's run unless it exists, then attach its summaries once."""
        grant = self._input.grant
        run = RunInput(
            run_id=case.run_id,
            work_item=WorkItem(
                title=case.title,
                description=case.description,
                evidence_refs=case.evidence_refs,
                task_type=TaskType.RESEARCH,
                domain="research",
            ),
            automatic=True,
            enqueue=True,
            analysis_only=True,
            request_id=case.request_id,
            request_digest="",
            created_by=grant.granted_by,
            case_grant=CaseGrant(
                grant=grant, sweep_workflow_id=workflow.info().workflow_id, case_id=case.case_id
            ),
        )
        run = run.model_copy(update={"request_digest": run_request_digest(run)})
        started = True
        try:
            await workflow.start_child_workflow(
                WorkflowType.SPECIALIST_RUN,
                run,
                id=run.run_id,
                task_queue=self._input.task_queue,
                parent_close_policy=ParentClosePolicy.ABANDON,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                memo={"request_digest": run.request_digest, "title": run.work_item.title},
                search_attributes=TypedSearchAttributes(
                    [
                        SearchAttributePair(_STATUS_KEY, RunStatus.ROUTING.value),
                        SearchAttributePair(_CASE_KEY, case.case_id),
                    ]
                ),
            )
        except WorkflowAlreadyStartedError:
            started = False  # an earlier or overlapping sweep started it: its notes are ours to check
        try:
            notes = await workflow.execute_activity(
                ActivityName.ATTACH_CASE_NOTES,
                AttachNotesRequest(
                    case_id=case.case_id,
                    run_id=case.run_id,
                    granted_by=grant.granted_by,
                    wait_seconds=_NOTE_WAIT_SECONDS,
                ),
                result_type=AttachNotesResult,
                start_to_close_timeout=timedelta(seconds=_NOTE_WAIT_SECONDS + 120),
                heartbeat_timeout=timedelta(seconds=30),
                retry_policy=_RETRY,
            )
        except ActivityError as error:
            return SweepOutcome(
                case_id=case.case_id,
                run_id=case.run_id,
                started=started,
                run_status=None,
                notes_attached=[],
                notes_existing=[],
                reason=f"attaching the notes failed: {error.cause or error}",
            )
        return SweepOutcome(
            case_id=case.case_id,
            run_id=case.run_id,
            started=started,
            run_status=notes.run_status,
            notes_attached=notes.attached,
            notes_existing=notes.existing,
            reason=notes.reason,
        )
