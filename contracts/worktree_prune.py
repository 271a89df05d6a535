"""Worktree housekeeping: listing preserved attempt worktrees and pruning those of a finished run.

A worktree run keeps every attempt's worktree (``<state>/worktrees/<run>/attempt-<n>``) and its
sibling evidence directory (``attempt-<n>.evidence``) after the run ends — a failed one is preserved
for the operator, never overwritten. ``specialists worktrees`` lists them; ``specialists worktrees
prune RUN --actor A`` removes a run's attempts once the run is finished, through the ``WorktreePrune``
workflow: it authorises the action (a proof of the action token bound to the run id and
:data:`PRUNE_ACTION`), checks the run's status, and has the worker on each host that holds the run's
worktrees remove them (activity ``prune_worktrees`` on that host's task queue, see
:func:`host_task_queue`).

These models cross the Temporal boundary (workflow and activity in/out), so new fields get defaults.
Pure: no I/O.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from contracts.proofs import ActionProof
from contracts.runs import RunStatus
from contracts.temporal_names import WorkflowType

PRUNE_WORKFLOW: Final = WorkflowType.WORKTREE_PRUNE
PRUNE_ACTION: Final = "prune_worktrees"
"""The action a prune's proof is bound to (with the run id; no digest)."""
PRUNE_WORKFLOW_ID_PREFIX: Final = "prune:"
HOST_QUEUE_SEPARATOR: Final = "@"
DEFAULT_HOST_WAIT_SECONDS: Final = 120
"""How long the prune waits for a host's worker to pick up ``prune_worktrees`` before it reports
the host as unreachable."""

UNKNOWN_STATUS: Final = "unknown"
"""The run state shown when neither Temporal nor the projection knows the run."""
TERMINATED_STATUS: Final = "terminated"
"""The run state shown when Temporal closed the run's workflow (terminated, timed out) before it
reached a final status: nothing can use its worktrees any more."""

FINISHED_STATUSES: Final = frozenset(
    {
        RunStatus.RECOMMENDED.value,
        RunStatus.ACCEPTED.value,
        RunStatus.REJECTED.value,
        RunStatus.CANCELLED.value,
        RunStatus.FAILED.value,
        RunStatus.EXPIRED.value,
        TERMINATED_STATUS,
    }
)
"""Run states in which a run's worktrees may be pruned: the terminal statuses (``accepted``,
``rejected``, ``cancelled``, ``failed``, ``expired``; ``recommended`` too, though such a run never
has worktrees), and a workflow Temporal closed without one."""


def prune_workflow_id(run_id: str) -> str:
    """The ``WorktreePrune`` workflow id of ``run_id`` (``prune:SOR-…``)."""
    return f"{PRUNE_WORKFLOW_ID_PREFIX}{run_id}"


def host_task_queue(task_queue: str, host: str) -> str:
    """The task queue only the workers on ``host`` poll: ``<task queue>@<host>``."""
    return f"{task_queue}{HOST_QUEUE_SEPARATOR}{host}"


def host_of_worker(worker: str) -> str | None:
    """The host part of a worker identity ``host:pid`` (as worktree claims record it), or ``None``."""
    host, separator, pid = worker.rpartition(":")
    if not separator or not host or not pid.isdigit():
        return None
    return host


def is_finished(status: str) -> bool:
    """True when a run in ``status`` can no longer use its worktrees (see :data:`FINISHED_STATUSES`)."""
    return status in FINISHED_STATUSES


class AttemptState(BaseModel):
    """One attempt's worktree as found on this host: under ``<state>/worktrees/<run_id>/``, or in the
    bookkeeping of a source repository (``git worktree list``).

    ``exists``: the worktree directory is there. ``git_known``: a source repository still lists it
    (``None``: no repository could be asked — none found from its ``.git`` file nor registered).
    ``locked``: git holds a lock on it (``None`` when git does not know it). ``repository``: the
    source repository that lists it (else the one its ``.git`` file names).
    """

    model_config = ConfigDict(frozen=True)

    run_id: str
    attempt: int = Field(ge=1)
    worktree: str
    exists: bool
    probe: int | None = None
    """The probe (its index in the run) this attempt ran, under ``<run_id>-probe-<n>/``; None for
    the run's own execution attempts (docs/architecture.md "Probe requests")."""
    evidence_dir: str
    evidence_exists: bool
    repository: str | None = None
    git_known: bool | None = None
    locked: bool | None = None
    lock_reason: str | None = None


class PruneRequest(BaseModel):
    """Input of the ``WorktreePrune`` workflow: remove ``run_id``'s worktrees for ``actor``.

    ``proof`` is a proof of the action token bound to ``run_id`` and :data:`PRUNE_ACTION`.
    ``host_wait_seconds`` bounds how long a host's worker may take to pick the removal up.
    """

    model_config = ConfigDict(frozen=True)

    run_id: str
    actor: str | None
    proof: ActionProof | None = None
    host_wait_seconds: int = Field(default=DEFAULT_HOST_WAIT_SECONDS, ge=1, le=3600)


class PruneTargetRequest(BaseModel):
    """Input of the ``check_prune_target`` activity."""

    model_config = ConfigDict(frozen=True)

    run_id: str


class PruneTarget(BaseModel):
    """Result of ``check_prune_target``: the run's state and where its worktrees are.

    ``status``: the run's status from its Temporal workflow, else the projection's, else
    :data:`UNKNOWN_STATUS`; ``source``: ``temporal``, ``projection`` or ``none``. ``hosts``: the hosts
    recorded for the run's attempts (worktree claims, the execution's location), sorted;
    ``worker_host``: the host of the worker that answered (used when none is recorded).
    ``repositories``: source repositories the run's worktrees may belong to (its execution's).
    """

    model_config = ConfigDict(frozen=True)

    run_id: str
    status: str
    source: str
    hosts: list[str] = []
    worker_host: str
    repositories: list[str] = []


class PruneWorktreesRequest(BaseModel):
    """Input of the ``prune_worktrees`` activity (run on the host's task queue): remove every
    attempt of ``run_id`` in this worker's state directory. ``repositories``: source repositories to
    ask besides those found from the worktrees' ``.git`` files and the allow-listed ones."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    repositories: list[str] = []


class PrunedAttempt(BaseModel):
    """What was removed of one attempt: the worktree directory, git's bookkeeping of it (after
    unlocking it when ``was_locked``) and the evidence directory."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    attempt: int = Field(ge=1)
    worktree: str
    host: str
    probe: int | None = None
    repository: str | None = None
    existed: bool
    was_known_to_git: bool = False
    was_locked: bool = False
    removed_worktree: bool = False
    removed_from_git: bool = False
    removed_evidence: bool = False


class PruneWorktreesResult(BaseModel):
    """Result of ``prune_worktrees``: the host it ran on and each attempt it removed."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    host: str
    pruned: list[PrunedAttempt] = []


class PruneResult(BaseModel):
    """Result of the ``WorktreePrune`` workflow.

    ``refused``: nothing was removed; ``code``/``message`` say why (an authorisation refusal,
    ``unknown_run`` or ``run_not_finished``). Otherwise ``pruned`` lists the removed attempts,
    ``hosts`` the hosts asked and ``unreachable_hosts`` those whose worker did not answer in time.
    """

    model_config = ConfigDict(frozen=True)

    run_id: str
    refused: bool = False
    code: str | None = None
    message: str | None = None
    status: str = UNKNOWN_STATUS
    hosts: list[str] = []
    unreachable_hosts: list[str] = []
    pruned: list[PrunedAttempt] = []
