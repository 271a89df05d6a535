"""The queue's ``spec`` update on the shared dev server with an in-process worker, a real git
repository and a provider answering in process: a spec pass fills a thin proposal's empty sections
with cited evidence and it stays a proposal; an operator's section is kept without ``replace``; a
section citing nothing is refused and named; a non-proposal item or one without a repository is
refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import Client

from contracts.errors import Refused
from contracts.queue_items import SCOPE_SECTIONS, QueueEventKind, QueueStatus
from contracts.temporal_names import QueueMessage
from tests.store.git_repository import git, make_orders_repository
from tests.workflows.harness import within
from tests.workflows.queue_harness import QueueBench, queue_bench
from tests.workflows.spec_harness import EVIDENCE, SPEC_MODEL, spec_answer, spec_pass

pytestmark = pytest.mark.asyncio


async def thin(q: QueueBench, **scope: str) -> str:
    answer = await q.add(
        {
            "title": "Speed up the orders report",
            "repo_alias": "orders",
            "evidence": [EVIDENCE],
            "scope": scope,
        }
    )
    assert answer.accepted and answer.item is not None
    return answer.item.key


@within(120)
async def test_a_spec_pass_fills_a_thin_proposal_with_cited_evidence_and_it_stays_a_proposal(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    repo = make_orders_repository(tmp_path / "orders")
    head = git(repo, "rev-parse", "HEAD").strip()
    providers = {"spec": spec_answer()}
    async with queue_bench(temporal_client, task_queue, tmp_path, providers=providers, model=SPEC_MODEL) as q:
        q.bench.add_repository("orders", repo)
        await q.start()
        key = await thin(q)
        answer = await spec_pass(q, key)
        assert answer.accepted, answer.message
        item = answer.item
        assert item is not None and item.status is QueueStatus.PROPOSAL
        assert all(item.scope.section(name).startswith(name) for name in SCOPE_SECTIONS)
        event = item.events[-1]
        assert event.kind is QueueEventKind.SPEC_WRITTEN
        assert event.data["written"] == list(SCOPE_SECTIONS)
        assert event.data["commit"] == head and event.data["model"] == SPEC_MODEL
        assert event.data["refused"] == {} and event.data["job_id"]
        # The job read the evidence file at the commit (its pack holds the file's text).
        job = await q.client.get_workflow_handle(event.data["job_id"]).result()
        read = job["pack"]["evidence"][0]
        assert read["ref"] == EVIDENCE and read["content"] == (repo / "reports.sql").read_text()


@within(120)
async def test_an_operators_section_is_kept_without_replace_and_a_section_citing_nothing_is_refused(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    repo = make_orders_repository(tmp_path / "orders")
    providers = {"spec": spec_answer({"tests": []})}
    async with queue_bench(temporal_client, task_queue, tmp_path, providers=providers, model=SPEC_MODEL) as q:
        q.bench.add_repository("orders", repo)
        await q.start()
        key = await thin(q, problem="The operator's own problem statement.")
        answer = await spec_pass(q, key)
        assert answer.accepted, answer.message
        assert answer.item is not None
        assert answer.item.scope.problem == "The operator's own problem statement."
        assert answer.extra["kept"] == ["problem"]
        assert set(answer.extra["refused"]) == {"tests"}
        assert answer.item.scope.tests == ""
        assert answer.extra["written"] == ["evidence", "change", "judgment_calls", "constraints"]
        replaced = await spec_pass(q, key, replace=True)
        assert replaced.accepted and replaced.item is not None
        assert replaced.item.scope.problem.startswith("problem written")


@pytest.mark.parametrize("case", ["approved", "no_repository"])
@within(120)
async def test_a_spec_pass_of_a_non_proposal_or_an_item_without_repository_is_refused(
    temporal_client: Client, task_queue: str, tmp_path: Path, case: str
) -> None:
    repo = make_orders_repository(tmp_path / "orders")
    async with queue_bench(
        temporal_client, task_queue, tmp_path, providers={"spec": spec_answer()}, model=SPEC_MODEL
    ) as q:
        q.bench.add_repository("orders", repo)
        await q.start()
        if case == "no_repository":
            added = await q.add({"title": "A thought", "evidence": [EVIDENCE]})
            assert added.item is not None
            key, code = added.item.key, "spec_no_repository"
        else:
            full = {name: f"{name} text" for name in SCOPE_SECTIONS}
            key = await thin(q, **full)
            graded = await q.update(key, {"value": "H", "urgency": "M", "risk": "low"})
            assert graded.accepted, graded.message
            approved = await q.move(QueueMessage.APPROVE, key)
            assert approved.accepted and approved.item is not None
            key, code = approved.item.key, "spec_not_a_proposal"
        with pytest.raises(Refused) as refused:
            await spec_pass(q, key)
        assert refused.value.code == code
