"""Where ``status`` says no store can be made: a SQLite path whose directory lies under a file, or
that names a directory, says why; one that could be made, or a URL that is not a SQLite file, says
nothing. Nothing is created by asking."""

from __future__ import annotations

from pathlib import Path

from control.deployment_status import sqlite_create_problem

UNREACHABLE_POSTGRESQL = "postgresql+psycopg://postgres:s3cret-pw@127.0.0.1:1/specialists"


def test_a_sqlite_store_that_could_be_created_has_no_create_problem(tmp_path: Path) -> None:
    assert sqlite_create_problem(f"sqlite:///{tmp_path / 'new' / 'deeper' / 'specialists.db'}") is None
    assert sqlite_create_problem(UNREACHABLE_POSTGRESQL) is None  # not a file: nothing to say here


def test_a_sqlite_path_under_a_file_or_naming_a_directory_says_why_no_store_can_be_created(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert sqlite_create_problem(f"sqlite:///{blocker / 'state' / 'specialists.db'}") == (
        f"{blocker} is not a directory"
    )
    assert sqlite_create_problem(f"sqlite:///{tmp_path}") == f"{tmp_path} exists and is not a file"
    assert not (blocker.is_dir() or (tmp_path / "state").exists())  # nothing was created
