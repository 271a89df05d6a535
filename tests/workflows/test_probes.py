"""Probe requests on a real dev server (docs/architecture.md "Probe requests"): a read_only run's
analysis asks for a probe; the run records it with its digest and never runs it; an operator approves
it (a protected update bound to that digest); the run runs it confined by bubblewrap in a fresh
worktree of a real git repository and records what it did, apart from the specialist's result.
Refusals (another digest, an unknown actor or probe, a second approval, a contract without a
repository) are audited; ``decide`` is refused while a probe runs and a cancel stops it."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from activities.providers.base import CompletionRequest
from contracts.errors import NotFound, OperatorError, Refused
from contracts.output import JobKind
from contracts.probes import ApproveProbeRequest
from contracts.runs import DecisionOutcome, RunStatus, RunView
from contracts.temporal_names import RunMessage
from control.runs import get_view
from tests.activities.confined import SYSTEM_PYTHON, requires_bubblewrap
from tests.store.git_repository import git, make_working_tree
from tests.workflows.harness import (
    SLOW_QUERY,
    Bench,
    audit_kinds,
    bench,
    events,
    example,
    proof,
    replay_demo,
    within,
)

ALIAS = "orders-service"
MODEL = "probing:model"

LISTING_PROBE: dict[str, Any] = {
    "hypothesis": "the report's index file is missing from docs",
    "argv": [
        SYSTEM_PYTHON,
        "-c",
        "import os,sys; print(sorted(os.listdir('.'))); print(sys.stdin.read().strip()); "
        "open('seen.txt','w').write('x'); sys.exit(2)",
    ],
    "cwd": "docs",
    "inputs": ["orders"],
    "expected_confirming": "the listing has no indexes.sql",
    "expected_falsifying": "the listing has indexes.sql",
    "anticipated_effects": "writes docs/seen.txt",
}
SLOW_PROBE: dict[str, Any] = LISTING_PROBE | {
    "argv": [SYSTEM_PYTHON, "-c", "import time; time.sleep(60)"],
    "anticipated_effects": "none",
}


class ProbingProvider:
    """Answers as ``replay:demo`` does, adding ``probes`` to every analysis (and, with
    ``review_probes``, to reviews too, which the output contract refuses)."""

    def __init__(self, probes: list[dict[str, Any]], *, review_probes: bool = False) -> None:
        self.probes = probes
        self.review_probes = review_probes
        self.requests: list[CompletionRequest] = []
        self._lock = threading.Lock()

    def complete(self, request: CompletionRequest) -> str:
        with self._lock:
            self.requests.append(request)
        answer = json.loads(replay_demo(request))
        if request.identity.kind is JobKind.ANALYSIS or self.review_probes:
            answer["probe_requests"] = self.probes
        return json.dumps(answer)


@contextlib.asynccontextmanager
async def probe_bench(
    client: Client, task_queue: str, tmp_path: Path, probes: list[dict[str, Any]], **provider: Any
) -> AsyncIterator[tuple[Bench, Path]]:
    tree = make_working_tree(tmp_path / ALIAS)
    async with bench(
        client, task_queue, tmp_path, providers={"probing": ProbingProvider(probes, **provider)}, model=MODEL
    ) as b:
        b.add_repository(ALIAS, tree, "main")
        yield b, tree


async def awaiting_decision(b: Bench, **create: Any) -> RunView:
    view = await b.create(
        create.pop("item", SLOW_QUERY), tier=create.pop("tier", None) or _read_only(), enqueue=True
    )
    return await b.wait(
        view.run_id, lambda v: v.status.terminal or v.status is RunStatus.AWAITING_DECISION, timeout=30
    )


def _read_only() -> Any:
    from contracts.enums import Tier

    return Tier.READ_ONLY


async def approve(
    b: Bench, run_id: str, index: int, digest: str, actor: str = "alice", signed_digest: str | None = None
) -> Any:
    from control.runs import _update

    request = ApproveProbeRequest(
        actor=actor,
        index=index,
        probe_sha256=digest,
        proof=proof(run_id, "approve_probe", actor=actor, digest=signed_digest or digest),
    )
    return await _update(b.client, run_id, RunMessage.APPROVE_PROBE, request)


@requires_bubblewrap
@within(120)
async def test_an_approved_probe_runs_confined_in_a_real_worktree_and_is_recorded_apart_from_the_result(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with probe_bench(temporal_client, task_queue, tmp_path, [LISTING_PROBE]) as (b, tree), b.worker():
        base = git(tree, "rev-parse", "HEAD")
        view = await awaiting_decision(b)
        assert view.status is RunStatus.AWAITING_DECISION, view.error
        (probe,) = view.probes
        assert probe.status.value == "requested" and probe.evidence is None
        assert len(probe.sha256) == 64 and probe.request.argv[0] == SYSTEM_PYTHON
        (listed,) = events(view, "probes_requested")
        assert listed["probes"] == [{"index": 1, "sha256": probe.sha256, "argv0": SYSTEM_PYTHON}]
        assert not (tmp_path / "state" / "worktrees").exists(), "the pass never runs a probe"

        result = await approve(b, view.run_id, 1, probe.sha256)
        assert result.accepted
        view = await b.wait(
            view.run_id, lambda v: v.probes[0].status.value in ("completed", "failed"), timeout=60
        )
        (probe,) = view.probes
        assert probe.status.value == "completed", probe.error
        assert probe.approved_by == "alice"
        evidence = probe.evidence
        assert evidence is not None
        assert (evidence.commit, evidence.commit_source, evidence.branch) == (base, "base_commit", None)
        assert evidence.exit_status == 2 and evidence.stdout == "['README.md']\norders\n"
        assert evidence.confined and evidence.network_isolated
        assert [(c.path, c.status) for c in evidence.changed] == [("docs/seen.txt", "??")]
        assert audit_kinds(view)[-3:] == ["probe_approved", "probe_started", "probe_completed"]
        (completed,) = events(view, "probe_completed")
        assert completed["exit_status"] == 2 and completed["commit"] == base and completed["changed"] == 1
        # The specialist's conclusions are unchanged: the evidence is the operator's.
        assert view.result is not None and "evidence" not in view.result.model_dump()
        assert git(tree, "status", "--porcelain") == ""

        await b.decide(view.run_id, DecisionOutcome.ACCEPTED, "probe confirmed it")
        final = await b.terminal(view.run_id)
        assert final.status is RunStatus.ACCEPTED and final.probes[0].status.value == "completed"


@within(90)
async def test_a_wrong_digest_an_unknown_actor_an_unknown_probe_and_a_second_approval_are_refused_and_audited(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with probe_bench(temporal_client, task_queue, tmp_path, [SLOW_PROBE]) as (b, _), b.worker():
        view = await awaiting_decision(b)
        (probe,) = view.probes
        run_id = view.run_id
        with pytest.raises(Refused) as stale:
            await approve(b, run_id, 1, "f" * 64)
        assert stale.value.code == "stale_probe_digest"
        with pytest.raises(OperatorError) as unknown_actor:
            await approve(b, run_id, 1, probe.sha256, actor="mallory")
        assert isinstance(unknown_actor.value, NotFound) and unknown_actor.value.code == "unknown_actor"
        with pytest.raises(NotFound) as unknown_probe:  # a referenced id that does not exist: exit 3
            await approve(b, run_id, 2, probe.sha256)
        assert unknown_probe.value.code == "unknown_probe"
        # A proof bound to another digest than the one the request names proves nothing.
        with pytest.raises(Refused) as forged:
            await approve(b, run_id, 1, probe.sha256, signed_digest="e" * 64)
        assert forged.value.code == "proof_invalid"
        view = await get_view(b.client, run_id)
        refused = [(e["action"], e["code"]) for e in events(view, "action_refused")]
        assert refused == [
            ("approve_probe", "stale_probe_digest"),
            ("approve_probe", "unknown_actor"),
            ("approve_probe", "unknown_probe"),
            ("approve_probe", "proof_invalid"),
        ]
        assert view.probes[0].status.value == "requested"

        assert (await approve(b, run_id, 1, probe.sha256)).accepted
        with pytest.raises(Refused) as again:
            await approve(b, run_id, 1, probe.sha256)
        assert again.value.code == "probe_already_approved"
        await b.cancel(run_id, "done with this test")
        final = await b.terminal(run_id, timeout=30)
        assert final.status is RunStatus.CANCELLED


@within(90)
async def test_a_probe_of_a_run_without_a_repository_is_refused(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with probe_bench(temporal_client, task_queue, tmp_path, [LISTING_PROBE]) as (b, _), b.worker():
        item = example(SLOW_QUERY).model_copy(update={"repo_alias": None})
        view = await awaiting_decision(b, item=item)
        assert view.status is RunStatus.AWAITING_DECISION, view.error
        (probe,) = view.probes
        with pytest.raises(Refused) as refused:
            await approve(b, view.run_id, 1, probe.sha256)
        assert refused.value.code == "probe_no_repository"
        view = await get_view(b.client, view.run_id)
        assert events(view, "action_refused")[-1]["code"] == "probe_no_repository"


@requires_bubblewrap
@within(120)
async def test_decide_is_refused_while_a_probe_runs_and_a_cancel_stops_the_probe_and_the_run(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with probe_bench(temporal_client, task_queue, tmp_path, [SLOW_PROBE]) as (b, _), b.worker():
        view = await awaiting_decision(b)
        (probe,) = view.probes
        assert (await approve(b, view.run_id, 1, probe.sha256)).accepted
        await b.wait(view.run_id, lambda v: v.probes[0].status.value == "running")
        with pytest.raises(Refused) as refused:
            await b.decide(view.run_id, DecisionOutcome.ACCEPTED)
        assert refused.value.code == "probe_running"
        await b.cancel(view.run_id, "stop the probe")
        final = await b.terminal(view.run_id, timeout=60)
        assert final.status is RunStatus.CANCELLED
        (probe,) = final.probes
        assert probe.status.value == "failed" and probe.error_type == "probe_cancelled"
        assert "cancel_requested" in [e["to"] for e in events(final, "status_changed")]
        assert events(final, "probe_failed")[0]["error_type"] == "probe_cancelled"


@within(90)
async def test_a_review_that_returns_probe_requests_breaks_the_output_contract(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with (
        probe_bench(temporal_client, task_queue, tmp_path, [LISTING_PROBE], review_probes=True) as (b, _),
        b.worker(),
    ):
        view = await awaiting_decision(b)
        assert view.status is RunStatus.FAILED
        assert view.error is not None and view.error.type == "model_output_invalid"
        assert "only a read_only run's analysis may return probe requests" in view.error.message
