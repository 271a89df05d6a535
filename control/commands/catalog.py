"""``specialists catalog`` (validate the catalog, optionally verify its upstream sources) and
``specialists route`` (preview a work item's route and tier). Neither talks to Temporal nor writes
anything, and both start quickly: only what each needs is imported, inside the command."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from contracts.errors import InvalidInput
from control.commands.common import (
    AdvisoryOption,
    JsonFlag,
    ReviewWaveFlag,
    open_store,
    parse_advisory,
    parse_override,
    parse_tier,
)

if TYPE_CHECKING:
    from contracts.policy import AutomationPolicy

app = typer.Typer()


@app.command("catalog")
def catalog_command(
    file: Annotated[
        Path | None, typer.Option("--file", help="Validate this candidate catalog file instead.")
    ] = None,
    source_root: Annotated[
        Path | None,
        typer.Option("--source-root", help="Git checkout of the upstream repository to verify against."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Validate the catalog (installed, or --file) and optionally verify its upstream sources."""
    from catalog.loader import DEFAULT_CATALOG_PATH
    from catalog.validation import validate_catalog_file
    from control import views
    from control.output import emit

    report = validate_catalog_file(file or DEFAULT_CATALOG_PATH)
    verification = None
    if report.catalog is not None and source_root is not None:
        from control.catalog_sources import verify_catalog_sources

        verification = verify_catalog_sources(report.catalog.file, source_root)
    data = views.catalog_json(report, verification)
    emit(data, as_json, lambda console: views.render_catalog(console, report, verification))
    if not report.valid:
        raise typer.Exit(2)
    if verification is not None and not verification.verified:
        raise typer.Exit(6)


@app.command("route")
def route_command(
    input_json: Annotated[
        str, typer.Option("--input-json", help="The work item as JSON, or @FILE to read it from a file.")
    ],
    tier: Annotated[
        str | None, typer.Option("--tier", help="Preview the tier of an operator run: recommend|…")
    ] = None,
    automatic: Annotated[
        bool, typer.Option("--automatic", help="Preview the tier the policy would pick.")
    ] = False,
    override: Annotated[
        str | None, typer.Option("--override", help="Profile id to use as primary instead.")
    ] = None,
    override_reason: Annotated[
        str | None, typer.Option("--override-reason", help="Why the override is needed (required).")
    ] = None,
    review_wave: ReviewWaveFlag = False,
    advisory: AdvisoryOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Preview the route (and, with a tier, the effective tier, how the run would be reviewed and
    what create would refuse of it) for a work item. Writes nothing."""
    from catalog.loader import load_catalog
    from catalog.router import route
    from contracts.work_item import WorkItem
    from control.inputs import parse_model, read_json_argument
    from control.output import emit

    requested = parse_tier(tier)
    if automatic and requested is not None:
        raise InvalidInput("tier_conflict", "--automatic and --tier are exclusive: give one")
    route_override = parse_override(override, override_reason)
    item = parse_model(
        WorkItem, read_json_argument(input_json, what="work item"), what="work item", code="invalid_work_item"
    )
    advisory_topic = parse_advisory(advisory, requested, automatic=automatic)
    if review_wave and requested is None and not automatic:
        raise InvalidInput(
            "tier_required", "--review-wave previews a run's review: give --tier or --automatic"
        )
    catalog = load_catalog()
    decision = route(item, catalog, override=route_override)
    refusal: dict[str, str] | None = None
    if requested is not None or automatic:
        from catalog.orchestration import catalog_reviewers, decide
        from contracts.policy import effective_tier
        from control.route_preview import create_refusal

        policy, active = _read_without_writing(item.repo_alias)
        tier_decision = effective_tier(
            requested=requested,
            automatic=automatic,
            risk=decision.risk,
            analysis_only=False,
            policy=policy,
        )
        refusal = create_refusal(item.repo_alias, tier_decision.tier, active)
        decision = decision.model_copy(
            update={
                "effective_tier": tier_decision.tier,
                "tier_reasons": tier_decision.reasons,
                "orchestration": decide(
                    item,
                    decision,
                    tier_decision.tier,
                    requested=review_wave,
                    advisory=advisory_topic,
                    reviewers=catalog_reviewers(catalog),
                ),
            }
        )

    def render(console: Any) -> None:
        from control import views  # only the human view needs it

        views.render_route(console, decision, refusal)

    data = decision.to_json_dict()
    if decision.effective_tier is not None:
        from control.route_preview import CREATE_REFUSAL_KEY

        data[CREATE_REFUSAL_KEY] = refusal
    emit(data, as_json, render)


def _read_without_writing(alias: str | None) -> "tuple[AutomationPolicy, bool | None]":
    """The stored policy (the built-in default when no database exists yet: nothing is created) and
    whether the repository registered as ``alias`` is active (``None``: no alias, or not registered)."""
    from contracts.policy import AutomationPolicy
    from control.route_preview import repository_active

    store = open_store(create=False)
    if store is None:
        return AutomationPolicy(), None
    with store:
        return store.get_policy().policy, repository_active(store, alias)
