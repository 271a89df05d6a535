"""Every name both sides of a Temporal call agree on comes from ``contracts`` (docs/architecture.md
"Temporal conventions"): registered activities and workflow handlers are members of the enums, every
member is registered, and no module spells a remote name as a string literal."""

from __future__ import annotations

import ast
from enum import StrEnum
from pathlib import Path

from activities.config import ActivityConfig
from contracts.temporal_names import (
    ActivityName,
    CeilingMessage,
    CoordinatorMessage,
    ModelJobMessage,
    QueueMessage,
    RunMessage,
    TeamMessage,
    WorkflowType,
)
from worker import WORKFLOWS, activities_for, host_activities

ROOT = Path(__file__).resolve().parents[2]

MESSAGES: dict[WorkflowType, type[StrEnum] | None] = {
    WorkflowType.SPECIALIST_RUN: RunMessage,
    WorkflowType.MODEL_JOB: ModelJobMessage,
    WorkflowType.MODEL_CHECK: None,
    WorkflowType.MODEL_CEILING: CeilingMessage,
    WorkflowType.WORKTREE_PRUNE: None,
    WorkflowType.RESEARCH_TEAM: TeamMessage,
    WorkflowType.RESEARCH_COORDINATOR: CoordinatorMessage,
    WorkflowType.WORK_QUEUE: QueueMessage,
    WorkflowType.CASE_SWEEP: None,
    WorkflowType.INTAKE_SWEEP: None,
}

REMOTE_CALLS = {
    "execute_activity",
    "start_activity",
    "execute_local_activity",
    "start_local_activity",
    "execute_child_workflow",
    "start_child_workflow",
    "start_workflow",
    "execute_workflow",
    "signal",
    "query",
    "execute_update",
    "start_update",
    "execute_update_with_start_workflow",
    "start_update_with_start_workflow",
    "for_keyword",
}
NAMED_DECORATORS = {"defn", "signal", "query", "update"}


def test_every_registered_activity_is_named_by_an_activity_name(tmp_path: Path) -> None:
    config = ActivityConfig(database_url=f"sqlite:///{tmp_path / 'store.db'}")
    names = [
        getattr(fn, "__temporal_activity_definition").name
        for fn in [*activities_for(config), *host_activities(config)]
    ]
    assert sorted(names) == sorted(ActivityName)  # each once, and none the enum lacks
    assert [name for name in names if not isinstance(name, ActivityName)] == []


def test_every_workflow_registers_its_type_and_handlers_from_its_enums() -> None:
    assert {getattr(cls, "__temporal_workflow_definition").name for cls in WORKFLOWS} == set(WorkflowType)
    for cls in WORKFLOWS:
        definition = getattr(cls, "__temporal_workflow_definition")
        assert isinstance(definition.name, WorkflowType), cls
        handlers = [
            handler.name
            for handler in [
                *definition.signals.values(),
                *definition.queries.values(),
                *definition.updates.values(),
            ]
        ]
        messages = MESSAGES[definition.name]
        if messages is None:
            assert handlers == [], cls
            continue
        assert all(isinstance(name, messages) for name in handlers), (cls, handlers)
        assert sorted(handlers) == sorted(messages), cls


def _literal_names(path: Path) -> list[str]:
    """Where ``path`` names a remote thing (activity, workflow, signal, update, query, search
    attribute) with a string literal."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        call = node.func.attr
        first = node.args[0] if node.args else None
        if call in REMOTE_CALLS and isinstance(first, ast.Constant) and isinstance(first.value, str):
            found.append(f"{path.name}:{node.lineno} {call}({first.value!r})")
        for keyword in node.keywords:
            literal = isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str)
            named = keyword.arg == "start_signal" or (call in NAMED_DECORATORS and keyword.arg == "name")
            if literal and named:
                found.append(f"{path.name}:{node.lineno} {call}({keyword.arg}=...)")
    return found


def test_no_module_names_a_remote_thing_with_a_string_literal() -> None:
    found = []
    for package in ("workflows", "activities", "control", "worker", "infra"):
        for path in sorted((ROOT / package).rglob("*.py")):
            found += _literal_names(path)
    assert found == []
