"""``make demo``'s goal queue part (:mod:`control.demo`; docs/architecture.md "Goal queue").

Through the real ``WorkQueue`` workflow, with the requests the ``specialists queue`` commands send
(:mod:`control.queue`, each signed by the demo operator and bound to its payload):

1. adds a thin proposal without a repository (``Q-<n>``) and a complete item of the demo repository;
2. approves the thin proposal, which the approval contract refuses, naming every gap, then approves
   the complete item;
3. dispatches it: its read_only run is analysed and independently reviewed on ``replay:demo``, whose
   reviewer does not agree and reports a high finding: round 1 FAILs, and the item stays in
   ``ai-review``;
4. re-dispatches it as the operator's ``queue dispatch`` does: the FAILed run is rejected, and the
   new run's task carries the findings (``Findings of earlier review rounds``). ``replay:demo`` has
   recordings for that task (``task_contains``, :mod:`contracts.recordings`): its reviewer agrees
   without a high finding, round 2 PASSes and the item moves to ``human-review``;
5. the person's ``queue done``: the reviewed run is accepted and the item is done.

Every step prints one line (status moves, rounds with their verdicts and scores, run ids); text the
demo did not write (titles, gaps, findings) goes through :func:`control.output.safe_text`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from contracts.proofs import ActionProof
from contracts.queue_dispatch import FINDINGS_HEADING
from contracts.queue_items import ItemProposal, QueueItem, QueueRefused, QueueStatus, ReviewRound
from contracts.queue_messages import AddRequest, ItemAnswer, MoveRequest, QueueAction, QueueState
from contracts.temporal_names import QueueMessage
from control.queue import accept_and_complete, dispatch_request, queue_update, queue_view, reject_reviewed_run

Sign = Callable[[str, str, str], ActionProof]
"""``sign(target, action, digest)``: the operator's proof (the CLI's :func:`control.actions.proof_for`)."""

DEMO_QUEUE_POLL_SECONDS: Final = 1.0
"""How often the demo's queue reads its runs' status when the demo starts the queue (default 5 s)."""
QUEUE_STEP_TIMEOUT: Final = 90.0

THIN_PROPOSAL: Final[dict[str, Any]] = {"title": "Look into the orders report's slowness some day"}
"""A proposal added thin: no repository, scope, evidence, value, urgency or risk."""

QUEUE_ITEM: Final[dict[str, Any]] = {
    # Recorded in replay:demo (analysis by database-optimizer, review by backend-architect), once for
    # the first task and once for a task that carries the findings of earlier review rounds.
    "title": "Confirm the orders report index holds up under the nightly write load",
    "repo_alias": "demo-orders",
    "tier": "read_only",
    "scope": {
        "problem": (
            "The orders report's plan scans 41 million rows; a composite index on orders "
            "(customer_id, created_at) is proposed."
        ),
        "evidence": "The slow query log of 2026-11-27 and the report query's EXPLAIN plan.",
        "change": "None yet: say whether the index fixes the plan and what it costs the writes to orders.",
        "judgment_calls": "Whether the write amplification of a second index on orders is acceptable.",
        "tests": "The report's plan uses an index scan; insert latency on orders stays within 10%.",
        "constraints": "Read only: no schema change; the migration comes later, built concurrently.",
    },
    "evidence": ["log:pg-slow-2026-11-27", "plan:orders-report-explain"],
    "value": "H",
    "urgency": "M",
    "risk": "low",
}


@dataclass
class QueueStory:
    """What the demo's queue part did, for its summary and its test."""

    thin_key: str = ""
    key: str = ""
    refused_code: str = ""
    gaps: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    rejected_run: str | None = None
    redispatch_task: str = ""
    rounds: list[ReviewRound] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    """The complete item's statuses in the order the demo saw them."""
    done_run: str | None = None

    @property
    def final_status(self) -> str:
        return self.statuses[-1] if self.statuses else "-"


def _say(line: str) -> None:
    from control.output import console, safe_text

    console().print(safe_text(line), soft_wrap=True)


def _round_line(key: str, round_: ReviewRound) -> str:
    said = round_.reviewer_verdict.value if round_.reviewer_verdict is not None else "no verdict"
    material = "; ".join(f"{finding.severity.value}: {finding.title}" for finding in round_.material)
    return (
        f"  {key}  round {round_.number} {round_.verdict.value.upper()} (score {round_.score}) on run "
        f"{round_.run_id}: reviewer {said}" + (f"; {material}" if material else "; no material findings")
    )


async def run_queue_demo(client: Any, task_queue: str, actor: str, sign: Sign) -> QueueStory:
    """The demo's goal queue story (the module docstring) as ``actor``, whose proofs ``sign`` makes.
    Raises an operator error when a step is refused unexpectedly or times out."""
    from contracts.errors import Refused
    from contracts.ids import new_run_id
    from contracts.queue_messages import queue_workflow_id

    story = QueueStory()
    initial = QueueState(poll_seconds=DEMO_QUEUE_POLL_SECONDS)
    queue_id = queue_workflow_id(task_queue)

    async def send(message: QueueMessage, request: Any) -> ItemAnswer:
        return await queue_update(client, task_queue, message, request, ItemAnswer, initial=initial)

    async def add(data: dict[str, Any]) -> ItemAnswer:
        request = AddRequest(actor=actor, proposal=ItemProposal.model_validate(data))
        signed = request.model_copy(update={"proof": sign(queue_id, QueueAction.ADD, request.digest())})
        return await send(QueueMessage.ADD, signed)

    async def approve(key: str) -> ItemAnswer:
        request = MoveRequest(actor=actor, key=key, reason="")
        signed = request.model_copy(update={"proof": sign(key, QueueAction.APPROVE, request.digest())})
        return await send(QueueMessage.APPROVE, signed)

    async def item_now(key: str) -> QueueItem:
        view = await queue_view(client, task_queue, key)
        return view.items[0]

    async def wait_for(key: str, what: str, check: Callable[[QueueItem], bool]) -> QueueItem:
        deadline = time.monotonic() + QUEUE_STEP_TIMEOUT
        while True:
            item = await item_now(key)
            if check(item):
                return item
            if time.monotonic() > deadline:
                raise Refused("demo_queue_timeout", f"{key} did not reach {what}: it is {item.status.value}")
            await asyncio.sleep(0.3)

    def saw(item: QueueItem) -> None:
        if not story.statuses or story.statuses[-1] != item.status.value:
            story.statuses.append(item.status.value)

    # 1. Add a thin proposal and a complete item.
    thin = await add(THIN_PROPOSAL)
    assert thin.item is not None and thin.spec is not None
    story.thin_key = thin.item.key
    _say(
        f"  {thin.item.key}  added: proposal without a repository, {len(thin.spec.gaps)} gaps  "
        f"{thin.item.title}"
    )
    added = await add(QUEUE_ITEM)
    assert added.item is not None and added.spec is not None
    story.key = key = added.item.key
    saw(added.item)
    complete = "complete" if added.spec.complete else f"{len(added.spec.gaps)} gaps"
    _say(
        f"  {key}  added: proposal of {added.item.repo_alias}, {added.item.tier.value}, contract "
        f"{complete}  {added.item.title}"
    )

    # 2. Approve: the thin proposal is refused naming its gaps, the complete item is approved.
    try:
        await approve(story.thin_key)
    except QueueRefused as refusal:
        story.refused_code = refusal.code
        story.gaps = [str(gap) for gap in refusal.extra.get("gaps", [])]
        _say(f"  {story.thin_key}  approve refused ({refusal.code}): gaps {', '.join(story.gaps)}")
    else:
        raise Refused("demo_queue_unexpected", f"the thin proposal {story.thin_key} was approved")
    approved = await approve(key)
    assert approved.item is not None
    saw(approved.item)
    _say(f"  {key}  approve: proposal -> {approved.item.status.value} (the approval contract is complete)")

    # 3. Dispatch: its run is analysed and reviewed; the review FAILs round 1.
    async def dispatch(item: QueueItem) -> str:
        request = dispatch_request(item, actor, sign, run_id=new_run_id())
        rejected = await reject_reviewed_run(client, item, actor, sign)
        if rejected is not None:
            story.rejected_run = rejected
            _say(f"  {key}  run {rejected} rejected on its FAIL round (its findings go to the next run)")
        answer = await send(QueueMessage.DISPATCH, request)
        assert answer.item is not None
        saw(answer.item)
        run_id = request.run.run_id
        story.runs.append(run_id)
        _say(f"  {key}  dispatch: {item.status.value} -> {answer.item.status.value}, run {run_id}")
        description = request.run.work_item.description
        if FINDINGS_HEADING in description:
            carried = description[description.index(FINDINGS_HEADING) :]
            story.redispatch_task = carried
            _say(f"  {key}  its task ends with the findings:")
            for line in carried.splitlines():
                _say(f"    {line}")
        return run_id

    def judged(count: int) -> Callable[[QueueItem], bool]:
        return lambda item: len(item.cycle_rounds()) >= count or item.status is QueueStatus.FAILED

    await dispatch(approved.item)
    item = await wait_for(key, "its first review round", judged(1))
    saw(item)
    _report_round(story, key, item, "the operator's re-dispatch")
    if item.status is not QueueStatus.AI_REVIEW:
        return story

    # 4. The operator re-dispatches it: the FAILed run is rejected, the findings go into the new task.
    await dispatch(item)
    item = await wait_for(key, "its second review round", judged(2))
    saw(item)
    _report_round(story, key, item, "a person's done")
    if item.status is not QueueStatus.HUMAN_REVIEW:
        return story

    # 5. A person's done: the reviewed run is accepted, the item done.
    answer, run_id = await accept_and_complete(
        client, task_queue, item, actor, "demo: the reviewed findings are accepted", sign
    )
    assert answer.item is not None
    saw(answer.item)
    story.done_run = run_id
    _say(f"  {key}  done: human-review -> {answer.item.status.value}, run {run_id} accepted")
    return story


def _report_round(story: QueueStory, key: str, item: QueueItem, waiting: str) -> None:
    rounds = item.cycle_rounds()
    if len(rounds) > len(story.rounds):
        story.rounds = list(rounds)
        _say(_round_line(key, rounds[-1]))
    if item.failure is not None:
        _say(f"  {key}  active -> {item.status.value} ({item.failure.value})")
    else:
        moves = " -> ".join(dict.fromkeys(["active", "ai-review", item.status.value]))
        _say(f"  {key}  {moves}, waiting for {waiting}")
