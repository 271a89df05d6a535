"""Contract capture: route a run's work item, apply the policy and freeze the execution contract.

Used by the ``capture_contract`` activity (authoritative) and by the CLI's pre-check (so a refusal
reaches the operator before a workflow starts). Pure: configuration arrives as arguments.
"""

from __future__ import annotations

from catalog.hashing import canonical_sha256
from catalog.loaded import LoadedCatalog
from catalog.router import route
from contracts.config import PolicyRecord
from contracts.enums import Tier
from contracts.errors import InvalidInput, Refused
from contracts.models import ModelSelectionRecord
from contracts.policy import APPROVAL_TIERS, effective_tier
from contracts.runs import Budgets, CapturedContract, ExecutionContract, ModelSnapshot, RunInput, UpstreamRef

_ALLOWED = {
    Tier.RECOMMEND: ["route the work item", "record a recommendation"],
    Tier.READ_ONLY: [
        "read the work item and its evidence references",
        "analyse and report structured findings",
        "review findings independently",
    ],
    Tier.WORKTREE: [
        "read the work item and its evidence references",
        "edit files inside a fresh worktree of the repository at the base commit, after approval",
        "report the actual diff against the base commit",
        "review the change independently",
    ],
    Tier.PR_READY: [
        "read the work item and its evidence references",
        "edit files inside a fresh worktree of the repository at the base commit, after approval",
        "run the contract's verification commands in that worktree",
        "prepare a diff ready for a pull request, without opening one",
        "review the change independently",
    ],
}
_FORBIDDEN_ALWAYS = [
    "commit, push, merge or open pull requests",
    "deploy or publish anything",
    "read or reveal secrets or credentials",
    "exceed the contract's tier, budgets or evidence",
]
_FORBIDDEN = {
    Tier.RECOMMEND: ["edit, create or delete files", "run commands", *_FORBIDDEN_ALWAYS],
    Tier.READ_ONLY: ["edit, create or delete files", "run commands", *_FORBIDDEN_ALWAYS],
    Tier.WORKTREE: [
        "touch anything outside the run's worktree",
        "run commands not frozen in the contract",
        "change more than 40 files",
        *_FORBIDDEN_ALWAYS,
    ],
    Tier.PR_READY: [
        "touch anything outside the run's worktree",
        "run commands not frozen in the contract",
        "change more than 40 files",
        *_FORBIDDEN_ALWAYS,
    ],
}
_STOP_CONDITIONS = [
    "the runtime budget is exhausted",
    "an authorised operator cancels the run",
    "model output breaks the output contract",
    "a provider error outside the fallback classes (quota, authentication, availability)",
]


def capture(
    run_input: RunInput,
    catalog: LoadedCatalog,
    policy: PolicyRecord,
    selection: ModelSelectionRecord | None,
    *,
    read_only_budget_seconds: int,
    edit_budget_seconds: int,
    approval_window_seconds: int = 7 * 24 * 3600,
    base_commit: str | None = None,
) -> CapturedContract:
    """Route ``run_input`` and build its execution contract and digest. Pure: no I/O.

    The digest is the sha256 of the contract's RFC 8785 canonical JSON, computed once here and kept
    beside the contract (never recomputed from a re-serialised model).

    ``base_commit`` is the commit the repository's default branch pointed at when the caller resolved
    it; worktree and pr_ready contracts freeze it, so the run always uses that commit.

    Raises :class:`contracts.errors.OperatorError`: ``unknown_profile`` (override), ``automation_off``,
    ``tier_required``/``tier_conflict``, ``repo_alias_required`` (a worktree or pr_ready run names an
    allow-listed repository), ``base_commit_required`` (the caller did not resolve it),
    ``no_model_selected`` (a run that calls a model needs a model selection).
    """
    decision = route(run_input.work_item, catalog, override=run_input.override)
    tier_decision = effective_tier(
        requested=run_input.requested_tier,
        automatic=run_input.automatic,
        risk=decision.risk,
        analysis_only=False,
        policy=policy.policy,
    )
    tier = tier_decision.tier
    if tier in APPROVAL_TIERS:
        if run_input.work_item.repo_alias is None:
            raise InvalidInput(
                "repo_alias_required",
                f"a {tier.value} run changes code: the work item needs the repo_alias of an "
                "allow-listed repository (see `specialists repos`)",
            )
        if base_commit is None:
            raise InvalidInput("base_commit_required", "the repository's base commit was not resolved")
    else:
        base_commit = None
    if tier is not Tier.RECOMMEND and selection is None:
        raise Refused(
            "no_model_selected",
            f"a {tier.value} run needs a model: select one with "
            "`specialists models select --primary provider:name --actor ID`",
        )
    snapshot = None
    if selection is not None:
        chosen = selection.selection
        snapshot = ModelSnapshot(
            primary=chosen.primary,
            fallbacks=list(chosen.fallbacks),
            fallback_mode=chosen.fallback_mode,
            support=chosen.support,
            source=f"model selection by {selection.selected_by} at {selection.selected_at.isoformat()}",
        )
    item = run_input.work_item
    task = item.title if not item.description else f"{item.title}\n\n{item.description}"
    pin = catalog.file.upstream
    contract = ExecutionContract(
        run_id=run_input.run_id,
        task=task,
        evidence_refs=list(item.evidence_refs),
        task_type=decision.task_type,
        repo_alias=item.repo_alias,
        tier=tier,
        automatic=run_input.automatic,
        risk=decision.risk,
        catalog_version=catalog.version,
        catalog_sha256=catalog.sha256,
        upstream=UpstreamRef(repository=pin.repository, commit=pin.commit, license=pin.license),
        primary=decision.primary,
        reviewer=decision.reviewer,
        model=snapshot,
        allowed_actions=_ALLOWED[tier],
        forbidden_actions=_FORBIDDEN[tier],
        budgets=Budgets(
            runtime_seconds=read_only_budget_seconds if tier is Tier.READ_ONLY else edit_budget_seconds,
            approval_window_seconds=approval_window_seconds,
        ),
        stop_conditions=_STOP_CONDITIONS,
        base_commit=base_commit,
    )
    digest = canonical_sha256(contract.model_dump(mode="json"))
    return CapturedContract(
        route=decision, tier_reasons=tier_decision.reasons, contract=contract, contract_sha256=digest
    )
