"""What Mission Control reads and does, on the same client, store and proofs as the CLI
(docs/architecture.md "Mission Control"). The pages and their JSON twins (:mod:`control.web.app`)
render what these functions return; nothing here knows HTML.

Reads: the overview (roster, model selection, policy, active runs, the queue's fleet line), the runs
of the projection, one run's view (asked of its workflow, or its last projected state). Actions:
approve exactly the digest shown, execute, decide, cancel, each through :mod:`control.runs` with a
proof the signed-in person's session key signs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from contracts.errors import InvalidInput, NotFound, OperatorError, ServiceUnavailable
from contracts.runs import DecisionOutcome, RunStatus
from control.notes import form_note
from control.run_repository import require_waiting_run_repository

if TYPE_CHECKING:
    from temporalio.client import Client

    from contracts.config import PolicyRecord
    from contracts.runs import RunView
    from control.web.sessions import Session
    from store.store import Store

LIST_LIMIT: Final = 200
_OUTCOMES: Final = {"accept": DecisionOutcome.ACCEPTED, "reject": DecisionOutcome.REJECTED}


@dataclass
class Deployment:
    """Where the console reaches Temporal and the store: the same settings and functions as the
    CLI's (``control.commands.web`` passes them in)."""

    task_queue: str
    connect: Callable[[], Awaitable[Client]]
    open_store: Callable[[], Store | None]
    default_policy: Callable[[], PolicyRecord]
    _client: Client | None = None

    async def client(self) -> Client:
        """The Temporal client, connected once."""
        if self._client is None:
            self._client = await self.connect()
        return self._client

    def store(self) -> Store | None:
        """The store, or ``None`` when the deployment has none yet."""
        return self.open_store()


def _with_store(deployment: Deployment, read: Any, default: Any) -> Any:
    store = deployment.store()
    if store is None:
        return default
    with store:
        return read(store)


def action_key(deployment: Deployment, actor: str, fingerprint: str) -> str:
    """The store's check of the actor's key in force (sign-in). Raises the store's refusals; with
    no store, ``unknown_actor``."""
    store = deployment.store()
    if store is None:
        raise NotFound("unknown_actor", f"no actor {actor!r}: this deployment has no store yet")
    with store:
        return store.action_key(actor, fingerprint)


async def overview(deployment: Deployment) -> dict[str, Any]:
    """The roster, the model selection, the policy, the active runs and the queue's fleet line."""
    from catalog.loader import load_catalog
    from control import views

    catalog = load_catalog()
    roster = [
        {"id": p.id, "name": p.name, "reviewer": p.reviewer, "work_class": str(p.work_class)}
        for p in catalog.profiles.values()
    ]

    def read(store: Store) -> dict[str, Any]:
        return {
            "models": views.models_json(store.get_model_selection(), [], store.list_models()),
            "policy": views.policy_json(store.get_policy()),
            "runs": [s.model_dump(mode="json") for s in store.list_runs(limit=LIST_LIMIT)],
        }

    empty = {
        "models": views.models_json(None, [], []),
        "policy": views.policy_json(deployment.default_policy()),
        "runs": [],
    }
    data = _with_store(deployment, read, empty)
    active = [run for run in data.pop("runs") if not RunStatus(run["status"]).terminal]
    return {
        "catalog_version": catalog.version,
        "roster": roster,
        **data,
        "active_runs": active,
        "queue": await _fleet(deployment),
    }


async def _fleet(deployment: Deployment) -> dict[str, Any]:
    from control.queue import queue_view
    from control.queue_views import fleet_json

    try:
        view = await asyncio.wait_for(queue_view(await deployment.client(), deployment.task_queue), 5)
    except (OperatorError, TimeoutError) as error:
        code = getattr(error, "code", "no_answer")
        return {"available": False, "reason": code}
    return {"available": True, **fleet_json(view.items, view.settings)}


def runs(deployment: Deployment, status: str | None) -> dict[str, Any]:
    """The projection's runs, newest first, optionally of one status."""
    from control import run_views

    if status is not None:
        try:
            RunStatus(status)
        except ValueError:
            raise InvalidInput("unknown_status", f"unknown status {status!r}") from None
    listed = _with_store(deployment, lambda s: s.list_runs(status=status, limit=LIST_LIMIT), [])
    return run_views.list_json(listed)


async def run(deployment: Deployment, run_id: str) -> tuple[RunView, dict[str, Any]]:
    """A run's view asked of its workflow, and its JSON (the diff inline, the worktree location
    withheld, as ``show --diff``). Raises ``unknown_run``, ``no_worker`` and the client's errors."""
    from control.runs import check_run_id, query_view
    from control.show_run import run_json

    check_run_id(run_id)
    view = await query_view(await deployment.client(), run_id)
    return view, run_json(view, diff=True, recovery=False)


async def approve(deployment: Deployment, session: Session, run_id: str, digest: str) -> None:
    """Approve exactly the contract whose digest the page showed."""
    from control.runs import UPDATE_ANSWER_SECONDS, approve_run, check_run_id

    check_run_id(run_id)
    _require_digest(digest, code="contract_digest_required", what="the approval", digest_of="contract")
    client = await deployment.client()
    await require_waiting_run_repository(
        client, deployment.store, run_id, RunStatus.AWAITING_APPROVAL, "approve"
    )
    proof = session.proof(action="approve", target=run_id, digest=digest)
    await approve_run(client, run_id, session.actor, digest, proof, answer_within=UPDATE_ANSWER_SECONDS)


async def execute(deployment: Deployment, session: Session, run_id: str, digest: str) -> None:
    """Carry out an approved worktree run (a separate action from its approval), bound to the
    contract digest the page showed."""
    from control.runs import UPDATE_ANSWER_SECONDS, check_run_id, execute_run

    check_run_id(run_id)
    _require_digest(digest, code="contract_digest_required", what="the execution", digest_of="contract")
    client = await deployment.client()
    await require_waiting_run_repository(client, deployment.store, run_id, RunStatus.APPROVED, "execute")
    proof = session.proof(action="execute", target=run_id, digest=digest)
    await execute_run(client, run_id, session.actor, proof, answer_within=UPDATE_ANSWER_SECONDS)


async def approve_probe(
    deployment: Deployment, session: Session, run_id: str, index: str, digest: str
) -> None:
    """Approve exactly the probe whose number and digest the page showed (docs/architecture.md
    "Probe requests"); the run then runs it confined."""
    from control.runs import UPDATE_ANSWER_SECONDS, approve_probe_run, check_run_id

    check_run_id(run_id)
    if not index.isascii() or not index.isdigit() or not 1 <= int(index) <= 5:
        raise InvalidInput("invalid_probe_index", "the approval names no probe number from 1 to 5")
    _require_digest(digest, code="probe_digest_required", what="the approval", digest_of="probe")
    client = await deployment.client()
    await require_waiting_run_repository(
        client, deployment.store, run_id, RunStatus.AWAITING_DECISION, "approve-probe"
    )
    proof = session.proof(action="approve_probe", target=run_id, digest=digest)
    await approve_probe_run(
        client, run_id, session.actor, int(index), digest, proof, answer_within=UPDATE_ANSWER_SECONDS
    )


async def decide(deployment: Deployment, session: Session, run_id: str, outcome: str, note: str) -> None:
    """Accept or reject a run awaiting its decision."""
    from control.runs import UPDATE_ANSWER_SECONDS, check_run_id, decide_run

    check_run_id(run_id)
    decided = _OUTCOMES.get(outcome)
    if decided is None:
        raise InvalidInput("decision_required", "the decision is accept or reject")
    note = form_note(note)
    proof = session.proof(action="decide", target=run_id)
    await decide_run(
        await deployment.client(), run_id, session.actor, decided, note, proof,
        answer_within=UPDATE_ANSWER_SECONDS,
    )  # fmt: skip


async def cancel(deployment: Deployment, session: Session, run_id: str, reason: str) -> None:
    """Cancel a run that has not finished."""
    from control.runs import cancel_run, check_run_id

    check_run_id(run_id)
    proof = session.proof(action="cancel", target=run_id)
    await cancel_run(
        await deployment.client(), run_id, session.actor, form_note(reason), proof, require_answer=True
    )


def _require_digest(digest: str, *, code: str, what: str, digest_of: str) -> None:
    """A digest from a form, held to the rule the CLI holds ``--contract-sha256`` to."""
    from control.digests import digest_problem

    given = digest_problem(digest)
    if given is not None:
        raise InvalidInput(
            code, f"{what} names no {digest_of} digest: 64 lowercase hex digits are needed{given}"
        )


def status_of(error: OperatorError) -> int:
    """The HTTP status an operator error answers with."""
    from contracts.errors import Refused

    if isinstance(error, InvalidInput):
        return 400
    if isinstance(error, NotFound):
        return 404
    if isinstance(error, Refused):
        return 409
    if isinstance(error, ServiceUnavailable):
        return 503
    return 500
