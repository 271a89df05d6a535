"""Reading the action token: environment or a 0600 file, never both, never too short."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from contracts.errors import InvalidInput, Refused
from store.action_token import TOKEN_ENV, TOKEN_FILE_ENV, load_action_token, require_action_token

TOKEN = "a-deployment-token-of-some-length"


def test_no_token_configured_reads_as_none_and_require_refuses() -> None:
    assert load_action_token({}) is None
    with pytest.raises(Refused) as refused:
        require_action_token({})
    assert refused.value.code == "action_token_missing"


def test_token_from_the_environment_is_stripped() -> None:
    assert load_action_token({TOKEN_ENV: f"  {TOKEN}\n"}) == TOKEN.encode()


def test_token_file_with_mode_0600_is_read(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)
    assert load_action_token({TOKEN_FILE_ENV: str(path)}) == TOKEN.encode()


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_token_file_readable_by_others_is_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "token"
    path.write_text(TOKEN)
    os.chmod(path, mode)
    with pytest.raises(Refused) as refused:
        load_action_token({TOKEN_FILE_ENV: str(path)})
    assert refused.value.code == "action_token_file_insecure"


def test_both_sources_at_once_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as invalid:
        load_action_token({TOKEN_ENV: TOKEN, TOKEN_FILE_ENV: str(tmp_path / "token")})
    assert invalid.value.code == "action_token_ambiguous"


@pytest.mark.parametrize("value", ["short", "   ", "fifteen-chars!!"])
def test_a_blank_or_under_16_character_token_is_refused(value: str) -> None:
    with pytest.raises(InvalidInput) as invalid:
        load_action_token({TOKEN_ENV: value})
    assert invalid.value.code == "action_token_invalid"


def test_a_missing_token_file_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as invalid:
        load_action_token({TOKEN_FILE_ENV: str(tmp_path / "absent")})
    assert invalid.value.code == "action_token_invalid"
