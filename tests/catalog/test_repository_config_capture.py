"""The repository's configuration, captured into the contract (``catalog.capture.capture``): worktree
and pr_ready contracts freeze it, so the digest an operator approves covers the executor, command,
verification commands, environment names, model credentials, network, the unconfined opt-in and
timeout; other tiers capture none. A configuration breaking the environment rules is refused at
capture. Changing a repository's configuration later affects only runs captured afterwards; contracts
captured before repositories had a configuration, or before confinement existed, still read, with
their stored digest."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from catalog.capture import capture
from catalog.loaded import LoadedCatalog
from contracts.config import PolicyRecord, RepositoryConfig, RepositoryExecutor
from contracts.enums import AutomationMode, FallbackMode, TaskType, Tier
from contracts.errors import InvalidInput
from contracts.hashing import canonical_sha256
from contracts.models import ModelSelection, ModelSelectionRecord
from contracts.policy import AutomationPolicy
from contracts.runs import CapturedContract, RunInput
from contracts.work_item import WorkItem
from store import Store, open_store
from tests.identity import STORE_ANCHOR, bootstrap, signer
from tests.store.git_repository import make_working_tree, register_repository, resolve_base_commit

RUN_ID = "SOR-0123456789ABCDEF"
ALIAS = "orders-service"
BASE_COMMIT = "0123456789abcdef0123456789abcdef01234567"
SELECTED_AT = dt.datetime(2026, 11, 1, 9, 30, tzinfo=dt.UTC)
ITEM = WorkItem(
    title="Audit the slow query on the orders report",
    description="The nightly orders report takes 14 minutes; check for a missing index.",
    domain="database",
    roles=["dba"],
    repo_alias=ALIAS,
    evidence_refs=["log:pg-slow-2026-11-27"],
    task_type=TaskType.AUDIT,
)
COMMAND = RepositoryConfig(
    executor=RepositoryExecutor.COMMAND,
    command=("my-agent", "--task-file", "TASK.md"),
    verify=(("make", "test"),),
    env=("AGENT_MODE",),
    model_credentials=("AGENT_API_KEY",),
    network=True,
    command_timeout_seconds=900,
)
VERIFY_ONLY = RepositoryConfig(verify=(("pytest", "-q"),), command_timeout_seconds=120)
APPROVAL_TIERS = [Tier.WORKTREE, Tier.PR_READY]


def _selection() -> ModelSelectionRecord:
    return ModelSelectionRecord(
        selection=ModelSelection(primary="replay:demo", fallback_mode=FallbackMode.PRIMARY_ONLY),
        selected_by="alice",
        selected_at=SELECTED_AT,
    )


def _capture(
    catalog: LoadedCatalog,
    tier: Tier | None,
    repository_config: RepositoryConfig | None,
    *,
    automatic: bool = False,
    policy: AutomationPolicy | None = None,
    base_commit: str | None = BASE_COMMIT,
) -> CapturedContract:
    return capture(
        RunInput(
            run_id=RUN_ID,
            work_item=ITEM,
            requested_tier=tier,
            automatic=automatic,
            request_digest="0" * 64,
        ),
        catalog,
        PolicyRecord(policy=policy or AutomationPolicy()),
        _selection(),
        read_only_budget_seconds=1800,
        edit_budget_seconds=3600,
        base_commit=base_commit,
        repository_config=repository_config,
    )


@pytest.mark.parametrize("tier", APPROVAL_TIERS)
def test_worktree_and_pr_ready_contracts_capture_the_repository_configuration(
    loaded_catalog: LoadedCatalog, tier: Tier
) -> None:
    captured = _capture(loaded_catalog, tier, COMMAND)
    assert captured.contract.repository_config == COMMAND
    assert captured.contract_sha256 == canonical_sha256(captured.contract.model_dump(mode="json"))
    assert captured.contract.model_dump(mode="json")["repository_config"] == {
        "executor": "command",
        "command": ["my-agent", "--task-file", "TASK.md"],
        "verify": [["make", "test"]],
        "env": ["AGENT_MODE"],
        "model_credentials": ["AGENT_API_KEY"],
        "network": True,
        "allow_unconfined": False,
        "command_timeout_seconds": 900,
    }


@pytest.mark.parametrize("tier", APPROVAL_TIERS)
def test_the_digest_covers_every_setting_of_the_configuration(
    loaded_catalog: LoadedCatalog, tier: Tier
) -> None:
    variants = [
        RepositoryConfig(),
        VERIFY_ONLY,
        COMMAND,
        COMMAND.model_copy(update={"command": ("my-agent", "--other")}),
        COMMAND.model_copy(update={"verify": ()}),
        COMMAND.model_copy(update={"env": ()}),
        COMMAND.model_copy(update={"model_credentials": ()}),
        COMMAND.model_copy(update={"network": False}),
        COMMAND.model_copy(update={"allow_unconfined": True}),
        COMMAND.model_copy(update={"command_timeout_seconds": 901}),
    ]
    digests = {_capture(loaded_catalog, tier, config).contract_sha256 for config in variants}
    assert len(digests) == len(variants)
    assert (
        _capture(loaded_catalog, tier, COMMAND).contract_sha256
        == _capture(loaded_catalog, tier, COMMAND).contract_sha256
    )


@pytest.mark.parametrize("tier", [Tier.RECOMMEND, Tier.READ_ONLY])
def test_other_tiers_capture_no_repository_configuration(loaded_catalog: LoadedCatalog, tier: Tier) -> None:
    captured = _capture(loaded_catalog, tier, COMMAND)
    assert captured.contract.tier is tier
    assert captured.contract.repository_config is None
    assert captured.contract_sha256 == _capture(loaded_catalog, tier, None).contract_sha256


def test_an_automatic_run_captures_no_repository_configuration(loaded_catalog: LoadedCatalog) -> None:
    guarded = AutomationPolicy(mode=AutomationMode.GUARDED, maximum_automatic_tier=Tier.READ_ONLY)
    captured = _capture(loaded_catalog, None, COMMAND, automatic=True, policy=guarded)
    assert captured.contract.tier is Tier.READ_ONLY
    assert captured.contract.repository_config is None


def test_a_contract_captured_before_repository_configuration_keeps_its_stored_digest(
    loaded_catalog: LoadedCatalog,
) -> None:
    captured = _capture(loaded_catalog, Tier.WORKTREE, None)
    recorded = captured.model_dump(mode="json")
    del recorded["contract"]["repository_config"]  # as a contract captured before the field existed
    recorded["contract_sha256"] = canonical_sha256(recorded["contract"])

    replayed = CapturedContract.model_validate(recorded)
    assert replayed.contract.repository_config is None
    assert replayed.contract_sha256 == recorded["contract_sha256"]  # kept, never recomputed


@pytest.mark.parametrize(
    ("field", "name"),
    [
        ("env", "SPECIALISTS_ACTION_TOKEN"),
        ("model_credentials", "SPECIALISTS_ACTION_TOKEN_FILE"),
        ("env", "GITHUB_TOKEN"),
    ],
)
def test_a_configuration_breaking_the_environment_rules_is_refused_at_capture(
    loaded_catalog: LoadedCatalog, field: str, name: str
) -> None:
    # As stored before the rules existed: registration would refuse it now.
    stored = COMMAND.model_copy(update={field: (name,)})
    with pytest.raises(InvalidInput) as refused:
        _capture(loaded_catalog, Tier.WORKTREE, stored)
    assert refused.value.code == "invalid_repository_config"
    assert name in refused.value.message and ALIAS in refused.value.message
    assert "repos update" in refused.value.message


def test_a_configuration_captured_before_confinement_reads_as_confined_with_its_stored_digest(
    loaded_catalog: LoadedCatalog,
) -> None:
    captured = _capture(loaded_catalog, Tier.PR_READY, VERIFY_ONLY)
    recorded = captured.model_dump(mode="json")
    for key in ("model_credentials", "allow_unconfined"):  # as captured before the keys existed
        del recorded["contract"]["repository_config"][key]
    recorded["contract_sha256"] = canonical_sha256(recorded["contract"])

    replayed = CapturedContract.model_validate(recorded)
    config = replayed.contract.repository_config
    assert config is not None and config.allow_unconfined is False and config.model_credentials == ()
    assert replayed.contract_sha256 == recorded["contract_sha256"]  # kept, never recomputed


# ------------------------------------------------------------------------ changes affect only new runs


@pytest.fixture
def configured_store(database_url: str, tmp_path: Path) -> Store:
    store = open_store(database_url, anchor=STORE_ANCHOR)
    bootstrap(store)
    register_repository(store, ALIAS, make_working_tree(tmp_path / "orders"), None, "alice", COMMAND)
    return store


def _capture_from_store(catalog: LoadedCatalog, store: Store, tier: Tier) -> CapturedContract:
    """Capture as the ``capture_contract`` activity does: the repository record and its base commit
    come from one read of the store."""
    record, base_commit = resolve_base_commit(store, ALIAS)
    return _capture(catalog, tier, record.config, base_commit=base_commit)


@pytest.mark.parametrize("tier", APPROVAL_TIERS)
def test_changing_the_configuration_affects_only_new_runs(
    loaded_catalog: LoadedCatalog, configured_store: Store, tier: Tier
) -> None:
    with configured_store as store:
        first = _capture_from_store(loaded_catalog, store, tier)
        frozen = first.model_dump(mode="json")
        assert first.contract.repository_config == COMMAND

        store.update_repository_config(ALIAS, VERIFY_ONLY, signer("alice"))

        # The captured contract and its digest are exactly what they were.
        assert first.model_dump(mode="json") == frozen
        assert first.contract.repository_config == COMMAND
        assert first.contract_sha256 == canonical_sha256(frozen["contract"])

        second = _capture_from_store(loaded_catalog, store, tier)
        assert second.contract.repository_config == VERIFY_ONLY
        assert second.contract.base_commit == first.contract.base_commit
        assert second.contract_sha256 != first.contract_sha256
