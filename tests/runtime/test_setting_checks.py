"""The worker's settings checked as ``status`` checks them: each one a worker would refuse at start,
by the parser the worker runs; an empty environment is the defaults, which a worker takes."""

from __future__ import annotations

import base64
from pathlib import Path

from runtime.codec import KeyRing, key_ring_json
from runtime.setting_checks import worker_setting_problems


def test_the_defaults_are_settings_a_worker_takes() -> None:
    assert worker_setting_problems({}) == []


def test_each_refused_setting_is_named_once_with_its_variable() -> None:
    problems = worker_setting_problems(
        {
            "SPECIALISTS_TRACING": "zipkin",
            "SPECIALISTS_HEALTH_ADDRESS": "not an address",
            "SPECIALISTS_METRICS_ADDRESS": "127.0.0.1:99999",
            "SPECIALISTS_READ_ONLY_BUDGET_SECONDS": "-5",
        }
    )
    messages = [problem["message"] for problem in problems]
    assert {problem["code"] for problem in problems} <= {"invalid_setting", "invalid_address", "invalid_port"}
    assert len(messages) == 4
    for variable, message in zip(
        ["HEALTH_ADDRESS", "METRICS_ADDRESS", "TRACING", "READ_ONLY_BUDGET_SECONDS"], messages, strict=True
    ):
        assert f"SPECIALISTS_{variable}" in message


def test_a_payload_keys_file_the_worker_would_refuse_is_named_without_its_keys(tmp_path: Path) -> None:
    missing = tmp_path / "absent.json"
    readable = tmp_path / "readable.json"
    readable.write_text(key_ring_json(KeyRing(current="k1", keys={"k1": b"\x07" * 32})), encoding="utf-8")
    readable.chmod(0o644)
    garbage = tmp_path / "garbage.json"
    garbage.write_text("not json", encoding="utf-8")
    garbage.chmod(0o600)
    shown = []
    for path, code in [
        (missing, "codec_keys_unreadable"),
        (readable, "codec_keys_insecure"),
        (garbage, "codec_keys_malformed"),
    ]:
        (problem,) = worker_setting_problems({"SPECIALISTS_CODEC_KEYS_FILE": str(path)})
        assert problem["code"] == code
        assert "SPECIALISTS_CODEC_KEYS_FILE" in problem["message"] and str(path) in problem["message"]
        shown.append(problem["message"])
    assert base64.b64encode(b"\x07" * 32).decode() not in " ".join(shown)
    readable.chmod(0o600)
    assert worker_setting_problems({"SPECIALISTS_CODEC_KEYS_FILE": str(readable)}) == []


def test_a_state_directory_under_a_file_is_reported_and_a_fresh_one_is_not(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")

    problems = worker_setting_problems({"SPECIALISTS_STATE_DIR": str(blocker / "state")})

    assert [problem["code"] for problem in problems] == ["state_dir_unusable"]
    assert (
        "SPECIALISTS_STATE_DIR" in problems[0]["message"]
        and f"{blocker} is not a directory" in problems[0]["message"]
    )
    assert worker_setting_problems({"SPECIALISTS_STATE_DIR": str(tmp_path / "new" / "state")}) == []
    assert not (tmp_path / "new").exists()  # checked, not made
