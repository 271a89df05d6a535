"""Activities ``call_model`` (one call to one model, its output validated against the contract) and
``check_model`` (one tiny call, for ``specialists models test``).

The provider is chosen by the model id's provider part: ``replay`` (built in), a provider the worker
was given, or — for ``openai`` and ``anthropic`` — the model's registration in the store (base URL,
key variable, timeout; :mod:`activities.providers.registered`). Every failure becomes an
``ApplicationError`` whose ``type`` comes from ``contracts.errors.ErrorType``; only timeout, transport
and rate-limit errors are retryable (docs/architecture.md "Temporal conventions"). Each call reports
its latency and token usage, on success in the result and on failure in the error's detail
(``contracts.failures.ModelCallFailureDetail``), so every attempt can be audited.

The provider call runs on a helper thread while the activity heartbeats every few seconds: an HTTP
call may take up to the model's timeout (600 s at most), far longer than the heartbeat timeout.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import json
import time

from pydantic import ValidationError
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.ceilings import LeaseReleaser
from activities.config import ActivityConfig
from activities.context import (
    ContractProfileUnavailable,
    RequestTooLarge,
    build_context,
    build_instructions,
    check_request_size,
    contract_profile,
)
from activities.errors import failure
from activities.providers.base import (
    Completion,
    CompletionRequest,
    JobIdentity,
    ModelProvider,
    ProviderError,
    complete_measured,
)
from activities.providers.registered import RegisteredProviders
from activities.providers.replay import ReplayMiss, ReplayProvider
from activities.secret_scan import scanner_for, summary
from activities.store_access import SharedStore
from contracts.ceilings import class_lease_id, lease_outcome
from contracts.errors import ErrorType, NotFound, is_retryable
from contracts.failures import ModelCallFailureDetail
from contracts.metric_names import MODEL_CALLS
from contracts.model_classes import ReasoningEffort
from contracts.model_jobs import (
    CallUsage,
    ModelCallRequest,
    ModelCallResult,
    ModelCheckCall,
    ModelCheckResult,
)
from contracts.models import REGISTRABLE_PROVIDERS, REPLAY_PROVIDER, split_model_id
from contracts.output import (
    MAX_RESULT_BYTES,
    JobKind,
    OutputContractViolation,
    SpecialistOutput,
    check_output_for_job,
)
from contracts.pack_text import render_pack
from contracts.research_teams import MAX_RESEARCH_OUTPUT_BYTES
from contracts.temporal_names import ActivityName
from runtime.logs import run_logger

HEARTBEAT_EVERY_SECONDS = 5.0
"""How often a call in progress heartbeats (the workflow's heartbeat timeout is 30 s)."""

CHECK_PROFILE = "technical-writer"
CHECK_TITLE = "Model check"
CHECK_INSTRUCTIONS = (
    "This is a connectivity check of a model endpoint. Answer with the smallest JSON object you can "
    "and nothing else."
)
CHECK_CONTEXT = "Reply now."


def _fail(
    error_type: str, message: str, usage: CallUsage | None = None, *, expected: bool = False
) -> ApplicationError:
    detail = None if usage is None else ModelCallFailureDetail(usage=usage)
    return failure(
        message,
        detail,
        error_type=error_type,
        non_retryable=not is_retryable(error_type),
        expected=expected,
    )


def _usage(completion: Completion, effort: ReasoningEffort | None = None) -> CallUsage:
    return CallUsage(
        latency_ms=completion.latency_ms,
        input_tokens=completion.input_tokens,
        output_tokens=completion.output_tokens,
        effort_requested=effort,
        reasoning_tokens=completion.reasoning_tokens,
        reasoning_observed=completion.reasoning_seen,
    )


def _elapsed_ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


def parse_output(raw: str, request: ModelCallRequest) -> SpecialistOutput:
    """Parse untrusted model text into a checked :class:`SpecialistOutput`.

    Raises ``ApplicationError``: ``result_too_large`` (over 48 KiB), ``model_output_schema`` (not JSON
    or not the schema), ``model_output_invalid`` (breaks a job rule, e.g. cites unknown evidence).
    """
    size = len(raw.encode("utf-8"))
    if size > MAX_RESULT_BYTES:
        raise _fail(
            ErrorType.RESULT_TOO_LARGE, f"model result is {size} bytes; the limit is {MAX_RESULT_BYTES}"
        )
    try:
        output = SpecialistOutput.model_validate(json.loads(raw))
    except RecursionError:
        raise _fail(
            ErrorType.MODEL_OUTPUT_SCHEMA, "model output is nested too deeply to be a result"
        ) from None
    except (ValueError, ValidationError) as error:
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise _fail(
            ErrorType.MODEL_OUTPUT_SCHEMA, f"model output is not a valid result: {first_line}"
        ) from None
    if request.context.research is not None:
        compact = len(json.dumps(output.model_dump(mode="json"), separators=(",", ":")).encode("utf-8"))
        if compact > MAX_RESEARCH_OUTPUT_BYTES:
            raise _fail(
                ErrorType.RESULT_TOO_LARGE,
                f"a research job's result is {compact} bytes as compact JSON; the limit is "
                f"{MAX_RESEARCH_OUTPUT_BYTES} (later stages carry every earlier result)",
            )
    try:
        check_output_for_job(
            output,
            kind=request.kind,
            profile_id=request.profile_id,
            evidence_ids=request.context.evidence_refs,
            expects_patch=request.context.expects_patch and request.kind is JobKind.ANALYSIS,
            allows_probes=allows_probes(request),
            allows_quotes=request.kind is JobKind.ANALYSIS and request.context.beyond,
        )
    except OutputContractViolation as error:
        raise _fail(ErrorType.MODEL_OUTPUT_INVALID, str(error)) from None
    return output


def allows_probes(request: ModelCallRequest) -> bool:
    """Whether the job may return probe requests: a run's analysis that is not a worktree run's change
    job nor a research team's job — that is, a read_only run's analysis (a recommend run has no model
    job; docs/architecture.md "Probe requests")."""
    context = request.context
    return (
        request.kind is JobKind.ANALYSIS
        and not context.expects_patch
        and context.research is None
        and not context.beyond
    )


class ModelActivities:
    """``call_model`` and ``check_model`` bound to a deployment's configuration, store and providers.

    ``providers`` adds or replaces providers by provider name (tests, and the replay provider's
    recordings directory); registered ``openai``/``anthropic`` models are built from the store.
    """

    def __init__(
        self,
        config: ActivityConfig,
        providers: dict[str, ModelProvider] | None = None,
        store: SharedStore | None = None,
        registered: RegisteredProviders | None = None,
        releaser: LeaseReleaser | None = None,
    ) -> None:
        self._config = config
        self._store = store or SharedStore(config.database_url, config.trust_anchor)
        self._replay = ReplayProvider(config.recordings_dir, self._store.replay_recordings)
        self._providers: dict[str, ModelProvider] = {REPLAY_PROVIDER: self._replay}
        self._providers.update(providers or {})
        self._registered = registered or RegisteredProviders()
        self._releaser = releaser
        self._scanner = scanner_for(config.action_token, config.deployment_secrets)

    @activity.defn(name=ActivityName.CALL_MODEL)
    def call_model(self, request: ModelCallRequest) -> ModelCallResult:
        """Call ``request.model_id`` once and return its validated output with the call's usage.

        With ``request.lease_id`` the call holds that ceiling lease; it is given back as the call ends
        and ``lease_released`` says whether that worked (the job releases it otherwise).

        Raises ``ApplicationError`` typed by ``ErrorType``: ``model_not_configured``,
        ``catalog_changed``, ``request_too_large``, ``secret_in_context`` before any call; the
        provider's class, or an output error (``secret_in_output``, ``model_output_schema``,
        ``model_output_invalid``, ``result_too_large``) after it.
        """
        released = class_released = False
        outcome = "ok"
        try:
            result = self._call(request)
        except ApplicationError as error:
            outcome = error.type or "error"
            raise
        except BaseException:
            outcome = "error"
            raise
        finally:
            activity.metric_meter().create_counter(MODEL_CALLS, "model calls, by outcome").add(
                1, {"model": request.model_id, "kind": request.kind.value, "outcome": outcome}
            )
            if request.lease_id is not None and self._releaser is not None:
                task_queue = activity.info().task_queue
                released = self._releaser.release(
                    task_queue,
                    request.model_id,
                    request.lease_id,
                    lease_outcome(None if outcome == "ok" else outcome),
                )
                if request.class_pool is not None:
                    class_released = self._releaser.release(
                        task_queue, request.class_pool, class_lease_id(request.lease_id)
                    )
        return result.model_copy(update={"lease_released": released, "class_lease_released": class_released})

    def _call(self, request: ModelCallRequest) -> ModelCallResult:
        model_name, provider, deadline_s = self._provider(request.model_id)
        try:
            profile = contract_profile(self._config.catalog_path, request.catalog_sha256, request.profile_id)
        except ContractProfileUnavailable as error:
            raise _fail(ErrorType.CATALOG_CHANGED, str(error)) from None
        instructions = build_instructions(profile, request.kind, request.context.expects_patch)
        # Jobs of runs started before context packs carry none: they get the plain context.
        context = (
            render_pack(request.pack)
            if request.pack is not None
            else build_context(request.context, request.kind)
        )
        try:
            size = check_request_size(instructions, context)
        except RequestTooLarge as error:
            raise _fail(ErrorType.REQUEST_TOO_LARGE, str(error)) from None
        hits = self._scanner.scan(context)
        if hits:  # a pack built before packs were scanned, or the plain context of an older run
            raise _fail(
                ErrorType.SECRET_IN_CONTEXT,
                f"the model request holds what looks like credential material ({summary(hits)}); "
                "nothing was sent to the model",
            )
        beat = {"model": request.model_id, "attempt": request.attempt, "request_bytes": size}
        activity.heartbeat(beat)
        completion = CompletionRequest(
            model_name=model_name,
            instructions=instructions,
            context=context,
            identity=JobIdentity(
                profile_id=request.profile_id,
                kind=request.kind,
                title=request.context.title,
                expects_patch=request.context.expects_patch and request.kind is JobKind.ANALYSIS,
                task=request.context.task,
            ),
            effort=request.effort.value if request.effort is not None else None,
        )
        log = run_logger(
            request.job_id,
            activity="call_model",
            model=request.model_id,
            kind=request.kind.value,
            attempt=request.attempt,
        )
        started = time.monotonic()
        try:
            answer = _with_heartbeats(provider, completion, beat, deadline_s)
        except ReplayMiss as error:
            # Expected when replaying: this line says it all (the key looked for), and the failure
            # is marked expected so the worker does not log it again with a traceback.
            usage = CallUsage(latency_ms=_elapsed_ms(started), effort_requested=request.effort)
            replay_profile, replay_job, replay_title = error.key
            log.warning(
                "model_call_failed",
                error_type=error.error_type,
                replay_model=error.model,
                replay_profile=replay_profile,
                replay_job=replay_job,
                replay_title=replay_title,
            )
            raise _fail(error.error_type, error.message, usage, expected=True) from None
        except ProviderError as error:
            usage = CallUsage(latency_ms=_elapsed_ms(started), effort_requested=request.effort)
            log.warning(
                "model_call_failed",
                error_type=error.error_type,
                message=error.message,
                latency_ms=usage.latency_ms,
            )
            raise _fail(error.error_type, error.message, usage) from None
        usage = _usage(answer, request.effort)
        hits = self._scanner.scan(answer.text)
        if hits:
            log.warning("secret_in_output", hits=[hit.describe() for hit in hits], **usage.model_dump())
            raise _fail(
                ErrorType.SECRET_IN_OUTPUT,
                f"the model's output holds what looks like credential material ({summary(hits)}; "
                "lines of the raw answer); the output was discarded: it is neither stored nor shown",
                usage,
                expected=True,  # logged above in one line, without a traceback
            )
        try:
            output = parse_output(answer.text, request)
        except ApplicationError as error:
            log.warning(
                "model_output_rejected", error_type=error.type, message=error.message, **usage.model_dump()
            )
            raise _fail(error.type or ErrorType.MODEL_OUTPUT_SCHEMA, error.message, usage) from None
        log.info(
            "model_call_completed", request_bytes=size, findings=len(output.findings), **usage.model_dump()
        )
        return ModelCallResult(model_id=request.model_id, output=output, usage=usage)

    @activity.defn(name=ActivityName.CHECK_MODEL)
    def check_model(self, request: ModelCheckCall) -> ModelCheckResult:
        """Send ``request.model_id`` one tiny request and report ``ok`` or the error class.

        The answer only has to arrive: this checks the endpoint and the key, not the model's output.
        A replay model is ``ok`` when its recordings file loads. Never raises for a model failure; the
        result carries it.
        """
        log = run_logger(request.check_id, activity="check_model", model=request.model_id)
        started = time.monotonic()
        try:
            model_name, provider, deadline_s = self._provider(request.model_id)
            if provider is self._replay:
                self._replay.check(model_name)
                answer = Completion(text="", input_tokens=None, output_tokens=None, latency_ms=0)
            else:
                tiny = CompletionRequest(
                    model_name=model_name,
                    instructions=CHECK_INSTRUCTIONS,
                    context=CHECK_CONTEXT,
                    identity=JobIdentity(profile_id=CHECK_PROFILE, kind=JobKind.ANALYSIS, title=CHECK_TITLE),
                )
                answer = _with_heartbeats(
                    provider, tiny, {"model": request.model_id, "check": True}, deadline_s
                )
        except ApplicationError as error:
            log.warning("model_check_failed", error_type=error.type, message=error.message)
            return ModelCheckResult(
                check_id=request.check_id,
                model_id=request.model_id,
                ok=False,
                error_type=error.type,
                message=error.message,
            )
        except ProviderError as error:
            usage = CallUsage(latency_ms=_elapsed_ms(started))
            log.warning("model_check_failed", error_type=error.error_type, message=error.message)
            return ModelCheckResult(
                check_id=request.check_id,
                model_id=request.model_id,
                ok=False,
                error_type=error.error_type,
                message=error.message,
                usage=usage,
            )
        except Exception as error:  # a check reports every failure; it never fails itself
            log.warning("model_check_failed", error_type=ErrorType.MODEL_TASK, exception=type(error).__name__)
            return ModelCheckResult(
                check_id=request.check_id,
                model_id=request.model_id,
                ok=False,
                error_type=ErrorType.MODEL_TASK,
                message=f"the check failed unexpectedly ({type(error).__name__})",
                usage=CallUsage(latency_ms=_elapsed_ms(started)),
            )
        usage = _usage(answer)
        log.info("model_check_passed", **usage.model_dump())
        return ModelCheckResult(check_id=request.check_id, model_id=request.model_id, ok=True, usage=usage)

    def _provider(self, model_id: str) -> tuple[str, ModelProvider, float | None]:
        """The model name, the provider that calls it and the call's total deadline in seconds (a
        registered model's timeout; ``None`` for built-in and worker-given providers). Raises
        ``ApplicationError`` ``model_not_configured`` (bad id, unknown provider, unregistered model,
        missing key variable)."""
        try:
            provider_name, model_name = split_model_id(model_id)
        except ValueError as error:
            raise _fail(ErrorType.MODEL_NOT_CONFIGURED, str(error)) from None
        provider = self._providers.get(provider_name)
        if provider is not None:
            return model_name, provider, None
        if provider_name not in REGISTRABLE_PROVIDERS:
            raise _fail(
                ErrorType.MODEL_NOT_CONFIGURED,
                f"provider {provider_name!r} is not configured on this worker (model {model_id})",
            )
        try:
            record = self._store.registered_model(model_id)
        except NotFound as error:
            raise _fail(ErrorType.MODEL_NOT_CONFIGURED, error.message) from None
        try:
            return model_name, self._registered.for_model(record), float(record.timeout_s)
        except ProviderError as error:
            raise _fail(error.error_type, error.message) from None


def _with_heartbeats(
    provider: ModelProvider,
    request: CompletionRequest,
    beat: dict[str, object],
    deadline_s: float | None = None,
) -> Completion:
    """Run the provider call on a helper thread, heartbeating every few seconds until it ends.

    ``deadline_s`` bounds the whole call: the HTTP clients' timeouts bound each read, so a server that
    trickles its answer could otherwise hold a call far longer. Past it the call fails
    ``model_timeout`` (the helper thread is left to end at its next read timeout). The helper runs
    in a copy of this activity's context, so a provider may heartbeat or check for cancellation.
    """
    context = contextvars.copy_context()
    executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="model-call")
    started = time.monotonic()
    try:
        future = executor.submit(context.run, complete_measured, provider, request)
        while True:
            wait = HEARTBEAT_EVERY_SECONDS
            if deadline_s is not None:
                left = deadline_s - (time.monotonic() - started)
                if left <= 0:
                    raise ProviderError(
                        ErrorType.MODEL_TIMEOUT,
                        f"no complete answer within the model's {deadline_s:g}s timeout",
                    )
                wait = min(wait, left)
            try:
                return future.result(timeout=wait)
            except concurrent.futures.TimeoutError:
                activity.heartbeat(beat)
    finally:
        executor.shutdown(wait=False)
