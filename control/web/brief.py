"""The work brief (docs/architecture.md "Mission Control"): a work item entered in a form, its route
previewed (read-only: nothing is written or started) and the run saved or queued.

Every field becomes the :class:`~contracts.work_item.WorkItem` the CLI takes, validated by the same
model, so the same rules refuse the same text (control characters in one-line fields, sizes, the
``kind:id`` form of evidence refs). A worktree or pr_ready run's repository must be one of the
deployment's active, allow-listed repositories (a recommend or read_only run may name one that is not
registered, as ``create`` and ``specialists route`` take it); an override is one of the reviewed
profiles, with its reason; the tier is one of the four; a JSON brief has no other keys. Saving
creates the run as ``create --tier`` does; queueing a read_only run creates it enqueued with the
person's session-signed proof, as ``create --enqueue`` does. An edit tier is only saved: it waits for
its digest-bound approval on its run page.
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


REQUEST_KEYS: Final = ("work_item", "tier", "override", "review_wave")
OVERRIDE_KEYS: Final = ("profile", "reason")


def read_request(data: object, offered: Mapping[str, Any]) -> tuple[WorkItem, str, RouteOverride | None]:
    """The work item, tier and override of a brief (:func:`request_from_form`'s shape). Raises
    :class:`InvalidInput` naming the field (``invalid_work_item``, ``unknown_keys``,
    ``tier_required``, ``unknown_tier``, ``invalid_override``, ``unknown_profile``,
    ``override_reason_required``, ``unknown_repository``)."""
    if not isinstance(data, dict) or not isinstance(data.get("work_item"), dict):
        raise InvalidInput("invalid_work_item", 'send {"work_item": {...}, "tier": "read_only"}')
    _refuse_unknown_keys(data, REQUEST_KEYS, code="unknown_keys", what="the brief")
    item = _work_item(data["work_item"])
    tier = _tier(data.get("tier"))
    override = _override(data.get("override"), offered)
    check_repository(item, tier, offered)
    return item, tier.value, override


SHOWN_KEYS: Final = 10
"""Most unknown keys a refusal names (then how many more there are)."""


def _refuse_unknown_keys(data: Mapping[str, Any], allowed: Sequence[str], *, code: str, what: str) -> None:
    """Refuse ``data`` with ``code`` when it has a key ``allowed`` does not name, naming them."""
    unknown = sorted(str(key)[:64] for key in data if key not in allowed)
    if not unknown:
        return
    named = ", ".join(map(repr, unknown[:SHOWN_KEYS]))
    more = f" and {len(unknown) - SHOWN_KEYS} more" if len(unknown) > SHOWN_KEYS else ""
    raise InvalidInput(code, f"{what} has unknown keys {named}{more}; allowed: {', '.join(allowed)}")


def _work_item(data: object) -> WorkItem:
    from contracts.work_item import WorkItem
    from control.inputs import describe_validation_error

    try:
        return WorkItem.model_validate(data)
    except ValidationError as error:
        raise InvalidInput("invalid_work_item", f"work item: {describe_validation_error(error)}") from None


def _tier(value: object) -> Tier:
    """The brief's tier: ``tier_required`` when missing or blank, ``unknown_tier`` naming the tiers
    when it is not one of them."""
    if value is None or value == "":
        raise InvalidInput("tier_required", f"choose a tier: {', '.join(TIERS)}")
    if value not in TIERS:
        shown = repr(value) if isinstance(value, str) else f"of type {type(value).__name__}"
        raise InvalidInput("unknown_tier", f"unknown tier {shown}; use one of: {', '.join(TIERS)}")
    return Tier(value)


def _override(asked: object, offered: Mapping[str, Any]) -> RouteOverride | None:
    """The brief's override: ``None`` when absent, null or with a blank profile; an object of string
    ``profile`` and ``reason`` (each may be null or absent), else ``invalid_override``."""
    if asked is None:
        return None
    if not isinstance(asked, dict):
        raise InvalidInput("invalid_override", 'override is an object: {"profile": "...", "reason": "..."}')
    _refuse_unknown_keys(asked, OVERRIDE_KEYS, code="invalid_override", what="override")
    texts = {}
    for key in OVERRIDE_KEYS:
        value = asked.get(key)
        if value is not None and not isinstance(value, str):
            raise InvalidInput("invalid_override", f"override {key} is a string, not {type(value).__name__}")
        texts[key] = (value or "").strip()
    profile, reason = texts["profile"], texts["reason"]
    if not profile:
        return None
    if profile not in offered["profiles"]:
        raise InvalidInput("unknown_profile", f"{profile!r} is not a reviewed profile")
    from contracts.routing import override_reason_problem

    problem = override_reason_problem(reason)  # blank, too long or not one line of printable text
    if problem is not None:
        raise InvalidInput(*problem)
    return RouteOverride(profile=profile, reason=reason)


def check_repository(item: WorkItem, tier: Tier, offered: Mapping[str, Any]) -> None:
    """The repository rule of ``create`` (its contract capture): a worktree or pr_ready run names an
    active allow-listed repository (``unknown_repository`` otherwise); a recommend or read_only run
    may name one that is not registered — it is analysed without it, as ``specialists route``
    previews it."""
    from contracts.policy import APPROVAL_TIERS

    alias = item.repo_alias
    if tier in APPROVAL_TIERS and alias is not None and alias not in offered["repositories"]:
        raise InvalidInput(
            "unknown_repository",
            f"repository {alias!r} is not an active allow-listed repository; a {tier.value} run needs one",
        )


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
    """The route the router gives ``item``, the tier the policy would let it run at, how that run
    would be reviewed (``wave``: the operator asks for a review wave) and the refusal ``create`` would
    give it (``route.create_refusal``, :func:`control.route_preview.create_refusal`). Writes nothing,
    starts nothing."""
    from catalog.loader import load_catalog
    from catalog.orchestration import catalog_reviewers, decide
    from catalog.router import route
    from contracts.policy import effective_tier
    from control.route_preview import CREATE_REFUSAL_KEY, create_refusal, repository_active

    catalog = load_catalog()
    decision = route(item, catalog, override=override)
    store = deployment.store()
    active: bool | None = None
    if store is None:
        policy = deployment.default_policy().policy
    else:
        with store:
            policy = store.get_policy().policy
            active = repository_active(store, item.repo_alias)
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
    shown = routed.model_dump(mode="json")
    shown[CREATE_REFUSAL_KEY] = create_refusal(item.repo_alias, tiered.tier, active)
    return {"route": shown, "work_item": item.model_dump(mode="json")}


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
