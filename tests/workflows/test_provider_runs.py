"""Real read_only runs against a model server on loopback, through the official SDKs.

Each case registers two models on the scripted wire server (``models add`` as the store does it:
base URL, key variable, 1 s timeout), selects them as an ``ordered`` chain (primary, then backup),
scripts the primary's answers to the analysis job, and checks what an operator would: how the run
ended, the error class, how many calls the primary got, whether the backup took over, and one
``model_attempt`` audit event per call with its latency and token usage. Both wire formats (OpenAI
chat completions and Anthropic Messages) go through every case.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from contracts.enums import FallbackMode, Tier
from contracts.errors import ErrorType
from contracts.models import ModelRegistration, ModelSelection
from contracts.runs import RunStatus, RunView
from tests.activities.providers.wire_server import (
    Received,
    Scripted,
    WireServer,
    anthropic_error,
    anthropic_message,
    openai_completion,
    openai_error,
)
from tests.identity import signer
from tests.workflows.harness import (
    ACTOR,
    SLOW_QUERY,
    Bench,
    bench,
    events,
    example,
    recorded_response,
    within,
)

PRIMARY_KEY = "primary-key-0123456789"
BACKUP_KEY = "backup-key-9876543210"
ITEM = example(SLOW_QUERY)
RESULT_TOKENS = (120, 45)  # what a successful scripted answer reports (input, output)


ANALYSIS = recorded_response("analysis", "database-optimizer", ITEM.title)
REVIEW = recorded_response("review", "backend-architect", ITEM.title)


@dataclass(frozen=True)
class Wire:
    """One wire format: the provider part of the model ids, the base URL and the body builders."""

    provider: str

    def base_url(self, server: WireServer) -> str:
        return server.base_url if self.provider == "openai" else server.root_url

    def answer(self, output: Any, *, delay_s: float = 0.0) -> Scripted:
        """A successful answer carrying ``output`` (an object, or raw text) as the structured result."""
        tokens = {"prompt_tokens": RESULT_TOKENS[0], "completion_tokens": RESULT_TOKENS[1]}
        if self.provider == "openai":
            text = output if isinstance(output, str) else json.dumps(output)
            return Scripted(200, openai_completion(text, **tokens), delay_s=delay_s)
        if isinstance(output, str):
            body = anthropic_message(
                text=output, input_tokens=RESULT_TOKENS[0], output_tokens=RESULT_TOKENS[1]
            )
        else:
            body = anthropic_message(
                tool_input=output, input_tokens=RESULT_TOKENS[0], output_tokens=RESULT_TOKENS[1]
            )
        return Scripted(200, body, delay_s=delay_s)

    def error(self, status: int, openai: tuple[str, str | None, str | None], anthropic: str) -> Scripted:
        """An HTTP error: OpenAI's (message, type, code) or Anthropic's error type (message reused)."""
        message, kind, code = openai
        if self.provider == "openai":
            return Scripted(status, openai_error(message, type=kind, code=code))
        return Scripted(status, anthropic_error(anthropic, message))


OPENAI = Wire("openai")
ANTHROPIC = Wire("anthropic")


@dataclass(frozen=True)
class Case:
    """A scripted failure (or success) of the primary's analysis call and what must follow.

    ``primary`` builds the primary's answers for a wire format; ``calls`` is how many calls the primary
    gets; ``fallback`` whether the backup then answers the analysis; ``retried_error`` the class of
    the calls that were tried again, when the job then succeeded.
    """

    name: str
    primary: Callable[[Wire], list[Scripted]]
    error_type: str | None
    calls: int
    fallback: bool
    retried_error: str | None = None


def _overloaded(wire: Wire) -> list[Scripted]:
    if wire.provider == "openai":
        return [Scripted(503, openai_error("The engine is currently overloaded", type="server_error"))]
    return [Scripted(529, anthropic_error("overloaded_error", "Overloaded"))]


def _quota(wire: Wire) -> list[Scripted]:
    if wire.provider == "openai":
        body = openai_error(
            "You exceeded your current quota", type="insufficient_quota", code="insufficient_quota"
        )
        return [Scripted(429, body)]
    # Anthropic documents no quota type for 429: a spend limit arrives as a 429 with its error code.
    body = anthropic_error(
        "rate_limit_error", "spend limit reached", error_code="enforced_spend_limit_reached"
    )
    return [Scripted(429, body)]


def _rate_limited(wire: Wire) -> Scripted:
    return wire.error(
        429, ("Rate limit reached for requests", "requests", "rate_limit_exceeded"), "rate_limit_error"
    )


CASES = [
    Case("success with structured output", lambda w: [w.answer(ANALYSIS)], None, 1, False),
    Case(
        "429 rate limit twice",
        lambda w: [_rate_limited(w), _rate_limited(w)],
        ErrorType.MODEL_RATE_LIMITED,
        2,
        False,
    ),
    Case(
        "429 rate limit then success",
        lambda w: [_rate_limited(w), w.answer(ANALYSIS)],
        None,
        2,
        False,
        retried_error=ErrorType.MODEL_RATE_LIMITED,
    ),
    Case("429 exhausted quota", _quota, ErrorType.MODEL_QUOTA, 1, True),
    Case(
        "401 bad key",
        lambda w: [
            w.error(
                401,
                ("Incorrect API key provided", "invalid_request_error", "invalid_api_key"),
                "authentication_error",
            )
        ],
        ErrorType.MODEL_AUTHENTICATION,
        1,
        True,
    ),
    Case(
        "403 forbidden",
        lambda w: [w.error(403, ("Region not supported", "request_forbidden", None), "permission_error")],
        ErrorType.MODEL_AUTHENTICATION,
        1,
        True,
    ),
    Case(
        "500 server error",
        lambda w: [w.error(500, ("The server had an error", "server_error", None), "api_error")],
        ErrorType.MODEL_PROVIDER_UNAVAILABLE,
        1,
        True,
    ),
    Case(
        "503 unavailable",
        lambda w: [w.error(503, ("Service Unavailable", "server_error", None), "api_error")],
        ErrorType.MODEL_PROVIDER_UNAVAILABLE,
        1,
        True,
    ),
    Case("overloaded", _overloaded, ErrorType.MODEL_PROVIDER_UNAVAILABLE, 1, True),
    Case(
        "400 content policy",
        lambda w: [
            w.error(
                400,
                (
                    "Output blocked by content filtering policy",
                    "invalid_request_error",
                    "content_policy_violation",
                ),
                "invalid_request_error",
            )
        ],
        ErrorType.MODEL_SAFETY,
        1,
        False,
    ),
    Case(
        "400 context too long",
        lambda w: [
            w.error(
                400,
                (
                    "prompt is too long: maximum context length exceeded",
                    "invalid_request_error",
                    "context_length_exceeded",
                ),
                "invalid_request_error",
            )
        ],
        ErrorType.MODEL_REQUEST_INVALID,
        1,
        False,
    ),
    Case(
        "malformed body",
        lambda w: [Scripted(200, b'{"id": "x", "choices": [tru', {"content-type": "application/json"})],
        ErrorType.MODEL_PROVIDER_UNAVAILABLE,
        1,
        True,
    ),
    Case(
        "output that fails the output contract",
        lambda w: [w.answer({**ANALYSIS, "findings": "none"})],
        ErrorType.MODEL_OUTPUT_SCHEMA,
        1,
        False,
    ),
    Case(
        "output that is not JSON",
        lambda w: [w.answer("Sure! The query is slow because of a missing index.")],
        ErrorType.MODEL_OUTPUT_SCHEMA,
        1,
        False,
    ),
    Case(
        "response slower than the timeout",
        lambda w: [w.answer(ANALYSIS, delay_s=1.6), w.answer(ANALYSIS, delay_s=1.6)],
        ErrorType.MODEL_TIMEOUT,
        2,
        False,
    ),
]


def _register(b: Bench, wire_format: Wire, server: WireServer) -> tuple[str, str]:
    """Register the primary and backup models on ``server`` and select them, ordered."""
    primary, backup = f"{wire_format.provider}:model-primary", f"{wire_format.provider}:model-backup"
    for model_id, key_env in ((primary, "WIRE_TEST_PRIMARY_API_KEY"), (backup, "WIRE_TEST_BACKUP_API_KEY")):
        registration = ModelRegistration(
            id=model_id, base_url=wire_format.base_url(server), api_key_env=key_env, timeout_s=1
        )
        b.store.register_model(registration, signer(ACTOR))
    b.store.select_registered_models(
        ModelSelection(primary=primary, fallbacks=[backup], fallback_mode=FallbackMode.ORDERED), signer(ACTOR)
    )
    return primary, backup


def _sent_key(headers: dict[str, str]) -> str:
    return headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")


def _attempts(view: RunView, kind: str) -> list[tuple[str, int, str, str | None, bool, bool]]:
    return [
        (a["model"], a["attempt"], a["outcome"], a["error_type"], a["retried"], a["fallback"])
        for a in events(view, "model_attempt")
        if a["kind"] == kind
    ]


# Each case is a whole run on the shared dev server: mostly waiting on Temporal and the wire server.
# The module runs every selected case once, a few at a time, each with its own wire server, task queue,
# store and worker (nothing is shared between cases but the dev server and the key variables); each
# test then checks its own case's outcome.
CONCURRENT_CASES = 4
CASE_TIME_LIMIT_S = 40.0  # wall-clock bound of one case's run (what ``within`` bounds for one test)


@dataclass
class Outcome:
    """How one case's run ended: its last view and what its wire server saw (or the run's error)."""

    primary: str = ""
    backup: str = ""
    view: RunView | None = None
    received: list[Received] = field(default_factory=list)
    pending: int = -1
    error: BaseException | None = None


async def _run_case(client: Client, tmp_path: Path, case: Case, wire_format: Wire) -> Outcome:
    """One case end to end on a wire server of its own: its run, waited for as an operator would."""
    outcome = Outcome()
    wire = WireServer()
    wire.start()
    try:
        succeeds = case.error_type is None or case.fallback
        script = list(case.primary(wire_format))
        if case.fallback:
            script.append(wire_format.answer(ANALYSIS))  # the backup's analysis
        if succeeds:
            script.append(wire_format.answer(REVIEW))  # the review, by the primary again
        wire.script(*script)

        task_queue = f"test-{uuid.uuid4().hex}"
        async with bench(client, task_queue, tmp_path, model=None) as b, b.worker():
            outcome.primary, outcome.backup = _register(b, wire_format, wire)
            view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY, enqueue=True)
            if succeeds:
                view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION, timeout=30)
            else:
                view = await b.terminal(view.run_id, timeout=30)
        outcome.view = view
        outcome.received = list(wire.received)
        outcome.pending = wire.pending
    finally:
        await asyncio.to_thread(wire.stop)  # waits for any answer still being delayed
    return outcome


def _selected_cases(request: pytest.FixtureRequest) -> list[tuple[Case, Wire]]:
    """The (case, wire format) pairs of this module's parametrized test that this session runs."""
    selected = []
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if item.module is request.module and callspec is not None and "case" in callspec.params:
            selected.append((callspec.params["case"], callspec.params["wire_format"]))
    return selected


@pytest.fixture(scope="module")
async def outcomes(
    request: pytest.FixtureRequest, temporal_client: Client, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[dict[tuple[str, str], Outcome]]:
    """The outcome of every selected case, keyed by (case name, wire format)."""
    results: dict[tuple[str, str], Outcome] = {}
    limit = asyncio.Semaphore(CONCURRENT_CASES)

    async def run(case: Case, wire_format: Wire) -> None:
        async with limit:
            tmp_path = tmp_path_factory.mktemp("provider-run")
            try:
                outcome = await asyncio.wait_for(
                    _run_case(temporal_client, tmp_path, case, wire_format), timeout=CASE_TIME_LIMIT_S
                )
            except Exception as error:  # kept for the case's own test to raise
                outcome = Outcome(error=error)
            results[(case.name, wire_format.provider)] = outcome

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("WIRE_TEST_PRIMARY_API_KEY", PRIMARY_KEY)
        monkeypatch.setenv("WIRE_TEST_BACKUP_API_KEY", BACKUP_KEY)
        await asyncio.gather(*(run(case, wire_format) for case, wire_format in _selected_cases(request)))
        yield results


@pytest.mark.parametrize("wire_format", [OPENAI, ANTHROPIC], ids=["openai", "anthropic"])
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
@within(40)
async def test_read_only_run_against_a_real_endpoint_reports_class_attempts_fallback_and_audit(
    outcomes: dict[tuple[str, str], Outcome], case: Case, wire_format: Wire
) -> None:
    outcome = outcomes[(case.name, wire_format.provider)]
    if outcome.error is not None:
        raise outcome.error
    succeeds = case.error_type is None or case.fallback
    primary, backup = outcome.primary, outcome.backup
    view = outcome.view
    assert view is not None

    assert outcome.pending == 0, "every scripted answer was asked for"
    # The run called exactly the models its chain names, each with its own key from the worker's env.
    models_called = [r.body["model"] for r in outcome.received]
    keys_sent = [_sent_key(r.headers) for r in outcome.received]
    expected_models = ["model-primary"] * case.calls + (["model-backup"] if case.fallback else [])
    expected_models += ["model-primary"] if succeeds else []
    assert models_called == expected_models
    assert keys_sent == [PRIMARY_KEY if m == "model-primary" else BACKUP_KEY for m in models_called]

    # Every call before the primary's last was retried on the same model; the last one ended the
    # primary's turn: ok, a failure that fell back, or the failure that failed the run.
    retried_error = case.retried_error or case.error_type
    expected = [(primary, n, "failed", retried_error, True, False) for n in range(1, case.calls)]
    if case.error_type is None:
        expected.append((primary, case.calls, "ok", None, False, False))
    else:
        expected.append((primary, case.calls, "failed", case.error_type, False, case.fallback))
    if case.fallback:
        expected.append((backup, 1, "ok", None, False, False))
    assert _attempts(view, "analysis") == expected

    for event in events(view, "model_attempt"):
        assert isinstance(event["latency_ms"], int) and event["latency_ms"] >= 0
        if event["outcome"] == "ok":
            assert (event["input_tokens"], event["output_tokens"]) == RESULT_TOKENS
    if case.name.startswith("response slower"):
        assert all(event["latency_ms"] >= 900 for event in events(view, "model_attempt"))

    if succeeds:
        assert view.status is RunStatus.AWAITING_DECISION and view.error is None
        assert view.result is not None and view.result.role == "database-optimizer"
        assert view.review is not None and view.review.role == "backend-architect"
        assert _attempts(view, "review") == [(primary, 1, "ok", None, False, False)]
        (completed, _) = events(view, "model_job_completed")
        assert completed["model"] == (backup if case.fallback else primary)
    else:
        assert view.status is RunStatus.FAILED
        assert view.error is not None and view.error.type == case.error_type
        assert view.result is None
        (failed,) = events(view, "model_job_failed")
        assert failed["error_type"] == case.error_type
        # The key never reaches the audit trail, not even inside a provider's error message.
        assert PRIMARY_KEY not in json.dumps([event.model_dump(mode="json") for event in view.audit])
