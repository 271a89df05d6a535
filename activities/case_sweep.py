"""Activities of the daily case analysis (docs/architecture.md "Schedules"): ``list_sweep_cases``
reads the research cases the sweep routes; ``attach_case_notes`` waits for a sweep's run to have its
analysis and review and attaches both once to the case as ``analyst_note`` evidence.

Neither decides a run, moves a case or starts a research team. The notes' evidence ids are derived
from (case, run, summary) (:func:`contracts.schedules.note_evidence_id`) and the store inserts each
once, so a rerun, a retry or an overlapping sweep attaches nothing twice.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time

from temporalio import activity
from temporalio.service import RPCError, RPCStatusCode

from activities.store_access import SharedStore
from contracts.constants import MAX_DESCRIPTION_CHARS, MAX_EVIDENCE_REFS
from contracts.errors import OperatorError
from contracts.ids import run_id_for_request
from contracts.output import SpecialistOutput
from contracts.research import SWEPT_STATUSES, ResearchCase
from contracts.runs import RunStatus, RunView
from contracts.schedules import (
    AttachNotesRequest,
    AttachNotesResult,
    SweepCase,
    SweepCases,
    SweepCasesRequest,
    SweepSkip,
    case_sweep_policy_problem,
    note_evidence_id,
    sweep_run_request_id,
)
from contracts.temporal_names import ActivityName, RunMessage

QUERY_TIMEOUT = dt.timedelta(seconds=5)
POLL_SECONDS = 1.0
_NOTED_STATUSES = frozenset({RunStatus.AWAITING_DECISION, RunStatus.ACCEPTED, RunStatus.REJECTED})
_ENDED_STATUSES = frozenset(
    {
        RunStatus.RECOMMENDED,
        RunStatus.CANCELLED,
        RunStatus.FAILED,
        RunStatus.EXPIRED,
        RunStatus.ACCEPTED,
        RunStatus.REJECTED,
    }
)
_TITLE_LIMIT = 200


def work_item_text(case: ResearchCase) -> tuple[str, str, list[str]]:
    """The title, description and evidence refs of the analysis run for ``case``: its subject and its
    active factual evidence in full when it fits the work item's description, else each record's id,
    kind, source and sha256 and a line saying the content was left out (never cut short)."""
    subject = case.subject
    title = f"Analyse research case {case.case_id}: {subject.title}"
    if len(title) > _TITLE_LIMIT:
        title = f"Analyse research case {case.case_id} ({subject.kind} {subject.identifier[:100]})"[
            :_TITLE_LIMIT
        ]
    factual = [record for record in case.active_evidence if record.kind.factual]
    head = (
        f"Research case {case.case_id}, status {case.status.value}.\n"
        f"Subject: {subject.kind} {subject.identifier}: {subject.title}\n"
        "Analysis only: read the factual evidence below and say what it supports, what it does not, "
        "and what is missing. Nothing is approved or published from this analysis.\n"
    )
    full = head + "".join(
        f"\n--- evidence {record.evidence_id} ({record.kind.value}, from {record.source_ref}, "
        f"sha256 {record.sha256})\n{record.content}\n"
        for record in factual
    )
    if len(full) <= MAX_DESCRIPTION_CHARS:
        description = full
    else:
        description = head + (
            "\nThe evidence content is left out: it is over the work item's limit. Records:\n"
            + "".join(
                f"- {record.evidence_id} ({record.kind.value}, from {record.source_ref}, "
                f"sha256 {record.sha256})\n"
                for record in factual
            )
        )
        description = description[:MAX_DESCRIPTION_CHARS]
    refs = [f"evidence:{record.evidence_id}" for record in factual][:MAX_EVIDENCE_REFS]
    return title, description, refs


def note_text(kind: str, run_id: str, output: SpecialistOutput) -> str:
    """The text of an analyst note: the run's ``kind`` summary (``analysis`` or ``review``)."""
    lines = [
        f"{kind.capitalize()} summary of run {run_id} (daily case analysis; model output, interpretive).",
        f"Role: {output.role}; axis: {output.axis}.",
        f"Confidence: {output.confidence:.2f} ({output.confidence_band.value}); "
        f"closure: {output.closure.value}.",
    ]
    if output.verdict is not None:
        lines.append(f"Verdict: {output.verdict.value}.")
    lines.append(f"Findings ({len(output.findings)}):")
    lines.extend(
        f"- [{finding.severity.value}] {finding.title}"
        + (f" ({', '.join(finding.evidence_refs)})" if finding.evidence_refs else "")
        + (f": {finding.detail}" if finding.detail else "")
        for finding in output.findings
    )
    if output.gaps:
        lines.append("Gaps: " + "; ".join(output.gaps))
    lines.append(f"Recommended next action: {output.recommended_next_action}")
    return "\n".join(lines)


class CaseSweepActivities:
    """``list_sweep_cases`` and ``attach_case_notes``, on the deployment's store and the worker's
    Temporal client."""

    def __init__(self, store: SharedStore) -> None:
        self._store = store

    @activity.defn(name=ActivityName.LIST_SWEEP_CASES)
    def list_sweep_cases(self, request: SweepCasesRequest) -> SweepCases:
        """The cases in ``validation`` or ``ready_to_publish`` with a complete subject and at least one
        active factual record, oldest first, each with the id of its run; every other case skipped
        with its reason. All are skipped (``policy``) when the automation policy would not give an
        analysis-only automatic run ``read_only``: a run started then would only record a
        recommendation and hold the run id of that evidence."""
        store = self._store.get()
        cases = sorted(store.list_cases(), key=lambda case: (case.created_at, case.case_id))
        policy_problem = _policy_problem(store)
        routed: list[SweepCase] = []
        skipped: list[SweepSkip] = []
        for case in cases:
            reason = _skip_reason(case)
            if reason is None and policy_problem is not None:
                reason = ("policy", policy_problem)
            if reason is not None:
                skipped.append(SweepSkip(case_id=case.case_id, reason=reason[0], detail=reason[1]))
                continue
            digest = case.factual_evidence_digest
            request_id = sweep_run_request_id(case.case_id, digest)
            title, description, refs = work_item_text(case)
            routed.append(
                SweepCase(
                    case_id=case.case_id,
                    status=case.status,
                    factual_digest=digest,
                    run_id=run_id_for_request(request_id),
                    request_id=request_id,
                    title=title,
                    description=description,
                    evidence_refs=refs,
                )
            )
        return SweepCases(cases=routed, skipped=skipped)

    @activity.defn(name=ActivityName.ATTACH_CASE_NOTES)
    async def attach_case_notes(self, request: AttachNotesRequest) -> AttachNotesResult:
        """Wait (heartbeating, up to ``request.wait_seconds``) for the run to hold its analysis and its
        review (``awaiting_decision``, or decided since), then attach each once as an ``analyst_note``.
        A run that ended without them (recommended, failed, cancelled, expired) attaches nothing and
        says why. Never decides the run."""
        handle = activity.client().get_workflow_handle(request.run_id)
        deadline = time.monotonic() + request.wait_seconds
        while True:
            try:
                view: RunView = await handle.query(
                    RunMessage.VIEW, result_type=RunView, rpc_timeout=QUERY_TIMEOUT
                )
            except RPCError as error:
                if error.status == RPCStatusCode.NOT_FOUND:
                    return AttachNotesResult(run_status=None, reason=f"no run {request.run_id}")
                raise
            if view.status in _NOTED_STATUSES and view.result is not None and view.review is not None:
                break
            if view.status in _ENDED_STATUSES:
                return AttachNotesResult(
                    run_status=view.status.value,
                    reason=f"the run ended {view.status.value} without an analysis and a review",
                )
            if time.monotonic() > deadline:
                return AttachNotesResult(
                    run_status=view.status.value, reason="the run did not reach its decision in time"
                )
            activity.heartbeat(view.status.value)
            await asyncio.sleep(POLL_SECONDS)
        return await asyncio.to_thread(self._attach, request, view)

    def _attach(self, request: AttachNotesRequest, view: RunView) -> AttachNotesResult:
        assert view.result is not None and view.review is not None
        store = self._store.get()
        attached: list[str] = []
        existing: list[str] = []
        for kind, output in (("analysis", view.result), ("review", view.review)):
            evidence_id = note_evidence_id(request.case_id, request.run_id, kind)
            _, added = store.attach_note(
                request.case_id,
                evidence_id,
                note_text(kind, request.run_id, output),
                f"run:{request.run_id}#{kind}",
                request.granted_by,
            )
            (attached if added else existing).append(evidence_id)
        return AttachNotesResult(run_status=view.status.value, attached=attached, existing=existing)


def _skip_reason(case: ResearchCase) -> tuple[str, str] | None:
    if case.status not in SWEPT_STATUSES:
        return ("status", f"the case is {case.status.value}")
    if not case.subject.complete:
        return ("subject", "the case's subject is not complete")
    if not case.active_evidence:
        return ("no_active_evidence", "the case has no active evidence")
    if not any(record.kind.factual for record in case.active_evidence):
        return ("no_factual_evidence", "the case has no active factual evidence")
    return None


def _policy_problem(store: object) -> str | None:
    try:
        policy = store.get_policy().policy  # type: ignore[attr-defined]
    except OperatorError as error:
        return f"{error.code}: {error.message}"
    return case_sweep_policy_problem(policy)
