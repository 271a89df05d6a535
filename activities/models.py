"""Activity ``call_model``: one call to one model, with its output validated against the contract.

The provider is chosen by the model id's provider part. Every failure becomes an ``ApplicationError``
whose ``type`` comes from ``contracts.errors.ErrorType``; only timeout, transport and rate-limit errors
are retryable, so Temporal retries nothing else (DESIGN.md "Temporal conventions").
"""

from __future__ import annotations

import json

from pydantic import ValidationError
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.config import ActivityConfig
from activities.context import RequestTooLarge, build_context, build_instructions, check_request_size
from activities.logs import run_logger
from activities.providers.base import CompletionRequest, JobIdentity, ModelProvider, ProviderError
from activities.providers.replay import ReplayProvider
from catalog.loader import load_catalog
from contracts.errors import ErrorType, OperatorError, is_retryable
from contracts.model_jobs import ModelCallRequest, ModelCallResult
from contracts.models import split_model_id
from contracts.output import (
    MAX_RESULT_BYTES,
    OutputContractViolation,
    SpecialistOutput,
    check_output_for_job,
)


def _fail(error_type: str, message: str) -> ApplicationError:
    return ApplicationError(message, type=error_type, non_retryable=not is_retryable(error_type))


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
    except (ValueError, ValidationError) as error:
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise _fail(
            ErrorType.MODEL_OUTPUT_SCHEMA, f"model output is not a valid result: {first_line}"
        ) from None
    try:
        check_output_for_job(
            output,
            kind=request.kind,
            profile_id=request.profile_id,
            evidence_ids=request.context.evidence_refs,
        )
    except OutputContractViolation as error:
        raise _fail(ErrorType.MODEL_OUTPUT_INVALID, str(error)) from None
    return output


class ModelActivities:
    """``call_model`` bound to a deployment's configuration and providers."""

    def __init__(self, config: ActivityConfig, providers: dict[str, ModelProvider] | None = None) -> None:
        self._config = config
        self._providers: dict[str, ModelProvider] = {"replay": ReplayProvider(config.recordings_dir)}
        self._providers.update(providers or {})

    @activity.defn(name="call_model")
    def call_model(self, request: ModelCallRequest) -> ModelCallResult:
        """Call ``request.model_id`` once and return its validated output."""
        try:
            provider_name, model_name = split_model_id(request.model_id)
        except ValueError as error:
            raise _fail(ErrorType.MODEL_NOT_CONFIGURED, str(error)) from None
        provider = self._providers.get(provider_name)
        if provider is None:
            raise _fail(
                ErrorType.MODEL_NOT_CONFIGURED,
                f"provider {provider_name!r} is not configured on this worker (model {request.model_id})",
            )
        try:
            catalog = load_catalog(self._config.catalog_path)
        except OperatorError as error:
            raise _fail(ErrorType.CATALOG_CHANGED, error.message) from None
        if catalog.sha256 != request.catalog_sha256:
            raise _fail(
                ErrorType.CATALOG_CHANGED,
                f"the worker's catalog ({catalog.sha256[:12]}) is not the contract's "
                f"({request.catalog_sha256[:12]})",
            )
        profile = catalog.profiles.get(request.profile_id)
        if profile is None:
            raise _fail(ErrorType.CATALOG_CHANGED, f"profile {request.profile_id!r} is not in the catalog")
        instructions = build_instructions(profile, request.kind)
        context = build_context(request.context, request.kind)
        try:
            size = check_request_size(instructions, context)
        except RequestTooLarge as error:
            raise _fail(ErrorType.REQUEST_TOO_LARGE, str(error)) from None
        activity.heartbeat({"model": request.model_id, "request_bytes": size})
        completion = CompletionRequest(
            model_name=model_name,
            instructions=instructions,
            context=context,
            identity=JobIdentity(
                profile_id=request.profile_id, kind=request.kind, title=request.context.title
            ),
        )
        log = run_logger(
            request.job_id, activity="call_model", model=request.model_id, kind=request.kind.value
        )
        try:
            raw = provider.complete(completion)
            output = parse_output(raw, request)
        except ProviderError as error:
            log.warning("model_call_failed", error_type=error.error_type, message=error.message)
            raise _fail(error.error_type, error.message) from None
        except ApplicationError as error:
            log.warning("model_output_rejected", error_type=error.type, message=error.message)
            raise
        log.info("model_call_completed", request_bytes=size, findings=len(output.findings))
        return ModelCallResult(model_id=request.model_id, output=output)
