"""The work brief (docs/architecture.md "Mission Control"): a work item entered in a form, its route
previewed (read-only: nothing is written or started) and the run saved or queued.

Every field becomes the :class:`~contracts.work_item.WorkItem` the CLI takes, validated by the same
model, so the same rules refuse the same text (control characters in one-line fields, sizes, the
``kind:id`` form of evidence refs). The repository must be one of the deployment's active,
allow-listed repositories and an override one of the reviewed profiles, with its reason; the tier is
one of the four. Saving creates the run as ``create --tier`` does; queueing a read_only run creates it
enqueued with the person's session-signed proof, as ``create --enqueue`` does. An edit tier is only
saved: it waits for its digest-bound approval on its run page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from pydantic import ValidationError

from contracts.enums import RiskFlag, TaskType, Tier
from contracts.errors import InvalidInput, Refused
from contracts.routing import RouteOverride

if TYPE_CHECKING:
    from contracts.work_item import WorkItem
    from control.web.console import Deployment
    from control.web.sessions import Session

TIERS: Final = tuple(tier.value for tier in Tier)
ACTIONS: Final = ("preview", "save", "queue")


def options(deployment: Deployment) -> dict[str, Any]:
    """What the form offers: task types, risk flags, tiers, the reviewed profiles (overrides) and the
    active allow-listed repositories."""
    from catalog.loader import load_catalog

    store = deployment.store()
    repositories: list[str] = []
    if store is not None:
        with store:
            repositories = [r.alias for r in store.list_repositories() if r.active]
    return {
        "task_types": [t.value for t in TaskType],
        "risk_flags": [f.value for f in RiskFlag],
        "tiers": list(TIERS),
        "profiles": sorted(load_catalog().profiles),
        "repositories": repositories,
    }


def request_from_form(fields: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """The brief a form posts (line breaks already LF), in the JSON shape of ``/api/route``:
    ``{"work_item": {...}, "tier", "override": {"profile", "reason"}, "review_wave"}`` (roles
    comma-separated, evidence refs one per line, the review wave a ``yes`` checkbox)."""

    def one(name: str) -> str:
        values = fields.get(name, [])
        return values[-1] if values else ""

    return {
        "work_item": {
            "title": one("title"),
            "description": one("description"),
            "domain": one("domain").strip(),
            "roles": [role.strip() for role in one("roles").split(",") if role.strip()],
            "risk_flags": list(fields.get("risk_flags", [])),
            "repo_alias": one("repo_alias").strip() or None,
            "evidence_refs": [ref.strip() for ref in one("evidence_refs").splitlines() if ref.strip()],
            "task_type": one("task_type") or TaskType.INVESTIGATE.value,
        },
        "tier": one("tier"),
        "override": {"profile": one("override_profile").strip(), "reason": one("override_reason").strip()},
        "review_wave": one("review_wave") == "yes",
    }


def read_request(data: object, offered: Mapping[str, Any]) -> tuple[WorkItem, str, RouteOverride | None]:
    """The work item, tier and override of a brief (:func:`request_from_form`'s shape). Raises
    :class:`InvalidInput` naming the field (``invalid_work_item``, ``unknown_repository``,
    ``unknown_profile``, ``override_reason_required``, ``tier_required``)."""
    from contracts.work_item import WorkItem
    from control.inputs import describe_validation_error

    if not isinstance(data, dict) or not isinstance(data.get("work_item"), dict):
        raise InvalidInput("invalid_work_item", 'send {"work_item": {...}, "tier": "read_only"}')
    try:
        item = WorkItem.model_validate(data["work_item"])
    except ValidationError as error:
        raise InvalidInput("invalid_work_item", f"work item: {describe_validation_error(error)}") from None
    if item.repo_alias is not None and item.repo_alias not in offered["repositories"]:
        raise InvalidInput(
            "unknown_repository", f"repository {item.repo_alias!r} is not an active allow-listed repository"
        )
    tier = data.get("tier")
    if tier not in TIERS:
        raise InvalidInput("tier_required", f"choose a tier: {', '.join(TIERS)}")
    asked = data.get("override") or {}
    profile = str(asked.get("profile") or "").strip() if isinstance(asked, dict) else ""
    reason = str(asked.get("reason") or "").strip() if isinstance(asked, dict) else ""
    override = None
    if profile:
        if profile not in offered["profiles"]:
            raise InvalidInput("unknown_profile", f"{profile!r} is not a reviewed profile")
        if not reason:
            raise InvalidInput("override_reason_required", "an override needs its reason")
        override = RouteOverride(profile=profile, reason=reason)
    return item, str(tier), override


def review_wave(data: object) -> bool:
    """Whether a brief (:func:`request_from_form`'s shape) asks for a review wave. Raises
    :class:`InvalidInput` ``invalid_review_wave`` for anything but ``true``, ``false`` or none."""
    wanted = data.get("review_wave", False) if isinstance(data, dict) else False
    if not isinstance(wanted, bool):
        raise InvalidInput("invalid_review_wave", "review_wave is true or false")
    return wanted


def preview(
    deployment: Deployment,
    item: WorkItem,
    tier: str,
    override: RouteOverride | None,
    wave: bool = False,
) -> dict[str, Any]:
    """The route the router gives ``item``, the tier the policy would let it run at and how that run
    would be reviewed (``wave``: the operator asks for a review wave). Writes nothing, starts
    nothing."""
    from catalog.loader import load_catalog
    from catalog.orchestration import catalog_reviewers, decide
    from catalog.router import route
    from contracts.policy import effective_tier

    catalog = load_catalog()
    decision = route(item, catalog, override=override)
    store = deployment.store()
    if store is None:
        policy = deployment.default_policy().policy
    else:
        with store:
            policy = store.get_policy().policy
    tiered = effective_tier(
        requested=Tier(tier), automatic=False, risk=decision.risk, analysis_only=False, policy=policy
    )
    routed = decision.model_copy(
        update={
            "effective_tier": tiered.tier,
            "tier_reasons": tiered.reasons,
            "orchestration": decide(
                item, decision, tiered.tier, requested=wave, reviewers=catalog_reviewers(catalog)
            ),
        }
    )
    return {"route": routed.model_dump(mode="json"), "work_item": item.model_dump(mode="json")}


async def create(
    deployment: Deployment,
    session: Session,
    item: WorkItem,
    tier: str,
    override: RouteOverride | None,
    *,
    queue: bool,
    wave: bool = False,
) -> str:
    """Create the run (``queue``: a read_only run enqueued at once, protected) and return its id.
    Raises ``queue_not_allowed`` for an edit or recommend tier, ``no_worker`` and the run's refusals."""
    from contracts.ids import new_run_id
    from contracts.runs import RunInput
    from control.create_flags import check_create_flags
    from control.runs import create_run, raise_if_creation_refused, request_digest
    from control.temporal import require_worker

    requested = Tier(tier)
    check_create_flags(requested, enqueue=False, review_wave=wave)
    if queue and requested is not Tier.READ_ONLY:
        raise Refused(
            "queue_not_allowed",
            "only a read_only run is queued when it is created; save it (an edit tier then waits for "
            "its approval on its run page)",
        )
    draft = RunInput(
        run_id=new_run_id(),
        work_item=item,
        requested_tier=requested,
        automatic=False,
        override=override,
        enqueue=queue,
        request_digest="",
        created_by=session.actor,
        review_wave=wave,
    )
    run_input = draft.model_copy(update={"request_digest": request_digest(draft)})
    # The session's actor is the run's creator: the create carries their proof, queued or not.
    proof = session.proof(action="create", target=run_input.run_id, digest=run_input.request_digest)
    run_input = run_input.model_copy(update={"proof": proof})
    client = await deployment.client()
    await require_worker(client, deployment.task_queue)
    view, _ = await create_run(client, run_input, task_queue=deployment.task_queue)
    raise_if_creation_refused(view)
    return view.run_id
