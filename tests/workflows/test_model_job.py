"""The ``ModelJob`` child workflow on its own (shared dev server): the captured chain is walked in
order, only quota, authentication and availability errors fall back, Temporal retries only transient
errors, and every attempt is reported — in the result, or in the failure's detail."""

from __future__ import annotations

import datetime as dt
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError

from activities.providers.base import CompletionRequest
from catalog.loader import load_catalog
from contracts.enums import FallbackMode
from contracts.errors import ErrorType
from contracts.failures import ModelJobFailureDetail, failure_detail
from contracts.model_jobs import JobContext, ModelJobInput, ModelJobResult
from contracts.output import JobKind
from contracts.runs import ModelSnapshot
from tests.workflows.harness import REPLAY_MODEL, SLOW_QUERY, FailingProvider, bench, example, within
from workflows.model_job import ModelJobWorkflow


class _Sequence:
    """Answers the first call with ``first``, every later one with ``then``."""

    def __init__(self, first: FailingProvider, then: FailingProvider) -> None:
        self._first, self._then, self.calls = first, then, 0

    def complete(self, request: CompletionRequest) -> str:
        self.calls += 1
        return (self._first if self.calls == 1 else self._then).complete(request)


def _job(*chain: str, mode: FallbackMode | None = None, max_attempts: int = 2) -> ModelJobInput:
    item = example(SLOW_QUERY)
    primary, *fallbacks = chain
    if mode is None:
        mode = FallbackMode.ORDERED if fallbacks else FallbackMode.PRIMARY_ONLY
    run_id = f"SOR-TEST{uuid.uuid4().hex[:12].upper()}"
    return ModelJobInput(
        job_id=f"{run_id}-analysis",
        run_id=run_id,
        kind=JobKind.ANALYSIS,
        profile_id="database-optimizer",
        catalog_sha256=load_catalog().sha256,
        context=JobContext(
            title=item.title, task=f"{item.title}\n\n{item.description}", evidence_refs=item.evidence_refs
        ),
        model=ModelSnapshot(primary=primary, fallbacks=fallbacks, fallback_mode=mode, source="test"),
        max_attempts=max_attempts,
    )


async def _execute(client: Client, task_queue: str, job: ModelJobInput) -> ModelJobResult:
    return await client.execute_workflow(
        ModelJobWorkflow.run,
        job,
        id=job.job_id,
        task_queue=task_queue,
        execution_timeout=dt.timedelta(seconds=30),
    )


def _attempts_and_pack(cause: ApplicationError) -> tuple[list[dict[str, object]], str | None]:
    """The failed job's attempts (as JSON) and its pack's sha256, from its one detail."""
    assert len(cause.details) == 1
    detail = failure_detail(cause, ModelJobFailureDetail)
    assert detail is not None
    return detail.attempts_data(), detail.pack_sha256


async def _failure(client: Client, task_queue: str, job: ModelJobInput) -> ApplicationError:
    with pytest.raises(WorkflowFailureError) as raised:
        await _execute(client, task_queue, job)
    cause = raised.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.non_retryable
    return cause


@within(30)
async def test_model_job_returns_the_validated_output_and_one_ok_attempt(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        result = await _execute(temporal_client, task_queue, _job(REPLAY_MODEL))
    assert result.model_id == REPLAY_MODEL
    assert result.output.role == "database-optimizer" and result.output.verdict is None
    assert [(a.model_id, a.outcome, a.error_type, a.fallback) for a in result.attempts] == [
        (REPLAY_MODEL, "ok", None, False)
    ]


@pytest.mark.parametrize(
    "error_type",
    [ErrorType.MODEL_QUOTA, ErrorType.MODEL_AUTHENTICATION, ErrorType.MODEL_PROVIDER_UNAVAILABLE],
)
@within(30)
async def test_ordered_chain_falls_back_on_quota_authentication_and_availability_errors(
    temporal_client: Client, task_queue: str, tmp_path: Path, error_type: str
) -> None:
    first = FailingProvider(error_type)
    second = FailingProvider(error_type)
    providers = {"first": first, "second": second}
    async with bench(temporal_client, task_queue, tmp_path, providers=providers) as b, b.worker():
        result = await _execute(temporal_client, task_queue, _job("first:a", "second:b", REPLAY_MODEL))
    assert result.model_id == REPLAY_MODEL
    assert [(a.model_id, a.outcome, a.error_type, a.fallback) for a in result.attempts] == [
        ("first:a", "failed", error_type, True),
        ("second:b", "failed", error_type, True),
        (REPLAY_MODEL, "ok", None, False),
    ]
    assert (first.calls, second.calls) == (1, 1)


@within(30)
async def test_an_exhausted_ordered_chain_fails_with_the_last_error_and_every_attempt(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    quota = FailingProvider(ErrorType.MODEL_QUOTA)
    auth = FailingProvider(ErrorType.MODEL_AUTHENTICATION)
    async with (
        bench(temporal_client, task_queue, tmp_path, providers={"quota": quota, "auth": auth}) as b,
        b.worker(),
    ):
        cause = await _failure(temporal_client, task_queue, _job("quota:a", "auth:b"))
    assert cause.type == ErrorType.MODEL_AUTHENTICATION
    attempts, pack_sha256 = _attempts_and_pack(cause)
    assert pack_sha256 is not None and len(pack_sha256) == 64
    assert [(a["model_id"], a["error_type"], a["fallback"]) for a in attempts] == [
        ("quota:a", ErrorType.MODEL_QUOTA, True),
        ("auth:b", ErrorType.MODEL_AUTHENTICATION, False),
    ]


@within(30)
async def test_primary_only_chain_never_falls_back(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    quota = FailingProvider(ErrorType.MODEL_QUOTA)
    async with bench(temporal_client, task_queue, tmp_path, providers={"quota": quota}) as b, b.worker():
        cause = await _failure(temporal_client, task_queue, _job("quota:a"))
    assert cause.type == ErrorType.MODEL_QUOTA
    attempts, pack_sha256 = _attempts_and_pack(cause)
    assert pack_sha256 is not None and len(pack_sha256) == 64
    assert [(a["model_id"], a["fallback"]) for a in attempts] == [("quota:a", False)]
    assert quota.calls == 1


@pytest.mark.parametrize(
    "error_type",
    [
        ErrorType.MODEL_OUTPUT_SCHEMA,
        ErrorType.MODEL_OUTPUT_INVALID,
        ErrorType.MODEL_SAFETY,
        ErrorType.MODEL_TASK,
        ErrorType.REPLAY_NO_RECORDING,
    ],
)
@within(30)
async def test_schema_validation_safety_and_task_errors_never_fall_back_even_in_ordered_mode(
    temporal_client: Client, task_queue: str, tmp_path: Path, error_type: str
) -> None:
    failing = FailingProvider(error_type)
    async with bench(temporal_client, task_queue, tmp_path, providers={"bad": failing}) as b, b.worker():
        cause = await _failure(temporal_client, task_queue, _job("bad:a", REPLAY_MODEL))
    assert cause.type == error_type
    attempts, pack_sha256 = _attempts_and_pack(cause)
    assert pack_sha256 is not None and len(pack_sha256) == 64
    assert [(a["model_id"], a["error_type"], a["fallback"]) for a in attempts] == [
        ("bad:a", error_type, False)
    ]
    assert failing.calls == 1  # not retryable either


@within(30)
async def test_a_transient_transport_error_is_retried_once_on_the_same_model_and_both_attempts_are_reported(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    flaky = FailingProvider(ErrorType.MODEL_TRANSPORT, times=1)
    async with bench(temporal_client, task_queue, tmp_path, providers={"flaky": flaky}) as b, b.worker():
        job = _job("flaky:a")
        result = await _execute(temporal_client, task_queue, job)
        history = await temporal_client.get_workflow_handle(job.job_id).fetch_history()
    assert flaky.calls == 2
    assert result.model_id == "flaky:a"
    assert [(a.model_id, a.attempt, a.outcome, a.error_type, a.retried) for a in result.attempts] == [
        ("flaky:a", 1, "failed", ErrorType.MODEL_TRANSPORT, True),
        ("flaky:a", 2, "ok", None, False),
    ]
    assert all(a.usage.latency_ms is not None for a in result.attempts)
    # Each attempt is its own activity in the job's history, with a durable backoff timer between.
    scheduled = [
        e
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name == "call_model"
    ]
    timers = [e for e in history.events if e.HasField("timer_started_event_attributes")]
    assert len(scheduled) == 2 and len(timers) == 1


@within(30)
async def test_a_transport_error_on_every_attempt_fails_after_max_attempts_without_fallback(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    down = FailingProvider(ErrorType.MODEL_TRANSPORT)
    async with bench(temporal_client, task_queue, tmp_path, providers={"down": down}) as b, b.worker():
        cause = await _failure(temporal_client, task_queue, _job("down:a", REPLAY_MODEL))
    assert down.calls == 2
    assert cause.type == ErrorType.MODEL_TRANSPORT
    attempts, pack_sha256 = _attempts_and_pack(cause)
    assert pack_sha256 is not None and len(pack_sha256) == 64
    assert [(a["model_id"], a["attempt"], a["retried"], a["fallback"]) for a in attempts] == [
        ("down:a", 1, True, False),
        ("down:a", 2, False, False),
    ]


@within(30)
async def test_a_rate_limit_is_retried_on_the_same_model_before_a_fallback_error_moves_on(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    limited = FailingProvider(ErrorType.MODEL_RATE_LIMITED, times=1)
    limited_then_quota = _Sequence(limited, FailingProvider(ErrorType.MODEL_QUOTA))
    async with (
        bench(temporal_client, task_queue, tmp_path, providers={"busy": limited_then_quota}) as b,
        b.worker(),
    ):
        result = await _execute(temporal_client, task_queue, _job("busy:a", REPLAY_MODEL))
    assert [(a.model_id, a.attempt, a.error_type, a.retried, a.fallback) for a in result.attempts] == [
        ("busy:a", 1, ErrorType.MODEL_RATE_LIMITED, True, False),
        ("busy:a", 2, ErrorType.MODEL_QUOTA, False, True),
        (REPLAY_MODEL, 1, None, False, False),
    ]


@within(30)
async def test_replay_is_keyed_by_job_kind_so_a_review_without_a_recording_fails_naming_its_identity(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    # database-optimizer has an analysis recording for this title, but no review recording.
    job = _job(REPLAY_MODEL).model_copy(update={"kind": JobKind.REVIEW})
    async with bench(temporal_client, task_queue, tmp_path) as b, b.worker():
        cause = await _failure(temporal_client, task_queue, job)
    assert cause.type == ErrorType.REPLAY_NO_RECORDING
    assert "database-optimizer" in cause.message and "review" in cause.message
