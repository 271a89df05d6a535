"""The ``call_model`` activity and its output parser: untrusted model text is bounded, parsed and
checked against the job (role, verdict, evidence); every failure has an ``ErrorType`` and only
transient ones are retryable."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.config import ActivityConfig
from activities.context import RequestTooLarge, check_request_size
from activities.models import ModelActivities, _with_heartbeats, parse_output
from activities.providers.base import CompletionRequest, JobIdentity, ProviderError
from catalog.loader import load_catalog
from contracts.errors import ErrorType
from contracts.model_jobs import JobContext, ModelCallRequest, ModelCallResult
from contracts.output import MAX_REQUEST_BYTES, MAX_RESULT_BYTES, JobKind
from tests.workflows.harness import SLOW_QUERY, example, recorded_response

ITEM = example(SLOW_QUERY)
EVIDENCE = list(ITEM.evidence_refs)


ANALYSIS = recorded_response("analysis", "database-optimizer", ITEM.title)
REVIEW = recorded_response("review", "backend-architect", ITEM.title)


def _request(
    kind: JobKind = JobKind.ANALYSIS,
    *,
    profile: str | None = None,
    model_id: str = "replay:demo",
    task: str | None = None,
    catalog_sha256: str | None = None,
) -> ModelCallRequest:
    profile = profile or ("database-optimizer" if kind is JobKind.ANALYSIS else "backend-architect")
    return ModelCallRequest(
        job_id="SOR-0123456789ABCDEF-" + kind.value,
        kind=kind,
        profile_id=profile,
        catalog_sha256=catalog_sha256 or load_catalog().sha256,
        context=JobContext(title=ITEM.title, task=task or ITEM.title, evidence_refs=EVIDENCE),
        model_id=model_id,
    )


def _parse_error(raw: str, request: ModelCallRequest) -> ApplicationError:
    with pytest.raises(ApplicationError) as raised:
        parse_output(raw, request)
    return raised.value


# -------------------------------------------------------------------------------------- parse_output


def test_parse_output_accepts_a_recorded_analysis_and_review() -> None:
    analysis = parse_output(json.dumps(ANALYSIS), _request(JobKind.ANALYSIS))
    review = parse_output(json.dumps(REVIEW), _request(JobKind.REVIEW))
    assert analysis.role == "database-optimizer" and analysis.verdict is None
    assert review.verdict is not None and review.verdict.value == "agree"


def test_parse_output_accepts_a_result_of_exactly_48_kib_and_refuses_one_byte_more() -> None:
    raw = json.dumps(ANALYSIS)
    at_limit = raw + " " * (MAX_RESULT_BYTES - len(raw.encode()))
    assert len(at_limit.encode()) == MAX_RESULT_BYTES
    assert parse_output(at_limit, _request()).role == "database-optimizer"

    error = _parse_error(at_limit + " ", _request())
    assert error.type == ErrorType.RESULT_TOO_LARGE
    assert error.non_retryable
    assert str(MAX_RESULT_BYTES) in error.message


@pytest.mark.parametrize(
    "raw",
    [
        "The index is missing.",
        '{"role": "database-optimizer"',
        json.dumps({**ANALYSIS, "secret_channel": "x"}),
        json.dumps({**ANALYSIS, "confidence": 1.5}),
        json.dumps({**ANALYSIS, "confidence_band": "low"}),
        json.dumps({key: value for key, value in ANALYSIS.items() if key != "findings"}),
        json.dumps([ANALYSIS]),
    ],
    ids=[
        "prose",
        "truncated_json",
        "unknown_key",
        "confidence_out_of_range",
        "band_mismatch",
        "missing_field",
        "array",
    ],
)
def test_parse_output_refuses_text_that_is_not_a_valid_result_as_a_schema_error(raw: str) -> None:
    error = _parse_error(raw, _request())
    assert error.type == ErrorType.MODEL_OUTPUT_SCHEMA
    assert error.non_retryable


@pytest.mark.parametrize(
    ("output", "kind", "rule"),
    [
        ({**ANALYSIS, "role": "backend-architect"}, JobKind.ANALYSIS, "not the job's profile"),
        ({**ANALYSIS, "verdict": "agree"}, JobKind.ANALYSIS, "must not carry a verdict"),
        (
            {key: value for key, value in REVIEW.items() if key != "verdict"},
            JobKind.REVIEW,
            "must carry a verdict",
        ),
        (
            {**ANALYSIS, "inspected_evidence": [*EVIDENCE, "log:invented"]},
            JobKind.ANALYSIS,
            "log:invented",
        ),
        (
            {
                **ANALYSIS,
                "findings": [{**ANALYSIS["findings"][0], "evidence_refs": ["plan:elsewhere"]}],
            },
            JobKind.ANALYSIS,
            "plan:elsewhere",
        ),
    ],
    ids=["wrong_role", "verdict_on_analysis", "review_without_verdict", "unknown_inspected", "unknown_cited"],
)
def test_parse_output_refuses_a_result_that_breaks_a_job_rule_as_invalid(
    output: dict[str, Any], kind: JobKind, rule: str
) -> None:
    error = _parse_error(json.dumps(output), _request(kind))
    assert error.type == ErrorType.MODEL_OUTPUT_INVALID
    assert error.non_retryable
    assert rule in error.message


# ---------------------------------------------------------------------------------------- call_model


class _Recording:
    def __init__(self, answer: str | ProviderError) -> None:
        self.answer = answer
        self.requests: list[CompletionRequest] = []

    def complete(self, request: CompletionRequest) -> str:
        self.requests.append(request)
        if isinstance(self.answer, ProviderError):
            raise self.answer
        return self.answer


def _models(tmp_path: Path, **providers: Any) -> ModelActivities:
    return ModelActivities(ActivityConfig(database_url=f"sqlite:///{tmp_path / 's.db'}"), providers)


def _call(models: ModelActivities, request: ModelCallRequest) -> tuple[ModelCallResult, list[Any]]:
    env = ActivityEnvironment()
    beats: list[Any] = []
    env.on_heartbeat = lambda *details: beats.append(details)
    return env.run(models.call_model, request), beats


def _call_error(models: ModelActivities, request: ModelCallRequest) -> ApplicationError:
    with pytest.raises(ApplicationError) as raised:
        ActivityEnvironment().run(models.call_model, request)
    return raised.value


def test_call_model_answers_from_replay_and_heartbeats_before_calling(tmp_path: Path) -> None:
    result, beats = _call(_models(tmp_path), _request())
    assert result.model_id == "replay:demo"
    assert result.output.role == "database-optimizer"
    assert len(beats) == 1
    (detail,) = beats[0]
    assert detail["model"] == "replay:demo" and 0 < detail["request_bytes"] <= MAX_REQUEST_BYTES


def test_call_model_sends_catalog_instructions_and_context_to_the_provider_named_by_the_model_id(
    tmp_path: Path,
) -> None:
    provider = _Recording(json.dumps(ANALYSIS))
    result, _ = _call(_models(tmp_path, local=provider), _request(model_id="local:llama3:8b"))
    assert result.model_id == "local:llama3:8b"
    (sent,) = provider.requests
    assert sent.model_name == "llama3:8b"
    assert (sent.identity.profile_id, sent.identity.kind, sent.identity.title) == (
        "database-optimizer",
        JobKind.ANALYSIS,
        ITEM.title,
    )
    profile = load_catalog().profiles["database-optimizer"]
    assert profile.name in sent.instructions
    assert all(ref in sent.context for ref in EVIDENCE)


def test_call_model_refuses_a_request_over_60_kib_before_calling_the_provider(tmp_path: Path) -> None:
    provider = _Recording(json.dumps(ANALYSIS))
    error = _call_error(
        _models(tmp_path, local=provider), _request(model_id="local:m", task="x" * MAX_REQUEST_BYTES)
    )
    assert error.type == ErrorType.REQUEST_TOO_LARGE
    assert error.non_retryable
    assert provider.requests == []


def test_call_model_refuses_a_contract_captured_from_another_catalog(tmp_path: Path) -> None:
    error = _call_error(_models(tmp_path), _request(catalog_sha256="0" * 64))
    assert error.type == ErrorType.CATALOG_CHANGED
    assert error.non_retryable


def test_call_model_refuses_a_profile_the_catalog_does_not_have(tmp_path: Path) -> None:
    error = _call_error(_models(tmp_path), _request(profile="no-such-profile"))
    assert error.type == ErrorType.CATALOG_CHANGED


@pytest.mark.parametrize("model_id", ["openai:gpt-x", "no-colon"])
def test_call_model_refuses_a_model_whose_provider_is_not_configured(tmp_path: Path, model_id: str) -> None:
    error = _call_error(_models(tmp_path), _request(model_id=model_id))
    assert error.type == ErrorType.MODEL_NOT_CONFIGURED
    assert error.non_retryable


@pytest.mark.parametrize(
    ("error_type", "retryable"),
    [
        (ErrorType.MODEL_TRANSPORT, True),
        (ErrorType.MODEL_TIMEOUT, True),
        (ErrorType.MODEL_RATE_LIMITED, True),
        (ErrorType.MODEL_QUOTA, False),
        (ErrorType.MODEL_AUTHENTICATION, False),
        (ErrorType.MODEL_SAFETY, False),
    ],
)
def test_call_model_marks_only_timeout_transport_and_rate_limit_errors_retryable(
    tmp_path: Path, error_type: str, retryable: bool
) -> None:
    provider = _Recording(ProviderError(error_type, "provider says no"))
    error = _call_error(_models(tmp_path, local=provider), _request(model_id="local:m"))
    assert error.type == error_type
    assert error.non_retryable is not retryable
    assert error.message == "provider says no"


def test_call_model_validates_the_provider_output(tmp_path: Path) -> None:
    provider = _Recording(json.dumps({**ANALYSIS, "role": "someone-else"}))
    error = _call_error(_models(tmp_path, local=provider), _request(model_id="local:m"))
    assert error.type == ErrorType.MODEL_OUTPUT_INVALID


def test_request_size_limit_is_60_kib_inclusive() -> None:
    assert check_request_size("a" * (MAX_REQUEST_BYTES - 10), "b" * 10) == MAX_REQUEST_BYTES
    with pytest.raises(RequestTooLarge):
        check_request_size("a" * (MAX_REQUEST_BYTES - 10), "é" * 6)  # multi-byte characters count as bytes


def test_parse_output_refuses_deeply_nested_text_as_a_schema_error() -> None:
    error = _parse_error("[" * 5000 + "]" * 5000, _request())
    assert error.type == ErrorType.MODEL_OUTPUT_SCHEMA


class _Trickling:
    """Answers only after ``seconds`` (a server trickling its answer byte by byte looks the same)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def complete(self, request: CompletionRequest) -> str:
        time.sleep(self.seconds)
        return json.dumps(ANALYSIS)


def test_a_call_longer_than_the_models_whole_timeout_fails_as_a_timeout() -> None:
    completion = CompletionRequest(
        model_name="m", instructions="i", context="c", identity=JobIdentity("p", JobKind.ANALYSIS, "t")
    )
    started = time.monotonic()
    with pytest.raises(ProviderError) as raised:
        ActivityEnvironment().run(_with_heartbeats, _Trickling(3.0), completion, {}, 0.3)
    assert raised.value.error_type == ErrorType.MODEL_TIMEOUT
    assert time.monotonic() - started < 2.0
    answer = ActivityEnvironment().run(_with_heartbeats, _Trickling(0.05), completion, {}, 5.0)
    assert json.loads(answer.text) == ANALYSIS


# ------------------------------------------------------------------------------------ secret scanning

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example key id


def test_call_model_fails_an_answer_holding_credential_material_and_never_echoes_it(tmp_path: Path) -> None:
    leaked = {**ANALYSIS, "summary": f"The deploy script exports {AWS_KEY} as the access key."}
    provider = _Recording(json.dumps(leaked))
    error = _call_error(_models(tmp_path, local=provider), _request(model_id="local:m"))
    assert error.type == ErrorType.SECRET_IN_OUTPUT
    assert error.non_retryable
    assert "AWS Access Key on line 1" in error.message and "discarded" in error.message
    assert AWS_KEY not in error.message and AWS_KEY not in repr(error.details)


def test_call_model_refuses_a_request_holding_a_deployment_secret_before_calling_the_provider(
    tmp_path: Path,
) -> None:
    token = "deployment-action-token-0123456789"
    provider = _Recording(json.dumps(ANALYSIS))
    config = ActivityConfig(database_url=f"sqlite:///{tmp_path / 's.db'}", action_token=token.encode())
    models = ModelActivities(config, {"local": provider})
    error = _call_error(models, _request(model_id="local:m", task=f"Rotate {token} tonight"))
    assert error.type == ErrorType.SECRET_IN_CONTEXT and error.non_retryable
    assert "a deployment secret (the action token)" in error.message and token not in error.message
    assert provider.requests == []
