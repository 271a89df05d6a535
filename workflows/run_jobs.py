"""A ``SpecialistRun``'s model jobs: each one a ``ModelJob`` child inside the runtime budget, what it
is given and what the run audits of it (docs/architecture.md "Run lifecycle").

The reviewer is blinded: its job sees the original task and evidence, then the primary's findings
only — never the author's profile, model, confidence or verdict; a worktree run's reviewer sees the
change git computed, never the author's patch.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from contracts.audit import AuditKind
    from contracts.errors import ErrorType
    from contracts.execution import ChangeUnderReview
    from contracts.failures import ModelJobFailureDetail, failure_detail
    from contracts.hashing import canonical_sha256
    from contracts.model_classes import ModelClass
    from contracts.model_jobs import JobContext, ModelAttempt, ModelJobInput, ModelJobResult
    from contracts.output import JobKind, SpecialistOutput
    from contracts.pass_records import (
        PRIMARY_PASS,
        PassAttempt,
        PassOutcome,
        PassRecord,
        pass_controls,
        review_independence,
    )
    from contracts.policy import APPROVAL_TIERS
    from contracts.runs import ContextPackRecord, ExecutionContract
    from contracts.ui_summaries import model_job_summary
    from workflows.model_job import ModelJobWorkflow
    from workflows.run_state import RunState

PATCH_AUDIT_MODEL_ATTEMPTS = "audit-model-attempts"
"""workflow.patched() id: a run audits every call its jobs made (``model_attempt`` events)."""


async def run_model_job(
    state: RunState,
    kind: JobKind,
    deadline: datetime,
    *,
    expects_patch: bool = False,
    change: ChangeUnderReview | None = None,
) -> ModelJobResult | None:
    """Run one ``ModelJob`` child inside the runtime budget (``expects_patch``: a worktree run's
    change job; ``change``: what git says a worktree run changed, for its reviewer).

    Returns the result, or ``None`` after moving the run to ``failed`` or ``expired``.
    """
    contract = state.contract
    if contract.model is None:
        state.fail(ErrorType.MODEL_NOT_CONFIGURED, "no model in the contract")
        return None
    job = job_input(
        contract,
        state.run_input.work_item.title,
        kind,
        state.result,
        expects_patch=expects_patch,
        change=change,
    )
    state.audit.record(
        AuditKind.MODEL_JOB_STARTED, data={**started_data(contract, job), **audited_controls(state, job)}
    )
    record = PassRecord(
        job_id=job.job_id, kind=kind, profile=job.profile_id, models_requested=job.model.chain,
        model_class=job.model_class, started_at=workflow.now(), **controls(state),
    )  # fmt: skip
    state.model_job_running = True
    child = asyncio.ensure_future(
        workflow.execute_child_workflow(
            ModelJobWorkflow.run,
            job,
            id=job.job_id,
            task_queue=workflow.info().task_queue,
            static_summary=model_job_summary(kind.value, job.profile_id, state.run_input.work_item.title),
        )
    )
    remaining = max((deadline - workflow.now()).total_seconds(), 0.001)
    try:
        await workflow.wait_condition(child.done, timeout=timedelta(seconds=remaining))
    except TimeoutError:
        child.cancel()
        state.model_job_running = False
        state.passes.append(record.model_copy(update={"finished_at": workflow.now()}))
        state.expire({"kind": kind.value, "budget_seconds": remaining})
        return None
    finally:
        state.model_job_running = False
    try:
        result = child.result()
    except ChildWorkflowError as error:
        detail = _job_failed(state, kind, error)
        state.passes.append(
            record.model_copy(
                update={
                    "finished_at": workflow.now(), "outcome": PassOutcome.FAILED,
                    "error_type": state.error.type if state.error else None,
                    "attempts": [pass_attempt(a) for a in detail.attempts], "pack_sha256": detail.pack_sha256,
                    "independence": ["no answer came back: nothing to prove"],
                }
            )
        )  # fmt: skip
        return None
    record_attempts(state, kind, result.attempts)
    output = result.require_output()
    if result.pack is not None and result.pack_sha256 is not None:
        state.packs.append(ContextPackRecord(sha256=result.pack_sha256, pack=result.pack))
    state.audit.record(AuditKind.MODEL_JOB_COMPLETED, data=completed_data(kind, result, output))
    state.passes.append(_completed_record(state, record, result, output))
    return result


def controls(state: RunState) -> dict[str, Any]:
    """A pass's ``controls_requested`` and ``controls_observed`` as the run stands at its dispatch:
    text only, no tools, no network; an edit tier's approval of the contract digest and the approval
    the run recorded (``contracts.pass_records.pass_controls``)."""
    approval = state.approval
    requested, observed = pass_controls(
        edit_tier=state.contract.tier in APPROVAL_TIERS,
        contract_sha256=state.contract_sha256,
        approved_by=approval.actor if approval is not None else None,
        approved_digest=approval.contract_sha256 if approval is not None else None,
    )
    return {"controls_requested": requested, "controls_observed": observed}


def audited_controls(state: RunState, job: ModelJobInput) -> dict[str, Any]:
    """What ``model_job_started`` audits of a pass's class, effort and controls (requested and
    observed), beside its profile and models: the audit trail tells the same story as the record."""
    facts = controls(state)
    return {
        "model_class": job.model_class.value if job.model_class is not None else None,
        "effort": job.effort.value if job.effort is not None else None,
        **{name: value.model_dump(mode="json") for name, value in facts.items()},
    }


def pass_attempt(attempt: ModelAttempt) -> PassAttempt:
    """A job's call as a pass record keeps it."""
    return PassAttempt(
        model_id=attempt.model_id,
        outcome=attempt.outcome,
        error_type=attempt.error_type,
        fallback=attempt.fallback,
        effort_requested=attempt.usage.effort_requested,
        reasoning_tokens=attempt.usage.reasoning_tokens,
        reasoning_observed=attempt.usage.reasoning_observed,
    )


def _completed_record(
    state: RunState, record: PassRecord, result: ModelJobResult, output: SpecialistOutput
) -> PassRecord:
    """A finished job's pass record: its calls, digests and (for a review) proven independence."""
    facts = completed_facts(state, record.kind, record.profile, record.job_id, result, output)
    return record.model_copy(
        update={
            "finished_at": workflow.now(),
            "outcome": PassOutcome.COMPLETED,
            "pack_sha256": result.pack_sha256,
            **facts,
        }
    )


def completed_facts(
    state: RunState,
    kind: JobKind,
    profile: str,
    job_id: str,
    result: ModelJobResult,
    output: SpecialistOutput,
    *,
    frozen_pack: str | None = None,
) -> dict[str, object]:
    """What a finished job's record says of it (a :class:`PassRecord`'s or a wave pass's fields):
    the model, its calls, the guidance and output sha256, and for a review whether the record proves
    it independent (``frozen_pack``: a wave pass's pack, frozen before dispatch)."""
    pack_kind = result.pack.job_kind.value if result.pack is not None else None
    if kind is JobKind.REVIEW:
        pack = frozen_pack or result.pack_sha256
        independent, facts = review_independence(
            profile, state.contract.primary, job_id, pack_kind, pack, frozen=frozen_pack is not None
        )
    else:
        independent, facts = False, [PRIMARY_PASS]
    return {
        "model_id": result.model_id,
        "attempts": [pass_attempt(a) for a in result.attempts],
        "guidance_sha256": result.pack.profile_guidance_sha256 if result.pack is not None else None,
        "output_sha256": canonical_sha256(output.model_dump(mode="json")),
        "independent": independent,
        "independence": facts,
    }


def _job_failed(state: RunState, kind: JobKind, error: ChildWorkflowError) -> ModelJobFailureDetail:
    """A failed job: its attempts and (when it built one) its pack audited, the run ``failed``;
    returns the failure's detail."""
    cause = error.cause
    error_type: str | None = None
    message = str(error)
    detail = None
    if isinstance(cause, ApplicationError):
        error_type, message = cause.type, cause.message
        detail = failure_detail(cause, ModelJobFailureDetail)
    detail = detail or ModelJobFailureDetail()
    record_attempts(state, kind, detail.attempts)
    state.audit.record(AuditKind.MODEL_JOB_FAILED, data=failed_data(kind, error_type, message, detail))
    state.fail(error_type or ErrorType.MODEL_TASK, message)
    return detail


def record_attempts(state: RunState, kind: JobKind, attempts: list[ModelAttempt]) -> None:
    """One ``model_attempt`` audit event per call the job made, retried ones included."""
    if not state.behaviours.has(PATCH_AUDIT_MODEL_ATTEMPTS):
        return
    for attempt in attempts:
        state.audit.record(AuditKind.MODEL_ATTEMPT, data=attempt_data(kind, attempt))


def job_class(contract: ExecutionContract, kind: JobKind) -> ModelClass:
    """The model class of the run's ``kind`` job: ``support`` where its captured assignment runs on
    the support model, else ``core`` (``advisory`` is never chosen for a run's own jobs)."""
    assert contract.model is not None
    assignment = contract.model.assignment_for(kind)
    return ModelClass.SUPPORT if assignment is not None and assignment.uses_support_model else ModelClass.CORE


def job_input(
    contract: ExecutionContract,
    title: str,
    kind: JobKind,
    analysis: SpecialistOutput | None,
    *,
    expects_patch: bool = False,
    change: ChangeUnderReview | None = None,
) -> ModelJobInput:
    """The child's input: the primary (analysis) or the reviewer (review, of ``analysis``'s
    findings) over the captured task (``expects_patch``: a worktree run's change job; ``change``:
    what git says a worktree run changed, for its reviewer)."""
    assert contract.model is not None
    findings = [] if kind is JobKind.ANALYSIS or analysis is None else analysis.findings
    model_class = job_class(contract, kind)
    return ModelJobInput(
        job_id=f"{contract.run_id}-{kind.value}",
        run_id=contract.run_id,
        kind=kind,
        profile_id=contract.primary if kind is JobKind.ANALYSIS else contract.reviewer,
        catalog_sha256=contract.catalog_sha256,
        context=JobContext(
            title=title,
            task=contract.task,
            evidence_refs=contract.evidence_refs,
            findings_under_review=findings,
            expects_patch=expects_patch,
            change=change,
        ),
        # The captured assignment picks the job's models; a contract captured before support
        # routing has none, so for_job returns the same snapshot and old runs replay unchanged.
        model=contract.model.for_job(kind),
        model_class=model_class,
        effort=contract.model.effort_for(model_class),
        max_attempts=contract.budgets.max_attempts,
        task_type=contract.task_type,
        repo_alias=contract.repo_alias,
        base_commit=contract.base_commit,
    )


def started_data(contract: ExecutionContract, job: ModelJobInput) -> dict[str, Any]:
    """The ``model_job_started`` audit data: the profile, the models and why (support routing)."""
    assert contract.model is not None
    assignment = contract.model.assignment_for(job.kind)
    return {
        "kind": job.kind.value,
        "profile": job.profile_id,
        "models": job.model.chain,
        "uses_support_model": assignment.uses_support_model if assignment else False,
        "model_reason": assignment.reason if assignment else None,
    }


def completed_data(kind: JobKind, result: ModelJobResult, output: SpecialistOutput) -> dict[str, Any]:
    """The ``model_job_completed`` audit data: pack, model, attempts, findings and verdict."""
    return {
        **({"pack_sha256": result.pack_sha256} if result.pack_sha256 is not None else {}),
        "kind": kind.value,
        "model": result.model_id,
        "attempts": [attempt.model_dump(mode="json") for attempt in result.attempts],
        "findings": len(output.findings),
        "verdict": output.verdict.value if output.verdict else None,
    }


def failed_data(
    kind: JobKind, error_type: str | None, message: str, detail: ModelJobFailureDetail
) -> dict[str, Any]:
    """The ``model_job_failed`` audit data: the error, the attempts and (when built) the pack."""
    data: dict[str, Any] = {
        "kind": kind.value,
        "error_type": error_type,
        "message": message,
        "attempts": detail.attempts_data(),
    }
    if detail.pack_sha256 is not None:
        data["pack_sha256"] = detail.pack_sha256
    return data


def attempt_data(kind: JobKind, attempt: ModelAttempt) -> dict[str, Any]:
    """One ``model_attempt`` audit event's data: model, attempt number, outcome, error class,
    whether it was retried or fell back, latency, tokens."""
    return {
        "kind": kind.value,
        "model": attempt.model_id,
        "attempt": attempt.attempt,
        "outcome": attempt.outcome,
        "error_type": attempt.error_type,
        "message": attempt.message,
        "retried": attempt.retried,
        "fallback": attempt.fallback,
        "latency_ms": attempt.usage.latency_ms,
        "input_tokens": attempt.usage.input_tokens,
        "output_tokens": attempt.usage.output_tokens,
    }
