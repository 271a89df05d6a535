"""The model bench's baseline call: its message types and its one plain activity.

``BaselineCall`` goes in, ``BaselineReply`` comes out. Activity ``bench_baseline_model_call`` (a sync
activity, in the worker's thread pool as ``call_model`` is) makes the HTTP call a model job makes and
nothing else: one ``POST {base_url}/chat/completions`` through the ``openai`` SDK — the client the
project's OpenAI-compatible provider uses, with its retries off and one client kept per activity
object — carrying the same ``[system, user]`` messages and the same ``json_schema`` response format,
so the request body is the same. It returns the first choice's text unchecked: no catalog load, no
context packing, no store lookup, no lease, no helper thread or heartbeats, no output validation.

The types live here, apart from the workflow (``bench/baseline_workflow.py``), so the workflow sandbox
imports them passed through, once per process, as the project's workflows import ``contracts``.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, cast

import openai
from openai.types.chat import ChatCompletionMessageParam
from openai.types.chat.completion_create_params import ResponseFormat
from pydantic import BaseModel, ConfigDict
from temporalio import activity

BASELINE_ACTIVITY = "bench_baseline_model_call"


class BaselineCall(BaseModel):
    """One call: ``job_id`` (for the reply), ``model_name`` (the name the server is asked for) and
    ``context`` (the user message: the packed job context, built once by the bench)."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    model_name: str
    context: str


class BaselineReply(BaseModel):
    """The call's outcome: the model's raw text and the HTTP call's latency (ms, measured around the
    SDK call as the project's provider measures it)."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    text: str
    latency_ms: int


class BaselineCallActivities:
    """The baseline activity bound to its endpoint and to the request parts every call shares.

    Inputs: ``base_url`` (OpenAI-style, ends in ``/v1``), ``api_key_env`` (the variable holding the
    key, read from this process's environment at the first call), ``instructions`` (the system
    message), ``response_format`` (sent as is) and ``timeout_s`` (per HTTP request).
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key_env: str,
        instructions: str,
        response_format: dict[str, Any],
        timeout_s: float,
    ) -> None:
        self._base_url = base_url
        self._api_key_env = api_key_env
        self._instructions = instructions
        self._response_format = response_format
        self._timeout_s = timeout_s
        self._client: openai.OpenAI | None = None
        self._lock = threading.Lock()

    def _openai(self) -> openai.OpenAI:
        with self._lock:
            if self._client is None:
                self._client = openai.OpenAI(
                    base_url=self._base_url,
                    api_key=os.environ[self._api_key_env],
                    timeout=self._timeout_s,
                    max_retries=0,
                )
            return self._client

    @activity.defn(name=BASELINE_ACTIVITY)
    def call(self, call: BaselineCall) -> BaselineReply:
        """POST the chat completion for ``call`` and return the first choice's text (``""`` when the
        answer has none) with the call's latency. Raises what the SDK raises (the workflow does not
        retry it)."""
        client = self._openai()
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": self._instructions},
            {"role": "user", "content": call.context},
        ]
        started = time.monotonic()
        response = client.chat.completions.create(
            model=call.model_name,
            messages=messages,
            response_format=cast(ResponseFormat, self._response_format),
        )
        latency_ms = round((time.monotonic() - started) * 1000)
        text = response.choices[0].message.content if response.choices else None
        return BaselineReply(job_id=call.job_id, text=text or "", latency_ms=latency_ms)
