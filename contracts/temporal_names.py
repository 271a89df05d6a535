"""The names both sides of a Temporal call must agree on, defined once (docs/architecture.md
"Temporal conventions"): a workflow registers under its :class:`WorkflowType` and every client starts
or signals it by the same member, so no string literal names a remote thing twice."""

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
