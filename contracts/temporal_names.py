"""The names both sides of a Temporal call must agree on, defined once (docs/architecture.md
"Temporal conventions"): a workflow registers under its :class:`WorkflowType`, an activity under its
:class:`ActivityName`, a signal, update or query under its workflow's message enum, and every caller
names the same member, so no string literal names a remote thing twice. Search-attribute names are in
:mod:`contracts.search_attributes`.

Values never change: recorded histories and running workflows carry them.
"""

from __future__ import annotations

from enum import StrEnum


class WorkflowType(StrEnum):
    """Registered workflow type names (changing one orphans every running workflow of that type)."""

    SPECIALIST_RUN = "SpecialistRun"
    MODEL_JOB = "ModelJob"
    MODEL_CHECK = "ModelCheck"
    MODEL_CEILING = "ModelCeiling"
    WORKTREE_PRUNE = "WorktreePrune"
    RESEARCH_TEAM = "ResearchTeam"
    RESEARCH_COORDINATOR = "ResearchCoordinator"
    WORK_QUEUE = "WorkQueue"
    CASE_SWEEP = "CaseSweep"
    INTAKE_SWEEP = "IntakeSweep"


class ActivityName(StrEnum):
    """Registered activity names: ``@activity.defn(name=...)`` and every ``execute_activity`` use these
    (a recorded history names the activity it scheduled, so changing one breaks replay)."""

    CAPTURE_CONTRACT = "capture_contract"
    PROJECT_RUN = "project_run"
    AUTHORIZE_ACTION = "authorize_action"
    EXECUTE_WORKTREE_ATTEMPT = "execute_worktree_attempt"
    CALL_MODEL = "call_model"
    CHECK_MODEL = "check_model"
    REQUEST_MODEL_LEASE = "request_model_lease"
    BUILD_CONTEXT_PACK = "build_context_pack"
    STORE_JOB_OUTPUT = "store_job_output"
    CHECK_PRUNE_TARGET = "check_prune_target"
    PRUNE_WORKTREES = "prune_worktrees"
    CAPTURE_TEAM = "capture_team"
    CHECK_TEAM_INPUTS = "check_team_inputs"
    REQUEST_TEAM_ADMISSION = "request_team_admission"
    REQUEST_STAGE_ADVANCE = "request_stage_advance"
    FIND_CLOSED_TEAMS = "find_closed_teams"
    READ_RUN_PROGRESS = "read_run_progress"
    CHECK_QUEUE_VERDICT = "check_queue_verdict"
    RUN_PROBE = "run_probe"
    SHIP_ITEM = "ship_item"
    READ_BASE_HEADS = "read_base_heads"
    CAPTURE_SPEC = "capture_spec"
    SCAN_REPOSITORY = "scan_repository"
    LIST_SWEEP_CASES = "list_sweep_cases"
    ATTACH_CASE_NOTES = "attach_case_notes"
    LIST_INTAKE_REPOSITORIES = "list_intake_repositories"
    REQUEST_INTAKE_SCAN = "request_intake_scan"
    CHECK_INTAKE_SWEEP = "check_intake_sweep"
    PREPARE_BEYOND_SCAN = "prepare_beyond_scan"
    CHECK_BEYOND_QUOTES = "check_beyond_quotes"
    ARCHIVE_QUEUE_ITEMS = "archive_queue_items"
    FIND_ARCHIVED_QUEUE_ITEMS = "find_archived_queue_items"


# The signals, updates and queries each workflow handles, one enum per workflow: the handler's
# ``name=`` and every client's ``signal``/``execute_update``/``query`` name the same member.


class RunMessage(StrEnum):
    """``SpecialistRun``: queries ``view`` and ``status``; updates ``enqueue``, ``decide``,
    ``approve``, ``execute``; signals ``cancel``, ``queue_verdict`` and ``queue_item_status`` (from the
    goal queue)."""

    VIEW = "view"
    STATUS = "status"
    ENQUEUE = "enqueue"
    DECIDE = "decide"
    APPROVE = "approve"
    EXECUTE = "execute"
    CANCEL = "cancel"
    QUEUE_VERDICT = "queue_verdict"
    QUEUE_ITEM_STATUS = "queue_item_status"
    APPROVE_PROBE = "approve_probe"


class TeamMessage(StrEnum):
    """``ResearchTeam``: query ``view``; update ``adjudicate``; signals ``cancel`` and
    ``advance_granted`` (from the coordinator)."""

    VIEW = "view"
    ADJUDICATE = "adjudicate"
    CANCEL = "cancel"
    ADVANCE_GRANTED = "advance_granted"


class CoordinatorMessage(StrEnum):
    """``ResearchCoordinator``: update ``admit``; signals ``request_advance`` and ``team_finished``;
    query ``state``."""

    ADMIT = "admit"
    REQUEST_ADVANCE = "request_advance"
    TEAM_FINISHED = "team_finished"
    STATE = "state"


class QueueMessage(StrEnum):
    """``WorkQueue``: updates ``add``, ``update``, ``approve``, ``reject``, ``dispatch``, ``done``,
    ``park``, ``release``, ``reopen``, ``capacity``, ``autopilot``; query ``view``."""

    ADD = "add"
    UPDATE = "update"
    APPROVE = "approve"
    REJECT = "reject"
    DISPATCH = "dispatch"
    DONE = "done"
    PARK = "park"
    RELEASE = "release"
    REOPEN = "reopen"
    CAPACITY = "capacity"
    AUTOPILOT = "autopilot"
    RECOVERY_DELAY = "recovery_delay"
    ESCALATION_MODEL = "escalation_model"
    ROUTE_NEXT = "route_next"
    INTAKE = "intake"
    RUN_PROGRESSED = "run_progressed"
    VIEW = "view"
    SHIP = "ship"
    SPEC = "spec"


class CeilingMessage(StrEnum):
    """``ModelCeiling``: update ``try_acquire``; signals ``acquire`` and ``release``; query ``state``."""

    TRY_ACQUIRE = "try_acquire"
    ACQUIRE = "acquire"
    RELEASE = "release"
    STATE = "state"


class ModelJobMessage(StrEnum):
    """``ModelJob``: signal ``lease_granted`` (from the model's ceiling)."""

    LEASE_GRANTED = "lease_granted"
