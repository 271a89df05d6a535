"""The worker's settings checked as ``status`` checks them: each one a worker would refuse at start,
by the parser the worker runs; an empty environment is the defaults, which a worker takes."""

from __future__ import annotations

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
