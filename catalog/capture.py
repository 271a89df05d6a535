"""Contract capture: route a run's work item, apply the policy and freeze the execution contract.

Used by the ``capture_contract`` activity (authoritative) and by the CLI's pre-check (so a refusal
reaches the operator before a workflow starts). Pure: configuration arrives as arguments.

The model snapshot also says which models each job uses (:func:`assign_models`): a ``support``
profile on bounded support work uses the selection's support model; everything else, and all
security, architecture, runtime and release-blocking work (:func:`primary_chain_work`), uses the
primary chain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from catalog.loaded import LoadedCatalog
from catalog.orchestration import catalog_reviewers
from catalog.orchestration import decide as decide_orchestration
from catalog.router import route
from contracts.config import PolicyRecord, RepositoryConfig, check_environment_rules
from contracts.enums import FallbackMode, RiskFlag, RiskLevel, TaskType, Tier, WorkClass
from contracts.errors import InvalidInput, Refused
from contracts.hashing import canonical_sha256
from contracts.models import ModelSelectionRecord
from contracts.output import JobKind
from contracts.policy import APPROVAL_TIERS, effective_tier
from contracts.routing import RouteDecision
from contracts.runs import (
    Budgets,
    CapturedContract,
    ExecutionContract,
    ModelAssignment,
    ModelSnapshot,
    RunInput,
    UpstreamRef,
)
from contracts.work_item import WorkItem

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


SECURITY_WORK: Final = "security"
ARCHITECTURE_WORK: Final = "architecture"
RUNTIME_WORK: Final = "runtime"
RELEASE_BLOCKING_WORK: Final = "release-blocking"
SECURITY_OR_RUNTIME_WORK: Final = "security or runtime"

# What kind of work each risk flag marks. Every RiskFlag is listed (a test checks it); a flag added
# later without an entry counts as security work, so an unclassified flag fails towards the primary
# chain, never towards the cheaper model.
FLAG_WORK: Final[Mapping[RiskFlag, str]] = {
    RiskFlag.CREDENTIALS: SECURITY_WORK,
    RiskFlag.CUSTOMER_DATA: SECURITY_WORK,
    RiskFlag.EXTERNAL_EXPOSURE: SECURITY_WORK,
    RiskFlag.REGULATED: SECURITY_WORK,
    RiskFlag.PRODUCTION: RUNTIME_WORK,
    RiskFlag.DATA_LOSS: RUNTIME_WORK,
}
TASK_TYPE_WORK: Final[Mapping[TaskType, str]] = {
    TaskType.DESIGN: ARCHITECTURE_WORK,
    TaskType.FIX: RUNTIME_WORK,
}
_RELEASE_BLOCKING_RISK: Final = frozenset({RiskLevel.HIGH, RiskLevel.CRITICAL})

# How a support reason names the work a support profile does, by task type.
_WORK_NOUN: Final[Mapping[TaskType, str]] = {
    TaskType.INVESTIGATE: "investigation",
    TaskType.FIX: "fix",
    TaskType.REVIEW: "review",
    TaskType.AUDIT: "audit",
    TaskType.RESEARCH: "research",
    TaskType.DOCUMENT: "documentation",
    TaskType.TEST: "test",
    TaskType.DESIGN: "design",
}


def primary_chain_work(item: WorkItem, decision: RouteDecision) -> list[tuple[str, str]]:
    """Why the work of ``item`` is security, architecture, runtime or release-blocking work, which
    always runs on the primary chain whatever the profile's work class. Pure and deterministic.

    Inputs: the submitted work item and the router's decision for it. Output: ``(kind of work,
    source)`` pairs in a fixed order — risk flags in :class:`RiskFlag` order, then the task type,
    then the risk level — empty when the work is none of these. Raises nothing.

    The rule and its sources (only structured fields; free text counts only through the router's
    risk level, which is the router's own deterministic reading of it):

    * security — risk flag ``credentials``, ``customer_data``, ``external_exposure`` or ``regulated``
      (``WorkItem.risk_flags``, :class:`contracts.enums.RiskFlag`);
    * runtime — risk flag ``production`` or ``data_loss``, or task type ``fix``: the router treats a
      fix as a change to code that runs (it needs a repository: ``GAP_NO_REPOSITORY`` in
      :mod:`catalog.router`) (``WorkItem.task_type``, :class:`contracts.enums.TaskType`);
    * architecture — task type ``design``: the work decides how something is built;
    * release-blocking — the route's risk is ``high`` or ``critical`` (``RouteDecision.risk``): the
      level at which :mod:`contracts.policy` already takes automation away, and findings of that
      weight block a release;
    * security or runtime — the route's risk is ``medium`` although the item has no risk flag: the
      router found a risk term in the title or description, and every risk term
      (:data:`catalog.router.RISK_TERMS`: breach, outage, credential, vulnerability, production, ...)
      is a security or runtime signal; ``RouteDecision.reasons`` names it.

    The work item's ``domain`` and ``roles`` are free labels and are not read here: the router has
    already turned them into the routed profiles.
    """
    found: list[tuple[str, str]] = []
    flags = set(item.risk_flags)
    for flag in RiskFlag:
        if flag in flags:
            found.append((FLAG_WORK.get(flag, SECURITY_WORK), f"risk flag {flag.value}"))
    task_work = TASK_TYPE_WORK.get(decision.task_type)
    if task_work is not None:
        found.append((task_work, f"task type {decision.task_type.value}"))
    if decision.risk in _RELEASE_BLOCKING_RISK:
        found.append((RELEASE_BLOCKING_WORK, f"risk {decision.risk.value}"))
    elif decision.risk is RiskLevel.MEDIUM and not flags:
        found.append((SECURITY_OR_RUNTIME_WORK, "risk medium from risk terms in the text"))
    return found


def assign_models(
    snapshot: ModelSnapshot, item: WorkItem, decision: RouteDecision, catalog: LoadedCatalog
) -> list[ModelAssignment]:
    """The model assignment of each job of a run: analysis by ``decision.primary``, review by
    ``decision.reviewer``. Pure and deterministic.

    Inputs: the captured ``snapshot`` (its primary chain and optional support model), the work item,
    the route decision and the catalog the profiles come from. Output: two assignments, analysis
    then review. A job uses the support model only when the snapshot names one, its profile's work
    class is ``support`` and :func:`primary_chain_work` finds nothing; otherwise it uses
    ``snapshot.chain``. Raises ``KeyError`` when a routed profile is not in ``catalog`` (the router
    never produces one).
    """
    work = primary_chain_work(item, decision)
    assignments = []
    for kind, profile_id in ((JobKind.ANALYSIS, decision.primary), (JobKind.REVIEW, decision.reviewer)):
        support_profile = catalog.profiles[profile_id].work_class is WorkClass.SUPPORT
        models = snapshot.chain
        uses_support = False
        if not support_profile:
            reason = f"core profile {profile_id}: primary chain"
        elif snapshot.support is None:
            reason = f"support profile {profile_id}, no support model selected: primary chain"
        elif work:
            kinds = " and ".join(dict.fromkeys(kind_of_work for kind_of_work, _ in work))
            sources = "; ".join(source for _, source in work)
            reason = f"support profile {profile_id} on {kinds} work ({sources}): primary chain"
        else:
            models = [snapshot.support]
            uses_support = True
            noun = _WORK_NOUN.get(decision.task_type, decision.task_type.value)
            reason = f"support profile {profile_id} on {noun} work: support model {snapshot.support}"
        assignments.append(
            ModelAssignment(
                kind=kind,
                profile=profile_id,
                models=models,
                uses_support_model=uses_support,
                reason=reason,
            )
        )
    return assignments


def _escalated(snapshot: ModelSnapshot, escalation_model: str) -> ModelSnapshot:
    """The snapshot of an escalated review round's run (docs/architecture.md "Goal queue"): the goal
    queue's escalation model first; when the selection allows fallbacks (``ordered``), its own chain
    follows (primary, then its fallbacks, without the escalation model) for quota, authentication or
    availability errors only, as any chain's fallbacks; with ``primary_only`` the escalation model
    stands alone."""
    rest = []
    if snapshot.fallback_mode is FallbackMode.ORDERED:
        rest = [model for model in (snapshot.primary, *snapshot.fallbacks) if model != escalation_model]
    return snapshot.model_copy(
        update={
            "primary": escalation_model,
            "fallbacks": rest,
            "fallback_mode": FallbackMode.ORDERED if rest else FallbackMode.PRIMARY_ONLY,
            "source": f"escalation model of the goal queue, then the chain of the {snapshot.source}",
        }
    )


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
    repository_config: RepositoryConfig | None = None,
) -> CapturedContract:
    """Route ``run_input`` and build its execution contract and digest. Pure: no I/O.

    The digest is the sha256 of the contract's RFC 8785 canonical JSON, computed once here and kept
    beside the contract (never recomputed from a re-serialised model).

    With a model selection, the contract's model snapshot holds one assignment per job (analysis by
    the routed primary, review by its reviewer) from :func:`assign_models`: the models the job uses
    and why. Without one (a ``recommend`` run), the contract has no model snapshot.

    ``base_commit`` is the commit the repository's default branch pointed at when the caller resolved
    it; worktree and pr_ready contracts freeze it, so the run always uses that commit, and a read_only
    contract keeps it when given (its context packs read ``file:`` evidence at it).

    ``repository_config`` is the configuration of the work item's repository as the caller read it
    (``RepositoryRecord.config``, from the same read as the base commit). Worktree and pr_ready
    contracts freeze it — executor, command, verification commands, environment names, network,
    timeout, model credentials, ``allow_unconfined`` — so the digest an operator approves covers it
    and later configuration changes affect only runs captured afterwards. Every other tier's contract
    has ``None`` (no repository is changed), whatever is given. A configuration that breaks the
    environment rules (``contracts.config.environment_rule_violations``: stored before they existed)
    is refused here, before anything is frozen.

    Raises :class:`contracts.errors.OperatorError`: ``unknown_profile`` (override), ``automation_off``,
    ``tier_required``/``tier_conflict``, ``repo_alias_required`` (a worktree or pr_ready run names an
    allow-listed repository), ``base_commit_required`` (the caller did not resolve it),
    ``no_model_selected`` (a run that calls a model needs a model selection),
    ``invalid_repository_config`` (the repository's configuration breaks the environment rules).
    """
    decision = route(run_input.work_item, catalog, override=run_input.override)
    tier_decision = effective_tier(
        requested=run_input.requested_tier,
        automatic=run_input.automatic,
        risk=decision.risk,
        analysis_only=run_input.analysis_only,
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
        if repository_config is not None:
            check_environment_rules(
                repository_config,
                source=f"the configuration of repository {run_input.work_item.repo_alias!r} (set it "
                "again with `specialists repos update`)",
            )
    elif tier is not Tier.READ_ONLY:
        # A read_only run keeps the commit it was given, so its context packs read evidence files
        # at that commit; a recommendation reads nothing.
        base_commit = None
    if tier is not Tier.RECOMMEND and selection is None:
        raise Refused(
            "no_model_selected",
            f"a {tier.value} run needs a model: select one with "
            "`specialists models select --primary provider:name --actor ID`",
        )
    item = run_input.work_item
    orchestration = decide_orchestration(
        item,
        decision,
        tier,
        requested=run_input.review_wave,
        advisory=run_input.advisory,
        reviewers=catalog_reviewers(catalog),
    )
    snapshot = None
    if selection is not None:
        unassigned = ModelSnapshot.from_selection(selection)
        if run_input.escalation_model is not None:
            unassigned = _escalated(unassigned, run_input.escalation_model)
        if orchestration.advisory is None:
            # The advisory model is captured only for the advisory pass an operator asked for.
            unassigned = unassigned.model_copy(update={"advisory": None})
        # The assignments go into the contract, so the digest an operator approves covers which
        # model each job uses and why. Validated again: an assignment must match the chain it names.
        snapshot = ModelSnapshot.model_validate(
            {
                **unassigned.model_dump(),
                "assignments": assign_models(unassigned, item, decision, catalog),
            }
        )
    if orchestration.advisory is not None and (snapshot is None or snapshot.advisory is None):
        raise Refused(
            "advisory_model_missing",
            f"a {orchestration.advisory.value} advisory pass was asked for, but the model selection names "
            "no advisory model: select one with `specialists models select --primary provider:name "
            "--advisory provider:name --actor ID`",
        )
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
        # The shipping policy is not what a run executes: never frozen into its contract.
        repository_config=(
            repository_config.model_copy(update={"shipping": None})
            if repository_config is not None and tier in APPROVAL_TIERS
            else None
        ),
        orchestration=orchestration,
    )
    digest = canonical_sha256(contract.model_dump(mode="json"))
    return CapturedContract(
        route=decision, tier_reasons=tier_decision.reasons, contract=contract, contract_sha256=digest
    )
