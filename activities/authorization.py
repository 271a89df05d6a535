"""Activity ``authorize_action``: may this actor take this action on this run?

An actor must be a registered human (DESIGN.md "Temporal conventions"). Enqueue may be requested
without an actor; every other action names one.
"""

from __future__ import annotations

from temporalio import activity

from activities.config import ActivityConfig
from contracts.runs import AuthorizeRequest, AuthorizeResult
from store.database import open_store

_ACTOR_OPTIONAL = frozenset({"enqueue"})


class AuthorizationActivities:
    """``authorize_action`` bound to the store."""

    def __init__(self, config: ActivityConfig) -> None:
        self._config = config

    @activity.defn(name="authorize_action")
    def authorize_action(self, request: AuthorizeRequest) -> AuthorizeResult:
        """Allowed when the actor is registered (or optional and absent); else a refusal code."""
        if request.actor is None:
            if request.action in _ACTOR_OPTIONAL:
                return AuthorizeResult(allowed=True)
            return AuthorizeResult(
                allowed=False, code="actor_required", message=f"{request.action} needs --actor ID"
            )
        with open_store(self._config.database_url) as store:
            known = store.actor_exists(request.actor)
        if not known:
            return AuthorizeResult(
                allowed=False,
                code="unknown_actor",
                message=f"actor {request.actor!r} is not registered",
            )
        return AuthorizeResult(allowed=True)
