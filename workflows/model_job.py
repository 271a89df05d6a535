"""``ModelJob``: one model job — a primary analysis or a review — behind one child-workflow boundary.

The job walks the captured model chain. Each model gets at most ``max_attempts`` calls (2 by
default): a timeout, transport or rate-limit error is tried again on the same model after a durable
backoff timer (1 s, then doubling); nothing else is. With fallback mode ``ordered`` only quota,
authentication and provider-availability errors move on to the next model
(``contracts.errors.advances_fallback``); any other error ends the job. Every call is one
``call_model`` activity with one attempt, so every attempt — a retried one included — is its own
event in this workflow's history and its own :class:`ModelAttempt` (with latency and token usage) in
the result, or, on failure, in the error's detail (``contracts.failures.ModelJobFailureDetail``),
for the parent run to audit.

Each call to a registered model holds a lease from that model's ``ModelCeiling`` workflow for the
call's duration (``workflows/model_ceiling.py``): the job asks for it (activity
``request_model_lease``) and waits for the ``lease_granted`` signal; ``call_model`` gives it back as
it ends, and the job gives it back itself (signal ``release``) when the call could not — it failed,
its worker died, or the job was cancelled while waiting or calling. Runs started before
``PATCH_LOCAL_PREPARE`` build the context pack while the first lease is asked for; with it both are
local activities, run one after
the other inside the job's first workflow task (the pack first, so nothing slow comes between a
grant and its call) and recorded in its history as markers, and the lease request says whether the
slot was free at once — so an uncontended job schedules its call in its first workflow task. The
leased call's activity timeout is the model's own timeout plus a margin; it must start within 30 s.

Runs started before attempts were driven here (no ``PATCH_ATTEMPTS_IN_WORKFLOW`` marker) let
Temporal retry the activity instead, hold no leases and report one attempt per model. Jobs started
since ``PATCH_JOB_V6`` record that one marker for every behaviour; jobs started under
``PATCH_JOB_V5`` (which stood for the first two) ask ``PATCH_CLASS_POOLS`` at their first leased call
(``workflows/patches.py``).
"""

import asyncio
from datetime import timedelta
from typing import TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError

with workflow.unsafe.imports_passed_through():
    from contracts.ceilings import (
        CALL_TIMEOUT_MARGIN_SECONDS,
        LeaseCall,
        LeaseGranted,
        LeaseOutcome,
        LeaseRelease,
        LeaseTerms,
        ceiling_workflow_id,
        class_lease_id,
        lease_outcome,
    )
    from contracts.context_packs import ContextPackResult
    from contracts.errors import ErrorType, advances_fallback, is_retryable
    from contracts.failures import ModelCallFailureDetail, ModelJobFailureDetail, failure_detail
    from contracts.metric_names import MODEL_FALLBACKS
    from contracts.model_classes import ModelClass, class_pool_id
    from contracts.model_jobs import (
        CallUsage,
        ContextPackRequest,
        ModelAttempt,
        ModelCallRequest,
        ModelCallResult,
        ModelJobInput,
        ModelJobResult,
    )
    from contracts.models import is_replay_model
    from contracts.research_teams import (
        JobOutputRef,
        StoredJobOutput,
        StoreJobOutputRequest,
        highest_severity,
    )
    from contracts.temporal_names import ActivityName, CeilingMessage, ModelJobMessage, WorkflowType
    from contracts.ui_summaries import model_job_details
    from workflows.patches import Behaviours
    from workflows.versioning import pinned

_Prepared = TypeVar("_Prepared", ContextPackResult, LeaseTerms)

_STORE_OUTPUT_TIMEOUT = timedelta(seconds=10)
_STORE_OUTPUT_RETRY = RetryPolicy(maximum_attempts=5, initial_interval=timedelta(milliseconds=200))
MODEL_CALL_TIMEOUT = timedelta(minutes=10)
MODEL_CALL_HEARTBEAT = timedelta(seconds=15)
"""``call_model`` heartbeats every 5 s; a worker that dies mid-call is noticed after this."""
_LEASE_REQUEST_TIMEOUT = timedelta(seconds=10)
_CONTEXT_PACK_TIMEOUT = timedelta(seconds=60)
_CONTEXT_PACK_RETRY = RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=1))
_LEASE_REQUEST_RETRY = RetryPolicy(maximum_attempts=5, initial_interval=timedelta(milliseconds=200))
CALL_START_TIMEOUT = timedelta(seconds=30)
"""Longest a call waits for a worker once its lease is granted (less than the lease's 60 s margin)."""
RETRY_BACKOFF = timedelta(seconds=1)
"""Wait before the second call to a model; doubles for each later one."""

# workflow.patched() ids: each marks a change to logic that recorded histories already exercise.
PATCH_ATTEMPTS_IN_WORKFLOW = "model-attempts-in-workflow"
PATCH_LOCAL_PREPARE = "model-job-local-prepare"
"""The context pack and lease requests run as local activities (in the job's workflow task)."""
PATCH_CLASS_POOLS = "model-job-class-pools"
"""A leased call asks its model class's pool for a lease before its model's ceiling
(``contracts.model_classes``), and gives both back."""
PATCH_JOB_V5 = "model-job-v5"
"""Attempts in the workflow and the local prepare under one marker: jobs started under it ask the
older ids of neither (docs/architecture.md "Temporal conventions")."""
PATCH_JOB_V6 = "model-job-v6"
"""Every behaviour above under one marker, asked in the job's first workflow task: jobs started since
record only this one (a leased call's class pools no longer cost a marker of its own, and its
``TemporalChangeVersion`` upsert a visibility write, at the first call)."""


def _count_fallback(model_id: str, error_type: str) -> None:
    workflow.metric_meter().create_counter(MODEL_FALLBACKS, "jobs that left a model for the next").add(
        1, {"model": model_id, "error_type": error_type}
    )


def _usage(error: ActivityError) -> CallUsage:
    """The usage a failed ``call_model`` reported in its detail (empty when it reported none)."""
    detail = failure_detail(error.cause, ModelCallFailureDetail)
    return detail.usage if detail is not None else CallUsage()


def _error_type(error: ActivityError) -> tuple[str, str]:
    """The error type and message behind a failed activity (timeouts count as ``model_timeout``)."""
    cause = error.cause
    if isinstance(cause, ApplicationError):
        return cause.type or ErrorType.MODEL_TASK, cause.message
    if isinstance(cause, TimeoutError):
        return ErrorType.MODEL_TIMEOUT, str(cause)
    return ErrorType.MODEL_TASK, str(cause or error)


@workflow.defn(name=WorkflowType.MODEL_JOB, versioning_behavior=pinned())
class ModelJobWorkflow:
    """Run one model job over the captured chain and return a validated result."""

    @workflow.init
    def __init__(self, job: ModelJobInput) -> None:
        self._attempts: list[ModelAttempt] = []
        self._pack: ContextPackResult | None = None
        self._granted: set[str] = set()
        self._pack_task: asyncio.Future[ContextPackResult] | None = None
        self._local_prepare = False
        # The job's marker, asked in its first workflow task before any command (as in run()).
        self._behaviours = Behaviours(
            PATCH_JOB_V6, previous=PATCH_JOB_V5, added_since_previous=(PATCH_CLASS_POOLS,)
        )

    @workflow.signal(name=ModelJobMessage.LEASE_GRANTED)
    def lease_granted(self, grant: LeaseGranted) -> None:
        """A model's ceiling granted one of this job's lease requests."""
        self._granted.add(grant.lease_id)

    @workflow.run
    async def run(self, job: ModelJobInput) -> ModelJobResult:
        # The job's current details in the Temporal UI (metadata, not history).
        workflow.set_current_details(
            model_job_details(
                job.kind.value, job.profile_id, f"run {job.run_id} · chain {' → '.join(job.model.chain)}"
            )
        )
        behaviours = self._behaviours
        if not behaviours.has(PATCH_ATTEMPTS_IN_WORKFLOW):
            return await self._run_with_activity_retries(job)
        self._local_prepare = behaviours.has(PATCH_LOCAL_PREPARE)
        # Started at once; under PATCH_LOCAL_PREPARE the first lease is asked for once it is built,
        # before that (runs started earlier) while it is being built.
        self._pack_task = asyncio.ensure_future(self._build_pack(job))
        chain = job.model.chain
        for index, model_id in enumerate(chain):
            attempt = 1
            while True:
                try:
                    result = await self._leased_call(job, model_id, attempt)
                except ActivityError as error:
                    error_type, message = _error_type(error)
                    retried = is_retryable(error_type) and attempt < job.max_attempts
                    fallback = not retried and advances_fallback(error_type) and index + 1 < len(chain)
                    self._attempts.append(
                        ModelAttempt(
                            model_id=model_id,
                            outcome="failed",
                            error_type=error_type,
                            message=message,
                            fallback=fallback,
                            attempt=attempt,
                            retried=retried,
                            usage=_usage(error),
                        )
                    )
                    if retried:
                        await workflow.sleep(RETRY_BACKOFF * 2 ** (attempt - 1))
                        attempt += 1
                        continue
                    if fallback:
                        workflow.logger.info("model %s failed with %s; falling back", model_id, error_type)
                        _count_fallback(model_id, error_type)
                        break
                    raise self._failure(job, model_id, error_type, message) from error
                self._attempts.append(
                    ModelAttempt(model_id=model_id, outcome="ok", attempt=attempt, usage=result.usage)
                )
                assert self._pack is not None  # a call is only made once the pack is built
                if job.context.research is not None:
                    # Only research jobs have this context (no recorded history before it): no patch.
                    return await self._stored_result(job, result)
                return ModelJobResult(
                    output=result.output,
                    model_id=model_id,
                    attempts=self._attempts,
                    pack=self._pack.pack,
                    pack_sha256=self._pack.sha256,
                )
        raise self._empty_chain(job)

    async def _stored_result(self, job: ModelJobInput, result: ModelCallResult) -> ModelJobResult:
        """Store a research job's output and pack (activity ``store_job_output``) and return them by
        reference, so the team's history holds ids and digests only. Raises the job's failure
        (``job_output_not_stored``) when the store stays unreachable through the retries."""
        research = job.context.research
        assert research is not None and self._pack is not None
        try:
            stored = await workflow.execute_activity(
                ActivityName.STORE_JOB_OUTPUT,
                StoreJobOutputRequest(
                    job_id=job.job_id,
                    team_id=research.team_id,
                    kind=job.kind,
                    profile_id=job.profile_id,
                    model_id=result.model_id,
                    output=result.output.model_dump(mode="json"),
                    pack=self._pack.pack.model_dump(mode="json"),
                    pack_sha256=self._pack.sha256,
                ),
                result_type=StoredJobOutput,
                start_to_close_timeout=_STORE_OUTPUT_TIMEOUT,
                retry_policy=_STORE_OUTPUT_RETRY,
            )
        except ActivityError as error:
            _, message = _error_type(error)
            raise self._failure(job, result.model_id, ErrorType.JOB_OUTPUT_NOT_STORED, message) from error
        output = result.output
        return ModelJobResult(
            output=None,
            model_id=result.model_id,
            attempts=self._attempts,
            pack_sha256=self._pack.sha256,
            output_ref=JobOutputRef(
                job_id=job.job_id,
                sha256=stored.sha256,
                stage=research.stage,
                kind=job.kind,
                profile_id=job.profile_id,
                model_id=result.model_id,
                verdict=output.verdict,
                findings=len(output.findings),
                max_severity=highest_severity([finding.severity for finding in output.findings]),
            ),
        )

    async def _build_pack(self, job: ModelJobInput) -> ContextPackResult:
        """The job's context pack, built once by an activity (so it is in this job's history).
        Raises the job's failure (no attempts) when the pack cannot be built, e.g. too large."""
        try:
            return await self._prepare(
                ActivityName.BUILD_CONTEXT_PACK,
                ContextPackRequest.for_job(job),
                ContextPackResult,
                _CONTEXT_PACK_TIMEOUT,
                _CONTEXT_PACK_RETRY,
            )
        except ActivityError as error:
            error_type, message = _error_type(error)
            raise ApplicationError(
                f"model job {job.job_id}: the context pack could not be built: {message}",
                ModelJobFailureDetail().model_dump(mode="json"),
                type=error_type,
                non_retryable=True,
            ) from error

    async def _leased_call(self, job: ModelJobInput, model_id: str, attempt: int) -> ModelCallResult:
        """One ``call_model`` attempt, under a lease when the model has a ceiling, once the context
        pack is built.

        Raises ``ActivityError`` when the call (or, after its retries, the lease request) fails, and
        the job's ``ApplicationError`` when the pack cannot be built.
        """
        lease_id = f"{workflow.info().workflow_id}/{model_id}/{attempt}"
        timeout = MODEL_CALL_TIMEOUT
        # From the moment a lease may have been asked for, it is given back (or the request withdrawn)
        # however this attempt ends — a cancel can arrive while the request is still in flight. The
        # call gives it back itself as it ends; the job does it only when the call could not.
        requested = not is_replay_model(model_id)
        classed = False
        model_class: ModelClass | None = None
        released = False
        outcome: LeaseOutcome | None = None
        try:
            if self._local_prepare and self._pack is None:
                # The pack first: a lease is granted at once and its deadline runs from then, so
                # nothing that may take long (the pack's retries) comes between grant and call.
                assert self._pack_task is not None
                self._pack = await self._pack_task
            if requested:
                pooled = self._behaviours.has(PATCH_CLASS_POOLS)
                model_class = (job.model_class or ModelClass.CORE) if pooled else None
                call = LeaseCall(
                    model_id=model_id,
                    lease_id=lease_id,
                    holder_workflow_id=workflow.info().workflow_id,
                    model_class=model_class,
                )
                classed = model_class is not None
                while True:
                    terms = await self._prepare(
                        ActivityName.REQUEST_MODEL_LEASE,
                        call,
                        LeaseTerms,
                        _LEASE_REQUEST_TIMEOUT,
                        _LEASE_REQUEST_RETRY,
                    )
                    if not terms.class_waiting:
                        break
                    # Queued in the class's pool: asked again once it is granted (idempotent).
                    await workflow.wait_condition(lambda: class_lease_id(lease_id) in self._granted)
                    call = call.model_copy(update={"class_granted": True})
                classed = classed and terms.limited
                requested = terms.limited
                if terms.limited and terms.call_timeout_s is not None:
                    timeout = timedelta(seconds=terms.call_timeout_s + CALL_TIMEOUT_MARGIN_SECONDS)
                    if terms.granted:  # the grant signal still arrives; it finds the lease known
                        self._granted.add(lease_id)
                    await workflow.wait_condition(lambda: lease_id in self._granted)
            if self._pack is None:
                assert self._pack_task is not None
                self._pack = await self._pack_task
            call_deadline = workflow.now() + timeout
            try:
                result: ModelCallResult = await workflow.execute_activity(
                    ActivityName.CALL_MODEL,
                    self._request(
                        job,
                        model_id,
                        attempt,
                        lease_id if requested else None,
                        class_pool_id(model_class) if classed and model_class is not None else None,
                    ),
                    result_type=ModelCallResult,
                    start_to_close_timeout=timeout,
                    # A leased call that no worker picks up in time is given up (the lease margin
                    # covers this wait): its lease must not expire while it runs.
                    schedule_to_start_timeout=CALL_START_TIMEOUT if self._local_prepare else None,
                    heartbeat_timeout=MODEL_CALL_HEARTBEAT,
                    retry_policy=RetryPolicy(maximum_attempts=1),
                )
            except ActivityError as error:
                if isinstance(error.cause, ApplicationError):
                    outcome = lease_outcome(error.cause.type)
                if requested and isinstance(error.cause, TimeoutError):
                    # The call was lost (its worker died or stalled), not ended: it may still be
                    # running. Its slot stays taken until the call's own deadline has passed, so the
                    # retry never runs beside it above the ceiling.
                    left = (call_deadline - workflow.now()).total_seconds()
                    if left > 0:
                        await workflow.sleep(left)
                raise
            released = result.lease_released
            classed = classed and not result.class_lease_released
            return result
        finally:
            if requested and not released:
                await self._release(model_id, lease_id, outcome)
            if classed and model_class is not None:
                await self._release(class_pool_id(model_class), class_lease_id(lease_id))

    async def _prepare(
        self,
        activity: ActivityName,
        argument: ContextPackRequest | LeaseCall,
        result_type: type[_Prepared],
        timeout: timedelta,
        retry: RetryPolicy,
    ) -> _Prepared:
        """Run a preparation activity (pack, lease request): a local activity — inside this job's
        workflow task, so the call can be scheduled in the same task — once ``PATCH_LOCAL_PREPARE``
        is recorded, else a normal one. Raises ``ActivityError`` after the retries."""
        result: _Prepared
        if self._local_prepare:
            result = await workflow.execute_local_activity(
                activity,
                argument,
                result_type=result_type,
                start_to_close_timeout=timeout,
                retry_policy=retry,
            )
        else:
            result = await workflow.execute_activity(
                activity,
                argument,
                result_type=result_type,
                start_to_close_timeout=timeout,
                retry_policy=retry,
            )
        return result

    async def _release(self, model_id: str, lease_id: str, outcome: LeaseOutcome | None = None) -> None:
        """Give the lease back (or withdraw the request), waiting until the signal is delivered: the
        SDK drops a signal still in flight when the job ends or is cancelled. Shielded, so it is sent
        even while the job is being cancelled. A model without a ceiling workflow (the request never
        reached one) has nothing to release; that failure is ignored."""
        handle = workflow.get_external_workflow_handle(
            ceiling_workflow_id(workflow.info().task_queue, model_id)
        )
        try:
            await asyncio.shield(
                asyncio.ensure_future(
                    handle.signal(CeilingMessage.RELEASE, LeaseRelease(lease_id=lease_id, outcome=outcome))
                )
            )
        except Exception as error:  # the server reports a missing workflow as a failed signal
            workflow.logger.info("lease %s: nothing to release (%s)", lease_id, error)
        self._granted.discard(lease_id)

    def _request(
        self,
        job: ModelJobInput,
        model_id: str,
        attempt: int,
        lease_id: str | None = None,
        class_pool: str | None = None,
    ) -> ModelCallRequest:
        return ModelCallRequest(
            job_id=job.job_id,
            kind=job.kind,
            profile_id=job.profile_id,
            catalog_sha256=job.catalog_sha256,
            context=job.context,
            model_id=model_id,
            run_id=job.run_id,
            attempt=attempt,
            pack=self._pack.pack if self._pack is not None else None,
            lease_id=lease_id,
            class_pool=class_pool,
            effort=job.effort,
        )

    def _failure(self, job: ModelJobInput, model_id: str, error_type: str, message: str) -> ApplicationError:
        """The job's failure: the last error's type; its detail: every attempt and (when built) the
        context pack's sha256."""
        detail = ModelJobFailureDetail(
            attempts=self._attempts, pack_sha256=self._pack.sha256 if self._pack is not None else None
        )
        return ApplicationError(
            f"model job {job.job_id} failed on {model_id}: {message}",
            detail.model_dump(mode="json"),
            type=error_type,
            non_retryable=True,
        )

    @staticmethod
    def _empty_chain(job: ModelJobInput) -> ApplicationError:
        return ApplicationError(
            f"model job {job.job_id} has an empty model chain",
            type=ErrorType.MODEL_NOT_CONFIGURED,
            non_retryable=True,
        )

    async def _run_with_activity_retries(self, job: ModelJobInput) -> ModelJobResult:
        """The walk as runs started before ``PATCH_ATTEMPTS_IN_WORKFLOW`` replay it: Temporal retries
        each model's activity and one attempt per model is reported."""
        chain = job.model.chain
        for index, model_id in enumerate(chain):
            request = self._request(job, model_id, 1)
            try:
                result = await workflow.execute_activity(
                    ActivityName.CALL_MODEL,
                    request,
                    result_type=ModelCallResult,
                    start_to_close_timeout=MODEL_CALL_TIMEOUT,
                    heartbeat_timeout=MODEL_CALL_HEARTBEAT,
                    retry_policy=RetryPolicy(
                        maximum_attempts=job.max_attempts,
                        initial_interval=timedelta(seconds=1),
                        backoff_coefficient=2.0,
                    ),
                )
            except ActivityError as error:
                error_type, message = _error_type(error)
                fallback = advances_fallback(error_type) and index + 1 < len(chain)
                self._attempts.append(
                    ModelAttempt(
                        model_id=model_id,
                        outcome="failed",
                        error_type=error_type,
                        message=message,
                        fallback=fallback,
                    )
                )
                if fallback:
                    workflow.logger.info("model %s failed with %s; falling back", model_id, error_type)
                    _count_fallback(model_id, error_type)
                    continue
                raise self._failure(job, model_id, error_type, message) from error
            self._attempts.append(ModelAttempt(model_id=model_id, outcome="ok"))
            return ModelJobResult(output=result.output, model_id=model_id, attempts=self._attempts)
        raise self._empty_chain(job)
