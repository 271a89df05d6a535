"""Helpers of the spec-pass tests: a provider answering in process with six section findings, and the
signed ``spec`` update."""

from __future__ import annotations

import json
from typing import Any

from activities.providers.base import CompletionRequest
from contracts.queue_items import SCOPE_SECTIONS
from contracts.queue_messages import ItemAnswer, QueueAction
from contracts.queue_spec import SpecRequest, content_sha256
from contracts.temporal_names import QueueMessage
from control.queue import queue_update
from tests.workflows.harness import ACTOR, TextProvider, proof
from tests.workflows.queue_harness import QueueBench

SPEC_MODEL = "spec:writer"
EVIDENCE = "file:reports.sql"


def spec_answer(cites: dict[str, list[str]] | None = None) -> TextProvider:
    """Answers every job with six findings titled by section, each citing ``cites[name]`` (default:
    the reports file); the detail names the section and quotes hostile-looking text as data."""
    cites = cites or {}

    def answer(request: CompletionRequest) -> str:
        findings = [
            {
                "severity": "low",
                "title": name,
                "evidence_refs": cites.get(name, [EVIDENCE]),
                "detail": f"{name} written from reports.sql <b>as data</b>",
            }
            for name in SCOPE_SECTIONS
        ]
        output: dict[str, Any] = {
            "role": "product-manager",
            "axis": "specification",
            "inspected_evidence": [EVIDENCE],
            "findings": findings,
            "confidence": 0.8,
            "confidence_band": "high",
            "closure": "closed",
            "recommended_next_action": "review the spec",
        }
        return json.dumps(output)

    return TextProvider(answer)


async def spec_pass(q: QueueBench, key: str, *, replace: bool = False, actor: str = ACTOR) -> ItemAnswer:
    """The signed spec pass of ``key`` as it is now."""
    item = await q.item(key)
    request = SpecRequest(actor=actor, key=key, content_sha256=content_sha256(item), replace=replace)
    signature = proof(key, QueueAction.SPEC, actor=actor, digest=request.digest())
    request = request.model_copy(update={"proof": signature})
    return await queue_update(q.client, q.bench.task_queue, QueueMessage.SPEC, request, ItemAnswer)
