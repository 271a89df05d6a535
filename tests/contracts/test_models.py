"""Model ids and the model selection contract."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from contracts.enums import FallbackMode
from contracts.models import ModelSelection, split_model_id


def test_model_id_splits_at_the_first_colon() -> None:
    assert split_model_id("openai:llama3:8b") == ("openai", "llama3:8b")


@pytest.mark.parametrize("bad", ["", "openai", ":gpt", "openai:", "open ai:gpt", "openai:gpt 4"])
def test_malformed_model_ids_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="model"):
        split_model_id(bad)


def test_ordered_selection_keeps_fallback_order() -> None:
    selection = ModelSelection(
        primary="replay:demo",
        fallbacks=["openai:gpt-x", "anthropic:claude-y"],
        fallback_mode=FallbackMode.ORDERED,
    )
    assert selection.fallbacks == ["openai:gpt-x", "anthropic:claude-y"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"primary": "a:x", "fallbacks": ["a:x"], "fallback_mode": "ordered"}, "must all differ"),
        ({"primary": "a:x", "fallbacks": ["b:y"]}, "primary_only"),
        ({"primary": "a:x", "fallback_mode": "ordered"}, "at least one"),
    ],
)
def test_inconsistent_selections_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ModelSelection.model_validate(kwargs)


def test_the_output_schema_is_computed_once_and_every_caller_gets_its_own_copy() -> None:
    from contracts.output import SpecialistOutput, output_json_schema, output_schema_text

    first = output_json_schema()
    first["title"] = "changed by a caller"
    assert output_json_schema()["title"] == SpecialistOutput.model_json_schema()["title"]
    assert output_schema_text() is output_schema_text()
