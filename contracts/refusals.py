"""Why a protected action was refused, defined once (docs/architecture.md "Temporal conventions"):
the authorisation step, the workflows' update validators and handlers, and the CLI that turns a
refusal into its exit code use these codes.

A refusal travels as ``ActionResult.code`` / ``TeamActionResult.code``, as the ``type`` of the
``ApplicationError`` an update validator raises, as ``data["code"]`` of an ``action_refused`` audit
event, and as the error type of a run or team whose protected start was refused. Values never
change: the JSON contract and recorded histories carry them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class RefusalCode(StrEnum):
    """The code of a refused protected action."""

    # The authorisation step (workflows.authorization, activity authorize_action).
    ACTOR_REQUIRED = "actor_required"
    UNKNOWN_ACTOR = "unknown_actor"
    ACTION_TOKEN_NOT_CONFIGURED = "action_token_not_configured"
    """Kept for recorded histories: before per-person keys, a worker without the token refused so."""
    ACTOR_DEACTIVATED = "actor_deactivated"
    ACTOR_KEY_UNKNOWN = "actor_key_unknown"
    """The proof is signed with a key the store knows for nobody."""
    ACTOR_KEY_RETIRED = "actor_key_retired"
    """The proof is signed with one of the actor's earlier keys (rotated out)."""
    CONFIGURATION_UNVERIFIED = "configuration_unverified"
    """A configuration record the action depends on (here: the actor) carries no valid signature."""
    TRUST_ROOT_NOT_CONFIGURED = "trust_root_not_configured"
    """The worker can verify no configuration: neither a pinned trust root nor the action token."""
    PROOF_MISSING = "proof_missing"
    PROOF_INVALID = "proof_invalid"
    PROOF_EXPIRED = "proof_expired"
    PROOF_REPLAYED = "proof_replayed"
    SESSION_EXPIRED = "session_expired"
    """A Mission Control session's delegation is over: the person signs in again."""
    AUTHORIZATION_UNAVAILABLE = "authorization_unavailable"
    FORBIDDEN = "forbidden"
    """A refusal that named no code (never expected from the authorisation activity)."""
    ACTION_REFUSED = "action_refused"
    """A refused protected start whose refusal named no code."""
    # A run's state does not allow the action.
    NOT_READY = "not_ready"
    NOT_AWAITING_DECISION = "not_awaiting_decision"
    NOT_AWAITING_APPROVAL = "not_awaiting_approval"
    STALE_CONTRACT_DIGEST = "stale_contract_digest"
    NOT_APPROVED = "not_approved"
    ALREADY_EXECUTING = "already_executing"
    ALREADY_FINISHED = "already_finished"
    # A probe approval (docs/architecture.md "Probe requests"); a decide while a probe runs.
    UNKNOWN_PROBE = "unknown_probe"
    STALE_PROBE_DIGEST = "stale_probe_digest"
    PROBE_ALREADY_APPROVED = "probe_already_approved"
    PROBE_NO_REPOSITORY = "probe_no_repository"
    PROBE_RUNNING = "probe_running"
    # A team's state does not allow the action.
    CANCELLING = "cancelling"
    ALREADY_CANCELLING = "already_cancelling"
    NOT_AWAITING_ADJUDICATION = "not_awaiting_adjudication"
    WRONG_STAGE = "wrong_stage"
    OUTCOME_NOT_ALLOWED = "outcome_not_allowed"
    # The research coordinator's admission.
    TEAM_LIMIT_REACHED = "team_limit_reached"
    TEAM_FINISHED = "team_finished"
    INVALID_TEAM_ID = "invalid_team_id"
    # A worktree prune.
    UNKNOWN_RUN = "unknown_run"
    RUN_NOT_FINISHED = "run_not_finished"


AUTHORISATION_REFUSALS: Final = frozenset(
    {
        RefusalCode.ACTOR_REQUIRED,
        RefusalCode.UNKNOWN_ACTOR,
        RefusalCode.ACTION_TOKEN_NOT_CONFIGURED,
        RefusalCode.ACTOR_DEACTIVATED,
        RefusalCode.ACTOR_KEY_UNKNOWN,
        RefusalCode.ACTOR_KEY_RETIRED,
        RefusalCode.CONFIGURATION_UNVERIFIED,
        RefusalCode.TRUST_ROOT_NOT_CONFIGURED,
        RefusalCode.PROOF_MISSING,
        RefusalCode.PROOF_INVALID,
        RefusalCode.PROOF_EXPIRED,
        RefusalCode.PROOF_REPLAYED,
        RefusalCode.SESSION_EXPIRED,
    }
)
"""The refusals of the authorisation activity itself (who the actor is, and the proof)."""
