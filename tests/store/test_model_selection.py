"""The model selection: none until selected, a history newest first."""

from __future__ import annotations

import datetime as dt

import pytest

from contracts.enums import FallbackMode
from contracts.errors import InvalidInput, NotFound
from contracts.identity import Signer
from contracts.models import ModelSelection
from store import Store
from tests.identity import signer as actor_signer

ORDERED = ModelSelection(
    primary="anthropic:claude-sonnet",
    fallbacks=["openai:gpt-4.1", "ollama:llama3:8b"],
    fallback_mode=FallbackMode.ORDERED,
    support="ollama:qwen2.5:7b",
)


def test_no_selection_until_models_are_selected(store: Store) -> None:
    assert store.get_model_selection() is None
    assert store.model_selection_history() == []


def test_selection_round_trips_every_field(store: Store, signer: Signer) -> None:
    record = store.select_models(ORDERED, signer)
    assert record.selection == ORDERED
    assert record.selection.fallbacks == ["openai:gpt-4.1", "ollama:llama3:8b"]
    assert record.selected_by == signer.actor_id
    assert record.selected_at.utcoffset() == dt.timedelta(0)
    assert store.get_model_selection() == record


def test_selection_history_is_newest_first(store: Store, signer: Signer) -> None:
    records = [
        store.select_models(ModelSelection(primary=f"provider:model-{number}"), signer) for number in range(3)
    ]
    assert store.get_model_selection() == records[-1]
    assert store.model_selection_history() == records[::-1]
    assert store.model_selection_history(limit=2) == records[:0:-1]


def test_selection_by_unknown_actor_is_refused_and_nothing_written(store: Store, signer: Signer) -> None:
    with pytest.raises(NotFound) as raised:
        store.select_models(ORDERED, actor_signer("mallory"))
    assert raised.value.code == "unknown_actor"
    assert store.get_model_selection() is None


@pytest.mark.parametrize("limit", [0, -1])
def test_history_limit_below_one_is_invalid_input(store: Store, limit: int) -> None:
    with pytest.raises(InvalidInput):
        store.model_selection_history(limit)
