"""The ``replay`` provider: recordings keyed by (profile, job kind, work item title), independent of
prompt and context; a missing recording, file or bad name fails clearly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from activities.config import DEFAULT_RECORDINGS_DIR
from activities.providers.base import CompletionRequest, JobIdentity, ProviderError
from activities.providers.replay import ReplayProvider
from contracts.errors import ErrorType
from contracts.output import JobKind


def _request(
    profile: str, kind: JobKind, title: str, *, name: str = "cases", prompt: str = "p"
) -> CompletionRequest:
    return CompletionRequest(
        model_name=name,
        instructions=prompt,
        context=prompt,
        identity=JobIdentity(profile_id=profile, kind=kind, title=title),
    )


def _response(marker: str) -> dict[str, Any]:
    return {"role": marker, "axis": marker}


@pytest.fixture
def recordings(tmp_path: Path) -> Path:
    entries = [
        ("db", "analysis", "Slow query", "db-analysis"),
        ("db", "review", "Slow query", "db-review"),
        ("db", "analysis", "Other title", "db-other"),
        ("arch", "analysis", "Slow query", "arch-analysis"),
    ]
    data = {
        "recordings": [
            {"profile": p, "kind": k, "title": t, "response": _response(marker)}
            for p, k, t, marker in entries
        ]
    }
    (tmp_path / "cases.json").write_text(json.dumps(data), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("profile", "kind", "title", "marker"),
    [
        ("db", JobKind.ANALYSIS, "Slow query", "db-analysis"),
        ("db", JobKind.REVIEW, "Slow query", "db-review"),
        ("db", JobKind.ANALYSIS, "Other title", "db-other"),
        ("arch", JobKind.ANALYSIS, "Slow query", "arch-analysis"),
    ],
)
def test_replay_answers_the_recording_of_the_jobs_profile_kind_and_title(
    recordings: Path, profile: str, kind: JobKind, title: str, marker: str
) -> None:
    raw = ReplayProvider(recordings).complete(_request(profile, kind, title))
    assert json.loads(raw) == _response(marker)


def test_replay_ignores_instructions_and_context(recordings: Path) -> None:
    provider = ReplayProvider(recordings)
    first = provider.complete(_request("db", JobKind.ANALYSIS, "Slow query", prompt="one prompt"))
    second = provider.complete(
        _request("db", JobKind.ANALYSIS, "Slow query", prompt="a changed prompt " * 50)
    )
    assert first == second


def test_replay_reads_its_file_once_and_again_when_it_changes(
    recordings: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = ReplayProvider(recordings)
    reads: list[Path] = []
    read_text = Path.read_text

    def counting(path: Path, *args: Any, **kwargs: Any) -> str:
        reads.append(path)
        return read_text(path, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counting)
    for _ in range(3):
        provider.complete(_request("db", JobKind.ANALYSIS, "Slow query"))
    assert len(reads) == 1

    path = recordings / "cases.json"
    edited = {
        "recordings": [
            {"profile": "db", "kind": "analysis", "title": "Slow query", "response": _response("edited")}
        ]
    }
    path.write_text(json.dumps(edited), encoding="utf-8")
    raw = provider.complete(_request("db", JobKind.ANALYSIS, "Slow query"))
    assert json.loads(raw) == _response("edited")
    assert len(reads) == 2


@pytest.mark.parametrize(
    ("profile", "kind", "title"),
    [
        ("arch", JobKind.REVIEW, "Slow query"),
        ("db", JobKind.ANALYSIS, "slow query"),
        ("nobody", JobKind.ANALYSIS, "Slow query"),
    ],
    ids=["other_kind", "title_case_differs", "other_profile"],
)
def test_replay_without_a_recording_fails_naming_the_identity_it_looked_for(
    recordings: Path, profile: str, kind: JobKind, title: str
) -> None:
    with pytest.raises(ProviderError) as raised:
        ReplayProvider(recordings).complete(_request(profile, kind, title))
    assert raised.value.error_type == ErrorType.REPLAY_NO_RECORDING
    for part in (repr(profile), repr(kind.value), repr(title), "replay:cases"):
        assert part in raised.value.message


@pytest.mark.parametrize(
    ("profile", "kind", "title", "nearest"),
    [
        ("db", JobKind.ANALYSIS, "slow query", ("db", "analysis", "Slow query")),
        ("db", JobKind.ANALYSIS, "Other titles", ("db", "analysis", "Other title")),
        ("arch", JobKind.REVIEW, "Slow query", ("arch", "analysis", "Slow query")),
        ("nobody", JobKind.REVIEW, "Slow query", ("db", "review", "Slow query")),
    ],
    ids=["title_case_differs", "title_typo", "other_kind", "other_profile"],
)
def test_a_miss_names_the_nearest_recorded_key(
    recordings: Path, profile: str, kind: JobKind, title: str, nearest: tuple[str, str, str]
) -> None:
    with pytest.raises(ProviderError) as raised:
        ReplayProvider(recordings).complete(_request(profile, kind, title))
    near_profile, near_kind, near_title = nearest
    expected = (
        f"the nearest recorded key is profile {near_profile!r}, job {near_kind!r}, title {near_title!r}"
    )
    assert raised.value.message.endswith(expected)


def test_a_miss_in_an_empty_recordings_file_says_it_has_none(tmp_path: Path) -> None:
    (tmp_path / "empty.json").write_text('{"recordings": []}', encoding="utf-8")
    with pytest.raises(ProviderError) as raised:
        ReplayProvider(tmp_path).complete(_request("db", JobKind.ANALYSIS, "t", name="empty"))
    assert raised.value.message.endswith("the file has no recordings")


def test_replay_with_a_missing_recordings_file_is_a_configuration_error(recordings: Path) -> None:
    with pytest.raises(ProviderError) as raised:
        ReplayProvider(recordings).complete(_request("db", JobKind.ANALYSIS, "Slow query", name="absent"))
    assert raised.value.error_type == ErrorType.MODEL_NOT_CONFIGURED
    assert "absent.json" in raised.value.message


def test_replay_with_an_unreadable_recordings_file_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ProviderError) as raised:
        ReplayProvider(tmp_path).complete(_request("db", JobKind.ANALYSIS, "t", name="broken"))
    assert raised.value.error_type == ErrorType.MODEL_NOT_CONFIGURED


@pytest.mark.parametrize("name", ["../cases", "a/b", ".hidden", "", "x" * 65])
def test_replay_refuses_a_model_name_that_could_leave_the_recordings_directory(
    recordings: Path, name: str
) -> None:
    (recordings.parent / "cases.json").write_text(json.dumps({"recordings": []}), encoding="utf-8")
    with pytest.raises(ProviderError) as raised:
        ReplayProvider(recordings).complete(_request("db", JobKind.ANALYSIS, "Slow query", name=name))
    assert raised.value.error_type == ErrorType.MODEL_NOT_CONFIGURED
    assert "not valid" in raised.value.message


def test_demo_recordings_cover_analysis_and_review_of_the_slow_query_example() -> None:
    provider = ReplayProvider(DEFAULT_RECORDINGS_DIR)
    title = "Audit the slow query on the orders report and a possible missing index"
    analysis = json.loads(
        provider.complete(_request("database-optimizer", JobKind.ANALYSIS, title, name="demo"))
    )
    review = json.loads(provider.complete(_request("backend-architect", JobKind.REVIEW, title, name="demo")))
    assert analysis["role"] == "database-optimizer" and "verdict" not in analysis
    assert review["role"] == "backend-architect" and review["verdict"] == "agree"


# ------------------------------------------------------------------ recordings an operator registered

_DEMO_ENTRY = json.loads((DEFAULT_RECORDINGS_DIR / "demo.json").read_text(encoding="utf-8"))["recordings"][0]


def _registered_file(title: str) -> str:
    from contracts.recordings import parse_recordings

    entry = {**_DEMO_ENTRY, "title": title}
    return parse_recordings(json.dumps({"recordings": [entry]})).to_json()


def test_a_registered_replay_model_answers_from_its_registered_recordings(tmp_path: Path) -> None:
    looked_up: list[str] = []

    def registered(model_id: str) -> str | None:
        looked_up.append(model_id)
        return _registered_file("Drill title") if model_id == "replay:drill" else None

    provider = ReplayProvider(tmp_path, registered)
    raw = provider.complete(_request(_DEMO_ENTRY["profile"], JobKind.ANALYSIS, "Drill title", name="drill"))
    assert json.loads(raw) == _DEMO_ENTRY["response"]
    assert provider.check("drill") == 1
    with pytest.raises(ProviderError) as miss:
        provider.complete(_request(_DEMO_ENTRY["profile"], JobKind.ANALYSIS, "Drill titel", name="drill"))
    assert miss.value.error_type == ErrorType.REPLAY_NO_RECORDING
    assert "nearest recorded key" in miss.value.message and "'Drill title'" in miss.value.message
    assert set(looked_up) == {"replay:drill"}


def test_a_built_in_replay_model_is_never_looked_up_in_the_store() -> None:
    def registered(model_id: str) -> str | None:
        raise AssertionError(f"looked up {model_id}")

    provider = ReplayProvider(DEFAULT_RECORDINGS_DIR, registered)
    assert provider.check("demo") > 0


def test_an_unregistered_name_falls_back_to_the_workers_recordings_directory(recordings: Path) -> None:
    provider = ReplayProvider(recordings, lambda model_id: None)
    raw = provider.complete(_request("db", JobKind.ANALYSIS, "Slow query"))
    assert json.loads(raw)["role"] == "db-analysis"


def test_an_unverified_registration_fails_the_call_as_not_configured(tmp_path: Path) -> None:
    from contracts.errors import Refused

    def registered(model_id: str) -> str | None:
        raise Refused("configuration_unverified", f"model {model_id!r} does not verify")

    with pytest.raises(ProviderError) as refused:
        ReplayProvider(tmp_path, registered).check("forged")
    assert refused.value.error_type == ErrorType.MODEL_NOT_CONFIGURED
    assert "configuration_unverified" in refused.value.message and "replay:forged" in refused.value.message


def test_the_built_in_replay_models_are_exactly_the_recordings_the_worker_ships() -> None:
    from contracts.models import BUILT_IN_REPLAY_MODELS

    shipped = sorted(f"replay:{path.stem}" for path in DEFAULT_RECORDINGS_DIR.glob("*.json"))
    assert sorted(BUILT_IN_REPLAY_MODELS) == shipped


def test_a_recording_with_task_contains_answers_the_job_whose_task_contains_it(tmp_path: Path) -> None:
    marker = "Findings of earlier review rounds"
    data = {
        "recordings": [
            {"profile": "db", "kind": "review", "title": "Slow query", "response": _response("first")},
            {
                "profile": "db",
                "kind": "review",
                "title": "Slow query",
                "task_contains": marker,
                "response": _response("after review"),
            },
        ]
    }
    (tmp_path / "cases.json").write_text(json.dumps(data), encoding="utf-8")
    provider = ReplayProvider(tmp_path)

    def answer(task: str) -> Any:
        identity = JobIdentity(profile_id="db", kind=JobKind.REVIEW, title="Slow query", task=task)
        request = CompletionRequest(model_name="cases", instructions="p", context="p", identity=identity)
        return json.loads(provider.complete(request))["role"]

    assert answer("Slow query\n\nthe scope") == "first"
    assert answer(f"Slow query\n\nthe scope\n\n{marker} (resolve each):\n- round 1") == "after review"
