"""JSON shapes and renderings of repositories with their configuration, and of the repository
configuration a run's contract captured.

``repos --json`` and ``repos add|update --json`` print :func:`repository_json` objects: the fields of
:func:`control.views.repository_json` plus ``config`` (every key of
:class:`contracts.config.RepositoryConfig`). The human ``repos`` table summarises each configuration:
the executor and whether a command, verification commands, environment names (and model credentials)
and network access are set. :func:`render_contract_repository_config` is the part of ``show`` that
prints the configuration a worktree or pr_ready contract froze (``show --json`` has it already, as
``contract.repository_config``).

Everything shown but the labels is operator input (paths, commands, names): it reaches the console
only as :func:`control.output.table` cells or through ``safe_text``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from contracts.policy import APPROVAL_TIERS
from control import views
from control.output import safe_text, table

if TYPE_CHECKING:
    from rich.console import Console

    from contracts.config import RepositoryConfig, RepositoryRecord
    from contracts.runs import RunView

CONTRACT_CONFIG_TITLE = "repository configuration (frozen in the contract)"
NOT_CAPTURED = (
    "repository configuration: none in this contract (captured before repositories had one; "
    "the patch executor, no verification commands)"
)


def repository_config_json(config: RepositoryConfig) -> dict[str, Any]:
    """``{"executor", "command", "verify", "env", "model_credentials", "network", "allow_unconfined",
    "command_timeout_seconds"}``."""
    return config.model_dump(mode="json")


def repository_json(record: RepositoryRecord) -> dict[str, Any]:
    """``{"alias", "path", "default_branch", "added_by", "added_at", "config"}``."""
    return {**views.repository_json(record), "config": repository_config_json(record.config)}


def repositories_json(records: list[RepositoryRecord]) -> dict[str, Any]:
    """``repos --json``: ``{"repositories": [...]}``, by alias."""
    return {"repositories": [repository_json(record) for record in records]}


def config_summary_cells(config: RepositoryConfig) -> list[str]:
    """The listing's summary of ``config``: executor, command, verify, env (names, then model
    credentials), network."""
    verify = len(config.verify)
    names = [
        f"{count} {word}{'s' if count != 1 else ''}"
        for count, word in ((len(config.env), "name"), (len(config.model_credentials), "credential"))
        if count
    ]
    return [
        config.executor.value,
        "set" if config.command is not None else "-",
        f"{verify} command{'s' if verify != 1 else ''}" if verify else "-",
        ", ".join(names) or "-",
        "on" if config.network else "off",
    ]


def render_repositories(console: Console, records: list[RepositoryRecord]) -> None:
    """The ``repos`` table: one row per repository, its configuration summarised."""
    if not records:
        console.print("no repositories — add one with `specialists repos add ALIAS PATH --actor ID`")
        return
    console.print(
        table(
            "repositories",
            [
                "alias",
                "path",
                "default branch",
                "executor",
                "command",
                "verify",
                "env",
                "network",
                "added by",
                "added at",
            ],
            [
                [
                    r.alias,
                    r.path,
                    r.default_branch,
                    *config_summary_cells(r.config),
                    r.added_by,
                    views.repository_json(r)["added_at"] or "",
                ]
                for r in records
            ],
        )
    )


def repository_config_rows(config: RepositoryConfig) -> list[list[str]]:
    """Every setting of ``config``, one ``[label, value]`` row each (argument vectors as JSON arrays,
    so each argument's bounds are visible)."""
    rows = [
        ["executor", config.executor.value],
        ["command", _argv(config.command) if config.command is not None else "-"],
    ]
    if config.verify:
        rows += [[f"verify {index + 1}", _argv(argv)] for index, argv in enumerate(config.verify)]
    else:
        rows.append(["verify", "-"])
    rows += [
        ["env", ", ".join(config.env) or "-"],
        ["model credentials", ", ".join(config.model_credentials) or "-"],
        ["network", "allowed" if config.network else "off"],
        [
            "confinement",
            "may run unconfined when the worker cannot confine (allow_unconfined = true)"
            if config.allow_unconfined
            else "required: fails closed when the worker cannot confine",
        ],
        ["command timeout", f"{config.command_timeout_seconds} s"],
        ["shipping", _shipping(config)],
    ]
    return rows


def _shipping(config: RepositoryConfig) -> str:
    """The shipping policy in words, or the question an operator must answer before `queue ship`."""
    policy = config.shipping
    if policy is None:
        return "none declared: `queue ship` is refused until the configuration says branch or merge"
    if policy.flow.value == "merge":
        return f"merge: a new local branch, merged into {policy.base_branch} (fast-forward or clean merge)"
    return "branch: a new local branch only"


def render_repository_config(console: Console, config: RepositoryConfig, title: str) -> None:
    """``config`` in full, as a two-column table titled ``title``."""
    console.print(table(title, ["", ""], repository_config_rows(config)))


def render_contract_repository_config(console: Console, view: RunView) -> None:
    """The repository configuration the run's contract froze (worktree and pr_ready runs), in full;
    a line saying there is none for such a contract captured before repositories had one; nothing for
    other runs or a run without a contract yet."""
    contract = view.contract
    if contract is None:
        return
    if contract.repository_config is not None:
        render_repository_config(console, contract.repository_config, CONTRACT_CONFIG_TITLE)
    elif contract.tier in APPROVAL_TIERS:
        console.print(safe_text(NOT_CAPTURED))


def _argv(argv: tuple[str, ...]) -> str:
    return json.dumps(list(argv), ensure_ascii=False)
