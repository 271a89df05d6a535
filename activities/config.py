"""What activities need from the deployment, passed in by the worker (never read at import time)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from contracts.identity import TrustAnchor
from contracts.model_classes import DEFAULT_CLASS_CEILINGS, ModelClass

DEFAULT_READ_ONLY_BUDGET_SECONDS = 30 * 60
DEFAULT_EDIT_BUDGET_SECONDS = 60 * 60
DEFAULT_APPROVAL_WINDOW_SECONDS = 7 * 24 * 3600
DEFAULT_TEAM_DEADLINE_SECONDS = 24 * 3600
DEFAULT_TEAM_CYCLE_SECONDS = 60
DEFAULT_COORDINATOR_CONTINUE_AS_NEW_EVENTS = 1_000
DEFAULT_RECORDINGS_DIR = Path(__file__).resolve().parent.parent / "examples" / "recordings"


@dataclass(frozen=True)
class ActivityConfig:
    """Deployment settings for activities.

    ``database_url``: the store. ``catalog_path``: the catalog file (``None`` = the installed one).
    ``read_only_budget_seconds`` / ``edit_budget_seconds``: runtime budgets captured into contracts
    (defaults 30 and 60 minutes, docs/architecture.md "Run lifecycle"). ``approval_window_seconds``: how long
    a worktree or pr_ready run waits for approval before it expires (default 7 days).
    ``recordings_dir``: where the ``replay`` provider finds ``<name>.json`` for model id
    ``replay:<name>``. ``action_token``: the deployment's action token, which anchors the chain of
    configuration trust when no ``trust_root`` is pinned (the HMAC on the trust root's key record);
    never logged. ``trust_root``: ``SPECIALISTS_TRUST_ROOT``, the fingerprint of the trust root's
    key; with neither, the worker verifies no actor and refuses every protected action
    (docs/architecture.md "Configuration").
    ``state_dir``: the deployment's state directory, where worktree attempts are made
    (``<state_dir>/worktrees/<run>/attempt-<n>``; ``None``: this worker cannot execute worktree runs).
    ``team_deadline_seconds``: how long a research team may run before it ends ``expired`` (24 h).
    ``team_cycle_seconds``: the research coordinator's cycle (60 s), in which it grants at most 5
    stage advances; ``coordinator_continue_as_new_events``: the history length at which the
    coordinator continues as new (both taken when a coordinator is started).
    ``deployment_secrets``: the deployment's own secrets by origin (the action token, API keys: see
    ``activities.secret_scan.deployment_secrets``), looked for in every context pack and model output;
    never logged. ``class_ceilings``: each model class's in-flight ceiling across workers
    (``SPECIALISTS_CLASS_CEILINGS``; taken when a class's pool is first started).
    """

    database_url: str
    catalog_path: Path | None = None
    read_only_budget_seconds: int = DEFAULT_READ_ONLY_BUDGET_SECONDS
    edit_budget_seconds: int = DEFAULT_EDIT_BUDGET_SECONDS
    approval_window_seconds: int = DEFAULT_APPROVAL_WINDOW_SECONDS
    recordings_dir: Path = DEFAULT_RECORDINGS_DIR
    action_token: bytes | None = field(default=None, repr=False)
    trust_root: str | None = None
    state_dir: Path | None = None
    team_deadline_seconds: int = DEFAULT_TEAM_DEADLINE_SECONDS
    team_cycle_seconds: float = DEFAULT_TEAM_CYCLE_SECONDS
    coordinator_continue_as_new_events: int = DEFAULT_COORDINATOR_CONTINUE_AS_NEW_EVENTS
    deployment_secrets: Mapping[str, str] = field(default_factory=dict, repr=False)
    class_ceilings: Mapping[ModelClass, int] = field(default_factory=lambda: dict(DEFAULT_CLASS_CEILINGS))

    @property
    def trust_anchor(self) -> TrustAnchor:
        """What the store verifies configuration records against."""
        return TrustAnchor(root_fingerprint=self.trust_root, token=self.action_token)
