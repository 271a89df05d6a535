"""The daily case analysis on a real dev server (docs/architecture.md "Schedules")."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from temporalio.client import Client

from activities.providers.base import CompletionRequest
from contracts.enums import AutomationMode, Tier
from contracts.output import JobKind
from contracts.research import CaseInput, CaseStatus, CaseSubject, EvidenceInput, EvidenceKind
from contracts.runs import RunStatus
from contracts.schedules import CaseSweepResult, ScheduleKind, schedule_id
from control.schedule_setup import enable_case_sweep
from tests.identity import signer
from tests.workflows.harness import ACTOR, SLOW_QUERY, TextProvider, bench, example, recorded_response, within

_TITLE = example(SLOW_QUERY).title


def _answer(request: CompletionRequest) -> str:
    kind = "review" if request.identity.kind is JobKind.REVIEW else "analysis"
    profile = "backend-architect" if kind == "review" else "database-optimizer"
    data = recorded_response(kind, profile, _TITLE)
    data["role"] = request.identity.profile_id  # the job's own profile, whatever the route chose
    data["inspected_evidence"] = []
    data["findings"] = [{**finding, "evidence_refs": []} for finding in data["findings"]]
    return json.dumps(data)


def _case(title: str) -> CaseInput:
    return CaseInput(
        subject=CaseSubject(kind="vulnerability", identifier="CVE-2027-0001", title=title),
        evidence=[
            EvidenceInput(kind=EvidenceKind.CODE, content="def f(x): return eval(x)", source_ref="repo:f.py")
        ],
    )


@within(90)
async def test_a_validation_case_triggered_twice_gets_one_analyst_note_per_summary_and_no_decision(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    providers = {"fake": TextProvider(_answer)}
    async with bench(temporal_client, task_queue, tmp_path, providers=providers, model="fake:demo") as b:
        b.set_policy(AutomationMode.GUARDED, Tier.READ_ONLY)
        routed = b.store.create_case(_case("routed"), ACTOR)
        b.store.set_case_status(routed.case_id, CaseStatus.VALIDATION, ACTOR)
        still_open = b.store.create_case(_case("open"), ACTOR)
        closed = b.store.create_case(_case("closed"), ACTOR)
        b.store.set_case_status(closed.case_id, CaseStatus.CLOSED, ACTOR)
        empty = b.store.create_case(_case("no evidence"), ACTOR)
        b.store.set_case_status(empty.case_id, CaseStatus.VALIDATION, ACTOR)
        b.store.deactivate_evidence(empty.case_id, empty.evidence[0].evidence_id, ACTOR)

        sid = schedule_id(ScheduleKind.CASE_SWEEP, task_queue)
        async with b.worker():
            await enable_case_sweep(
                temporal_client, signer(ACTOR), task_queue, __import__("datetime").timedelta(days=1)
            )
            handle = temporal_client.get_schedule_handle(sid)
            try:
                results: list[CaseSweepResult] = []
                seen: list[str] = []
                for _ in range(2):  # the second after the first ended: each sweep id names its second
                    await handle.trigger()
                    for _ in range(120):
                        described = await handle.describe()
                        ids = [action.action.workflow_id for action in described.info.recent_actions]
                        if len(ids) > len(seen):
                            break
                        await asyncio.sleep(0.5)
                    seen = ids
                    result = await temporal_client.get_workflow_handle(
                        ids[-1], result_type=CaseSweepResult
                    ).result()
                    results.append(result)
                    await asyncio.sleep(1.1)
                assert len(seen) == 2, seen
            finally:
                await handle.delete()
            (outcome,) = results[0].routed
            run_id = outcome.run_id
            b.started.append(run_id)
            view = await b.wait(run_id, RunStatus.AWAITING_DECISION)

        case = b.store.get_case(routed.case_id)
        notes = [record for record in case.evidence if record.kind is EvidenceKind.ANALYST_NOTE]
        assert len(notes) == 2
        assert sorted(note.source_ref for note in notes) == [f"run:{run_id}#analysis", f"run:{run_id}#review"]
        assert all(note.added_by == ACTOR for note in notes)
        # Both sweeps routed the same run; the second started nothing and attached nothing.
        assert [r.routed[0].run_id for r in results] == [run_id, run_id]
        assert results[0].routed[0].started and len(results[0].routed[0].notes_attached) == 2
        assert not results[1].routed[0].started and results[1].routed[0].notes_attached == []
        assert sorted(results[1].routed[0].notes_existing) == sorted(n.evidence_id for n in notes)
        skipped = {skip.case_id: skip.reason for skip in results[0].skipped}
        assert skipped == {
            still_open.case_id: "status",
            closed.case_id: "status",
            empty.case_id: "no_active_evidence",
        }
        # Never decided, analysis-only read_only, the case never moved, no research team.
        assert view.decision is None and view.status is RunStatus.AWAITING_DECISION
        assert view.tier is Tier.READ_ONLY and view.automatic
        assert case.status is CaseStatus.VALIDATION
        teams = [
            w
            async for w in temporal_client.list_workflows(
                f"WorkflowType='ResearchTeam' AND TaskQueue='{task_queue}'"
            )
        ]
        assert teams == []
