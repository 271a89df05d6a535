"""The automation policy in Mission Control (docs/architecture.md "Mission Control"): shown with its
history and edited by the signed-in person, whose session key signs the new policy record (its
delegation is recorded first, so the record verifies back to the person's own key). The store reads
the write back; anything but the policy just written — another write landed in between, the write
was lost or changed — is an error the page shows with the form still holding what the person entered,
never a success.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from pydantic import ValidationError

from contracts.enums import AutomationMode, Tier
from contracts.errors import InvalidInput
from contracts.policy import AUTOMATIC_TIERS, AutomationPolicy

if TYPE_CHECKING:
    from control.web.console import Deployment
    from control.web.sessions import Session

MODES: Final = tuple(mode.value for mode in AutomationMode)
CEILINGS: Final = tuple(tier.value for tier in Tier if tier in AUTOMATIC_TIERS)
HISTORY: Final = 20


def policy(deployment: Deployment) -> dict[str, Any]:
    """The policy in force (the built-in default when none was set) and the last writes."""
    from control import views

    store = deployment.store()
    if store is None:
        return {"current": views.policy_json(deployment.default_policy()), "history": []}
    with store:
        current = store.get_policy()
        history = store.policy_history(HISTORY)
    return {"current": views.policy_json(current), "history": [views.policy_json(r) for r in history]}


def save(deployment: Deployment, session: Session, mode: str, ceiling: str) -> dict[str, Any]:
    """Set the policy to ``mode`` and ``ceiling`` as the person; returns it as read back. Raises
    ``invalid_policy``, the signer refusals, ``configuration_unverified`` or
    ``policy_write_unverified`` (the read-back differs)."""
    from contracts.identity import Signer
    from control import views

    try:
        wanted = AutomationPolicy.model_validate({"mode": mode, "maximum_automatic_tier": ceiling})
    except ValidationError:
        raise InvalidInput(
            "invalid_policy",
            f"the mode is one of {', '.join(MODES)} and the ceiling one of {', '.join(CEILINGS)}",
        ) from None
    store = deployment.store()
    if store is None:
        raise InvalidInput("no_store", "this deployment has no store yet: register an actor first")
    with store:
        store.record_session(session.delegation)
        written = store.set_policy(wanted, Signer(session.actor, session.key))
    return views.policy_json(written)
