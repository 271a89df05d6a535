"""A run on a registered OpenAI-compatible model with a reasoning effort selected for the core
class: both of its jobs (core) send that effort, the contract captures it under its digest, and the
record of each pass keeps the effort requested and the reasoning the answer showed."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client

from contracts.enums import Tier
from contracts.model_classes import ModelClass, ReasoningEffort
from contracts.models import ModelRegistration, ModelSelection
from contracts.output import JobKind
from contracts.runs import RunStatus
from tests.activities.providers.wire_server import Scripted, openai_completion, running
from tests.identity import signer
from tests.workflows.harness import ACTOR, SLOW_QUERY, bench, example, recorded_response, within

ITEM = example(SLOW_QUERY)
KEY_ENV = "EFFORT_TEST_API_KEY"
MODEL = "openai:thinker"


def _answer(output: object, reasoning_tokens: int) -> Scripted:
    body = openai_completion(json.dumps(output))
    body["usage"]["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return Scripted(200, body)


@within(60)
async def test_the_core_effort_is_sent_captured_and_recorded_for_each_pass(
    temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-effort-run-key-0123456789")
    task_queue = f"test-{uuid.uuid4().hex}"
    with running() as server:
        server.script(
            _answer(recorded_response("analysis", "database-optimizer", ITEM.title), 512),
            _answer(recorded_response("review", "backend-architect", ITEM.title), 0),
        )
        async with bench(temporal_client, task_queue, tmp_path, model=None) as b, b.worker():
            registration = ModelRegistration(id=MODEL, base_url=server.base_url, api_key_env=KEY_ENV)
            b.store.register_model(registration, signer(ACTOR))
            selection = ModelSelection(
                primary=MODEL, efforts={ModelClass.CORE: ReasoningEffort.HIGH, ModelClass.SUPPORT: "low"}
            )
            b.store.select_registered_models(selection, signer(ACTOR))
            view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY, enqueue=True)
            view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION, timeout=40)
        sent = [request.body for request in server.received]
    assert [body["reasoning_effort"] for body in sent] == ["high", "high"]
    assert view.contract is not None and view.contract.model is not None
    assert view.contract.model.efforts == {"core": "high", "support": "low"}
    records = {record.kind: record for record in view.passes}
    assert {kind: record.model_class for kind, record in records.items()} == {
        JobKind.ANALYSIS: ModelClass.CORE,
        JobKind.REVIEW: ModelClass.CORE,
    }
    analysis, review = records[JobKind.ANALYSIS].attempts, records[JobKind.REVIEW].attempts
    assert [(a.effort_requested, a.reasoning_tokens, a.reasoning_observed) for a in analysis] == [
        (ReasoningEffort.HIGH, 512, True)
    ]
    assert [(a.effort_requested, a.reasoning_tokens, a.reasoning_observed) for a in review] == [
        (ReasoningEffort.HIGH, 0, False)
    ]
