"""A ``SpecialistRun``'s review wave (docs/architecture.md "Orchestration"): the contract's frozen
roster, each pass a blinded ``ModelJob`` review child.

First every pass's context pack is built (``build_context_pack``, all at once) and frozen: its
sha256 and size go into the wave record before anything is dispatched, and a pass whose job later
builds a different pack fails (``pack_changed``). Then the passes are dispatched in descending pack
size, the profile id breaking ties, with at most four in flight; a finished pass's slot is refilled
before the wave waits again. A pass waiting for its model's capacity (the ceiling's lease) keeps its
slot and its frozen pack until the ceiling grants it. Every pass is joined before the consolidation;
the runtime budget bounds the whole wave (over it the run ends ``expired``).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from contracts.audit import AuditKind
    from contracts.context_packs import ContextPackResult
    from contracts.errors import ErrorType
    from contracts.execution import ChangeUnderReview
    from contracts.failures import ModelJobFailureDetail, failure_detail
    from contracts.model_classes import ModelClass
    from contracts.model_jobs import (
        ContextPackRequest,
        JobContext,
        ModelJobInput,
        ModelJobResult,
    )
    from contracts.orchestration import ReviewPass
    from contracts.output import JobKind
    from contracts.review_waves import (
        MAX_PASSES_IN_FLIGHT,
        PassOutcome,
        WavePass,
        WaveRecord,
        consolidate,
        dispatch_order,
    )
    from contracts.runs import ContextPackRecord
    from contracts.temporal_names import ActivityName
    from contracts.ui_summaries import model_job_summary
    from workflows.model_job import ModelJobWorkflow
    from workflows.run_jobs import (
        audited_controls,
        completed_facts,
        controls,
        job_input,
        pass_attempt,
        record_attempts,
    )
    from workflows.run_state import RunState

PATCH_REVIEW_WAVES = "review-waves"
"""workflow.patched() id: a run whose contract decides a review wave runs its roster."""

PACK_CHANGED = "pack_changed"
CAPACITY_REFUSALS = frozenset({ErrorType.MODEL_RATE_LIMITED})
"""A pass that fails for its provider's capacity is put back, not counted as a gap (up to
:data:`MAX_REQUEUES` times): it is dispatched again only after another pass of the wave finished
since the refusal, or after :data:`CAPACITY_BACKOFF` when none is left to finish."""
MAX_REQUEUES = 2
CAPACITY_BACKOFF = timedelta(seconds=5)
_PACK_TIMEOUT = timedelta(seconds=60)
_PACK_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=1))


def wave_job(
    state: RunState, review_pass: ReviewPass, index: int, change: ChangeUnderReview | None
) -> ModelJobInput:
    """Pass ``index``'s child input: the run's review job, made by the pass's profile, its task the
    captured task with the pass's axes and questions; an advisory pass on the advisory model."""
    base = job_input(
        state.contract, state.run_input.work_item.title, JobKind.REVIEW, state.result, change=change
    )
    axes = "\n".join(
        f"- {axis}: {q}" for axis, q in zip(review_pass.axes, review_pass.questions, strict=True)
    )
    context: JobContext = base.context.model_copy(
        update={"task": f"{base.context.task}\n\nYour review axes in this wave (answer each):\n{axes}"}
    )
    update: dict[str, object] = {
        "job_id": f"{base.job_id}-{index}",
        "profile_id": review_pass.profile,
        "context": context,
    }
    if review_pass.model_class is ModelClass.ADVISORY:
        # The advisory pass an operator asked for runs on the captured advisory model alone, in the
        # advisory class's pool, with the advisory effort (docs/architecture.md "Model selection").
        assert state.contract.model is not None
        update["model"] = state.contract.model.for_advisory()
        update["model_class"] = ModelClass.ADVISORY
        update["effort"] = state.contract.model.effort_for(ModelClass.ADVISORY)
    return base.model_copy(update=update)


async def _frozen_pack(job: ModelJobInput) -> ContextPackResult:
    result: ContextPackResult = await workflow.execute_activity(
        ActivityName.BUILD_CONTEXT_PACK,
        ContextPackRequest.for_job(job),
        result_type=ContextPackResult,
        start_to_close_timeout=_PACK_TIMEOUT,
        retry_policy=_PACK_RETRY,
    )
    return result


async def run_wave(
    state: RunState, roster: list[ReviewPass], deadline: datetime, change: ChangeUnderReview | None = None
) -> WaveRecord | None:
    """Run the wave; returns its record (also kept in ``state.wave``) with ``state.review`` set to
    the first completed pass's review, or ``None`` after moving the run to ``failed`` (no pass came
    back) or ``expired``. A cancel stops it dispatching: the passes in flight are joined and the
    record returned for the caller to end the run ``cancelled``."""
    jobs = [wave_job(state, review_pass, n, change) for n, review_pass in enumerate(roster, start=1)]
    # From here a cancel waits for the wave to stop (``cancel_requested``), as for a running job.
    state.model_job_running = True
    try:
        return await _run(state, roster, jobs, deadline)
    finally:
        state.model_job_running = False


async def _run(
    state: RunState, roster: list[ReviewPass], jobs: list[ModelJobInput], deadline: datetime
) -> WaveRecord | None:
    built = await asyncio.gather(*(_frozen_pack(job) for job in jobs), return_exceptions=True)
    passes: dict[int, WavePass] = {}
    for n, (review_pass, job, pack) in enumerate(zip(roster, jobs, built, strict=True), start=1):
        wave_pass = WavePass(
            index=n, profile=review_pass.profile, axes=review_pass.axes, questions=review_pass.questions,
            job_id=job.job_id, substitutes=review_pass.substitutes, models_requested=job.model.chain,
            model_class=job.model_class, **controls(state),
        )  # fmt: skip
        if isinstance(pack, ContextPackResult):
            passes[n] = wave_pass.model_copy(
                update={"pack_sha256": pack.sha256, "pack_bytes": pack.request_bytes}
            )
            continue
        if not isinstance(pack, ActivityError):
            raise pack  # not a pack failure (e.g. the workflow is being cancelled): let it through
        cause = pack.cause
        error_type = (cause.type if isinstance(cause, ApplicationError) else None) or ErrorType.MODEL_TASK
        message = cause.message if isinstance(cause, ApplicationError) else str(pack)
        finished = {"finished_at": workflow.now(), "independence": ["no review came back: nothing to prove"]}
        passes[n] = _failed(state, wave_pass, error_type, f"its context pack: {message}", finished)
    state.wave = WaveRecord(passes=list(passes.values()))
    pending = dispatch_order([p for p in passes.values() if p.outcome is None])
    running: dict[int, asyncio.Future[object]] = {}
    held: dict[int, int] = {}  # a pass refused for capacity -> passes finished when it was refused
    most = dispatched = finished_count = 0
    while pending or running or held:
        if state.cancel is not None:  # start nothing more; join what is in flight
            for n in [*pending, *held]:
                passes[n] = passes[n].model_copy(update={"message": "not dispatched: the run was cancelled"})
            pending, held = [], {}
            if not running:
                break
        ready = [n for n, mark in held.items() if finished_count > mark]
        if not pending and not running and not ready:
            # Nothing else in this wave will free capacity: wait it out, then try again.
            pause = min(CAPACITY_BACKOFF.total_seconds(), (deadline - workflow.now()).total_seconds())
            if pause <= 0:
                state.wave = _snapshot(passes, most)
                state.expire({"kind": "review_wave", "budget_seconds": 0, "passes": sorted(held)})
                return None
            await workflow.sleep(timedelta(seconds=pause))
            ready = list(held)
            if state.cancel is not None:
                continue
        for n in ready:
            del held[n]
            pending.append(n)
        while pending and len(running) < MAX_PASSES_IN_FLIGHT:
            n = pending.pop(0)
            dispatched += 1
            running[n] = _dispatch(state, passes[n], jobs[n - 1])
            passes[n] = passes[n].model_copy(update={"dispatched": dispatched, "started_at": workflow.now()})
        if not running:
            continue
        most = max(most, len(running))
        state.wave = _snapshot(passes, most)
        remaining = max((deadline - workflow.now()).total_seconds(), 0.001)
        try:
            await workflow.wait_condition(
                lambda: any(task.done() for task in running.values()), timeout=timedelta(seconds=remaining)
            )
        except TimeoutError:
            for task in running.values():
                task.cancel()
            state.wave = _snapshot(passes, most)
            unfinished = sorted([*running, *held, *pending])
            state.expire({"kind": "review_wave", "budget_seconds": remaining, "passes": unfinished})
            return None
        for n in [n for n, task in running.items() if task.done()]:
            passes[n], requeued = _joined(state, passes[n], running.pop(n))
            if requeued:
                jobs[n - 1] = jobs[n - 1].model_copy(update={"job_id": passes[n].job_id})
                held[n] = finished_count
            else:
                finished_count += 1  # only a pass that came back or failed for good frees capacity
    joined = list(passes.values())
    record = WaveRecord(passes=joined, max_in_flight=most, consolidation=consolidate(joined))
    state.wave = record
    completed = [p for p in joined if p.outcome is PassOutcome.COMPLETED and p.output is not None]
    if completed:
        state.review = completed[0].output
    elif state.cancel is None:
        first = next((p for p in joined if p.outcome is PassOutcome.FAILED), joined[0])
        state.fail(
            first.error_type or ErrorType.MODEL_TASK, f"review wave: no pass came back ({first.message})"
        )
        return None
    return record


def _snapshot(passes: dict[int, WavePass], most: int) -> WaveRecord:
    """The wave as it stands (no consolidation until every pass is joined)."""
    return WaveRecord(passes=list(passes.values()), max_in_flight=most)


def _dispatch(state: RunState, wave_pass: WavePass, job: ModelJobInput) -> asyncio.Future[object]:
    """Start the pass's review child (audited ``model_job_started`` with its pass number)."""
    state.audit.record(
        AuditKind.MODEL_JOB_STARTED,
        data={
            "kind": job.kind.value,
            "profile": job.profile_id,
            "models": job.model.chain,
            "pass": wave_pass.index,
            **audited_controls(state, job),
        },
    )
    return asyncio.ensure_future(
        workflow.execute_child_workflow(
            ModelJobWorkflow.run,
            job,
            id=job.job_id,
            task_queue=workflow.info().task_queue,
            static_summary=model_job_summary(job.kind.value, job.profile_id, state.run_input.work_item.title),
        )
    )


def _joined(state: RunState, wave_pass: WavePass, task: asyncio.Future[object]) -> tuple[WavePass, bool]:
    """A finished pass, audited: its review, or why there is none — or, refused for capacity with
    requeues left, the pass put back (``True``) under a new job id, its frozen pack kept."""
    finished: dict[str, object] = {"finished_at": workflow.now()}
    try:
        result = task.result()
    except ChildWorkflowError as error:
        cause = error.cause
        error_type = cause.type if isinstance(cause, ApplicationError) else ErrorType.MODEL_TASK
        message = cause.message if isinstance(cause, ApplicationError) else str(error)
        detail = failure_detail(cause, ModelJobFailureDetail) if isinstance(cause, ApplicationError) else None
        detail = detail or ModelJobFailureDetail()
        record_attempts(state, JobKind.REVIEW, detail.attempts)
        audited: dict[str, object] = {"attempts": detail.attempts_data()}
        if detail.pack_sha256 is not None:
            audited["pack_sha256"] = detail.pack_sha256
        finished["attempts"] = [
            *wave_pass.attempts,
            *(pass_attempt(attempt) for attempt in detail.attempts),
        ]
        finished["independence"] = ["no review came back: nothing to prove"]
        if error_type in CAPACITY_REFUSALS and wave_pass.requeued < MAX_REQUEUES:
            requeued = wave_pass.requeued + 1
            state.audit.record(
                AuditKind.MODEL_JOB_FAILED,
                data={
                    "kind": JobKind.REVIEW.value, "pass": wave_pass.index, "profile": wave_pass.profile,
                    "error_type": error_type, "message": message, "requeued_for_capacity": requeued,
                    **audited,
                },
            )  # fmt: skip
            base = wave_pass.job_id.rsplit("-r", 1)[0] if wave_pass.requeued else wave_pass.job_id
            update = {
                "requeued": requeued,
                "job_id": f"{base}-r{requeued}",
                "started_at": None,
                "attempts": finished["attempts"],
            }
            return wave_pass.model_copy(update=update), True
        return _failed(
            state, wave_pass, error_type or ErrorType.MODEL_TASK, message, finished, audited
        ), False
    assert isinstance(result, ModelJobResult)
    if result.pack_sha256 is not None and result.pack_sha256 != wave_pass.pack_sha256:
        message = f"the pass's job built pack {result.pack_sha256}, not the frozen {wave_pass.pack_sha256}"
        return _failed(state, wave_pass, PACK_CHANGED, message, finished), False
    record_attempts(state, JobKind.REVIEW, result.attempts)
    output = result.require_output()
    if result.pack is not None and result.pack_sha256 is not None:
        state.packs.append(ContextPackRecord(sha256=result.pack_sha256, pack=result.pack))
    record = completed_facts(
        state, JobKind.REVIEW, wave_pass.profile, wave_pass.job_id, result, output,
        frozen_pack=wave_pass.pack_sha256,
    )  # fmt: skip
    record["attempts"] = [*wave_pass.attempts, *(pass_attempt(a) for a in result.attempts)]
    state.audit.record(
        AuditKind.MODEL_JOB_COMPLETED,
        data={
            "kind": JobKind.REVIEW.value, "pass": wave_pass.index, "profile": wave_pass.profile,
            "model": result.model_id, "pack_sha256": result.pack_sha256,
            "attempts": [attempt.model_dump(mode="json") for attempt in result.attempts],
            "findings": len(output.findings), "verdict": output.verdict.value if output.verdict else None,
            "output_sha256": record["output_sha256"], "independent": record["independent"],
        },
    )  # fmt: skip
    update = {**finished, **record, "outcome": PassOutcome.COMPLETED}
    return wave_pass.model_copy(update={**update, "output": output}), False


def _failed(
    state: RunState,
    wave_pass: WavePass,
    error_type: str,
    message: str,
    finished: dict[str, object],
    audited: dict[str, object] | None = None,
) -> WavePass:
    """A pass that ended without a review, audited (``audited``: its job's attempts and pack)."""
    state.audit.record(
        AuditKind.MODEL_JOB_FAILED,
        data={
            "kind": JobKind.REVIEW.value, "pass": wave_pass.index, "profile": wave_pass.profile,
            "error_type": error_type, "message": message, **(audited or {}),
        },
    )  # fmt: skip
    return wave_pass.model_copy(
        update={**finished, "outcome": PassOutcome.FAILED, "error_type": error_type, "message": message}
    )
