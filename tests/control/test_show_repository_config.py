"""What ``show`` prints of the repository configuration a run's contract froze
(``control.repository_views.render_contract_repository_config``): every setting of a worktree or
pr_ready contract's configuration, shown literally; a plain line for such a contract captured before
repositories had a configuration; nothing for other tiers. ``show --json`` carries it as
``contract.repository_config``."""

from __future__ import annotations

import datetime as dt
import io
import json

import pytest
from rich.console import Console

from catalog.capture import capture
from catalog.loader import load_catalog
from contracts.config import PolicyRecord, RepositoryConfig, RepositoryExecutor
from contracts.enums import FallbackMode, TaskType, Tier
from contracts.models import ModelSelection, ModelSelectionRecord
from contracts.policy import AutomationPolicy
from contracts.runs import RunInput, RunStatus, RunView
from contracts.work_item import WorkItem
from control import repository_views, run_views

AT = dt.datetime(2026, 12, 1, 9, 30, tzinfo=dt.UTC)
RUN_ID = "SOR-0123456789ABCDEF"
ITEM = WorkItem(
    title="Audit the slow query on the orders report",
    domain="database",
    repo_alias="orders-service",
    evidence_refs=["log:pg-slow-2026-11-27"],
    task_type=TaskType.AUDIT,
)
CONFIG = RepositoryConfig(
    executor=RepositoryExecutor.COMMAND,
    command=("my-agent", "--prompt", "[bold]x[/bold] \x1b[2J"),
    verify=(("make", "test"), ("make", "lint")),
    env=("AGENT_MODE", "OTHER"),
    model_credentials=("AGENT_API_KEY",),
    network=True,
    allow_unconfined=True,
    command_timeout_seconds=900,
)


def _view(tier: Tier, config: RepositoryConfig | None) -> RunView:
    captured = capture(
        RunInput(run_id=RUN_ID, work_item=ITEM, requested_tier=tier, request_digest="0" * 64),
        load_catalog(),
        PolicyRecord(policy=AutomationPolicy()),
        ModelSelectionRecord(
            selection=ModelSelection(primary="replay:demo", fallback_mode=FallbackMode.PRIMARY_ONLY),
            selected_by="alice",
            selected_at=AT,
        ),
        read_only_budget_seconds=1800,
        edit_budget_seconds=3600,
        base_commit="b" * 40,
        repository_config=config,
    )
    return RunView(
        run_id=RUN_ID,
        status=RunStatus.AWAITING_APPROVAL if tier in (Tier.WORKTREE, Tier.PR_READY) else RunStatus.ACCEPTED,
        tier=tier,
        automatic=False,
        route=captured.route,
        contract=captured.contract,
        contract_sha256=captured.contract_sha256,
        result=None,
        review=None,
        decision=None,
        request_digest="0" * 64,
        created_at=AT,
        audit=[],
    )


def _shown(view: RunView) -> str:
    buffer = io.StringIO()
    repository_views.render_contract_repository_config(
        Console(file=buffer, width=250, force_terminal=False, color_system=None), view
    )
    return buffer.getvalue()


@pytest.mark.parametrize("tier", [Tier.WORKTREE, Tier.PR_READY])
def test_a_run_awaiting_approval_shows_the_captured_configuration_in_full(tier: Tier) -> None:
    shown = _shown(_view(tier, CONFIG))
    assert repository_views.CONTRACT_CONFIG_TITLE in shown
    for expected in (
        "command",
        '["make", "test"]',
        '["make", "lint"]',
        "AGENT_MODE, OTHER",
        "model credentials",
        "AGENT_API_KEY",
        "allowed",
        "may run unconfined when the worker cannot confine (allow_unconfined = true)",
        "900 s",
    ):
        assert expected in shown
    # Operator text is shown literally: no markup is interpreted, no escape sequence reaches the terminal.
    assert "[bold]x[/bold]" in shown
    assert "\x1b" not in shown and "\\u001b[2J" in shown


def test_the_default_configuration_is_shown_too() -> None:
    shown = _shown(_view(Tier.WORKTREE, RepositoryConfig()))
    assert "patch" in shown and "600 s" in shown and "off" in shown
    assert "required: fails closed when the worker cannot confine" in shown


def test_a_contract_captured_before_repository_configuration_says_so() -> None:
    shown = _shown(_view(Tier.WORKTREE, None))
    assert shown.strip() == repository_views.NOT_CAPTURED


@pytest.mark.parametrize("tier", [Tier.RECOMMEND, Tier.READ_ONLY])
def test_other_tiers_show_no_repository_configuration(tier: Tier) -> None:
    assert _shown(_view(tier, CONFIG)) == ""


def test_a_run_without_a_contract_shows_nothing() -> None:
    view = _view(Tier.WORKTREE, CONFIG).model_copy(update={"contract": None})
    assert _shown(view) == ""


def test_show_json_carries_the_captured_configuration() -> None:
    data = json.loads(json.dumps(run_views.run_json(_view(Tier.PR_READY, CONFIG))))
    assert data["contract"]["repository_config"] == repository_views.repository_config_json(CONFIG)
