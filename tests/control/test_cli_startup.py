"""Start-up: commands that talk to no Temporal server load neither Temporal nor the provider SDKs
(and ``route``, ``catalog`` and the help load no store either); each invocation assembles only the
group of its command; pydantic's plugin discovery and the cyclic garbage collector are off while a
short command runs, and the collector is back on before a command talks to Temporal.

Each command runs in a fresh interpreter through a tiny wrapper that calls ``control.cli.main`` and
then writes the modules the process holds (``Cli.run_reporting_modules``), so the check sees exactly
what the command imported.
"""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path
from typing import Any

import pytest
import typer.main

from control.cli import GROUPS, build_app, main
from infra.devserver import free_port
from tests.control.cli_harness import SLOW_QUERY, Cli
from tests.store.git_repository import make_working_tree

NEVER = {"temporalio", "openai", "anthropic"}
"""What no command that talks to no Temporal server may import."""
NO_STORE = NEVER | {"sqlalchemy", "alembic"}
"""What a command that reads no store may not import either."""
ROUTE = ["route", "--input-json", f"@{SLOW_QUERY}"]


def loaded(cli: Cli, *args: str) -> dict[str, Any]:
    """Run ``specialists ARGS`` in a fresh interpreter; its exit code, its standard output and the
    top-level packages of every module it had loaded when it finished."""
    result, modules = cli.run_reporting_modules(*args)
    return {
        "exit_code": result.exit_code,
        "stdout": result.stdout,
        "packages": {name.split(".")[0] for name in modules},
    }


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> Cli:
    """A deployment with something in every table a read shows: an actor, a registered and a selected
    model, an allow-listed repository, a policy set by hand."""
    root = tmp_path_factory.mktemp("cli-startup")
    cli = Cli.isolated(root)
    tree = make_working_tree(root / "orders")
    for args in (
        ["actors", "register", "alice", "--name", "Alice"],
        ["models", "add", "openai:gpt-test", "--api-key-env", "TEST_API_KEY", "--actor", "alice"],
        ["models", "select", "--primary", "openai:gpt-test", "--actor", "alice"],
        ["repos", "add", "orders-service", str(tree), "--actor", "alice"],
        ["policy", "--mode", "guarded", "--maximum-automatic-tier", "read_only", "--actor", "alice"],
    ):
        assert cli.call(*args, "--json").exit_code == 0, args
    return cli


@pytest.mark.parametrize(
    "args",
    [
        [*ROUTE, "--json"],
        ROUTE,  # the human view (rich)
        [*ROUTE, "--override", "backend-architect", "--override-reason", "a second opinion", "--json"],
        ["catalog", "--json"],
        ["catalog"],
        ["--help"],
        [],
        ["route", "--help"],
        ["research", "--help"],
    ],
    ids=[
        "route-json",
        "route",
        "route-override",
        "catalog-json",
        "catalog",
        "help",
        "no-args",
        "route-help",
        "group-help",
    ],
)
def test_previews_and_help_load_neither_temporal_nor_providers_nor_the_store(
    configured: Cli, args: list[str]
) -> None:
    result = loaded(configured, *args)

    assert result["exit_code"] == 0, result["stdout"]
    assert not result["packages"] & NO_STORE, sorted(result["packages"] & NO_STORE)


@pytest.mark.parametrize(
    "args",
    [
        [*ROUTE, "--tier", "read_only", "--json"],
        [*ROUTE, "--tier", "worktree", "--json"],  # reads the repository it names, as well
        [*ROUTE, "--automatic", "--json"],
        ["policy", "--json"],
        ["policy"],
        ["models", "--offline", "--json"],
        ["models", "--offline"],
        ["repos", "--json"],
        ["repos"],
        ["actors", "--json"],
        ["list", "--json"],
    ],
)
def test_reads_of_the_store_load_neither_temporal_nor_providers(configured: Cli, args: list[str]) -> None:
    result = loaded(configured, *args)

    assert result["exit_code"] == 0, result["stdout"]
    assert "sqlalchemy" in result["packages"]  # the store was read: the check sees real work
    assert not result["packages"] & NEVER, sorted(result["packages"] & NEVER)


@pytest.mark.parametrize("args", [["models", "--json"], ["models"]])
def test_models_asks_temporal_for_the_live_ceilings_of_a_registered_model_but_loads_no_provider_sdk(
    configured: Cli, args: list[str]
) -> None:
    result = loaded(configured, *args)

    assert result["exit_code"] == 0, result["stdout"]
    assert {"sqlalchemy", "temporalio"} <= result["packages"]
    assert not result["packages"] & {"openai", "anthropic"}


@pytest.mark.parametrize("args", [["status", "--json"], ["status"]])
def test_status_asks_temporal_but_loads_no_provider_sdk(configured: Cli, args: list[str]) -> None:
    result = loaded(configured, *args)

    assert result["exit_code"] == 0, result["stdout"]
    assert {"sqlalchemy", "temporalio"} <= result["packages"]  # it read the store and asked Temporal
    assert not result["packages"] & {"openai", "anthropic"}


def test_route_on_a_fresh_deployment_loads_no_store_and_writes_nothing(tmp_path: Path) -> None:
    cli = Cli.isolated(tmp_path)
    result = loaded(cli, *ROUTE, "--json")

    assert result["exit_code"] == 0
    assert json.loads(result["stdout"])["primary"] == "database-optimizer"
    assert not result["packages"] & NO_STORE
    assert not cli.state_dir.exists()


# ------------------------------------------------------------------------------------------ assembly


def _top_level(app: typer.Typer) -> list[str]:
    group = typer.main.get_group(app)
    return list(group.commands)


def test_the_group_table_names_every_command_in_the_order_of_the_help() -> None:
    names = [name for *_, commands in GROUPS for name in commands]

    assert _top_level(build_app()) == names
    assert len(names) == len(set(names))


@pytest.mark.parametrize("command", [name for *_, commands in GROUPS for name in commands])
def test_an_invocation_assembles_only_the_group_of_its_command(command: str) -> None:
    (group,) = [commands for *_, commands in GROUPS if command in commands]

    assert _top_level(build_app(command)) == list(group)


@pytest.mark.parametrize("first", [None, "--help", "no-such-command"])
def test_the_help_and_an_unknown_command_see_every_group(first: str | None) -> None:
    assert _top_level(build_app(first)) == _top_level(build_app())


# ------------------------------------------------------------------------- plugins and garbage collector


def test_a_short_command_runs_without_plugin_discovery_or_the_cyclic_collector_and_restores_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    seen: list[tuple[str | None, bool]] = []
    import control.commands.catalog as catalog_commands

    original = catalog_commands.parse_tier

    def spy(value: str | None) -> Any:
        seen.append((os.environ.get("PYDANTIC_DISABLE_PLUGINS"), gc.isenabled()))
        return original(value)

    monkeypatch.setattr(catalog_commands, "parse_tier", spy)
    monkeypatch.chdir(tmp_path)
    assert gc.isenabled()

    assert main([*ROUTE, "--json"]) == 0
    assert seen == [("__all__", False)]
    assert "PYDANTIC_DISABLE_PLUGINS" not in os.environ
    assert gc.isenabled()

    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "")  # the environment's choice is kept
    assert main([*ROUTE, "--json"]) == 0
    assert seen[-1] == ("", False)
    assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == ""
    assert gc.isenabled()
    capsys.readouterr()


def test_a_command_that_talks_to_temporal_collects_garbage_while_it_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = Cli.isolated(tmp_path, SPECIALISTS_TEMPORAL_ADDRESS=f"127.0.0.1:{free_port()}")
    collecting: list[bool] = []
    import control.commands.inspect as inspect_commands

    original = inspect_commands.client

    async def spy() -> Any:
        collecting.append(gc.isenabled())
        return await original()

    monkeypatch.setattr(inspect_commands, "client", spy)

    cli.call("show", "SOR-0000000000000000", "--json").error(5, "temporal_unreachable")
    assert collecting == [True]
    assert gc.isenabled()
    capsys.readouterr()
