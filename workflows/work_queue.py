"""``WorkQueue``: the goal queue of one deployment and task queue (docs/architecture.md "Goal queue").

One workflow per task queue, with a fixed id (``contracts.queue_messages.queue_workflow_id``), started
by the first command that changes it (update-with-start). Its state — the items, the key allocator,
the settings — is set in ``@workflow.init`` from one :class:`QueueState`, which is also what it
carries across continue-as-new.

Every operator move is a Workflow Update. Its validator makes the cheap checks on the current state
through the pure contract (the transition table, the approval contract, the update rules, the
actor's presence): a refusal raises there and never enters history. The handler then runs the
``authorize_action`` activity (the actor's proof of the action, bound to the request's digest); a
refusal is kept in the queue's list of refused actions and changes nothing else. After the
authorisation the move is worked out again on the state as it is then (another update may have moved
the item meanwhile) and applied in the same workflow task, so each move is atomic.

``run`` follows the dispatched runs and, with autopilot on, dispatches by itself under the operator's
standing grant: re-dispatches after a FAIL, recoveries after their delay and approved items, into free
slots (docs/architecture.md "Goal queue", its autopilot; ``workflows/queue_following.py`` follows the
runs, ``workflows/queue_autopilot.py`` picks and dispatches). Once the history holds
``continue_as_new_after_events`` events, or the server suggests it, it waits for every handler to
finish and continues as new with the whole state.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from pydantic import ValidationError
from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from contracts.intake import BeyondDrop, IntakeAnswer, IntakeRequest
    from contracts.intake_diff import apply_intake
    from contracts.metric_names import QUEUE_SLOTS_OCCUPIED
    from contracts.proofs import ActionProof
    from contracts.queue_approval import approve, spec_completeness
    from contracts.queue_archive import ArchivedItem, find_archived
    from contracts.queue_dispatch import (
        check_no_pending_run,
        dispatch_run_problem,
    )
    from contracts.queue_items import (
        ItemUpdate,
        QueueBlocker,
        QueueEventKind,
        QueueItem,
        QueueRefused,
        QueueSettings,
        QueueStatus,
        added_with,
        apply_update,
        new_item,
    )
    from contracts.queue_keys import KeyAllocator
    from contracts.queue_messages import (
        DISPATCH_MISMATCH,
        INVALID_ITEM_UPDATE,
        REFUSALS_KEPT,
        SETTINGS_CHANGES_KEPT,
        UNKNOWN_ITEM,
        AddRequest,
        AutopilotGrant,
        AutopilotRequest,
        CapacityRequest,
        DispatchRequest,
        DoneRequest,
        EscalationModelRequest,
        ItemAnswer,
        MoveRequest,
        QueueAction,
        QueueQuery,
        QueueState,
        QueueView,
        RecoveryDelayRequest,
        RefusalDetail,
        RefusedAction,
        RouteNextRequest,
        RunProgressed,
        SettingsAnswer,
        SettingsChange,
        UpdateItemRequest,
    )
    from contracts.queue_priority import (
        check_manual_dispatch,
        occupancy,
        record_dispatch,
    )
    from contracts.queue_routing import check_next, routed_problem
    from contracts.queue_spec import SpecRequest
    from contracts.queue_transitions import Mover, QueueMove, apply_move, check_move
    from contracts.refusals import RefusalCode
    from contracts.runs import (
        AuthorizeRequest,
        RunStatus,
    )
    from contracts.shipping import ShipRequest
    from contracts.temporal_names import QueueMessage, WorkflowType
    from contracts.ui_summaries import queue_details
    from workflows.authorization import check_action
    from workflows.queue_archive import (
        ArchiveUnavailable,
        archive_ended,
        archived_in_store,
        forget_old_tombstones,
    )
    from workflows.queue_autopilot import fill_slots, next_wake, picks
    from workflows.queue_following import (
        items_to_tell,
        latest_told,
        live_run_status,
        read_progress,
        start_run,
        tell_item_statuses,
        tracked_runs,
    )
    from workflows.queue_intake import (
        PATCH_BEYOND,
        PATCH_INTAKE,
        PATCH_SCHEDULED_INTAKE,
        authorize_scheduled,
        beyond_scan,
        scan_repository,
    )
    from workflows.queue_shipping import (
        PATCH_MAIN_WRITE_GUARD,
        check_base_heads,
        ship,
        validate_ship,
    )
    from workflows.queue_spec import spec, validate_spec
    from workflows.versioning import auto_upgrade

T = TypeVar("T")

PATCH_TRACK_RUNS = "queue-tracks-runs"
"""Executions begun since the queue dispatches runs read the progress of its active items' runs
(a durable timer, then ``read_run_progress``); histories recorded before replay without it."""
PATCH_AUTOPILOT = "queue-autopilot-dispatches"
"""Executions begun since the autopilot dispatches fill free slots by themselves (starting child runs
under the autopilot grant); histories recorded before replay without it, autopilot only stored."""
PATCH_ITEM_STATUS = "queue-item-status-on-runs"
"""Executions begun since the runs show their item's status start each run with the
``QueueItemStatus`` search attribute and signal the item's latest run when the status changes;
histories recorded before replay without either."""
PATCH_SWEEP_NAMED = "queue-intake-names-sweep"
"""Executions since name the asking sweep in the events of a scan an ``intake-scan`` sweep asked for;
asked only of such a scan, histories recorded before replay without the name."""


class _UnknownItem(Exception):
    """The queue holds no item with the key asked for."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _InvalidUpdate(Exception):
    """The fields of an update do not validate, or the updated item breaks a rule."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _describe(error: ValidationError) -> str:
    parts = []
    for detail in error.errors():
        location = ".".join(str(part) for part in detail["loc"]) or "input"
        message = str(detail["msg"]).removeprefix("Value error, ")
        if detail["type"] == "extra_forbidden":
            message = "unknown key (not allowed)"
        parts.append(f"{location}: {message}")
    return "; ".join(parts)


@workflow.defn(name=WorkflowType.WORK_QUEUE, versioning_behavior=auto_upgrade())
class WorkQueueWorkflow:
    """Hold the goal queue's items and make the operator's moves on them."""

    @workflow.init
    def __init__(self, state: QueueState) -> None:
        self._items: dict[str, QueueItem] = {item.key: item for item in state.items}
        self._archived: list[ArchivedItem] = list(state.archived)  # workflows/queue_archive.py
        self._tombstones_forgotten = state.tombstones_forgotten
        self._allocator: KeyAllocator = state.allocator
        self._settings: QueueSettings = state.settings
        self._settings_changes = list(state.settings_changes)
        self._refusals = list(state.refusals)
        self._state = state
        self._run_status: dict[str, RunStatus] = dict(state.run_status)
        self._used_nonces: set[str] = set()
        self._grant: AutopilotGrant | None = state.autopilot_grant
        self._autopilot = False  # set by run(): whether this execution's autopilot dispatches
        self._unbuildable: set[str] = set()  # items whose run the autopilot could not build
        self._rearm = False  # set when the recovery delay changed: the run loop re-arms its timer
        self._item_status = False  # set by run(): whether this execution tells runs their item's status
        self._told: dict[str, QueueStatus] = dict(state.told_status)
        self._progressed = False  # a tracked run said it progressed: read the runs now
        self._reads_locally: bool | None = None  # asked at the first read of this execution
        self._shipping: set[str] = set()  # items being shipped (workflows/queue_shipping.py)
        self._base_heads = dict(state.base_heads)  # the main-write guard's heads
        self._main_writes = list(state.main_writes)
        self._guard = False  # set by run(): whether this execution guards the base branches

    @workflow.run
    async def run(self, state: QueueState) -> None:
        tracks = workflow.patched(PATCH_TRACK_RUNS)
        self._autopilot = workflow.patched(PATCH_AUTOPILOT)
        self._item_status = workflow.patched(PATCH_ITEM_STATUS)
        self._guard = workflow.patched(PATCH_MAIN_WRITE_GUARD)
        while True:
            self._show_details()
            try:  # cut short at the next recovery due, when one waits for its delay
                await workflow.wait_condition(
                    lambda: (
                        self._should_continue_as_new()
                        or (tracks and bool(tracked_runs(self)))
                        or bool(picks(self))
                        or self._rearm
                        or bool(items_to_tell(self))
                    ),
                    timeout=next_wake(self),
                )
            except TimeoutError:
                if self._guard:
                    await check_base_heads(self)
                continue
            if self._rearm:
                self._rearm = False
                continue
            if self._should_continue_as_new():
                break
            if picks(self):  # first: a free slot waits for nothing the runs are told
                await fill_slots(self)
                continue
            if items_to_tell(self):
                await tell_item_statuses(self)
                continue
            try:  # a durable timer, cut short when the history has grown enough or a slot can be filled
                await workflow.wait_condition(
                    lambda: (
                        self._should_continue_as_new()
                        or bool(picks(self))
                        or bool(items_to_tell(self))
                        or self._progressed
                    ),
                    timeout=timedelta(seconds=self._state.poll_seconds),
                )
                if self._should_continue_as_new():
                    break
                if self._progressed:  # never set in histories recorded before runs told their queue
                    self._progressed = False
                    await read_progress(self)
            except TimeoutError:
                await read_progress(self)
                if self._guard:
                    await check_base_heads(self)
        await archive_ended(self, self._state.archive_after_seconds)
        forget_old_tombstones(self, self._state.tombstones_kept)
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(self._carried())

    def _should_continue_as_new(self) -> bool:
        info = workflow.info()
        return (
            info.get_current_history_length() >= self._state.continue_as_new_after_events
            or info.is_continue_as_new_suggested()
        )

    def _carried(self) -> QueueState:
        return self._state.model_copy(
            update={
                "items": list(self._items.values()),
                "allocator": self._allocator,
                "settings": self._settings,
                "settings_changes": list(self._settings_changes),
                "refusals": list(self._refusals),
                "runs": self._state.runs + 1,
                "run_status": live_run_status(self),
                "autopilot_grant": self._grant,
                "told_status": latest_told(self),
                "base_heads": dict(self._base_heads),
                "main_writes": list(self._main_writes),
                "archived": list(self._archived),
                "tombstones_forgotten": self._tombstones_forgotten,
            }
        )

    # ------------------------------------------------------------------------------------------ helpers

    def _item(self, key: str) -> QueueItem:
        item = self._items.get(key)
        if item is not None:
            return item
        renamed = self._renamed_to(key)
        if renamed is not None:
            raise _UnknownItem(f"no item {key}: it was renamed to {renamed} at its approval")
        archived = find_archived(self._archived, key)
        if archived is not None:
            raise archived.refusal(key)
        if self._tombstones_forgotten:
            raise _UnknownItem(
                f"no item {key} in the queue, nor among the items it archived lately: "
                f"`queue show {key}` also reads the whole archive"
            )
        raise _UnknownItem(f"no item {key} in the queue")

    def _renamed_to(self, key: str) -> str | None:
        for item in self._items.values():
            for event in item.events:
                if event.kind is QueueEventKind.RENAMED and event.data.get("from") == key:
                    return item.key
        return None

    @staticmethod
    def _check(plan: Callable[[], T]) -> T:
        """``plan()``, its refusals raised as the validator's ``ApplicationError`` (never in history)."""
        try:
            return plan()
        except QueueRefused as error:
            raise ApplicationError(
                error.message, RefusalDetail(extra=error.extra), type=error.code, non_retryable=True
            ) from None
        except _UnknownItem as error:
            raise ApplicationError(error.message, type=UNKNOWN_ITEM, non_retryable=True) from None
        except _InvalidUpdate as error:
            raise ApplicationError(error.message, type=INVALID_ITEM_UPDATE, non_retryable=True) from None

    @staticmethod
    def _require_actor(actor: str | None, action: QueueAction) -> None:
        if actor is None or not actor.strip():
            raise ApplicationError(
                f"{action.value} needs --actor ID (a registered human)",
                type=RefusalCode.ACTOR_REQUIRED,
                non_retryable=True,
            )

    async def _authorize(
        self, action: QueueAction, target: str, actor: str | None, proof: ActionProof | None, digest: str
    ) -> tuple[str, str] | None:
        """``None`` when ``actor`` may take ``action`` on ``target``; else the refusal's code and
        message, recorded as a refused action."""
        request = AuthorizeRequest(
            run_id=target, action=action.value, actor=actor, digest=digest, proof=proof
        )
        result = await check_action(request, self._used_nonces)
        if result.allowed:
            return None
        code = result.code or RefusalCode.FORBIDDEN
        message = result.message or "refused"
        self._refused(action, actor, target, code, message)
        return code, message

    def _refused(self, action: QueueAction, actor: str | None, target: str, code: str, message: str) -> None:
        refusal = RefusedAction(
            at=workflow.now(), action=action, actor=actor, target=target, code=code, message=message
        )
        self._refusals = [*self._refusals, refusal][-REFUSALS_KEPT:]

    def _put(self, old_key: str, item: QueueItem) -> None:
        """Store ``item`` in the place of ``old_key`` (a rename keeps the item's place)."""
        if old_key == item.key:
            self._items[item.key] = item
            return
        self._items = {
            (item.key if key == old_key else key): (item if key == old_key else held)
            for key, held in self._items.items()
        }

    def _accepted(self, item: QueueItem, previous_key: str | None = None) -> ItemAnswer:
        self._show_details()
        return ItemAnswer(accepted=True, item=item, spec=spec_completeness(item), previous_key=previous_key)

    def _show_details(self) -> None:
        """The queue's current details in the Temporal UI: the fleet line, the autopilot and the items
        by status (metadata, not history)."""
        counts = {status.value: 0 for status in QueueStatus}
        for item in self._items.values():
            counts[item.status.value] += 1
        fleet = occupancy(self._items.values(), self._settings.slots)
        workflow.set_current_details(
            queue_details(len(fleet.occupied), fleet.slots, self._settings.autopilot, counts)
        )
        workflow.metric_meter().create_gauge(QUEUE_SLOTS_OCCUPIED, "the goal queue's occupied slots").set(
            len(fleet.occupied), {"slots": str(fleet.slots)}
        )

    async def _item_action(
        self,
        action: QueueAction,
        target: str,
        actor: str | None,
        proof: ActionProof | None,
        digest: str,
        plan: Callable[[], tuple[str, QueueItem, Any]],
    ) -> ItemAnswer:
        """Authorise, then work ``plan`` out again on the state as it is now and apply it: ``plan``
        returns the key the item had, the item after the move and what else changes (the allocator)."""
        refusal = await self._authorize(action, target, actor, proof, digest)
        if refusal is not None:
            return ItemAnswer(accepted=False, code=refusal[0], message=refusal[1])
        return self._apply(action, target, actor, plan)

    def _apply(
        self,
        action: QueueAction,
        target: str,
        actor: str | None,
        plan: Callable[[], tuple[str, QueueItem, Any]],
    ) -> ItemAnswer:
        """Work ``plan`` out on the state as it is now and apply it (an authorised action)."""
        try:
            old_key, item, allocator = plan()
        except QueueRefused as error:
            self._refused(action, actor, target, error.code, error.message)
            return ItemAnswer(accepted=False, code=error.code, message=error.message, extra=error.extra)
        except (_UnknownItem, _InvalidUpdate) as error:
            code = UNKNOWN_ITEM if isinstance(error, _UnknownItem) else INVALID_ITEM_UPDATE
            self._refused(action, actor, target, code, error.message)
            return ItemAnswer(accepted=False, code=code, message=error.message)
        if allocator is not None:
            self._allocator = allocator
        self._put(old_key, item)
        return self._accepted(item, previous_key=old_key if old_key != item.key else None)

    # --------------------------------------------------------------------------------------------- plans

    def _plan_add(self, request: AddRequest) -> tuple[str, QueueItem, KeyAllocator]:
        proposal = request.proposal
        allocator, key = self._allocator.allocate(proposal.repo_alias)
        item = new_item(
            proposal, key=key, at=workflow.now(), actor=request.actor, added_by=request.added_by()
        )
        return key, item, allocator

    def _plan_update(self, request: UpdateItemRequest) -> tuple[str, QueueItem, None]:
        item = self._item(request.key)
        try:
            update = ItemUpdate.model_validate(request.fields)
        except ValidationError as error:
            raise _InvalidUpdate(f"invalid update of {request.key}: {_describe(error)}") from None
        try:
            updated = apply_update(item, update, at=workflow.now(), actor=request.actor)
        except ValidationError as error:
            raise _InvalidUpdate(f"{request.key} cannot take this update: {_describe(error)}") from None
        return item.key, updated, None

    def _plan_approve(self, request: MoveRequest) -> tuple[str, QueueItem, KeyAllocator]:
        item = self._item(request.key)
        assert request.actor is not None
        approved, allocator = approve(item, self._allocator, actor=request.actor, at=workflow.now())
        return item.key, approved, allocator

    def _plan_done(self, request: DoneRequest) -> tuple[str, QueueItem, None]:
        item = self._item(request.key)
        rounds = item.cycle_rounds()
        data = {"run_id": rounds[-1].run_id} if rounds else {}
        done = apply_move(
            item,
            QueueMove.DONE,
            Mover.OPERATOR,
            at=workflow.now(),
            actor=request.actor,
            reason=request.note,
            data=data,
        )
        return item.key, done, None

    def _plan_reject(self, request: MoveRequest) -> tuple[str, QueueItem, None]:
        return self._plan_move(QueueMove.REJECT, request)

    def _plan_move(
        self, move: QueueMove, request: MoveRequest, blocker: QueueBlocker | None = None
    ) -> tuple[str, QueueItem, None]:
        """An operator's move of the table that needs nothing but the item (reject, park, release,
        reopen), with the request's reason."""
        item = self._item(request.key)
        moved = apply_move(
            item,
            move,
            Mover.OPERATOR,
            at=workflow.now(),
            actor=request.actor,
            blocker=blocker,
            reason=request.reason,
        )
        return item.key, moved, None

    def _plan_dispatch(self, request: DispatchRequest) -> QueueItem:
        """The item after the dispatch of ``request.run``, checked as the operator's move: the
        table, the high-risk and capacity rules, and the run being the one the item asks for."""
        item = self._item(request.key)
        check_move(item.status, QueueMove.DISPATCH, Mover.OPERATOR, key=item.key)
        check_no_pending_run(item)
        fleet = occupancy(self._items.values(), self._settings.slots)
        check_manual_dispatch(
            item,
            fleet,
            confirm_high_risk=request.confirm_high_risk,
            override_capacity=request.override_capacity,
        )
        assert request.actor is not None
        problem = dispatch_run_problem(item, request.run, request.actor)
        if problem is not None:
            raise ApplicationError(problem, type=DISPATCH_MISMATCH, non_retryable=True)
        return record_dispatch(
            item, run_id=request.run.run_id, mover=Mover.OPERATOR, actor=request.actor, at=workflow.now()
        )

    # ------------------------------------------------------------------------------------------ updates

    @workflow.update(name=QueueMessage.DISPATCH)
    async def dispatch(self, request: DispatchRequest) -> ItemAnswer:
        """Start the item's run as a child workflow the queue abandons on continue-as-new (it lives
        on its own) and track it; the item is active from the moment the move is made."""
        refusal = await self._authorize(
            QueueAction.DISPATCH, request.key, request.actor, request.proof, request.digest()
        )
        if refusal is not None:
            return ItemAnswer(accepted=False, code=refusal[0], message=refusal[1])
        try:
            dispatched = self._plan_dispatch(request)
        except (QueueRefused, _UnknownItem, ApplicationError) as error:
            code = getattr(error, "code", None) or getattr(error, "type", None) or UNKNOWN_ITEM
            message = str(getattr(error, "message", error))
            extra = error.extra if isinstance(error, QueueRefused) else {}
            self._refused(QueueAction.DISPATCH, request.actor, request.key, code, message)
            return ItemAnswer(accepted=False, code=code, message=message, extra=extra)
        # The move is made before the start is awaited, so no other update can dispatch the item too.
        self._items[dispatched.key] = dispatched
        await start_run(self, dispatched.key, request.run)
        return self._accepted(self._items[dispatched.key])

    @dispatch.validator
    def _validate_dispatch(self, request: DispatchRequest) -> None:
        self._require_actor(request.actor, QueueAction.DISPATCH)
        self._check(lambda: self._plan_dispatch(request))

    def _plan_route_next(self, request: RouteNextRequest) -> QueueItem:
        """The item after the policy's decision ``request.routed`` (docs/architecture.md "Goal queue",
        "Route next"): a ``routed`` event, and for read_only the dispatch of its automatic run into a
        free slot (never over capacity)."""
        item = check_next(list(self._items.values()), request.key)
        assert request.actor is not None
        problem = routed_problem(item, request.routed, request.run, request.actor)
        if problem is not None:
            raise ApplicationError(problem, type=DISPATCH_MISMATCH, non_retryable=True)
        at = workflow.now()
        data = {**request.routed.to_json(), "run_id": None if request.run is None else request.run.run_id}
        if request.run is not None:
            check_move(item.status, QueueMove.DISPATCH, Mover.OPERATOR, key=item.key)
            fleet = occupancy(self._items.values(), self._settings.slots)
            check_manual_dispatch(item, fleet, confirm_high_risk=False, override_capacity=False)
            item = record_dispatch(
                item, run_id=request.run.run_id, mover=Mover.OPERATOR, actor=request.actor, at=at
            )
        return item.with_event(QueueEventKind.ROUTED, at, request.actor, data)

    @workflow.update(name=QueueMessage.ROUTE_NEXT)
    async def route_next(self, request: RouteNextRequest) -> ItemAnswer:
        """Apply the automatic policy's decision to the next approved item: record it, and start the
        read_only run it allows (a recommendation starts none)."""
        refusal = await self._authorize(
            QueueAction.ROUTE_NEXT, request.key, request.actor, request.proof, request.digest()
        )
        if refusal is not None:
            return ItemAnswer(accepted=False, code=refusal[0], message=refusal[1])
        try:
            routed = self._plan_route_next(request)
        except (QueueRefused, ApplicationError) as error:
            code = getattr(error, "code", None) or getattr(error, "type", None) or DISPATCH_MISMATCH
            message = str(getattr(error, "message", error))
            extra = error.extra if isinstance(error, QueueRefused) else {}
            self._refused(QueueAction.ROUTE_NEXT, request.actor, request.key, code, message)
            return ItemAnswer(accepted=False, code=code, message=message, extra=extra)
        self._items[routed.key] = routed  # made before the start is awaited, as a dispatch is
        if request.run is not None:
            await start_run(self, routed.key, request.run)
        return self._accepted(self._items[routed.key])

    @route_next.validator
    def _validate_route_next(self, request: RouteNextRequest) -> None:
        self._require_actor(request.actor, QueueAction.ROUTE_NEXT)
        self._check(lambda: self._plan_route_next(request))

    @workflow.update(name=QueueMessage.ADD)
    async def add(self, request: AddRequest) -> ItemAnswer:
        """Add a proposal (it may be thin); the queue allocates its key. With a request id already
        used for the same proposal, the answer is the item that add made (``deduplicated``); only
        such requests take the second branch, so recorded histories replay without a patch."""
        target = workflow.info().workflow_id
        if request.request_id is None:
            return await self._item_action(
                QueueAction.ADD,
                target,
                request.actor,
                request.proof,
                request.digest(),
                lambda: self._plan_add(request),
            )
        refusal = await self._authorize(
            QueueAction.ADD, target, request.actor, request.proof, request.digest()
        )
        if refusal is not None:
            return ItemAnswer(accepted=False, code=refusal[0], message=refusal[1])
        try:
            archived = await archived_in_store(self, request_id=request.request_id)
        except ArchiveUnavailable as error:
            self._refused(QueueAction.ADD, request.actor, target, error.code, str(error))
            return ItemAnswer(accepted=False, code=error.code, message=str(error))
        try:  # looked for again: another add with the id may have landed while this one was checked
            earlier = added_with(
                self._items.values(), request.request_id, request.proposal_digest(), archived
            )
        except QueueRefused as error:
            self._refused(QueueAction.ADD, request.actor, target, error.code, error.message)
            return ItemAnswer(accepted=False, code=error.code, message=error.message, extra=error.extra)
        if earlier is not None:
            return self._accepted(earlier).model_copy(update={"deduplicated": True})
        return self._apply(QueueAction.ADD, target, request.actor, lambda: self._plan_add(request))

    @add.validator
    def _validate_add(self, request: AddRequest) -> None:
        self._require_actor(request.actor, QueueAction.ADD)
        request_id = request.request_id
        if request_id is not None:
            earlier = self._check(
                lambda: added_with(
                    self._items.values(), request_id, request.proposal_digest(), self._archived
                )
            )
            if earlier is not None:
                return  # answered with the item it added
        self._check(lambda: self._plan_add(request))

    @workflow.update(name=QueueMessage.INTAKE)
    async def intake(self, request: IntakeRequest) -> IntakeAnswer:
        """Scan a repository and enter its findings as proposals (``workflows.queue_intake``); never
        approves anything."""
        workflow.patched(PATCH_INTAKE)
        target = workflow.info().workflow_id
        if request.scheduled is not None and workflow.patched(PATCH_SCHEDULED_INTAKE):
            # An intake-scan sweep asks: the schedule's grant stands in for a per-scan proof.
            refusal = await authorize_scheduled(request)
            if refusal is not None:
                self._refused(QueueAction.INTAKE, request.actor, target, *refusal)
        else:
            refusal = await self._authorize(
                QueueAction.INTAKE, target, request.actor, request.proof, request.digest()
            )
        if refusal is not None:
            return IntakeAnswer(accepted=False, code=refusal[0], message=refusal[1])
        scanned = await scan_repository(request)
        if isinstance(scanned, IntakeAnswer):
            self._refused(
                QueueAction.INTAKE, request.actor, target, scanned.code or "", scanned.message or ""
            )
            return scanned
        dropped: list[BeyondDrop] = []
        if request.beyond and workflow.patched(PATCH_BEYOND):
            beyond = await beyond_scan(request, scanned)
            if isinstance(beyond, IntakeAnswer):
                self._refused(
                    QueueAction.INTAKE, request.actor, target, beyond.code or "", beyond.message or ""
                )
                return beyond
            scanned, dropped = beyond
        try:
            archived = await archived_in_store(
                self, fingerprints=[finding.fingerprint for finding in scanned.findings]
            )
        except ArchiveUnavailable as error:
            self._refused(QueueAction.INTAKE, request.actor, target, error.code, str(error))
            return IntakeAnswer(accepted=False, code=error.code, message=str(error))
        sweep = None
        if request.scheduled is not None and workflow.patched(PATCH_SWEEP_NAMED):
            sweep = request.scheduled.sweep_workflow_id
        applied = apply_intake(
            scanned,
            list(self._items.values()),
            self._allocator,
            at=workflow.now(),
            actor=request.actor,
            archived=archived,
            sweep=sweep,
        )
        self._allocator = applied.allocator
        for item in applied.items:
            self._items[item.key] = item
        self._show_details()
        return applied.answer.model_copy(update={"dropped": dropped}) if dropped else applied.answer

    @intake.validator
    def _validate_intake(self, request: IntakeRequest) -> None:
        self._require_actor(request.actor, QueueAction.INTAKE)

    @workflow.update(name=QueueMessage.UPDATE)
    async def update(self, request: UpdateItemRequest) -> ItemAnswer:
        """Set fields of a proposal (only a proposal is updated)."""
        return await self._item_action(
            QueueAction.UPDATE,
            request.key,
            request.actor,
            request.proof,
            request.digest(),
            lambda: self._plan_update(request),
        )

    @update.validator
    def _validate_update(self, request: UpdateItemRequest) -> None:
        self._require_actor(request.actor, QueueAction.UPDATE)
        self._check(lambda: self._plan_update(request))

    @workflow.update(name=QueueMessage.APPROVE)
    async def approve(self, request: MoveRequest) -> ItemAnswer:
        """Approve a proposal whose contract is complete (a provisional key is renamed)."""
        return await self._item_action(
            QueueAction.APPROVE,
            request.key,
            request.actor,
            request.proof,
            request.digest(),
            lambda: self._plan_approve(request),
        )

    @approve.validator
    def _validate_approve(self, request: MoveRequest) -> None:
        self._require_actor(request.actor, QueueAction.APPROVE)
        self._check(lambda: self._plan_approve(request))

    @workflow.update(name=QueueMessage.REJECT)
    async def reject(self, request: MoveRequest) -> ItemAnswer:
        """Reject a proposal, or a reviewed result and its item."""
        return await self._item_action(
            QueueAction.REJECT,
            request.key,
            request.actor,
            request.proof,
            request.digest(),
            lambda: self._plan_reject(request),
        )

    @reject.validator
    def _validate_reject(self, request: MoveRequest) -> None:
        self._require_actor(request.actor, QueueAction.REJECT)
        self._check(lambda: self._plan_reject(request))

    @workflow.update(name=QueueMessage.DONE)
    async def done(self, request: DoneRequest) -> ItemAnswer:
        """A person accepts the reviewed result: the item is done (only a person moves it there)."""
        return await self._item_action(
            QueueAction.DONE,
            request.key,
            request.actor,
            request.proof,
            request.digest(),
            lambda: self._plan_done(request),
        )

    @done.validator
    def _validate_done(self, request: DoneRequest) -> None:
        self._require_actor(request.actor, QueueAction.DONE)
        self._check(lambda: self._plan_done(request))

    @workflow.update(name=QueueMessage.SHIP)
    async def ship(self, request: ShipRequest) -> ItemAnswer:
        """A person ships a done item once (:mod:`workflows.queue_shipping`)."""
        return await ship(self, request)

    @ship.validator
    def _validate_ship(self, request: ShipRequest) -> None:
        self._require_actor(request.actor, QueueAction.SHIP)
        validate_ship(self, request)

    @workflow.update(name=QueueMessage.SPEC)
    async def spec(self, request: SpecRequest) -> ItemAnswer:
        """An operator's spec pass of a proposal (:mod:`workflows.queue_spec`); never approves."""
        return await spec(self, request)

    @spec.validator
    def _validate_spec(self, request: SpecRequest) -> None:
        validate_spec(self, request)

    @workflow.update(name=QueueMessage.PARK)
    async def park(self, request: MoveRequest) -> ItemAnswer:
        """Park a failed item: it is blocked (``parked``) and nothing retries it."""
        return await self._item_action(
            QueueAction.PARK,
            request.key,
            request.actor,
            request.proof,
            request.digest(),
            lambda: self._plan_move(QueueMove.PARK, request, QueueBlocker.PARKED),
        )

    @park.validator
    def _validate_park(self, request: MoveRequest) -> None:
        self._require_actor(request.actor, QueueAction.PARK)
        self._check(lambda: self._plan_move(QueueMove.PARK, request, QueueBlocker.PARKED))

    @workflow.update(name=QueueMessage.RELEASE)
    async def release(self, request: MoveRequest) -> ItemAnswer:
        """Release a blocked item back to approved (a new review cycle)."""
        return await self._item_action(
            QueueAction.RELEASE,
            request.key,
            request.actor,
            request.proof,
            request.digest(),
            lambda: self._plan_move(QueueMove.RELEASE, request),
        )

    @release.validator
    def _validate_release(self, request: MoveRequest) -> None:
        self._require_actor(request.actor, QueueAction.RELEASE)
        self._check(lambda: self._plan_move(QueueMove.RELEASE, request))

    @workflow.update(name=QueueMessage.REOPEN)
    async def reopen(self, request: MoveRequest) -> ItemAnswer:
        """Re-open a done item: approved again, in a new review cycle."""
        return await self._item_action(
            QueueAction.REOPEN,
            request.key,
            request.actor,
            request.proof,
            request.digest(),
            lambda: self._plan_move(QueueMove.REOPEN, request),
        )

    @reopen.validator
    def _validate_reopen(self, request: MoveRequest) -> None:
        self._require_actor(request.actor, QueueAction.REOPEN)
        self._check(lambda: self._plan_move(QueueMove.REOPEN, request))

    @workflow.update(name=QueueMessage.CAPACITY)
    async def capacity(self, request: CapacityRequest) -> SettingsAnswer:
        """Set the number of slots (items already active keep theirs)."""
        return await self._settings_action(
            QueueAction.CAPACITY, "slots", request.slots, request.actor, request.proof, request.digest()
        )

    @capacity.validator
    def _validate_capacity(self, request: CapacityRequest) -> None:
        self._require_actor(request.actor, QueueAction.CAPACITY)

    @workflow.update(name=QueueMessage.AUTOPILOT)
    async def autopilot(self, request: AutopilotRequest) -> SettingsAnswer:
        """Turn autopilot on or off. An accepted ``on`` is the signing operator's standing grant of the
        runs the queue starts by itself (given again by each ``on``); ``off`` withdraws it."""
        answer = await self._settings_action(
            QueueAction.AUTOPILOT, "autopilot", request.on, request.actor, request.proof, request.digest()
        )
        if answer.accepted:
            on = request.on and request.actor is not None
            self._grant = AutopilotGrant(granted_by=request.actor, granted_at=workflow.now()) if on else None
        return answer

    @autopilot.validator
    def _validate_autopilot(self, request: AutopilotRequest) -> None:
        self._require_actor(request.actor, QueueAction.AUTOPILOT)

    @workflow.update(name=QueueMessage.RECOVERY_DELAY)
    async def recovery_delay(self, request: RecoveryDelayRequest) -> SettingsAnswer:
        """Set how long a failed item waits before the autopilot recovers it (a recovery already
        waiting is due by the new delay; the run loop's timer is re-armed when the update ends)."""
        answer = await self._settings_action(
            QueueAction.RECOVERY_DELAY,
            "recovery_delay_seconds",
            request.seconds,
            request.actor,
            request.proof,
            request.digest(),
        )
        self._rearm = answer.accepted
        return answer

    @recovery_delay.validator
    def _validate_recovery_delay(self, request: RecoveryDelayRequest) -> None:
        self._require_actor(request.actor, QueueAction.RECOVERY_DELAY)

    @workflow.update(name=QueueMessage.ESCALATION_MODEL)
    async def escalation_model(self, request: EscalationModelRequest) -> SettingsAnswer:
        """Set the escalation model (``None``: none). Escalations recorded before keep the model they
        recorded; the next escalation records this one."""
        return await self._settings_action(
            QueueAction.ESCALATION_MODEL,
            "escalation_model",
            request.model,
            request.actor,
            request.proof,
            request.digest(),
        )

    @escalation_model.validator
    def _validate_escalation_model(self, request: EscalationModelRequest) -> None:
        self._require_actor(request.actor, QueueAction.ESCALATION_MODEL)

    async def _settings_action(
        self,
        action: QueueAction,
        setting: str,
        value: Any,
        actor: str | None,
        proof: ActionProof | None,
        digest: str,
    ) -> SettingsAnswer:
        refusal = await self._authorize(action, workflow.info().workflow_id, actor, proof, digest)
        if refusal is not None:
            return SettingsAnswer(
                accepted=False, settings=self._settings, code=refusal[0], message=refusal[1]
            )
        before = getattr(self._settings, setting)
        if before != value:
            self._settings = QueueSettings.model_validate({**self._settings.model_dump(), setting: value})
            change = SettingsChange(
                at=workflow.now(), actor=actor, setting=setting, before=before, after=value
            )
            self._settings_changes = [*self._settings_changes, change][-SETTINGS_CHANGES_KEPT:]
        self._show_details()
        return SettingsAnswer(accepted=True, settings=self._settings)

    @workflow.signal(name=QueueMessage.RUN_PROGRESSED)
    def run_progressed(self, notice: RunProgressed) -> None:
        """A run says it reached its decision or ended: the queue reads its tracked runs' progress
        now rather than at its next poll (it believes nothing in the signal, and ignores one from a
        run it does not follow)."""
        if notice.run_id in tracked_runs(self):
            self._progressed = True

    # -------------------------------------------------------------------------------------------- query

    @workflow.query(name=QueueMessage.VIEW)
    def view(self, query: QueueQuery) -> QueueView:
        """The items (all, or the one asked for), the settings and the queue's own records."""
        archived = None
        if query.key is None:
            items = list(self._items.values())
            renamed = None
        else:
            held = self._items.get(query.key)
            items = [] if held is None else [held]
            renamed = None if held is not None else self._renamed_to(query.key)
            if held is None and renamed is None:
                archived = find_archived(self._archived, query.key)
        return QueueView(
            workflow_id=workflow.info().workflow_id,
            items=items,
            settings=self._settings,
            allocator=self._allocator,
            settings_changes=list(self._settings_changes),
            refusals=list(self._refusals),
            runs=self._state.runs,
            history_events=workflow.info().get_current_history_length(),
            run_status=live_run_status(self),
            renamed_to=renamed,
            autopilot_grant=self._grant,
            main_writes=list(self._main_writes),
            base_heads=dict(self._base_heads),
            archived=archived,
            archived_count=len(self._archived) + self._tombstones_forgotten,
            tombstones_forgotten=self._tombstones_forgotten,
        )
