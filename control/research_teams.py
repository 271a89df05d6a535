"""Research team operations over the Temporal client: start (deduplicated), show, list, adjudicate, cancel.

Every function takes the client as an argument so tests can pass their own. Refusals become
:class:`contracts.errors.OperatorError` subclasses carrying the exit codes of
docs/architecture.md "Exit codes".
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import re
import uuid
from collections.abc import Callable
from typing import Any, Final

from temporalio.client import Client, WorkflowQueryFailedError, WorkflowUpdateFailedError
from temporalio.common import (
    SearchAttributeKey,
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from contracts.audit import AuditKind
from contracts.errors import InvalidInput, NotFound, OperatorError, Refused, ServiceUnavailable
from contracts.hashing import canonical_sha256
from contracts.ids import team_id_for_request
from contracts.proofs import ActionProof
from contracts.refusals import AUTHORISATION_REFUSALS, RefusalCode
from contracts.research_coordinator import CoordinatorView, coordinator_workflow_id
from contracts.research_teams import (
    AdjudicateRequest,
    TeamActionResult,
    TeamCancelRequest,
    TeamInput,
    TeamStatus,
    TeamView,
)
from contracts.runs import AuditEvent
from contracts.search_attributes import SearchAttribute
from contracts.temporal_names import CoordinatorMessage, TeamMessage, WorkflowType
from contracts.ui_summaries import team_summary
from control.temporal import describe_memo, patiently, poll_view, temporal_error
from store.research import check_case_id

TEAM_WORKFLOW: Final = WorkflowType.RESEARCH_TEAM
TEAM_ID_PATTERN: Final = re.compile(r"^RTM-[0-9A-Z]{16}$")
QUERY_TIMEOUT: Final = dt.timedelta(seconds=10)
_STATUS_KEY = SearchAttributeKey.for_keyword(SearchAttribute.TEAM_STATUS)
_CASE_KEY = SearchAttributeKey.for_keyword(SearchAttribute.RESEARCH_CASE_ID)
_NO_ANSWER: Final = (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.UNAVAILABLE, RPCStatusCode.CANCELLED)
_NOT_FOUND_CODES: Final = frozenset({RefusalCode.UNKNOWN_ACTOR, "unknown_case"})
START_REFUSALS: Final = frozenset(
    {
        *AUTHORISATION_REFUSALS,
        "unknown_case",
        "team_evidence_empty",
        "team_evidence_limit",
        "team_evidence_too_large",
        "no_model_selected",
        RefusalCode.TEAM_LIMIT_REACHED,
        RefusalCode.TEAM_FINISHED,
        "admission_failed",
    }
)
"""Error types a team ends ``failed`` with when its start was refused (by authorisation or capture)."""


def team_request_digest(case_id: str, request_id: str) -> str:
    """sha256 of the canonical start request: what the operator asked for (case and request id)."""
    return canonical_sha256({"case_id": case_id, "request_id": request_id})


def team_start_input(
    case_id: str, request_id: str, actor: str, sign: Callable[[str, str], ActionProof | None]
) -> TeamInput:
    """The start of the team for ``request_id`` on ``case_id`` by ``actor``: its id (from the request
    id), the request digest and the proof ``sign(team_id, digest)`` makes (``None``: unsigned; the
    CLI signs with :func:`control.actions.proof_for`, action ``team_start``). Raises ``ValueError``
    for a request id that is empty or over 200 characters."""
    team_id = team_id_for_request(request_id)
    digest = team_request_digest(case_id, request_id)
    return TeamInput(
        team_id=team_id,
        case_id=case_id,
        request_id=request_id,
        actor=actor,
        request_digest=digest,
        proof=sign(team_id, digest),
    )


def check_team_id(team_id: str) -> None:
    """Raises :class:`InvalidInput` (``invalid_team_id``) unless ``team_id`` is ``RTM-`` + 16."""
    if not TEAM_ID_PATTERN.fullmatch(team_id):
        raise InvalidInput("invalid_team_id", f"{team_id!r} is not a team id (RTM- followed by 16 of 0-9A-Z)")


async def team_exists(client: Client, team_id: str) -> bool:
    """Whether a team workflow with ``team_id`` was ever started. Raises :class:`ServiceUnavailable`."""
    return await describe_memo(client.get_workflow_handle(team_id)) is not None


def raise_if_start_refused(view: TeamView) -> None:
    """Raise the refusal when the team's start was refused (authorisation, or a case that does not fit:
    exit 3 or 4). The team exists and ended ``failed``; the operator's action was refused."""
    if view.status is TeamStatus.FAILED and view.error is not None and view.error.type in START_REFUSALS:
        code = view.error.type
        error_class: type[OperatorError] = (
            NotFound
            if code in _NOT_FOUND_CODES
            else ServiceUnavailable
            if code == "admission_failed"
            else Refused
        )
        raise error_class(
            code,
            f"team {view.team_id} was refused at start: {view.error.message} (the refused team keeps "
            "this request id: start again with a new one)",
        )


async def start_team(client: Client, team: TeamInput, *, task_queue: str) -> tuple[TeamView, bool]:
    """Start the team, or return the existing one for the same request id.

    Returns ``(view, deduplicated)`` once the team has left ``starting``; of racing deliveries of the
    same request exactly one is not ``deduplicated``. Raises :class:`Refused` ``request_id_conflict``
    when the request id was used for another case.
    """
    handle = client.get_workflow_handle(team.team_id)
    memo = await describe_memo(handle)
    deduplicated = memo is not None
    if memo is None:
        # Which delivery started the workflow: with racing deliveries every start call succeeds
        # (the conflict policy returns the existing workflow), so each compares its own id.
        delivery = uuid.uuid4().hex
        try:
            await client.start_workflow(
                TEAM_WORKFLOW,
                team,
                id=team.team_id,
                task_queue=task_queue,
                # A second delivery of the same start (even a racing one) finds the first team.
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                memo={"request_digest": team.request_digest, "case_id": team.case_id, "delivery": delivery},
                static_summary=team_summary(team.case_id, team.actor),
                search_attributes=TypedSearchAttributes(
                    [
                        SearchAttributePair(_STATUS_KEY, TeamStatus.STARTING.value),
                        SearchAttributePair(_CASE_KEY, team.case_id),
                    ]
                ),
            )
        except RPCError as error:
            if error.status != RPCStatusCode.ALREADY_EXISTS:
                raise temporal_error(error) from None
            deduplicated = True
        memo = await describe_memo(handle)
        deduplicated = deduplicated or memo is None or memo.get("delivery") != delivery
    if memo is not None and memo.get("request_digest") != team.request_digest:
        raise Refused(
            "request_id_conflict",
            f"request id {team.request_id!r} was already used for case {memo.get('case_id')} "
            f"(team {team.team_id})",
        )
    view = await wait_for_team(client, team.team_id, lambda v: v.status is not TeamStatus.STARTING)
    return view, deduplicated


async def get_team(client: Client, team_id: str) -> TeamView:
    """The team's view: by query while it runs, from its result once it has ended (no worker needed
    then). Raises :class:`NotFound` (``unknown_team``) or :class:`ServiceUnavailable`."""
    check_team_id(team_id)
    handle = client.get_workflow_handle(team_id)
    try:
        description = await handle.describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            raise NotFound("unknown_team", f"no team {team_id}") from None
        raise temporal_error(error) from None
    if description.close_time is not None:
        # Terminated or failed without a result: the workers are asked instead.
        with contextlib.suppress(Exception):
            ended: TeamView = await client.get_workflow_handle(team_id, result_type=TeamView).result()
            return ended
    try:
        view: TeamView = await handle.query(TeamMessage.VIEW, result_type=TeamView, rpc_timeout=QUERY_TIMEOUT)
        return view
    except RPCError as error:
        # The server holds a query until a worker takes it; at the RPC's timeout it answers
        # DEADLINE_EXCEEDED or CANCELLED ("Timeout expired").
        if error.status in _NO_ANSWER:
            raise ServiceUnavailable(
                "no_worker",
                f"no worker answered for team {team_id}: start one with `specialists worker` "
                "(or `specialists dev`)",
            ) from None
        raise temporal_error(error) from None
    except WorkflowQueryFailedError as error:
        raise ServiceUnavailable("query_failed", f"team {team_id} could not answer: {error}") from None


async def wait_for_team(
    client: Client,
    team_id: str,
    done: Callable[[TeamView], bool],
    *,
    timeout: float | None = 15.0,
    on_change: Callable[[TeamView], None] | None = None,
    on_unanswered: Callable[[ServiceUnavailable | None], None] | None = None,
) -> TeamView:
    """Poll the team's view until ``done(view)`` or ``timeout`` seconds (``None`` = no limit). While
    no worker answers (one was stopped or killed and another takes the team over) the view is asked
    for again every second within ``timeout``; ``no_worker`` only once it has passed.
    ``on_unanswered`` hears when answers stop (the error) and when they come back (``None``)."""
    loop = asyncio.get_running_loop()
    answered = patiently(
        lambda: get_team(client, team_id),
        codes=frozenset({"no_worker"}),
        deadline=None if timeout is None else loop.time() + timeout,
        on_unanswered=on_unanswered,
    )
    return await poll_view(
        answered,
        done,
        status=lambda v: v.status,
        timeout=timeout,
        on_change=on_change,
    )


def settled(view: TeamView) -> bool:
    """True when the team needs a person or has ended (what ``--wait`` waits for)."""
    return view.status.final or view.status.needs_person


async def adjudicate_team(client: Client, team_id: str, request: AdjudicateRequest) -> TeamActionResult:
    """Update ``adjudicate``. Raises :class:`Refused` with the workflow's code, :class:`NotFound`."""
    check_team_id(team_id)
    handle = client.get_workflow_handle(team_id)
    if await describe_memo(handle) is None:
        raise NotFound("unknown_team", f"no team {team_id}")
    try:
        result: TeamActionResult = await handle.execute_update(
            TeamMessage.ADJUDICATE, request, result_type=TeamActionResult
        )
    except WorkflowUpdateFailedError as error:
        cause = error.cause
        if isinstance(cause, ApplicationError):
            raise Refused(cause.type or "refused", cause.message) from None
        raise Refused("refused", str(cause or error)) from None
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            raise Refused(RefusalCode.TEAM_FINISHED, f"team {team_id} has ended") from None
        raise temporal_error(error) from None
    if not result.accepted:
        error_class: type[OperatorError] = NotFound if result.code in _NOT_FOUND_CODES else Refused
        raise error_class(result.code or "refused", result.message or "refused")
    return result


async def cancel_team(client: Client, team_id: str, request: TeamCancelRequest) -> TeamView:
    """Signal ``cancel`` and return the view once the cancel was recorded or refused.

    Raises :class:`Refused` (``already_finished`` for an ended team, or the refusal's code) or
    :class:`NotFound`.
    """
    check_team_id(team_id)
    handle = client.get_workflow_handle(team_id)
    if await describe_memo(handle) is None:
        raise NotFound("unknown_team", f"no team {team_id}")
    before = await get_team(client, team_id)
    if before.status.final:
        raise Refused(RefusalCode.ALREADY_FINISHED, f"team {team_id} is {before.status.value}")
    seen = len(before.audit)
    try:
        await handle.signal(TeamMessage.CANCEL, request)
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            raise Refused(RefusalCode.ALREADY_FINISHED, f"team {team_id} has ended") from None
        raise temporal_error(error) from None

    nonce = request.proof.nonce if request.proof else None

    def ours(event: AuditEvent) -> bool:
        """The event answers this request: its proof's nonce when it carries one (racing cancels by
        the same actor are told apart), else the same actor's cancel."""
        if event.actor != request.actor:
            return False
        if nonce is not None and "request" in event.data:
            return bool(event.data["request"] == nonce)
        return event.kind == AuditKind.CANCEL_REQUESTED or (
            event.kind == AuditKind.ACTION_REFUSED and event.data.get("action") == "team_cancel"
        )

    def answered(view: TeamView) -> bool:
        return any(ours(event) for event in view.audit[seen:]) or view.status.final

    view = await wait_for_team(client, team_id, answered)
    for event in view.audit[seen:]:
        if event.kind == AuditKind.ACTION_REFUSED and ours(event):
            code = str(event.data.get("code", "refused"))
            error_class: type[OperatorError] = NotFound if code in _NOT_FOUND_CODES else Refused
            raise error_class(code, str(event.data.get("message", "refused")))
    return view


async def list_teams(
    client: Client, case_id: str | None = None, status: TeamStatus | None = None
) -> list[dict[str, Any]]:
    """Teams from Temporal's visibility store, newest first: id, case, status, start and close times.

    ``case_id`` keeps one case's teams, ``status`` the teams with that status. Raises
    :class:`ServiceUnavailable`.
    """
    query = f'WorkflowType = "{TEAM_WORKFLOW}"'
    if case_id is not None:
        check_case_id(case_id)  # also keeps the query free of anything but an id
        query += f' AND ResearchCaseId = "{case_id}"'
    if status is not None:  # a member of the enum: no quoting can be smuggled in
        query += f' AND TeamStatus = "{status.value}"'
    teams: list[dict[str, Any]] = []
    try:
        async for execution in client.list_workflows(query):
            attributes = execution.typed_search_attributes
            teams.append(
                {
                    "team_id": execution.id,
                    "case_id": attributes.get(_CASE_KEY),
                    "status": attributes.get(_STATUS_KEY),
                    "started_at": _iso(execution.start_time),
                    "closed_at": _iso(execution.close_time),
                }
            )
    except RPCError as error:
        raise temporal_error(error) from None
    return teams


def _iso(value: dt.datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


async def get_coordinator(client: Client, task_queue: str) -> CoordinatorView | None:
    """The deployment's research coordinator state by query, or ``None`` when none has been started
    (it starts with the first team). Raises :class:`ServiceUnavailable`."""
    handle = client.get_workflow_handle(coordinator_workflow_id(task_queue))
    try:
        description = await handle.describe()
        if description.close_time is not None:
            return None
        view: CoordinatorView = await handle.query(
            CoordinatorMessage.STATE, result_type=CoordinatorView, rpc_timeout=QUERY_TIMEOUT
        )
        return view
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return None
        if error.status in (
            RPCStatusCode.DEADLINE_EXCEEDED,
            RPCStatusCode.UNAVAILABLE,
            RPCStatusCode.CANCELLED,
        ):
            raise ServiceUnavailable(
                "no_worker",
                "no worker answered for the research coordinator: start one with `specialists worker`",
            ) from None
        raise temporal_error(error) from None
    except WorkflowQueryFailedError as error:
        raise ServiceUnavailable(
            "query_failed", f"the research coordinator could not answer: {error}"
        ) from None
