"""WorkItem bounds: every limit is an error naming the field, never a silent cut."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from contracts.enums import RiskFlag, TaskType
from contracts.work_item import WorkItem


def test_minimal_work_item_gets_documented_defaults() -> None:
    item = WorkItem(title="Slow checkout query")
    assert item.description == ""
    assert item.evidence_refs == []
    assert item.task_type is TaskType.INVESTIGATE
    assert item.repo_alias is None


def test_full_work_item_is_accepted() -> None:
    item = WorkItem.model_validate(
        {
            "title": "Audit a slow query",
            "description": "p95 latency doubled",
            "domain": "database",
            "roles": ["dba"],
            "risk_flags": ["production", "customer_data"],
            "repo_alias": "payments-api",
            "evidence_refs": ["log:db-2026-11-28", "ticket:OPS-12"],
            "task_type": "audit",
        }
    )
    assert item.risk_flags == [RiskFlag.PRODUCTION, RiskFlag.CUSTOMER_DATA]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"title": "x" * 201}, "title"),
        ({"title": "   "}, "title"),
        ({}, "title"),
        ({"title": "t", "description": "d" * 8001}, "description"),
        ({"title": "t", "evidence_refs": [f"log:{i}" for i in range(51)]}, "evidence_refs"),
        ({"title": "t", "evidence_refs": ["no-colon"]}, "evidence_refs"),
        ({"title": "t", "evidence_refs": ["log:has space"]}, "evidence_refs"),
        ({"title": "t", "task_type": "deploy"}, "task_type"),
        ({"title": "t", "risk_flags": ["spicy"]}, "risk_flags"),
        ({"title": "t", "repo_alias": "../etc"}, "repo_alias"),
        ({"title": "t", "roles": ["r" * 65]}, "roles"),
        ({"title": "t", "unexpected": 1}, "unexpected"),
    ],
)
def test_out_of_bounds_or_unknown_fields_are_refused_naming_the_field(
    payload: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as error:
        WorkItem.model_validate(payload)
    assert field in str(error.value)


def test_title_of_exactly_200_characters_is_accepted() -> None:
    assert len(WorkItem(title="x" * 200).title) == 200


@pytest.mark.parametrize(
    ("ref", "said"),
    [
        ("log:\x1b[2J\x1b[31mPWNED\x07", "U+001B at character 5"),
        ("ticket:\u202eevil", "U+202E at character 8"),
        ("doc:zero\u200bwidth", "U+200B at character 9"),
    ],
)
def test_an_evidence_ref_with_a_control_format_or_bidi_character_is_refused_naming_it(
    ref: str, said: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        WorkItem.model_validate({"title": "x", "evidence_refs": ["log:fine", ref]})
    assert "evidence_refs.1" in str(refused.value) and said in str(refused.value)
