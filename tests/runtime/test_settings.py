"""Settings from the environment (control/settings.py)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from contracts.errors import InvalidInput
from runtime.settings import Settings, format_address, parse_address, sqlite_url


def test_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env({"HOME": str(tmp_path)})
    assert settings.temporal_address == "127.0.0.1:7233"
    assert settings.temporal_host == "127.0.0.1"
    assert settings.temporal_port == 7233
    assert settings.temporal_ui_port == 8233
    assert settings.temporal_ui_url == "http://127.0.0.1:8233"
    assert settings.namespace == "default"
    assert settings.task_queue == "specialists"
    state = (tmp_path / ".local" / "state" / "specialists").resolve()
    assert settings.state_dir == state
    assert settings.state_dir.is_absolute()
    assert settings.database_url == f"sqlite:///{state}/specialists.db"
    assert settings.temporal_db_path == settings.state_dir / "temporal.db"
    assert not settings.state_dir.exists()  # reading settings creates nothing


def test_the_default_state_dir_does_not_depend_on_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = set()
    for directory in (tmp_path / "a", tmp_path / "b" / "c"):
        directory.mkdir(parents=True)
        monkeypatch.chdir(directory)
        seen.add(Settings.from_env({"HOME": str(tmp_path / "home")}).state_dir)
    assert seen == {tmp_path / "home" / ".local" / "state" / "specialists"}


def test_an_absolute_xdg_state_home_holds_the_default_state_dir(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home"), "XDG_STATE_HOME": str(tmp_path / "xdg")}
    assert Settings.from_env(env).state_dir == tmp_path / "xdg" / "specialists"
    relative = {**env, "XDG_STATE_HOME": "not/absolute"}
    assert Settings.from_env(relative).state_dir == tmp_path / "home" / ".local" / "state" / "specialists"
    chosen = {**env, "SPECIALISTS_STATE_DIR": str(tmp_path / "chosen")}
    assert Settings.from_env(chosen).state_dir == tmp_path / "chosen"


def test_values_from_the_environment(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {
            "SPECIALISTS_TEMPORAL_ADDRESS": "temporal.internal:7300",
            "SPECIALISTS_TEMPORAL_UI_PORT": "9000",
            "SPECIALISTS_NAMESPACE": "ops",
            "SPECIALISTS_TASK_QUEUE": "specialists-b",
            "SPECIALISTS_STATE_DIR": str(tmp_path / "state"),
            "SPECIALISTS_DATABASE_URL": "postgresql+psycopg://postgres@127.0.0.1:5432/test",
        }
    )
    assert settings.temporal_address == "temporal.internal:7300"
    assert (settings.temporal_host, settings.temporal_port) == ("temporal.internal", 7300)
    assert settings.temporal_ui_port == 9000
    assert settings.namespace == "ops"
    assert settings.task_queue == "specialists-b"
    assert settings.state_dir == tmp_path / "state"
    assert settings.database_url == "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def test_database_defaults_into_the_chosen_state_dir(tmp_path: Path) -> None:
    settings = Settings.from_env({"SPECIALISTS_STATE_DIR": str(tmp_path / "s")})
    assert settings.database_url == f"sqlite:///{tmp_path}/s/specialists.db"
    assert settings.database_url.startswith("sqlite:////")


def test_relative_state_dir_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env({"SPECIALISTS_STATE_DIR": "var/../state"})
    assert settings.state_dir == tmp_path.resolve() / "state"


def test_empty_values_take_defaults() -> None:
    settings = Settings.from_env({"SPECIALISTS_TEMPORAL_ADDRESS": "", "SPECIALISTS_NAMESPACE": "  "})
    assert settings.temporal_address == "127.0.0.1:7233"
    assert settings.namespace == "default"


def test_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECIALISTS_TASK_QUEUE", "from-os-environ")
    assert Settings.from_env().task_queue == "from-os-environ"


def test_ipv6_address() -> None:
    settings = Settings.from_env({"SPECIALISTS_TEMPORAL_ADDRESS": "[::1]:7233"})
    assert settings.temporal_host == "::1"
    assert settings.temporal_address == "[::1]:7233"
    assert settings.temporal_ui_url == "http://[::1]:8233"


@pytest.mark.parametrize(
    ("variable", "value", "code"),
    [
        ("SPECIALISTS_TEMPORAL_ADDRESS", "127.0.0.1", "invalid_address"),
        ("SPECIALISTS_TEMPORAL_ADDRESS", ":7233", "invalid_address"),
        ("SPECIALISTS_TEMPORAL_ADDRESS", "http://127.0.0.1:7233", "invalid_address"),
        ("SPECIALISTS_TEMPORAL_ADDRESS", "::1:7233", "invalid_address"),
        ("SPECIALISTS_TEMPORAL_ADDRESS", "127.0.0.1:port", "invalid_port"),
        ("SPECIALISTS_TEMPORAL_ADDRESS", "127.0.0.1:0", "invalid_port"),
        ("SPECIALISTS_TEMPORAL_ADDRESS", "127.0.0.1:65536", "invalid_port"),
        ("SPECIALISTS_TEMPORAL_UI_PORT", "eighty", "invalid_port"),
        ("SPECIALISTS_TEMPORAL_UI_PORT", "-1", "invalid_port"),
        ("SPECIALISTS_TEMPORAL_UI_PORT", "65536", "invalid_port"),
        ("SPECIALISTS_TEMPORAL_UI_PORT", "８２３３", "invalid_port"),
        ("SPECIALISTS_NAMESPACE", "two words", "invalid_setting"),
        ("SPECIALISTS_TASK_QUEUE", "queue;rm", "invalid_setting"),
        ("SPECIALISTS_DATABASE_URL", "specialists.db", "invalid_setting"),
    ],
)
def test_bad_values_name_the_variable(variable: str, value: str, code: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        Settings.from_env({variable: value})
    assert caught.value.code == code
    assert caught.value.exit_code == 2
    assert variable in caught.value.message


def test_database_url_is_not_echoed_in_errors() -> None:
    with pytest.raises(InvalidInput) as caught:
        Settings.from_env({"SPECIALISTS_DATABASE_URL": "user:s3cret@host/db"})
    assert "s3cret" not in caught.value.message


def test_settings_are_frozen() -> None:
    settings = Settings.from_env({})
    with pytest.raises(FrozenInstanceError):
        settings.namespace = "other"  # type: ignore[misc]


def test_address_helpers() -> None:
    assert parse_address("localhost:7233") == ("localhost", 7233)
    assert parse_address("[::1]:7000") == ("::1", 7000)
    assert format_address("::1", 7000) == "[::1]:7000"
    assert format_address("127.0.0.1", 7000) == "127.0.0.1:7000"
    assert sqlite_url(Path("/x/y.db")) == "sqlite:////x/y.db"


def test_import_is_cheap() -> None:
    code = (
        "import sys, runtime.settings; "
        "heavy = [m for m in ('temporalio', 'pydantic', 'sqlalchemy', 'structlog') if m in sys.modules]; "
        "print(heavy)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
