"""The model registry: registered openai/anthropic models, built-in replay ids, checked selections."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from contracts.enums import FallbackMode
from contracts.errors import InvalidInput, NotFound, Refused
from contracts.identity import Signer
from contracts.models import ModelRegistration, ModelSelection
from contracts.recordings import RecordingsFile, parse_recordings
from store import Store
from tests.identity import signer as actor_signer

DEMO = Path(__file__).resolve().parents[2] / "examples" / "recordings" / "demo.json"


def _recordings(count: int = 2) -> RecordingsFile:
    """The first ``count`` of the shipped demo recordings, as a file an operator would register."""
    entries = json.loads(DEMO.read_text(encoding="utf-8"))["recordings"][:count]
    return parse_recordings(json.dumps({"recordings": entries}))


GPT = ModelRegistration(
    id="openai:gpt-4.1",
    base_url="https://api.example.com/v1",
    api_key_env="OPENAI_API_KEY",
    timeout_s=120,
    ceiling=2,
)


def test_no_models_are_registered_at_first(store: Store) -> None:
    assert store.list_models() == []


def test_registered_model_round_trips_every_field(store: Store, signer: Signer) -> None:
    record = store.register_model(GPT, signer)
    assert (record.id, record.provider, record.name) == ("openai:gpt-4.1", "openai", "gpt-4.1")
    assert record.base_url == "https://api.example.com/v1"
    assert record.api_key_env == "OPENAI_API_KEY"
    assert (record.timeout_s, record.ceiling) == (120, 2)
    assert record.added_by == signer.actor_id
    assert record.added_at.utcoffset() == dt.timedelta(0)
    assert store.get_model("openai:gpt-4.1") == record
    assert store.list_models() == [record]


def test_defaults_and_names_with_colons(store: Store, signer: Signer) -> None:
    record = store.register_model(ModelRegistration(id="anthropic:claude:sonnet"), signer)
    assert (record.provider, record.name) == ("anthropic", "claude:sonnet")
    assert (record.base_url, record.api_key_env, record.timeout_s, record.ceiling) == (None, None, 60, 5)


def test_models_are_listed_by_id(store: Store, signer: Signer) -> None:
    for model_id in ("openai:b", "anthropic:z", "openai:a"):
        store.register_model(ModelRegistration(id=model_id), signer)
    assert [record.id for record in store.list_models()] == ["anthropic:z", "openai:a", "openai:b"]


def test_duplicate_is_refused_and_keeps_the_first(store: Store, signer: Signer) -> None:
    first = store.register_model(GPT, signer)
    with pytest.raises(Refused) as refused:
        store.register_model(ModelRegistration(id=GPT.id, ceiling=9), signer)
    assert refused.value.code == "duplicate_model"
    assert store.list_models() == [first]


@pytest.mark.parametrize(
    ("registration", "code"),
    [
        (ModelRegistration(id="replay:demo"), "replay_is_built_in"),
        (ModelRegistration(id="ollama:llama3:8b"), "unknown_provider"),
        (ModelRegistration(id="slow:demo"), "unknown_provider"),
        (ModelRegistration(id="openai:x", base_url="ftp://host/v1"), "invalid_base_url"),
        (ModelRegistration(id="openai:x", base_url="api.example.com/v1"), "invalid_base_url"),
        (ModelRegistration(id="openai:x", base_url="https://user:secret@host/v1"), "invalid_base_url"),
        (ModelRegistration(id="openai:x", base_url="https://user@host/v1"), "invalid_base_url"),
        (ModelRegistration(id="openai:x", base_url="https://host/v1?key=secret"), "invalid_base_url"),
        (ModelRegistration(id="openai:x", base_url="https:///v1"), "invalid_base_url"),
        (ModelRegistration(id="openai:x", base_url="https://host:99999/v1"), "invalid_base_url"),
        (ModelRegistration(id="openai:x", base_url="https://ho st/v1"), "invalid_base_url"),
        (ModelRegistration(id="openai:x", api_key_env="openai_key"), "invalid_api_key_env"),
        (ModelRegistration(id="openai:x", api_key_env="1KEY"), "invalid_api_key_env"),
        (ModelRegistration(id="openai:x", api_key_env="K" * 65), "invalid_api_key_env"),
        (ModelRegistration(id="openai:x", api_key_env="sk-abc123"), "invalid_api_key_env"),
        # Only variables meant to be sent to a model: *_API_KEY, never the deployment's own settings.
        (ModelRegistration(id="openai:x", api_key_env="SPECIALISTS_ACTION_TOKEN"), "invalid_api_key_env"),
        (ModelRegistration(id="openai:x", api_key_env="SPECIALISTS_API_KEY"), "invalid_api_key_env"),
        (ModelRegistration(id="openai:x", api_key_env="AWS_SECRET_ACCESS_KEY"), "invalid_api_key_env"),
        (ModelRegistration(id="openai:x", api_key_env="DATABASE_URL"), "invalid_api_key_env"),
        (ModelRegistration(id="openai:x", api_key_env="A" * 57 + "_API_KEY"), "invalid_api_key_env"),
    ],
)
def test_invalid_registration_writes_nothing(
    store: Store, signer: Signer, registration: ModelRegistration, code: str
) -> None:
    with pytest.raises(InvalidInput) as invalid:
        store.register_model(registration, signer)
    assert invalid.value.code == code
    assert "secret" not in invalid.value.message
    assert store.list_models() == []


def test_base_urls_that_are_accepted(store: Store, signer: Signer) -> None:
    for number, url in enumerate(
        ["http://127.0.0.1:8080/v1", "https://api.anthropic.com", "http://[::1]:1/"]
    ):
        store.register_model(ModelRegistration(id=f"openai:m{number}", base_url=url), signer)
    assert len(store.list_models()) == 3


@pytest.mark.parametrize("field", [{"timeout_s": 0}, {"timeout_s": 601}, {"ceiling": 0}, {"ceiling": 1001}])
def test_limits_are_bounded(field: dict[str, int]) -> None:
    with pytest.raises(ValidationError):
        ModelRegistration(id="openai:x", **field)  # type: ignore[arg-type]


def test_unknown_actor_writes_nothing(store: Store, signer: Signer) -> None:
    with pytest.raises(NotFound) as not_found:
        store.register_model(GPT, actor_signer("mallory"))
    assert not_found.value.code == "unknown_actor"
    assert store.list_models() == []


def test_unknown_model_is_not_found(store: Store, signer: Signer) -> None:
    with pytest.raises(NotFound) as not_found:
        store.get_model("openai:missing")
    assert not_found.value.code == "unknown_model"
    with pytest.raises(NotFound):
        store.get_model("replay:demo")  # built in, not registered


def test_model_availability(store: Store, signer: Signer) -> None:
    store.register_model(GPT, signer)
    assert store.model_available("replay:demo")
    assert not store.model_available("replay:anything")  # no recordings registered for it
    assert store.model_available("openai:gpt-4.1")
    assert not store.model_available("openai:gpt-5")
    assert not store.model_available("anthropic:gpt-4.1")
    assert not store.model_available("slow:demo")


def test_checked_selection_accepts_replay_and_registered_models(store: Store, signer: Signer) -> None:
    store.register_model(GPT, signer)
    store.register_model(ModelRegistration(id="anthropic:claude"), signer)
    store.register_replay_model("replay:cheap", _recordings(), signer)
    selection = ModelSelection(
        primary="openai:gpt-4.1",
        fallbacks=["anthropic:claude", "replay:demo"],
        fallback_mode=FallbackMode.ORDERED,
        support="replay:cheap",
    )
    record = store.select_registered_models(selection, signer)
    assert record.selection == selection
    assert store.get_model_selection() == record


@pytest.mark.parametrize(
    ("selection", "missing"),
    [
        (ModelSelection(primary="openai:gpt-5"), "openai:gpt-5"),
        (
            ModelSelection(
                primary="replay:demo", fallbacks=["openai:gpt-4.1", "anthropic:nope"], fallback_mode="ordered"
            ),
            "anthropic:nope",
        ),
        (ModelSelection(primary="openai:gpt-4.1", support="capture:demo"), "capture:demo"),
        (ModelSelection(primary="replay:doesnotexist"), "replay:doesnotexist"),
    ],
)
def test_checked_selection_refuses_unknown_models(
    store: Store, signer: Signer, selection: ModelSelection, missing: str
) -> None:
    store.register_model(GPT, signer)
    with pytest.raises(NotFound) as not_found:
        store.select_registered_models(selection, signer)
    assert not_found.value.code == "unknown_model"
    assert repr(missing) in not_found.value.message
    assert store.get_model_selection() is None


def test_checked_selection_needs_a_registered_actor(store: Store, signer: Signer) -> None:
    with pytest.raises(NotFound) as not_found:
        store.select_registered_models(ModelSelection(primary="replay:demo"), actor_signer("mallory"))
    assert not_found.value.code == "unknown_actor"
    assert store.get_model_selection() is None


def test_low_level_selection_still_takes_any_well_formed_id(store: Store, signer: Signer) -> None:
    record = store.select_models(ModelSelection(primary="slow:demo"), signer)
    assert store.get_model_selection() == record


def test_a_deactivated_model_stays_listed_and_cannot_be_selected_or_used_by_a_new_run(
    store: Store, signer: Signer
) -> None:
    store.register_model(GPT, signer)
    selection = store.select_registered_models(ModelSelection(primary=GPT.id), signer)
    record = store.deactivate_model(GPT.id, signer)
    assert (record.active, record.deactivated_by) == (False, signer.actor_id)
    assert record.deactivated_at is not None
    assert store.list_models() == [record]
    assert not store.model_available(GPT.id)
    with pytest.raises(Refused) as selected:
        chain = ModelSelection(primary="replay:demo", fallbacks=[GPT.id], fallback_mode=FallbackMode.ORDERED)
        store.select_registered_models(chain, signer)
    assert selected.value.code == "model_deactivated"
    with pytest.raises(Refused) as captured:
        store.require_usable_models([GPT.id])
    assert captured.value.code == "model_deactivated"
    store.require_usable_models(["replay:demo", None])
    # The selection made before stays what it was (a run captured from it is refused by the check above).
    assert store.get_model_selection() == selection
    with pytest.raises(Refused) as again:
        store.deactivate_model(GPT.id, signer)
    assert again.value.code == "model_deactivated"
    with pytest.raises(NotFound):
        store.deactivate_model("openai:never", signer)
    events = store.configuration_events()
    assert [(e.kind, e.actor, e.record_id) for e in events if e.kind == "model_deactivated"] == [
        ("model_deactivated", signer.actor_id, GPT.id)
    ]


def test_a_replay_model_is_registered_with_its_recordings_in_canonical_form(
    store: Store, signer: Signer
) -> None:
    recordings = _recordings()
    record = store.register_replay_model("replay:ops-drill", recordings, signer)
    assert (record.id, record.provider, record.name) == ("replay:ops-drill", "replay", "ops-drill")
    assert (record.recordings, record.active, record.added_by) == (2, True, signer.actor_id)
    text = store.replay_recordings("replay:ops-drill")
    assert text == recordings.to_json()
    assert record.recordings_sha256 == hashlib.sha256(text.encode()).hexdigest()
    assert store.list_models() == [record]
    assert store.model_available("replay:ops-drill")
    selection = store.select_registered_models(ModelSelection(primary="replay:ops-drill"), signer)
    assert selection.selection.primary == "replay:ops-drill"


def test_replay_recordings_of_an_unregistered_model_are_none(store: Store, signer: Signer) -> None:
    store.register_model(GPT, signer)
    assert store.replay_recordings("replay:nothing") is None
    assert store.replay_recordings(GPT.id) is None  # a model without recordings


@pytest.mark.parametrize(
    ("model_id", "code"),
    [
        ("replay:demo", "replay_is_built_in"),
        ("replay:has space", "invalid_model_id"),
        ("replay:-dash-first", "invalid_model_id"),
        ("openai:gpt", "invalid_model_id"),
        ("replay:" + "x" * 65, "invalid_model_id"),
    ],
)
def test_a_replay_registration_refuses_built_in_and_malformed_ids(
    store: Store, signer: Signer, model_id: str, code: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        store.register_replay_model(model_id, _recordings(), signer)
    assert refused.value.code == code
    assert store.list_models() == []


def test_a_replay_model_without_recordings_is_refused_with_the_way_to_register_it(store: Store) -> None:
    with pytest.raises(InvalidInput) as refused:
        store.register_model(ModelRegistration(id="replay:mine"), actor_signer("alice"))
    assert refused.value.code == "recordings_required"
    assert "--recordings FILE" in refused.value.message


def test_a_replay_model_is_registered_once_and_a_deactivated_one_cannot_be_selected(
    store: Store, signer: Signer
) -> None:
    first = store.register_replay_model("replay:drill", _recordings(1), signer)
    with pytest.raises(Refused) as duplicate:
        store.register_replay_model("replay:drill", _recordings(2), signer)
    assert duplicate.value.code == "duplicate_model"
    assert store.list_models() == [first]
    store.deactivate_model("replay:drill", signer)
    assert not store.model_available("replay:drill")
    with pytest.raises(Refused) as selected:
        store.select_registered_models(ModelSelection(primary="replay:drill"), signer)
    assert selected.value.code == "model_deactivated"
    # A run that captured it keeps its answers.
    assert store.replay_recordings("replay:drill") == _recordings(1).to_json()


def test_an_unknown_replay_model_is_refused_naming_the_built_in_ones_and_the_fix(
    store: Store, signer: Signer
) -> None:
    with pytest.raises(NotFound) as unknown:
        store.select_registered_models(ModelSelection(primary="replay:doesnotexist"), signer)
    assert unknown.value.code == "unknown_model"
    assert "replay:demo" in unknown.value.message
    assert "models add replay:doesnotexist --recordings FILE" in unknown.value.message
