"""Contract capture (``catalog.capture.capture`` and the ``capture_contract`` activity): the digest
is the RFC 8785 sha256 of the contract, stable for the same input, and moves with the model
selection; worktree and pr_ready contracts name an allow-listed repository and freeze the commit its
branch points at; policy, tier and repository refusals are raised, never captured."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.config import ActivityConfig
from activities.routing import RoutingActivities
from activities.store_access import SharedStore
from catalog.capture import capture
from catalog.loaded import LoadedCatalog
from catalog.loader import load_catalog
from contracts.config import PolicyRecord
from contracts.enums import AutomationMode, FallbackMode, Tier
from contracts.errors import InvalidInput, NotFound, Refused
from contracts.hashing import canonical_sha256
from contracts.models import ModelSelection, ModelSelectionRecord
from contracts.policy import AutomationPolicy
from contracts.runs import CapturedContract, RunInput
from tests.identity import STORE_ANCHOR, bootstrap, signer
from tests.store.git_repository import git, make_working_tree, register_repository, resolve_base_commit
from tests.workflows.harness import AUTH_REVIEW, SLOW_QUERY, example, run_input

SELECTED_AT = dt.datetime(2026, 11, 1, 9, 30, tzinfo=dt.UTC)
RUN_ID = "SOR-0123456789ABCDEF"
ALIAS = example(SLOW_QUERY).repo_alias
BASE_COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def catalog() -> LoadedCatalog:
    return load_catalog()


def _selection(primary: str = "replay:demo", *fallbacks: str) -> ModelSelectionRecord:
    mode = FallbackMode.ORDERED if fallbacks else FallbackMode.PRIMARY_ONLY
    return ModelSelectionRecord(
        selection=ModelSelection(primary=primary, fallbacks=list(fallbacks), fallback_mode=mode),
        selected_by="alice",
        selected_at=SELECTED_AT,
    )


def _policy(mode: AutomationMode = AutomationMode.RECOMMEND, ceiling: Tier = Tier.RECOMMEND) -> PolicyRecord:
    return PolicyRecord(policy=AutomationPolicy(mode=mode, maximum_automatic_tier=ceiling))


def _capture(
    catalog: LoadedCatalog,
    inp: RunInput | None = None,
    *,
    policy: PolicyRecord | None = None,
    selection: ModelSelectionRecord | None = None,
    base_commit: str | None = None,
    approval_window_seconds: int = 7 * 24 * 3600,
) -> CapturedContract:
    return capture(
        inp or run_input(example(SLOW_QUERY), tier=Tier.READ_ONLY, run_id=RUN_ID),
        catalog,
        policy or _policy(),
        selection if selection is not None else _selection(),
        read_only_budget_seconds=1800,
        edit_budget_seconds=3600,
        approval_window_seconds=approval_window_seconds,
        base_commit=base_commit,
    )


def test_contract_digest_is_the_canonical_sha256_of_the_contract(catalog: LoadedCatalog) -> None:
    captured = _capture(catalog)
    assert captured.contract_sha256 == canonical_sha256(captured.contract.model_dump(mode="json"))
    assert len(captured.contract_sha256) == 64


def test_capturing_the_same_input_twice_gives_the_same_contract_and_digest(catalog: LoadedCatalog) -> None:
    first = _capture(catalog)
    second = _capture(catalog)
    assert first.contract == second.contract
    assert first.contract_sha256 == second.contract_sha256


@pytest.mark.parametrize(
    "other",
    [
        _selection("replay:other"),
        _selection("replay:demo", "replay:backup"),
        ModelSelectionRecord(
            selection=ModelSelection(primary="replay:demo"),
            selected_by="alice",
            selected_at=SELECTED_AT + dt.timedelta(minutes=1),
        ),
    ],
    ids=["other_primary", "with_fallback", "selected_again"],
)
def test_digest_changes_with_the_model_selection(catalog: LoadedCatalog, other: ModelSelectionRecord) -> None:
    base = _capture(catalog)
    changed = _capture(catalog, selection=other)
    assert changed.contract_sha256 != base.contract_sha256
    assert changed.contract.model != base.contract.model


def test_contract_freezes_route_catalog_model_chain_and_read_only_budget(catalog: LoadedCatalog) -> None:
    captured = _capture(catalog, selection=_selection("replay:demo", "replay:backup"))
    contract = captured.contract
    item = example(SLOW_QUERY)
    assert contract.run_id == RUN_ID
    assert contract.task == f"{item.title}\n\n{item.description}"
    assert contract.evidence_refs == item.evidence_refs
    assert (contract.primary, contract.reviewer) == (captured.route.primary, captured.route.reviewer)
    assert (contract.catalog_sha256, contract.catalog_version) == (catalog.sha256, catalog.version)
    assert contract.model is not None
    assert contract.model.chain == ["replay:demo", "replay:backup"]
    assert "alice" in contract.model.source and SELECTED_AT.isoformat() in contract.model.source
    assert contract.budgets.runtime_seconds == 1800
    assert contract.budgets.max_changed_files == 40
    assert contract.tier is Tier.READ_ONLY and not contract.automatic


def test_capture_refuses_an_automatic_run_when_the_policy_mode_is_off(catalog: LoadedCatalog) -> None:
    inp = run_input(example(SLOW_QUERY), automatic=True, run_id=RUN_ID)
    with pytest.raises(Refused) as refused:
        _capture(catalog, inp, policy=_policy(AutomationMode.OFF))
    assert refused.value.code == "automation_off"
    assert refused.value.exit_code == 4


def test_capture_applies_guarded_policy_ceiling_and_drops_high_risk_to_recommend(
    catalog: LoadedCatalog,
) -> None:
    guarded = _policy(AutomationMode.GUARDED, Tier.READ_ONLY)
    low = _capture(catalog, run_input(example(SLOW_QUERY), automatic=True, run_id=RUN_ID), policy=guarded)
    high = _capture(catalog, run_input(example(AUTH_REVIEW), automatic=True, run_id=RUN_ID), policy=guarded)
    assert low.contract.tier is Tier.READ_ONLY and low.contract.automatic
    assert high.contract.tier is Tier.RECOMMEND and high.contract.risk.value == "high"


@pytest.mark.parametrize("tier", [Tier.WORKTREE, Tier.PR_READY])
def test_capture_refuses_worktree_and_pr_ready_without_a_repo_alias(
    catalog: LoadedCatalog, tier: Tier
) -> None:
    item = example(SLOW_QUERY).model_copy(update={"repo_alias": None})
    with pytest.raises(InvalidInput) as refused:
        _capture(catalog, run_input(item, tier=tier, run_id=RUN_ID), base_commit=BASE_COMMIT)
    assert refused.value.code == "repo_alias_required"
    assert refused.value.exit_code == 2


@pytest.mark.parametrize("tier", [Tier.WORKTREE, Tier.PR_READY])
def test_capture_refuses_worktree_and_pr_ready_without_a_resolved_base_commit(
    catalog: LoadedCatalog, tier: Tier
) -> None:
    with pytest.raises(InvalidInput) as refused:
        _capture(catalog, run_input(example(SLOW_QUERY), tier=tier, run_id=RUN_ID))
    assert refused.value.code == "base_commit_required"


@pytest.mark.parametrize("tier", [Tier.WORKTREE, Tier.PR_READY])
def test_worktree_and_pr_ready_contracts_freeze_repo_base_commit_edit_budget_and_approval_window(
    catalog: LoadedCatalog, tier: Tier
) -> None:
    inp = run_input(example(SLOW_QUERY), tier=tier, run_id=RUN_ID)
    captured = _capture(catalog, inp, base_commit=BASE_COMMIT)
    contract = captured.contract
    assert contract.tier is tier and not contract.automatic
    assert (contract.repo_alias, contract.base_commit) == (ALIAS, BASE_COMMIT)
    assert contract.budgets.runtime_seconds == 3600
    assert contract.budgets.approval_window_seconds == 7 * 24 * 3600
    assert any("worktree" in action and "base commit" in action for action in contract.allowed_actions)
    assert "commit, push, merge or open pull requests" in contract.forbidden_actions
    assert captured.contract_sha256 == canonical_sha256(contract.model_dump(mode="json"))

    # The digest binds the base commit and the approval window: approving one approves exactly it.
    moved = _capture(catalog, inp, base_commit="f" * 40)
    shorter = _capture(catalog, inp, base_commit=BASE_COMMIT, approval_window_seconds=60)
    assert len({captured.contract_sha256, moved.contract_sha256, shorter.contract_sha256}) == 3
    assert shorter.contract.budgets.approval_window_seconds == 60


def test_a_read_only_contract_keeps_the_base_commit_it_is_given_for_its_context_packs(
    catalog: LoadedCatalog,
) -> None:
    captured = _capture(catalog, base_commit=BASE_COMMIT)
    assert captured.contract.tier is Tier.READ_ONLY and captured.contract.base_commit == BASE_COMMIT
    assert captured.contract_sha256 != _capture(catalog).contract_sha256
    assert _capture(catalog).contract.base_commit is None


def test_capture_refuses_a_read_only_run_without_a_model_selection(catalog: LoadedCatalog) -> None:
    with pytest.raises(Refused) as refused:
        capture(
            run_input(example(SLOW_QUERY), tier=Tier.READ_ONLY, run_id=RUN_ID),
            catalog,
            _policy(),
            None,
            read_only_budget_seconds=1800,
            edit_budget_seconds=3600,
        )
    assert refused.value.code == "no_model_selected"


def test_a_recommend_run_needs_no_model_selection(catalog: LoadedCatalog) -> None:
    captured = capture(
        run_input(example(SLOW_QUERY), tier=Tier.RECOMMEND, run_id=RUN_ID),
        catalog,
        _policy(),
        None,
        read_only_budget_seconds=1800,
        edit_budget_seconds=3600,
    )
    assert captured.contract.model is None and captured.contract.tier is Tier.RECOMMEND


def _activity(tmp_path: Path, *, budget: int = 900) -> tuple[RoutingActivities, SharedStore]:
    url = f"sqlite:///{tmp_path / 'state' / 'specialists.db'}"
    shared = SharedStore(url, STORE_ANCHOR)
    bootstrap(shared.get())
    return RoutingActivities(
        ActivityConfig(database_url=url, read_only_budget_seconds=budget), shared
    ), shared


def test_capture_contract_activity_reads_selection_and_policy_from_the_store(tmp_path: Path) -> None:
    routing, shared = _activity(tmp_path, budget=900)
    try:
        shared.get().select_models(ModelSelection(primary="replay:demo"), signer("alice"))
        inp = run_input(example(SLOW_QUERY), tier=Tier.READ_ONLY, run_id=RUN_ID)
        captured = ActivityEnvironment().run(routing.capture_contract, inp)
    finally:
        shared.close()
    assert captured.contract.model is not None and captured.contract.model.primary == "replay:demo"
    assert captured.contract.budgets.runtime_seconds == 900
    assert captured.contract_sha256 == canonical_sha256(captured.contract.model_dump(mode="json"))


def test_capture_contract_activity_raises_a_refusal_as_a_non_retryable_error_of_that_type(
    tmp_path: Path,
) -> None:
    routing, shared = _activity(tmp_path)
    try:
        shared.get().set_policy(AutomationPolicy(mode=AutomationMode.OFF), signer("alice"))
        inp = run_input(example(SLOW_QUERY), automatic=True, run_id=RUN_ID)
        with pytest.raises(ApplicationError) as raised:
            ActivityEnvironment().run(routing.capture_contract, inp)
    finally:
        shared.close()
    assert raised.value.type == "automation_off"
    assert raised.value.non_retryable


def _repository(tmp_path: Path, shared: SharedStore) -> Path:
    tree = make_working_tree(tmp_path / "orders-service")
    assert ALIAS is not None
    register_repository(shared.get(), ALIAS, tree, "main", "alice")
    return tree


@pytest.mark.parametrize("tier", [Tier.WORKTREE, Tier.PR_READY])
def test_capture_contract_activity_freezes_the_commit_the_repositorys_branch_points_at(
    tmp_path: Path, tier: Tier
) -> None:
    routing, shared = _activity(tmp_path)
    try:
        shared.get().select_models(ModelSelection(primary="replay:demo"), signer("alice"))
        tree = _repository(tmp_path, shared)
        first_commit = git(tree, "rev-parse", "main")
        inp = run_input(example(SLOW_QUERY), tier=tier, run_id=RUN_ID)
        captured = ActivityEnvironment().run(routing.capture_contract, inp)

        (tree / "CHANGELOG.md").write_text("moved\n")
        git(tree, "add", ".")
        git(tree, "commit", "--quiet", "--no-gpg-sign", "-m", "second")
        again = ActivityEnvironment().run(routing.capture_contract, inp)
    finally:
        shared.close()
    assert captured.contract.base_commit == first_commit
    assert captured.contract.repo_alias == ALIAS
    # A later capture sees the moved branch: a different contract with a different digest.
    assert again.contract.base_commit == git(tree, "rev-parse", "main") != first_commit
    assert again.contract_sha256 != captured.contract_sha256


def test_capture_contract_activity_refuses_an_unregistered_repository_as_unknown_repository(
    tmp_path: Path,
) -> None:
    routing, shared = _activity(tmp_path)
    try:
        shared.get().select_models(ModelSelection(primary="replay:demo"), signer("alice"))
        inp = run_input(example(SLOW_QUERY), tier=Tier.WORKTREE, run_id=RUN_ID)
        with pytest.raises(ApplicationError) as raised:
            ActivityEnvironment().run(routing.capture_contract, inp)
        # A read_only run names the same unregistered alias without needing it.
        read_only = run_input(example(SLOW_QUERY), tier=Tier.READ_ONLY, run_id=RUN_ID)
        assert ActivityEnvironment().run(routing.capture_contract, read_only).contract.base_commit is None
    finally:
        shared.close()
    assert raised.value.type == "unknown_repository" and raised.value.non_retryable


@pytest.mark.parametrize("damage", ["deleted", "no_longer_git"])
def test_capture_contract_activity_refuses_a_repository_that_is_gone_as_repository_unavailable(
    tmp_path: Path, damage: str
) -> None:
    routing, shared = _activity(tmp_path)
    try:
        shared.get().select_models(ModelSelection(primary="replay:demo"), signer("alice"))
        tree = _repository(tmp_path, shared)
        shutil.rmtree(tree if damage == "deleted" else tree / ".git")
        inp = run_input(example(SLOW_QUERY), tier=Tier.PR_READY, run_id=RUN_ID)
        with pytest.raises(ApplicationError) as raised:
            ActivityEnvironment().run(routing.capture_contract, inp)
        # The operator-side pre-check (the record, then runtime's base commit) refuses it the same way.
        assert ALIAS is not None
        with pytest.raises(Refused) as refused:
            resolve_base_commit(shared.get(), ALIAS)
    finally:
        shared.close()
    assert raised.value.type == "repository_unavailable" and raised.value.non_retryable
    assert refused.value.code == "repository_unavailable" and refused.value.exit_code == 4


def test_the_operator_pre_check_refuses_an_unregistered_repository_as_unknown_repository(
    tmp_path: Path,
) -> None:
    _, shared = _activity(tmp_path)
    try:
        with pytest.raises(NotFound) as refused:
            resolve_base_commit(shared.get(), "no-such-repo")
    finally:
        shared.close()
    assert refused.value.code == "unknown_repository" and refused.value.exit_code == 3


@pytest.mark.parametrize("tier", [Tier.READ_ONLY, Tier.WORKTREE])
def test_capture_contract_activity_refuses_a_deactivated_repository(tmp_path: Path, tier: Tier) -> None:
    routing, shared = _activity(tmp_path)
    try:
        shared.get().select_models(ModelSelection(primary="replay:demo"), signer("alice"))
        _repository(tmp_path, shared)
        assert ALIAS is not None
        shared.get().deactivate_repository(ALIAS, signer("alice"))
        with pytest.raises(ApplicationError) as raised:
            ActivityEnvironment().run(routing.capture_contract, run_input(example(SLOW_QUERY), tier=tier))
    finally:
        shared.close()
    assert raised.value.type == "repository_deactivated" and raised.value.non_retryable


def test_capture_contract_activity_refuses_a_selection_naming_a_deactivated_model(tmp_path: Path) -> None:
    from contracts.models import ModelRegistration

    routing, shared = _activity(tmp_path)
    try:
        store = shared.get()
        store.register_model(ModelRegistration(id="openai:gpt"), signer("alice"))
        store.select_registered_models(ModelSelection(primary="openai:gpt"), signer("alice"))
        store.deactivate_model("openai:gpt", signer("alice"))
        with pytest.raises(ApplicationError) as raised:
            ActivityEnvironment().run(
                routing.capture_contract, run_input(example(SLOW_QUERY), tier=Tier.READ_ONLY)
            )
        # A recommendation calls no model: the deactivated model does not stop it.
        recommend = run_input(example(SLOW_QUERY), tier=Tier.RECOMMEND)
        assert ActivityEnvironment().run(routing.capture_contract, recommend).contract.tier is Tier.RECOMMEND
    finally:
        shared.close()
    assert raised.value.type == "model_deactivated" and raised.value.non_retryable


def test_capture_contract_activity_refuses_a_policy_row_written_without_a_key(tmp_path: Path) -> None:
    from sqlalchemy import text

    routing, shared = _activity(tmp_path)
    try:
        store = shared.get()
        store.select_models(ModelSelection(primary="replay:demo"), signer("alice"))
        store.set_policy(AutomationPolicy(mode=AutomationMode.OFF), signer("alice"))
        with store.engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO automation_policy (mode, maximum_automatic_tier, set_by, set_at) "
                    "VALUES ('guarded', 'read_only', 'alice', '2026-12-01 08:00:00')"
                )
            )
        with pytest.raises(ApplicationError) as raised:
            ActivityEnvironment().run(
                routing.capture_contract, run_input(example(SLOW_QUERY), automatic=True)
            )
    finally:
        shared.close()
    assert raised.value.type == "configuration_unverified" and raised.value.non_retryable
    assert "policy write '2'" in raised.value.message
