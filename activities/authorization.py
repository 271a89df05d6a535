"""Activity ``authorize_action``: may this actor take this action on this run?

An actor must be a registered human (DESIGN.md "Temporal conventions"). Enqueue may be requested
without an actor; every other action names one.
"""

from __future__ import annotations

from temporalio import activity

from activities.config import ActivityConfig
from activities.logs import run_logger
from activities.store_access import SharedStore
from contracts.runs import AuthorizeRequest, AuthorizeResult

_ACTOR_OPTIONAL = frozenset({"enqueue"})


class AuthorizationActivities:
    """``authorize_action`` bound to the store."""

    def __init__(self, config: ActivityConfig, store: SharedStore) -> None:
        self._config = config
        self._store = store

    @activity.defn(name="authorize_action")
    def authorize_action(self, request: AuthorizeRequest) -> AuthorizeResult:
        """Allowed when the actor is registered (or optional and absent); else a refusal code."""
        result = self._decide(request)
        run_logger(request.run_id, activity="authorize_action").info(
            "action_authorised" if result.allowed else "action_refused",
            action=request.action,
            actor=request.actor,
            code=result.code,
        )
        return result

    def _decide(self, request: AuthorizeRequest) -> AuthorizeResult:
        if request.actor is None:
            if request.action in _ACTOR_OPTIONAL:
                return AuthorizeResult(allowed=True)
            return AuthorizeResult(
                allowed=False, code="actor_required", message=f"{request.action} needs --actor ID"
            )
        known = self._store.get().actor_exists(request.actor)
        if not known:
            return AuthorizeResult(
                allowed=False,
                code="unknown_actor",
                message=f"actor {request.actor!r} is not registered",
            )
        return AuthorizeResult(allowed=True)
