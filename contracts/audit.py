"""What a run's or a team's audit trail can say, defined once (docs/architecture.md "Temporal
conventions"): the workflows record :class:`contracts.runs.AuditEvent` of these kinds, and the
projection, the CLI and the tests read them back by the same members.

Values never change: recorded histories, the projection and ``show --json`` carry them.
"""

from __future__ import annotations

from enum import StrEnum


class AuditKind(StrEnum):
    """The ``kind`` of an audit event."""

    # Both workflows.
    STATUS_CHANGED = "status_changed"
    ACTION_REFUSED = "action_refused"
    CANCEL_REQUESTED = "cancel_requested"
    STEP_FAILED = "step_failed"
    MODEL_JOB_STARTED = "model_job_started"
    MODEL_JOB_COMPLETED = "model_job_completed"
    MODEL_JOB_FAILED = "model_job_failed"
    # SpecialistRun.
    RUN_CREATED = "run_created"
    CONTRACT_CAPTURED = "contract_captured"
    ENQUEUED = "enqueued"
    APPROVED = "approved"
    APPROVAL_WINDOW_EXPIRED = "approval_window_expired"
    EXECUTE_REQUESTED = "execute_requested"
    WORKTREE_EXECUTED = "worktree_executed"
    WORKTREE_FAILED = "worktree_failed"
    DECIDED = "decided"
    MODEL_ATTEMPT = "model_attempt"
    BUDGET_EXHAUSTED = "budget_exhausted"
    # SpecialistRun probe requests (docs/architecture.md "Probe requests").
    PROBES_REQUESTED = "probes_requested"
    PROBE_APPROVED = "probe_approved"
    PROBE_STARTED = "probe_started"
    PROBE_COMPLETED = "probe_completed"
    PROBE_FAILED = "probe_failed"
    # ResearchTeam.
    TEAM_STARTED = "team_started"
    ADMITTED = "admitted"
    ADMISSION_REFUSED = "admission_refused"
    INPUTS_CAPTURED = "inputs_captured"
    INPUTS_CHANGED = "inputs_changed"
    ADVANCE_GRANTED = "advance_granted"
    STAGE_STARTED = "stage_started"
    STAGE_BLOCKED = "stage_blocked"
    STAGE_COMPLETED = "stage_completed"
    JOB_REFUSED = "job_refused"
    MATERIAL_DISAGREEMENT = "material_disagreement"
    LIMITATION_RECORDED = "limitation_recorded"
    ADJUDICATED = "adjudicated"
    DEADLINE_REACHED = "deadline_reached"
    TEAM_COMPLETED = "team_completed"
