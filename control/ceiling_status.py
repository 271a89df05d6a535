"""The live state of registered models' ceilings, for ``models``: each ceiling's ``state`` query
(docs/architecture.md "Model selection"), read with a short timeout so an unreachable server or a
deployment without workers is shown as such, never waited on.

Each entry is a report, never an error: ``live`` is ``running`` (with the ramp's allowance and the
lease table's counts), ``not_started`` (no call has asked this deployment's task queue for the model
yet), ``no_answer`` (the query was not answered in time: no worker is running) or ``unreachable``
(Temporal did not answer; ``error`` says why). The model classes' pools are reported the same way,
by their ids (``class:support``, ``class:core``, ``class:advisory``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Final

from contracts.ceilings import CeilingState, ceiling_workflow_id
from contracts.errors import OperatorError
from contracts.model_classes import ModelClass, class_pool_id
from contracts.models import ModelRecord, is_replay_model
from contracts.temporal_names import CeilingMessage
from control.output import utc
from runtime.settings import Settings

QUERY_TIMEOUT_SECONDS: Final = 2.0


def leased(registered: Sequence[ModelRecord]) -> list[ModelRecord]:
    """The registered models whose calls hold ceiling leases: active and not replayed."""
    return [record for record in registered if record.active and not is_replay_model(record.id)]


async def ceiling_reports(
    settings: Settings, records: Sequence[ModelRecord]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One report per model in ``records`` (see the module docstring), in the same order, and one
    per model class's pool (``contracts.model_classes``; its ceiling is the one the worker that
    started it was given, so a pool not started shows none). Nothing is asked when ``records`` is
    empty."""
    from runtime.temporal import connect

    if not records:
        return [], []
    targets: list[ModelRecord | _Pool] = [*records, *(_Pool(class_pool_id(c)) for c in ModelClass)]
    try:
        client = await connect(settings, timeout=QUERY_TIMEOUT_SECONDS)
    except OperatorError as error:
        answers = [_report(target, "unreachable", error=error.message) for target in targets]
    else:
        answers = list(await asyncio.gather(*(_query(client, settings.task_queue, t) for t in targets)))
    return answers[: len(records)], answers[len(records) :]


class _Pool:
    """A model class's pool, reported like a model: its id, and no ceiling until it answers."""

    def __init__(self, pool_id: str) -> None:
        self.id = pool_id
        self.ceiling: int | None = None


async def _query(client: Any, task_queue: str, record: ModelRecord | _Pool) -> dict[str, Any]:
    from temporalio.service import RPCError, RPCStatusCode

    handle = client.get_workflow_handle(ceiling_workflow_id(task_queue, record.id))
    try:
        state: CeilingState = await asyncio.wait_for(
            handle.query(CeilingMessage.STATE, result_type=CeilingState), timeout=QUERY_TIMEOUT_SECONDS
        )
    except TimeoutError:
        return _report(record, "no_answer", error="the ceiling did not answer in time (is a worker running?)")
    except RPCError as error:
        if error.status is RPCStatusCode.NOT_FOUND:
            return _report(record, "not_started")
        return _report(record, "unreachable", error=error.message)
    except Exception as error:  # a failed query (the worker could not answer it): shown, not raised
        return _report(record, "no_answer", error=f"{type(error).__name__}: {error}")
    return {
        **_report(record, "running"),
        "ceiling": state.ceiling,
        "allowance": state.allowance if state.ramp and state.allowance is not None else state.ceiling,
        "ramping": state.ramp and state.allowance is not None,
        "held": len(state.held),
        "waiting": len(state.waiting),
        "granted_total": state.granted_total,
        "succeeded_total": state.succeeded_total,
        "rate_limited_total": state.rate_limited_total,
        "reclaimed_total": state.reclaimed_total,
        "max_held": state.max_held,
        "idle_since": utc(state.idle_since) if state.idle_since is not None else None,
    }


def _report(record: ModelRecord | _Pool, live: str, *, error: str | None = None) -> dict[str, Any]:
    return {"model": record.id, "ceiling": record.ceiling, "live": live, "error": error}
