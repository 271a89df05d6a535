"""The goal queue's ``spec`` update: a spec pass of a proposal (docs/architecture.md "Goal queue",
"Spec pass").

The validator checks the item is a ``proposal`` with a repository whose content is the one the
operator's proof was made for. The handler authorises the actor (action ``queue_spec``, the proof
bound to the key, the content digest and ``replace``), runs ``capture_spec`` (catalog, model
selection snapshot, the repository's base-branch head), then ONE ``ModelJob`` child: an analysis by
:data:`contracts.queue_spec.SPEC_PROFILE` given the proposal's title and scope as data and its
``file:`` evidence read at that commit. The answer's six findings are checked section by section
(:func:`contracts.queue_spec.apply_spec`) against the item as it is once the job returned; the item
stays a proposal and a ``spec_written`` event records the job, model, commit and sections. A spec
pass never approves anything.

Deterministic: no I/O of its own; imported by :mod:`workflows.work_queue`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Protocol

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from contracts.model_classes import ModelClass
    from contracts.model_jobs import JobContext, ModelJobInput, ModelJobResult
    from contracts.output import JobKind
    from contracts.queue_archive import ArchivedItem
    from contracts.queue_items import SCOPE_SECTIONS, QueueEventKind, QueueItem, QueueStatus
    from contracts.queue_messages import ItemAnswer, QueueAction
    from contracts.queue_spec import (
        SPEC_PROFILE,
        SpecCapture,
        SpecCaptureRequest,
        SpecCode,
        SpecRequest,
        apply_spec,
        content_sha256,
        spec_event,
        spec_evidence,
        spec_task,
    )
    from contracts.refusals import RefusalCode
    from contracts.temporal_names import ActivityName
    from contracts.ui_summaries import model_job_summary
    from workflows.model_job import ModelJobWorkflow
    from workflows.queue_archive import not_held

PATCH_SPEC = "queue-spec-pass"
"""Executions that take a ``spec`` update record this marker where the update first runs (no
recorded history took one: they replay unchanged)."""
CAPTURE_TIMEOUT = timedelta(seconds=30)
CAPTURE_RETRY = RetryPolicy(maximum_attempts=2, initial_interval=timedelta(seconds=1))
SPEC_JOB_TIMEOUT = timedelta(minutes=30)
"""The spec job's bound: the read_only runtime budget."""


class SpecQueue(Protocol):
    """What the queue workflow lends the spec pass."""

    _items: dict[str, QueueItem]
    _archived: list[ArchivedItem]

    async def _authorize(
        self, action: QueueAction, target: str, actor: str | None, proof: Any, digest: str
    ) -> tuple[str, str] | None: ...

    def _refused(
        self, action: QueueAction, actor: str | None, target: str, code: str, message: str
    ) -> None: ...

    def _accepted(self, item: QueueItem, previous_key: str | None = None) -> ItemAnswer: ...


def spec_problem(queue: SpecQueue, request: SpecRequest) -> tuple[str, str] | None:
    """Why a spec pass of ``request.key`` cannot be taken now (code, message), or ``None``."""
    item = queue._items.get(request.key)
    if item is None:
        return not_held(queue._archived, request.key)
    if item.status is not QueueStatus.PROPOSAL:
        return SpecCode.NOT_A_PROPOSAL, (
            f"{item.key} is {item.status.value}: a spec pass writes only a proposal's scope"
        )
    if item.repo_alias is None:
        return SpecCode.NO_REPOSITORY, f"{item.key} names no repository: a spec pass reads its code"
    if content_sha256(item) != request.content_sha256:
        return SpecCode.CONTENT_CHANGED, f"{item.key} changed since the proof was made: read it again"
    return None


def validate_spec(queue: SpecQueue, request: SpecRequest) -> None:
    """The validator's check: a refusal raised here never enters history."""
    if request.actor is None or not request.actor.strip():
        raise ApplicationError(
            "queue_spec needs --actor ID (a registered human)",
            type=RefusalCode.ACTOR_REQUIRED,
            non_retryable=True,
        )
    problem = spec_problem(queue, request)
    if problem is not None:
        raise ApplicationError(problem[1], type=problem[0], non_retryable=True)


def _answered(result: ModelJobResult) -> dict[str, tuple[str, list[str]]]:
    """The job's findings by section name (the first finding titled with each name)."""
    answered: dict[str, tuple[str, list[str]]] = {}
    for finding in result.require_output().findings:
        name = finding.title.strip().lower().replace(" ", "_")
        if name in SCOPE_SECTIONS and name not in answered:
            answered[name] = (finding.detail, list(finding.evidence_refs))
    return answered


async def spec(queue: SpecQueue, request: SpecRequest) -> ItemAnswer:
    """Authorise, check again, capture, run the spec job and write the sections that pass."""
    workflow.patched(PATCH_SPEC)
    refusal = await queue._authorize(
        QueueAction.SPEC, request.key, request.actor, request.proof, request.digest()
    )
    if refusal is not None:
        return ItemAnswer(accepted=False, code=refusal[0], message=refusal[1])
    problem = spec_problem(queue, request)
    if problem is not None:
        return _refuse(queue, request, *problem)
    item = queue._items[request.key]
    assert item.repo_alias is not None
    try:
        capture: SpecCapture = await workflow.execute_activity(
            ActivityName.CAPTURE_SPEC,
            SpecCaptureRequest(repo_alias=item.repo_alias),
            result_type=SpecCapture,
            start_to_close_timeout=CAPTURE_TIMEOUT,
            retry_policy=CAPTURE_RETRY,
        )
    except ActivityError as error:
        cause = error.cause
        code = cause.type if isinstance(cause, ApplicationError) and cause.type else SpecCode.CAPTURE_FAILED
        message = cause.message if isinstance(cause, ApplicationError) else str(error)
        return _refuse(queue, request, code, message)
    given = spec_evidence(item)
    queue_id = workflow.info().workflow_id
    job = ModelJobInput(
        job_id=f"{queue_id}-spec-{item.key}-{workflow.uuid4().hex[:12]}",
        run_id=queue_id,
        kind=JobKind.ANALYSIS,
        profile_id=SPEC_PROFILE,
        catalog_sha256=capture.catalog_sha256,
        context=JobContext(title=item.title, task=spec_task(item), evidence_refs=given),
        model=capture.model,
        repo_alias=item.repo_alias,
        base_commit=capture.commit,
        model_class=ModelClass.CORE,
        effort=capture.model.effort_for(ModelClass.CORE),
    )
    try:
        result: ModelJobResult = await workflow.execute_child_workflow(
            ModelJobWorkflow.run,
            job,
            id=job.job_id,
            task_queue=workflow.info().task_queue,
            execution_timeout=SPEC_JOB_TIMEOUT,
            static_summary=model_job_summary(job.kind.value, job.profile_id, item.title),
        )
    except ChildWorkflowError as error:
        cause = error.cause
        code = cause.type if isinstance(cause, ApplicationError) and cause.type else SpecCode.SPEC_FAILED
        message = cause.message if isinstance(cause, ApplicationError) else str(error)
        return _refuse(queue, request, code, message, {"job_id": job.job_id})
    # The item as it is now: another update may have changed or moved it while the job ran.
    problem = spec_problem(queue, request)
    if problem is not None:
        return _refuse(queue, request, *problem, {"job_id": job.job_id})
    item = queue._items[request.key]
    outcome = apply_spec(item, _answered(result), given, replace=request.replace)
    data = spec_event(job.job_id, result.model_id, capture.branch, capture.commit, outcome, request.replace)
    written = item.with_event(
        QueueEventKind.SPEC_WRITTEN, workflow.now(), request.actor, data, scope=outcome.scope
    )
    queue._items[item.key] = written
    return queue._accepted(written).model_copy(update={"extra": data})


def _refuse(
    queue: SpecQueue, request: SpecRequest, code: str, message: str, extra: dict[str, Any] | None = None
) -> ItemAnswer:
    queue._refused(QueueAction.SPEC, request.actor, request.key, code, message)
    return ItemAnswer(accepted=False, code=code, message=message, extra=extra or {})
