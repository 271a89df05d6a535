"""Each workflow's versioning behaviour, declared only for a worker that runs with worker versioning
(docs/architecture.md "Safe upgrades").

The server refuses a workflow task that names a behaviour from a worker polling without a
deployment version, so a behaviour is declared only once :func:`use_worker_versioning` was called —
by a versioned worker process, before it builds its workers. Workflow modules import this module
passed through the sandbox, so the setting they read when the sandbox re-imports them is this
process's one; it never changes during a process's lifetime.
"""

from __future__ import annotations

from temporalio.common import VersioningBehavior

_versioned = False


def use_worker_versioning() -> None:
    """Declare the workflows' behaviours from now on (this process polls as a deployment version)."""
    global _versioned
    _versioned = True


def versioning_behavior(behavior: VersioningBehavior) -> VersioningBehavior:
    """``behavior`` for a versioned worker, else unspecified."""
    return behavior if _versioned else VersioningBehavior.UNSPECIFIED


def pinned() -> VersioningBehavior:
    """Stays on the version it started on (a run and what it starts)."""
    return versioning_behavior(VersioningBehavior.PINNED)


def auto_upgrade() -> VersioningBehavior:
    """Moves to the deployment's current version at its next workflow task (a long-lived workflow)."""
    return versioning_behavior(VersioningBehavior.AUTO_UPGRADE)
