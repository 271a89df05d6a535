"""Research team test helpers on top of :mod:`tests.workflows.harness`: the demo case, starting a
team with a valid proof, adjudicating and cancelling, and a scripted model that answers every stage
(with chosen verdicts, severities, failures and delays) and keeps every request it was sent.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from temporalio import activity

from activities.providers.base import CompletionRequest, ProviderError
from contracts.research import CaseInput, EvidenceInput, ResearchCase
from contracts.research_teams import (
    STAGES,
    AdjudicateRequest,
    AdjudicationOutcome,
    TeamActionResult,
    TeamCancelRequest,
    TeamInput,
    TeamView,
    adjudication_digest,
)
from control.research_teams import (
    adjudicate_team,
    cancel_team,
    get_team,
    start_team,
    team_start_input,
    wait_for_team,
)
from tests.workflows.harness import ACTOR, ROOT, Bench, proof

DEMO_CASE = ROOT / "examples" / "research" / "case.json"
STAGE_OF_TITLE = re.compile(r"\(stage (\d)\)$")
EVIDENCE_HEADING = re.compile(r"^### (EVD-[0-9A-Z]{12}) \[", re.MULTILINE)
STAGE_PROFILES = {stage.number: stage.profile_id for stage in STAGES}


def case_input(path: Path = DEMO_CASE, **changes: Any) -> CaseInput:
    """The case at ``path`` with every ``path`` evidence read (as the CLI does)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    evidence = []
    for item in data["evidence"]:
        if "path" in item:
            relative = item.pop("path")
            item = {**item, "content": (path.parent / relative).read_text(encoding="utf-8")}
        evidence.append(EvidenceInput.model_validate(item))
    data["evidence"] = evidence
    return CaseInput.model_validate({**data, **changes})


def create_case(b: Bench, case: CaseInput | None = None) -> ResearchCase:
    """Store ``case`` (the demo case by default) as ``alice``."""
    return b.store.create_case(case or case_input(), ACTOR)


def team_input(case_id: str, request_id: str, *, actor: str = ACTOR, signed: bool = True) -> TeamInput:
    """A start request as the CLI makes it (with a proof bound to the case and request id)."""
    return team_start_input(
        case_id,
        request_id,
        actor,
        lambda team_id, digest: proof(team_id, "team_start", actor=actor, digest=digest) if signed else None,
    )


async def start(b: Bench, case_id: str, request_id: str | None = None, **kwargs: Any) -> TeamView:
    """Start a team on ``case_id`` (with a fresh request id unless given: the dev server is shared)
    and return its view once it left ``starting``."""
    team = team_input(case_id, request_id or f"team-{uuid.uuid4().hex}", **kwargs)
    b.started.append(team.team_id)
    view, _ = await start_team(b.client, team, task_queue=b.task_queue)
    return view


async def adjudicate(
    b: Bench, team_id: str, stage: int, outcome: AdjudicationOutcome, note: str = ""
) -> TeamActionResult:
    """Adjudicate with a valid proof (raises the refusal as an operator error)."""
    signature = proof(team_id, "adjudicate", digest=adjudication_digest(stage, outcome))
    request = AdjudicateRequest(actor=ACTOR, stage=stage, outcome=outcome, note=note, proof=signature)
    return await adjudicate_team(b.client, team_id, request)


async def cancel(b: Bench, team_id: str, reason: str = "") -> TeamView:
    """Cancel with a valid proof."""
    request = TeamCancelRequest(actor=ACTOR, reason=reason, proof=proof(team_id, "team_cancel"))
    return await cancel_team(b.client, team_id, request)


async def until_team(
    b: Bench, team_id: str, done: Callable[[TeamView], bool], *, timeout: float = 30.0
) -> TeamView:
    """Poll the team until ``done`` (bounded)."""
    view = await wait_for_team(b.client, team_id, done, timeout=timeout)
    assert done(view), f"team {team_id} is {view.status.value} (stage {view.current_stage})"
    return view


async def ended(b: Bench, team_id: str, *, timeout: float = 30.0) -> TeamView:
    """The team's final view, once its workflow has closed (from its result)."""
    await until_team(b, team_id, lambda v: v.status.final, timeout=timeout)
    # The final status shows before the workflow closes (it then gives its coordinator place back).
    await asyncio.wait_for(b.client.get_workflow_handle(team_id).result(), timeout=timeout)
    return await get_team(b.client, team_id)


def stage_of(request: CompletionRequest) -> int:
    match = STAGE_OF_TITLE.search(request.identity.title)
    assert match is not None, request.identity.title
    return int(match.group(1))


@dataclass
class ScriptedResearch:
    """A model for every research job. Analysis of stage N returns findings titled ``stage-N-marker``
    of ``severity[N]`` (default medium) with confidence 0.61, citing the first evidence id it was
    shown; a review of stage N returns ``verdicts[N]`` (default agree). ``failures[(N, kind)]``: how
    many calls of that job raise ``model_provider_unavailable`` first; ``delays[(N, kind)]``: seconds
    the call takes (heartbeating; interrupted by cancellation). Keeps every request."""

    verdicts: dict[int, str] = field(default_factory=dict)
    severities: dict[int, str] = field(default_factory=dict)
    failures: dict[tuple[int, str], int] = field(default_factory=dict)
    delays: dict[tuple[int, str], float] = field(default_factory=dict)
    requests: list[CompletionRequest] = field(default_factory=list)
    started: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def complete(self, request: CompletionRequest) -> str:
        number, kind = stage_of(request), request.identity.kind.value
        with self._lock:
            self.requests.append(request)
            left = self.failures.get((number, kind), 0)
            if left:
                self.failures[(number, kind)] = left - 1
        self.started.set()
        if left:
            raise ProviderError("model_provider_unavailable", f"scripted outage for stage {number} {kind}")
        delay = self.delays.get((number, kind), 0.0)
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline:
            activity.heartbeat()
            if activity.is_cancelled() or activity.is_worker_shutdown():
                raise ProviderError("model_transport", "scripted model interrupted")
            time.sleep(0.05)
        cited = EVIDENCE_HEADING.findall(request.context)[:1]
        output: dict[str, Any] = {
            "role": request.identity.profile_id,
            "axis": f"stage {number} {kind}",
            "inspected_evidence": cited,
            "findings": [],
            "confidence": 0.61,
            "confidence_band": "medium",
            "gaps": [],
            "closure": "partial",
            "recommended_next_action": "hand over",
        }
        if kind == "analysis":
            output["findings"] = [
                {
                    "severity": self.severities.get(number, "medium"),
                    "title": f"stage-{number}-marker",
                    "evidence_refs": cited,
                    "detail": f"stage-{number}-detail-marker",
                }
            ]
        else:
            output["verdict"] = self.verdicts.get(number, "agree")
            output["confidence"] = 0.52
            output["findings"] = [{"severity": "low", "title": f"review-{number}-marker", "detail": ""}]
        return json.dumps(output)

    def for_job(self, number: int, kind: str) -> list[CompletionRequest]:
        """The requests sent for stage ``number``'s ``kind`` job."""
        return [r for r in self.requests if stage_of(r) == number and r.identity.kind.value == kind]


def payload_text(history_json: str) -> str:
    """Every payload of a history (``WorkflowHistory.to_json``) decoded to text, joined: what a
    search for content in a history must look at (payload data is base64 in the JSON form)."""
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            data = node.get("data")
            if isinstance(data, str) and "metadata" in node:
                found.append(base64.b64decode(data).decode("utf-8", errors="replace"))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(history_json))
    return "\n".join(found)
